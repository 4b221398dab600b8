package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/golden"
)

// TestSurfaceAndClientModesGolden renders the surface tables and the
// clients' mode penalties from a bench output with every dimension (one
// the renderer does not know among them), churn rows with and without a
// baseline's reconnect p99, three clients (librdkafka with a mode the
// others lack) and a failed benchmark line.
func TestSurfaceAndClientModesGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/surface.out")
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := parse(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeClientModes(&b, rows)
	writeSurface(&b, rows)
	golden.Check(t, "surface.golden.md", b.Bytes())
}

func TestSurfaceRows(t *testing.T) {
	const pkg = "pkg: github.com/xp-bench/xp/runner/perftest\n"
	cases := []struct {
		name   string
		in     string
		want   []string // substrings of the output
		absent []string
	}{
		{name: "nothing measured", in: pkg + "BenchmarkProducerPerformance/apache/tls/xp_loadgen-2 1 1 ns/op 5 msg/s\n",
			absent: []string{"security surface", "client's security"}},
		{name: "another package's benchmark of that name",
			in:     "pkg: github.com/xp-bench/xp/infra/local\nBenchmarkSecuritySurface/tls/1.2/vs_default-2 1 1 ns/op 5 msg/s\n",
			absent: []string{"security surface"}},
		{name: "a row without vs_ is not a comparison", in: pkg + "BenchmarkSecuritySurface/tls/1.2-2 1 1 ns/op 5 msg/s\n",
			absent: []string{"security surface"}},
		{name: "missing metrics are dashes", in: pkg + "BenchmarkSecuritySurface/tls/1.3/vs_default-2 1 1 ns/op 30000 msg/s\n",
			want: []string{"### tls", "| `1.3` | `default` | 30000 | – | – | – | – | – | – |"}},
		{name: "known dimensions first", in: pkg +
			"BenchmarkSecuritySurface/zeta/a/vs_b-2 1 1 ns/op 1 msg/s\n" +
			"BenchmarkSecuritySurface/connection_churn/tls_100/vs_tls_0-2 1 1 ns/op 1 msg/s\n" +
			"BenchmarkSecuritySurface/sasl_mechanism/plain/vs_tls-2 1 1 ns/op 1 msg/s\n",
			want: []string{"### sasl_mechanism\n\nEach `sasl_mechanism`", "### connection_churn", "### zeta\n\n| setting"}},
		{name: "a client without plaintext has no time added", in: pkg +
			"BenchmarkClients/modes/librdkafka/tls-2 1 1 ns/op 20000 msg/s 4 client_cpu_us/msg 10 tput_penalty_%\n",
			want: []string{"| librdkafka | tls | 20000 | 10.0% | – | – | 4.00 | – |"}},
		{name: "rate and saturated rows are not modes", in: pkg +
			"BenchmarkClients/rate/java/10k-2 1 1 ns/op 0.1 rate_err_%\nBenchmarkClients/modes/java-2 1 1 ns/op 5 msg/s\n",
			absent: []string{"client's security"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, _, err := parse(strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			writeClientModes(&b, rows)
			writeSurface(&b, rows)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, a := range c.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("output has %q:\n%s", a, b.String())
				}
			}
		})
	}
}
