output "hosts" {
  description = "The group's machines by role: brokers, controllers, gateways, clients; each a list of {name, public_address, private_address, ssh_port}."
  value = {
    for k, r in local.roles : k => [
      for i in range(r.count) : {
        name            = "${local.name}-${r.role}-${i + 1}"
        public_address  = azurerm_public_ip.machine["${r.role}-${i + 1}"].ip_address
        private_address = azurerm_network_interface.machine["${r.role}-${i + 1}"].private_ip_address
        ssh_port        = 22
      }
    ]
  }
}

output "ssh_user" {
  description = "User xp logs in as on every machine."
  value       = var.ssh_user
}

output "instance_types" {
  description = "VM size of each role."
  value       = { for k, r in local.roles : r.role => r.type }
}

output "hourly_price_usd" {
  description = "Hourly price in USD of one machine of each role; null where unknown."
  value       = { for k, r in local.roles : r.role => lookup(var.hourly_price_usd, r.type, null) }
}

output "region" {
  description = "Azure region of the group."
  value       = var.region
}
