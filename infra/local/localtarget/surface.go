package localtarget

import (
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

var _ target.SurfaceServer = (*Target)(nil)

// ServesSurface refuses the security surface settings the local target
// does not serve (servesSurface).
func (t *Target) ServesSurface(r *planner.Row) error { return servesSurface(r, t.apache != nil) }

// servesSurface says why the local target, running Apache Kafka or the
// embedded cluster (apache false), cannot serve r's security surface, or
// nil: target.ServesSurface's rules, with the gateways' client legs
// taking tls_key on the embedded cluster too (each gateway is a process
// of its own with a certificate of the row's key) and every client
// fetching OAUTHBEARER tokens from the group's identity provider on
// loopback.
func servesSurface(r *planner.Row, apache bool) error {
	return target.ServesSurface(r, target.SurfaceLimits{Apache: apache, Target: "the local target",
		OnKafka: "a TARGET.yaml with kafka:", GatewayKeys: true})
}
