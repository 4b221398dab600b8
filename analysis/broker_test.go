package analysis

import "testing"

// TestBrokerOf: the broker an attempt's environment records, as runs.csv
// and the report name it; a version guessed from API versions (a cluster
// someone else runs) is marked so.
func TestBrokerOf(t *testing.T) {
	cases := []struct {
		name, env, broker, runtime string
	}{
		{"apache", `{"broker":{"kind":"apache","version":"4.1.0","java":"openjdk 17","jvm_flags":["-Xmx1g"]}}`, "apache 4.1.0", "openjdk 17 -Xmx1g"},
		{"kfake", `{"broker":{"kind":"kfake","version":"v1.2.3"}}`, "kfake v1.2.3", ""},
		{"existing", `{"broker":{"kind":"existing","version":"v4.0","version_guessed":true,"cluster_id":"c1","broker_ids":[1,2]}}`,
			"existing v4.0 (guessed from ApiVersions)", ""},
		{"none recorded", `{"group":"local brokers=1 gateways=0 builtin"}`, "", ""},
		{"not json", `{`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, rt := brokerOf([]byte(tc.env))
			if b != tc.broker || rt != tc.runtime {
				t.Errorf("broker %q runtime %q, want %q %q", b, rt, tc.broker, tc.runtime)
			}
		})
	}
}
