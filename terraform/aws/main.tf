# One xp infrastructure group on AWS: its own VPC and subnet, a security
# group that lets SSH in only from the operator and lets the group's
# machines talk to each other, and one instance per machine of each role.
# Credentials come from the provider's usual environment (AWS_PROFILE,
# AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ...); none live here.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "5.80.0"
    }
  }
}

provider "aws" {
  region = var.region
}

locals {
  name = "xp-${var.campaign}-${var.group}"
  tags = {
    "xp:campaign" = var.campaign
    "xp:group"    = var.group
  }
  roles = {
    brokers     = { role = "broker", count = var.broker_count, type = var.broker_instance_type }
    controllers = { role = "controller", count = var.controller_count, type = var.controller_instance_type }
    gateways    = { role = "gateway", count = var.gateway_count, type = var.gateway_instance_type }
    clients     = { role = "client", count = var.client_count, type = var.client_instance_type }
  }
  machines = merge([
    for k, r in local.roles : {
      for i in range(r.count) : "${r.role}-${i + 1}" => { set = k, role = r.role, type = r.type }
    }
  ]...)
}

data "aws_availability_zones" "available" {
  state = "available"
}

data "aws_ami" "ubuntu" {
  most_recent = true
  owners      = ["099720109477"] # Canonical
  filter {
    name   = "name"
    values = ["ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"]
  }
  filter {
    name   = "virtualization-type"
    values = ["hvm"]
  }
}

resource "aws_vpc" "group" {
  cidr_block           = var.vpc_cidr
  enable_dns_hostnames = true
  tags                 = merge(local.tags, { Name = local.name })
}

resource "aws_internet_gateway" "group" {
  vpc_id = aws_vpc.group.id
  tags   = merge(local.tags, { Name = local.name })
}

resource "aws_subnet" "group" {
  vpc_id                  = aws_vpc.group.id
  cidr_block              = cidrsubnet(var.vpc_cidr, 8, 1)
  availability_zone       = var.availability_zone != "" ? var.availability_zone : data.aws_availability_zones.available.names[0]
  map_public_ip_on_launch = true
  tags                    = merge(local.tags, { Name = local.name })
}

resource "aws_route_table" "group" {
  vpc_id = aws_vpc.group.id
  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.group.id
  }
  tags = merge(local.tags, { Name = local.name })
}

resource "aws_route_table_association" "group" {
  subnet_id      = aws_subnet.group.id
  route_table_id = aws_route_table.group.id
}

resource "aws_security_group" "group" {
  name        = local.name
  description = "xp ${var.campaign} ${var.group}: SSH from the operator, everything between the group's machines"
  vpc_id      = aws_vpc.group.id
  tags        = merge(local.tags, { Name = local.name })
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  security_group_id = aws_security_group.group.id
  description       = "SSH from the operator"
  cidr_ipv4         = var.operator_cidr
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  tags              = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "group" {
  security_group_id            = aws_security_group.group.id
  description                  = "Everything between the group's machines"
  referenced_security_group_id = aws_security_group.group.id
  ip_protocol                  = "-1"
  tags                         = local.tags
}

# Machines download Kafka and packages.
resource "aws_vpc_security_group_egress_rule" "all" {
  security_group_id = aws_security_group.group.id
  description       = "Outbound traffic"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "-1"
  tags              = local.tags
}

resource "aws_key_pair" "operator" {
  key_name   = local.name
  public_key = var.ssh_public_key
  tags       = local.tags
}

resource "aws_placement_group" "group" {
  count    = var.placement_group ? 1 : 0
  name     = local.name
  strategy = "cluster"
  tags     = local.tags
}

resource "aws_instance" "machine" {
  for_each = local.machines

  ami                    = data.aws_ami.ubuntu.id
  instance_type          = each.value.type
  subnet_id              = aws_subnet.group.id
  vpc_security_group_ids = [aws_security_group.group.id]
  key_name               = aws_key_pair.operator.key_name
  placement_group        = var.placement_group ? aws_placement_group.group[0].id : null

  root_block_device {
    volume_type = "gp3"
    volume_size = var.volume_size_gb
    encrypted   = true
    tags        = merge(local.tags, { Name = "${local.name}-${each.key}" })
  }

  metadata_options {
    http_tokens = "required"
  }

  tags = merge(local.tags, { Name = "${local.name}-${each.key}", "xp:role" = each.value.role })
}
