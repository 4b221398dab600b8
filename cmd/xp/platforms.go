package main

import (
	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
)

// platforms are the platforms this xp can provision, each with the opener
// of its target.
func platforms() target.Platforms {
	return target.Platforms{"local": localtarget.Open}
}
