package local

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
)

// Modes' JSON is the form `xp cluster local` has always printed (a
// bootstrap string, upstream and metrics), and reads back what it writes.
func TestModesJSON(t *testing.T) {
	tls := endpoint.Endpoint{Bootstrap: []string{"127.0.0.1:40001", "127.0.0.1:40002"}, ClientConfig: "/d/tls.properties"}
	for _, tc := range []struct {
		name  string
		modes Modes
		want  string
	}{
		{name: "nil", modes: nil, want: `null`},
		{name: "empty", modes: Modes{}, want: `{}`},
		{name: "direct", modes: Modes{"tls": tls},
			want: `{"tls":{"bootstrap":"127.0.0.1:40001,127.0.0.1:40002","client_config":"/d/tls.properties"}}`},
		{name: "no bootstrap", modes: Modes{"x": {ClientConfig: "/d/x.properties"}},
			want: `{"x":{"bootstrap":"","client_config":"/d/x.properties"}}`},
		{name: "gateway", modes: Modes{"proxy": {Bootstrap: []string{"127.0.0.1:40011"}, ClientConfig: "/d/proxy.properties", Upstream: &tls,
			Crypto:  &gateway.CryptoInfo{Requested: "std", RecordLayer: "crypto/tls", Cipher: "crypto/cipher"},
			Metrics: "http://127.0.0.1:40012/metrics"}},
			want: `{"proxy":{"bootstrap":"127.0.0.1:40011","client_config":"/d/proxy.properties",` +
				`"upstream":{"bootstrap":"127.0.0.1:40001,127.0.0.1:40002","client_config":"/d/tls.properties"},` +
				`"crypto":{"requested":"std","record_layer":"crypto/tls","cipher":"crypto/cipher"},"metrics":"http://127.0.0.1:40012/metrics"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.modes)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("JSON\n%s\nwant\n%s", b, tc.want)
			}
			var back Modes
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.modes) {
				t.Errorf("read back %+v, want %+v", back, tc.modes)
			}
		})
	}
	// As a field: omitempty leaves out no modes, as it did a nil map.
	b, _ := json.Marshal(struct {
		Modes Modes `json:"modes,omitempty"`
	}{})
	if string(b) != `{}` {
		t.Errorf("empty modes field: %s, want {}", b)
	}
}
