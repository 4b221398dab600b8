package analysis

import (
	"encoding/json"
	"testing"
)

func TestTelemetryGapsFromEnvironment(t *testing.T) {
	for env, want := range map[string]string{
		`{"security":"tls"}`: "",
		`{"telemetry_gaps":[{"host":"client-0","missing_s":12,"window_s":30},{"host":"gateway-1","missing_s":2.5,"window_s":30}]}`: "client-0 12.0 s of 30.0 s; gateway-1 2.5 s of 30.0 s",
		`not json`: "",
	} {
		if got := telemetryGaps(json.RawMessage(env)); got != want {
			t.Errorf("%s: %q, want %q", env, got, want)
		}
	}
}
