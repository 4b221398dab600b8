# The input contract shared by every xp module (see ../README.md). On
# machines that already exist the instance types only label the hosts and
# the SSH key and operator CIDR are not used: the machines are reached as
# they are.

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
  description = "Label of the broker machines' kind (reported as instance_types.broker)."
  default     = "own"
}

variable "controller_instance_type" {
  type        = string
  description = "Label of the controller machines' kind (reported as instance_types.controller)."
  default     = "own"
}

variable "gateway_instance_type" {
  type        = string
  description = "Label of the gateway machines' kind (reported as instance_types.gateway)."
  default     = "own"
}

variable "client_instance_type" {
  type        = string
  description = "Label of the client machines' kind (reported as instance_types.client)."
  default     = "own"
}

variable "ssh_public_key" {
  type        = string
  description = "OpenSSH public key; unused here (the machines already trust their operator's key)."
  default     = ""
}

variable "operator_cidr" {
  type        = string
  description = "Address range SSH comes from; unused here (the machines' own firewalls decide)."
  default     = "0.0.0.0/0"
}

variable "hourly_price_usd" {
  type        = map(number)
  description = "Hourly price in USD per instance type label; a type missing here is reported as null and priced from plans/prices.yaml."
  default     = { own = 0 }
}

# Specific to this module.

variable "machines" {
  type = list(object({
    name            = string
    address         = string
    private_address = optional(string)
    ssh_port        = optional(number, 22)
    role            = string
  }))
  description = "The machines that already exist: name, address xp reaches over SSH, optional private address the cluster uses between machines (default: address), SSH port (default 22) and role (broker, controller, gateway or client). The first broker_count brokers, controller_count controllers, ... are used."
  validation {
    condition     = alltrue([for m in var.machines : contains(["broker", "controller", "gateway", "client"], m.role)])
    error_message = "Every machine's role must be broker, controller, gateway or client."
  }
  validation {
    condition     = length(distinct([for m in var.machines : m.name])) == length(var.machines)
    error_message = "Machine names must be unique."
  }
  validation {
    condition     = alltrue([for m in var.machines : m.ssh_port >= 1 && m.ssh_port <= 65535])
    error_message = "Every machine's ssh_port must be between 1 and 65535."
  }
}

variable "ssh_user" {
  type        = string
  description = "User xp logs in as on every machine."
  default     = "xp"
}

variable "region" {
  type        = string
  description = "Where the machines are, as reported in the region output."
  default     = "hosts"
}
