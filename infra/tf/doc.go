// Package tf drives the Terraform modules under terraform/ through
// terraform-exec: it finds or installs terraform, applies and destroys one
// infrastructure group in a working directory of its own, and reads the
// group's outputs into an Inventory.
package tf
