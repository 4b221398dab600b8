package target

import (
	"strconv"

	"github.com/xp-bench/xp/planner"
)

// SurfaceSettings lists a row's settings of the security surface beyond
// its mode (inter_broker_security, sasl_mechanism, authorizer, acls,
// tls_version, tls_cipher, tls_key, connection_churn) that are away from
// their defaults, as "field level", e.g. ["sasl_mechanism plain",
// "connection_churn 1000"]; nil for a row at every default.
func SurfaceSettings(r *planner.Row) []string {
	var out []string
	add := func(field, v, def string) {
		if v != def {
			out = append(out, field+" "+v)
		}
	}
	add("inter_broker_security", r.InterBrokerSecurity, planner.SecurityPlaintext)
	add("sasl_mechanism", r.SASLMechanism, planner.SASLScramSHA512)
	add("authorizer", r.Authorizer, planner.AuthorizerNone)
	add("acls", strconv.Itoa(r.ACLs), "0")
	add("tls_version", r.TLSVersion, planner.TLSDefault)
	add("tls_cipher", r.TLSCipher, planner.TLSDefault)
	add("tls_key", r.TLSKey, planner.TLSKeyECDSAP256)
	add("connection_churn", strconv.Itoa(r.ConnectionChurn), "0")
	return out
}

// SurfaceServer is a Target that serves some of the security surface
// beyond the mode (SurfaceSettings). ServesSurface refuses a row it
// cannot serve, naming the setting and why, before anything is up. The
// runner refuses every row with a setting away from its default on a
// target that is not a SurfaceServer, so that no setting is silently
// ignored.
type SurfaceServer interface {
	ServesSurface(r *planner.Row) error
}
