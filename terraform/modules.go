// Package terraform carries xp's Terraform modules inside the binary, so an
// installed xp applies the same modules as the source tree (README.md is
// their contract).
package terraform

import "embed"

// Modules holds the aws, azure and hosts modules, each a directory of .tf
// files.
//
//go:embed aws/*.tf azure/*.tf hosts/*.tf
var Modules embed.FS

// Platforms lists the platforms with a module of their own, by name.
var Platforms = []string{"aws", "azure", "hosts"}
