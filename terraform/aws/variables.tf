# The input contract shared by every xp module (see ../README.md).

variable "campaign" {
  type        = string
  description = "Campaign name; labels every host of the group."
}

variable "group" {
  type        = string
  description = "Infrastructure group key (short slug written by xp); labels every host of the group."
}

variable "broker_count" {
  type        = number
  description = "Number of Kafka brokers."
  validation {
    condition     = var.broker_count >= 1 && floor(var.broker_count) == var.broker_count
    error_message = "broker_count must be a whole number, at least 1."
  }
}

variable "controller_count" {
  type        = number
  description = "Number of dedicated KRaft controllers; 0 runs combined broker+controller nodes."
  default     = 0
  validation {
    condition     = var.controller_count >= 0 && floor(var.controller_count) == var.controller_count
    error_message = "controller_count must be a whole number, 0 or more."
  }
}

variable "gateway_count" {
  type        = number
  description = "Number of gateway machines (0 when no row of the group runs through a gateway)."
  default     = 0
  validation {
    condition     = var.gateway_count >= 0 && floor(var.gateway_count) == var.gateway_count
    error_message = "gateway_count must be a whole number, 0 or more."
  }
}

variable "client_count" {
  type        = number
  description = "Number of load-generator client machines."
  default     = 1
  validation {
    condition     = var.client_count >= 0 && floor(var.client_count) == var.client_count
    error_message = "client_count must be a whole number, 0 or more."
  }
}

variable "broker_instance_type" {
  type        = string
  description = "Instance type of the broker machines."
  default     = "m5.xlarge"
}

variable "controller_instance_type" {
  type        = string
  description = "Instance type of the controller machines."
  default     = "m5.xlarge"
}

variable "gateway_instance_type" {
  type        = string
  description = "Instance type of the gateway machines."
  default     = "m5.xlarge"
}

variable "client_instance_type" {
  type        = string
  description = "Instance type of the client machines."
  default     = "m5.xlarge"
}

variable "ssh_public_key" {
  type        = string
  description = "OpenSSH public key installed for ssh_user on every machine."
  validation {
    condition     = can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256) ", var.ssh_public_key))
    error_message = "ssh_public_key must be an OpenSSH public key (ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp256)."
  }
}

variable "operator_cidr" {
  type        = string
  description = "The only address range allowed to reach the machines (SSH, port 22), e.g. 203.0.113.7/32."
  validation {
    # The rule of xp's CheckOperatorCIDR: an IPv4 network address whose
    # prefix is /8 or longer (try: && does not stop at the first false).
    condition = try(
      can(regex("^[0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}$", var.operator_cidr)) &&
      tonumber(split("/", var.operator_cidr)[1]) >= 8 &&
      cidrhost(var.operator_cidr, 0) == split("/", var.operator_cidr)[0],
      false
    )
    error_message = "operator_cidr must be an IPv4 network address with a prefix of /8 or longer, such as 203.0.113.7/32 or 198.51.100.0/24."
  }
}

variable "hourly_price_usd" {
  type        = map(number)
  description = "Hourly on-demand price in USD per instance type, reported in the hourly_price_usd output; a type missing here is reported as null and xp prices it from plans/prices.yaml."
  default     = {}
}

# Specific to this module.

variable "region" {
  type        = string
  description = "AWS region, e.g. eu-west-1."
}

variable "availability_zone" {
  type        = string
  description = "Availability zone of the subnet; empty picks the region's first."
  default     = ""
}

variable "placement_group" {
  type        = bool
  description = "Put every machine of the group in one cluster placement group (low, even latency between them)."
  default     = false
}

variable "volume_size_gb" {
  type        = number
  description = "Size of each machine's gp3 root volume, GiB."
  default     = 100
}

variable "vpc_cidr" {
  type        = string
  description = "Address range of the group's VPC and subnet."
  default     = "10.42.0.0/16"
}
