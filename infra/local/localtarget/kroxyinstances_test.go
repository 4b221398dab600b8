package localtarget

import (
	"reflect"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// Each gateway mode key gets row.Gateways Kroxylicious processes (at least
// one), named KEY or KEY-I, once however many rows share the key; direct
// rows get none; encrypts says whether a key encrypts.
func TestKroxyInstances(t *testing.T) {
	plain := planner.Row{Run: "p", Security: "plaintext"}
	proxy := planner.Row{Run: "a", Security: "proxy"}
	proxy2 := planner.Row{Run: "b", Security: "proxy", Gateways: 3}
	enc := planner.Row{Run: "c", Security: "encrypt", Gateways: 2}
	encMTLS := planner.Row{Run: "d", Security: "encrypt", GatewayTransport: "mtls"}
	for _, c := range []struct {
		name     string
		rows     []planner.Row
		insts    []kroxyInstance
		keys     []string
		encrypts bool
	}{
		{"direct rows only", []planner.Row{plain}, nil, nil, false},
		{"one gateway, the key's first row", []planner.Row{plain, proxy, proxy2}, []kroxyInstance{{key: "proxy", name: "proxy", row: proxy}}, []string{"proxy"}, false},
		{"several of a key", []planner.Row{enc, proxy}, []kroxyInstance{
			{key: "encrypt", name: "encrypt-1", row: enc}, {key: "encrypt", name: "encrypt-2", row: enc},
			{key: "proxy", name: "proxy", row: proxy}}, []string{"encrypt", "proxy"}, true},
		{"keys by transport", []planner.Row{encMTLS, proxy2}, []kroxyInstance{
			{key: "encrypt.mtls", name: "encrypt.mtls", row: encMTLS},
			{key: "proxy", name: "proxy-1", row: proxy2}, {key: "proxy", name: "proxy-2", row: proxy2}, {key: "proxy", name: "proxy-3", row: proxy2}},
			[]string{"encrypt.mtls", "proxy"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			insts, keys, encrypts := kroxyInstances(c.rows)
			if !reflect.DeepEqual(insts, c.insts) || !reflect.DeepEqual(keys, c.keys) || encrypts != c.encrypts {
				t.Errorf("got %+v %v %v\nwant %+v %v %v", insts, keys, encrypts, c.insts, c.keys, c.encrypts)
			}
		})
	}
}
