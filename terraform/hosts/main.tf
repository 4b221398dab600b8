# Machines that already exist: nothing is created. The group's hosts are
# chosen from var.machines when applied and kept in state, so every
# output of a group stays as applied until it is destroyed.

terraform {
  required_version = ">= 1.5"
}

locals {
  wanted = {
    brokers     = { role = "broker", count = var.broker_count }
    controllers = { role = "controller", count = var.controller_count }
    gateways    = { role = "gateway", count = var.gateway_count }
    clients     = { role = "client", count = var.client_count }
  }
  available = {
    for k, w in local.wanted : k => [for m in var.machines : m if m.role == w.role]
  }
  hosts = {
    for k, w in local.wanted : k => [
      for m in slice(local.available[k], 0, min(w.count, length(local.available[k]))) : {
        name            = m.name
        public_address  = m.address
        private_address = coalesce(m.private_address, m.address)
        ssh_port        = m.ssh_port
      }
    ]
  }
}

resource "terraform_data" "group" {
  input = {
    campaign = var.campaign
    group    = var.group
    hosts    = local.hosts
  }

  lifecycle {
    precondition {
      condition     = alltrue([for k, w in local.wanted : length(local.available[k]) >= w.count])
      error_message = format("Not enough machines: the group needs %s; var.machines has %s.", join(", ", [for k, w in local.wanted : format("%d %s", w.count, k)]), join(", ", [for k, w in local.wanted : format("%d %s", length(local.available[k]), k)]))
    }
  }
}
