// Package plans holds xp's ready factor specs, their expanded campaigns and
// the price table `xp plan show` estimates cost from. Only the price table
// is compiled in, so `xp plan show` works outside a checkout.
package plans

import _ "embed"

// Prices is prices.yaml.
//
//go:embed prices.yaml
var Prices []byte
