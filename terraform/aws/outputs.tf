output "hosts" {
  description = "The group's machines by role: brokers, controllers, gateways, clients; each a list of {name, public_address, private_address, ssh_port}."
  value = {
    for k, r in local.roles : k => [
      for i in range(r.count) : {
        name            = "${local.name}-${r.role}-${i + 1}"
        public_address  = aws_instance.machine["${r.role}-${i + 1}"].public_ip
        private_address = aws_instance.machine["${r.role}-${i + 1}"].private_ip
        ssh_port        = 22
      }
    ]
  }
}

output "ssh_user" {
  description = "User xp logs in as on every machine (the Ubuntu image's)."
  value       = "ubuntu"
}

output "instance_types" {
  description = "Instance type of each role."
  value       = { for k, r in local.roles : r.role => r.type }
}

output "hourly_price_usd" {
  description = "Hourly price in USD of one machine of each role; null where unknown."
  value       = { for k, r in local.roles : r.role => lookup(var.hourly_price_usd, r.type, null) }
}

output "region" {
  description = "AWS region of the group."
  value       = var.region
}
