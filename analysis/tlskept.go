package analysis

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A crypto fast gateway (record layer tlsrec) leaves a TLS leg to
// crypto/tls when a guard says so: a TLS 1.2 peer, an untested Go release,
// records crypto/tls already sent under the application keys. The runner
// records per attempt the legs kept (environment gateway_crypto.tls_kept);
// Load makes them Run.GatewayTLSKept, and such a run's record layer reads
// tlsrec+crypto/tls. These runs stay in their matched sets: they ran as
// their row asked (fast is tlsrec wherever its guards allow, as a fast
// deployment would run), and their effects and the report say how many
// sets hold one.
const (
	// TLSKeptNotCounted is Run.GatewayTLSKept of a run whose gateway ran
	// tlsrec but whose kept legs were not counted (a target that cannot
	// read its gateways' counters, a failed reading, or evidence older
	// than the count).
	TLSKeptNotCounted = "not counted"
	// recordLayerMixed is a tlsrec run's record layer when crypto/tls
	// kept some of its legs.
	recordLayerMixed = "+crypto/tls"
)

// gatewayCrypto reads what an attempt's gateway ran its cryptography on
// from its environment (runner's gateway_crypto): the record layer
// (tlsrec+crypto/tls when crypto/tls kept some of tlsrec's legs), the
// cipher, and the legs kept as leg:reason=N;... sorted, or
// TLSKeptNotCounted. All empty when it has none.
func gatewayCrypto(env json.RawMessage) (recordLayer, cipher, kept string) {
	var e struct {
		GatewayCrypto *struct {
			RecordLayer  string                       `json:"record_layer"`
			Cipher       string                       `json:"cipher"`
			TLSKept      *map[string]map[string]int64 `json:"tls_kept"`
			TLSKeptError string                       `json:"tls_kept_error"`
		} `json:"gateway_crypto"`
	}
	if json.Unmarshal(env, &e) != nil || e.GatewayCrypto == nil {
		return "", "", ""
	}
	g := e.GatewayCrypto
	recordLayer, cipher = g.RecordLayer, g.Cipher
	if recordLayer != "tlsrec" {
		return recordLayer, cipher, ""
	}
	if g.TLSKept == nil || g.TLSKeptError != "" {
		return recordLayer, cipher, TLSKeptNotCounted
	}
	var parts []string
	for _, leg := range slices.Sorted(maps.Keys(*g.TLSKept)) {
		rs := (*g.TLSKept)[leg]
		for _, reason := range slices.Sorted(maps.Keys(rs)) {
			if n := rs[reason]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s:%s=%d", leg, reason, n))
			}
		}
	}
	if len(parts) == 0 {
		return recordLayer, cipher, ""
	}
	return recordLayer + recordLayerMixed, cipher, strings.Join(parts, ";")
}

// KeptLegs reports whether crypto/tls is known to have carried some of the
// run's gateway TLS legs instead of tlsrec.
func (r *Run) KeptLegs() bool {
	return r.GatewayTLSKept != "" && r.GatewayTLSKept != TLSKeptNotCounted
}

// notesTLSKept adds report notes naming the analysed runs whose gateway
// legs fell back to crypto/tls, and those whose legs were not counted.
func (res *Result) notesTLSKept() {
	var kept, uncounted []string
	for i := range res.Dataset.Runs {
		r := &res.Dataset.Runs[i]
		if !r.Final {
			continue
		}
		switch {
		case r.KeptLegs():
			kept = append(kept, r.Run+" ("+r.GatewayTLSKept+")")
		case r.GatewayTLSKept == TLSKeptNotCounted:
			uncounted = append(uncounted, r.Run)
		}
	}
	if len(kept) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("gateway_crypto fast: in %d run(s) crypto/tls, not tlsrec, carried some of the gateway's TLS legs (leg:reason=legs): %s. They stay in their matched sets; effects.csv's note says how many sets of each estimate hold one, and runs.csv's gateway_tls_kept which runs.",
			len(kept), strings.Join(kept, ", ")))
	}
	if len(uncounted) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("gateway_crypto fast: the TLS legs crypto/tls kept instead of tlsrec were not counted in %d run(s) (this target cannot count them, or reading the gateway's counters failed): %s.",
			len(uncounted), strings.Join(uncounted, ", ")))
	}
}

// noteEffectsTLSKept appends to each effect's note how many of its matched
// sets hold a run with gateway TLS legs kept on crypto/tls. sets are the
// healthy sets per treatment.
func (res *Result) noteEffectsTLSKept(sets map[string][]matchedSet) {
	type key struct{ tr, scope string }
	kept, all := map[key]int{}, map[key]int{}
	for tr, ss := range sets {
		for _, s := range ss {
			c := res.Cells[s.cell]
			class := ScopeAllCapped
			if c.Saturating {
				class = ScopeAllMax
			}
			k := s.t.KeptLegs() || s.b.KeptLegs()
			for _, scope := range []string{c.Pair, class, ScopeAll} {
				all[key{tr, scope}]++
				if k {
					kept[key{tr, scope}]++
				}
			}
		}
	}
	for i := range res.Effects {
		e := &res.Effects[i]
		k := key{e.Treatment, e.Scope}
		n := kept[k]
		if n == 0 {
			continue
		}
		// The effect's own n: its pooled scope holds the sets of one rate
		// class, and all of them when there is one class only.
		note := fmt.Sprintf("%d of the %d healthy matched sets hold a run whose gateway TLS legs crypto/tls carried in part instead of tlsrec (runs.csv gateway_tls_kept)", n, all[k])
		if e.Note != "" {
			note = e.Note + "; " + note
		}
		e.Note = note
	}
}
