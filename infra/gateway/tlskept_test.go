package gateway

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// ParseTLSKept reads back what the gateway's metrics write, and refuses
// malformed series.
func TestParseTLSKept(t *testing.T) {
	var m metrics
	m.tlsKept[legClient][keptNotTLS13AESGCM].Add(3)
	m.tlsKept[legUpstream][keptSentUnderKeys].Add(1)
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		want       TLSKept
		err        string
	}{
		{"the gateway's own metrics", b.String(),
			TLSKept{"client": {"not_tls13_aesgcm": 3}, "upstream": {"sent_under_keys": 1}}, ""},
		{"all zero", "# HELP x\n" + tlsKeptMetric + `{leg="client",reason="no_secrets"} 0` + "\n", TLSKept{}, ""},
		{"no such series", "xp_gateway_connections_total 4\n", TLSKept{}, ""},
		{"no count", tlsKeptMetric + `{leg="client",reason="no_secrets"}` + "\n", nil, "line 1"},
		{"negative", tlsKeptMetric + `{leg="client",reason="no_secrets"} -1` + "\n", nil, "want a leg, a reason and a count"},
		{"no leg", "\n" + tlsKeptMetric + `{reason="no_secrets"} 2` + "\n", nil, "line 2"},
		{"unquoted label", tlsKeptMetric + `{leg=client,reason="no_secrets"} 2` + "\n", nil, `label "leg=client"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTLSKept(strings.NewReader(tc.text))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if !reflect.DeepEqual(m.kept(), TLSKept{"client": {"not_tls13_aesgcm": 3}, "upstream": {"sent_under_keys": 1}}) {
				t.Fatalf("metrics.kept() = %v", m.kept())
			}
		})
	}
}

func TestTLSKeptSince(t *testing.T) {
	before := TLSKept{"client": {"not_tls13_aesgcm": 2}, "upstream": {"untested_go": 5}}
	after := TLSKept{"client": {"not_tls13_aesgcm": 5, "no_secrets": 1}, "upstream": {"untested_go": 5}}
	for _, tc := range []struct {
		name          string
		later, before TLSKept
		want          TLSKept
		str           string
		total         int64
	}{
		{"legs kept in between", after, before, TLSKept{"client": {"not_tls13_aesgcm": 3, "no_secrets": 1}},
			"client:no_secrets=1;client:not_tls13_aesgcm=3", 4},
		{"nothing new", before, before, TLSKept{}, "", 0},
		{"from nothing", before, TLSKept{}, before, "client:not_tls13_aesgcm=2;upstream:untested_go=5", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.later.Since(tc.before)
			if !reflect.DeepEqual(got, tc.want) || got.String() != tc.str || got.Total() != tc.total {
				t.Errorf("Since = %v (%q, total %d); want %v (%q, total %d)", got, got.String(), got.Total(), tc.want, tc.str, tc.total)
			}
		})
	}
}
