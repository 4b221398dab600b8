output "hosts" {
  description = "The group's machines by role: brokers, controllers, gateways, clients; each a list of {name, public_address, private_address, ssh_port}."
  value       = terraform_data.group.output.hosts
}

output "ssh_user" {
  description = "User xp logs in as on every machine."
  value       = var.ssh_user
}

output "instance_types" {
  description = "Instance type (here: label) of each role."
  value = {
    broker     = var.broker_instance_type
    controller = var.controller_instance_type
    gateway    = var.gateway_instance_type
    client     = var.client_instance_type
  }
}

output "hourly_price_usd" {
  description = "Hourly price in USD of one machine of each role; null where unknown."
  value = {
    broker     = lookup(var.hourly_price_usd, var.broker_instance_type, null)
    controller = lookup(var.hourly_price_usd, var.controller_instance_type, null)
    gateway    = lookup(var.hourly_price_usd, var.gateway_instance_type, null)
    client     = lookup(var.hourly_price_usd, var.client_instance_type, null)
  }
}

output "region" {
  description = "Where the machines are."
  value       = var.region
}
