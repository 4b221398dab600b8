package main

import (
	"io"

	"github.com/xp-bench/xp/infra/existing"
	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/infra/target"
)

// platforms are the platforms this xp can provision, each with the opener
// of its target. The remote ones log to log (the campaign log).
func platforms(st *state, log io.Writer) target.Platforms {
	open := remote.Opener(remote.OpenOptions{Log: log, Prices: defaultPrices(), Getenv: st.getenv, Terraform: st.terraform})
	return target.Platforms{"local": localtarget.Opener(st.getenv), "hosts": open, "aws": open, "azure": open,
		"existing": existing.Opener(existing.Options{Log: log, Getenv: st.getenv})}
}
