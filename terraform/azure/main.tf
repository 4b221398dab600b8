# One xp infrastructure group on Azure: a resource group of its own with a
# virtual network, a network security group that lets SSH in only from the
# operator and lets the group's machines talk to each other, and one VM per
# machine of each role. Credentials come from the provider's usual
# environment (ARM_SUBSCRIPTION_ID, ARM_TENANT_ID, ARM_CLIENT_ID/
# ARM_CLIENT_SECRET, or `az login`); none live here.

terraform {
  required_version = ">= 1.5"
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "4.14.0"
    }
  }
}

provider "azurerm" {
  features {}
}

locals {
  name = "xp-${var.campaign}-${var.group}"
  tags = {
    "xp-campaign" = var.campaign
    "xp-group"    = var.group
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

resource "azurerm_resource_group" "group" {
  name     = local.name
  location = var.region
  tags     = local.tags
}

resource "azurerm_virtual_network" "group" {
  name                = local.name
  location            = azurerm_resource_group.group.location
  resource_group_name = azurerm_resource_group.group.name
  address_space       = [var.vnet_cidr]
  tags                = local.tags
}

resource "azurerm_subnet" "group" {
  name                 = local.name
  resource_group_name  = azurerm_resource_group.group.name
  virtual_network_name = azurerm_virtual_network.group.name
  address_prefixes     = [cidrsubnet(var.vnet_cidr, 8, 1)]
}

resource "azurerm_network_security_group" "group" {
  name                = local.name
  location            = azurerm_resource_group.group.location
  resource_group_name = azurerm_resource_group.group.name
  tags                = local.tags

  security_rule {
    name                       = "ssh-from-operator"
    description                = "SSH from the operator"
    priority                   = 100
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_range     = "22"
    source_address_prefix      = var.operator_cidr
    destination_address_prefix = "*"
  }

  security_rule {
    name                       = "inside-group"
    description                = "Everything between the group's machines"
    priority                   = 110
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "*"
    source_port_range          = "*"
    destination_port_range     = "*"
    source_address_prefix      = var.vnet_cidr
    destination_address_prefix = var.vnet_cidr
  }

  # Overrides Azure's default inbound rules (virtual network, load balancer).
  security_rule {
    name                       = "deny-other-inbound"
    description                = "Nothing else comes in"
    priority                   = 4096
    direction                  = "Inbound"
    access                     = "Deny"
    protocol                   = "*"
    source_port_range          = "*"
    destination_port_range     = "*"
    source_address_prefix      = "*"
    destination_address_prefix = "*"
  }
}

resource "azurerm_subnet_network_security_group_association" "group" {
  subnet_id                 = azurerm_subnet.group.id
  network_security_group_id = azurerm_network_security_group.group.id
}

resource "azurerm_proximity_placement_group" "group" {
  count               = var.proximity_placement ? 1 : 0
  name                = local.name
  location            = azurerm_resource_group.group.location
  resource_group_name = azurerm_resource_group.group.name
  tags                = local.tags
}

resource "azurerm_public_ip" "machine" {
  for_each = local.machines

  name                = "${local.name}-${each.key}"
  location            = azurerm_resource_group.group.location
  resource_group_name = azurerm_resource_group.group.name
  allocation_method   = "Static"
  sku                 = "Standard"
  tags                = local.tags
}

resource "azurerm_network_interface" "machine" {
  for_each = local.machines

  name                           = "${local.name}-${each.key}"
  location                       = azurerm_resource_group.group.location
  resource_group_name            = azurerm_resource_group.group.name
  accelerated_networking_enabled = true
  tags                           = local.tags

  ip_configuration {
    name                          = "primary"
    subnet_id                     = azurerm_subnet.group.id
    private_ip_address_allocation = "Dynamic"
    public_ip_address_id          = azurerm_public_ip.machine[each.key].id
  }
}

resource "azurerm_linux_virtual_machine" "machine" {
  for_each = local.machines

  name                         = "${local.name}-${each.key}"
  location                     = azurerm_resource_group.group.location
  resource_group_name          = azurerm_resource_group.group.name
  size                         = each.value.type
  admin_username               = var.ssh_user
  network_interface_ids        = [azurerm_network_interface.machine[each.key].id]
  proximity_placement_group_id = var.proximity_placement ? azurerm_proximity_placement_group.group[0].id : null
  tags                         = merge(local.tags, { "xp-role" = each.value.role })

  admin_ssh_key {
    username   = var.ssh_user
    public_key = var.ssh_public_key
  }

  os_disk {
    caching              = "ReadWrite"
    storage_account_type = "Premium_LRS"
    disk_size_gb         = var.disk_size_gb
  }

  source_image_reference {
    publisher = "Canonical"
    offer     = "ubuntu-24_04-lts"
    sku       = "server"
    version   = "latest"
  }
}
