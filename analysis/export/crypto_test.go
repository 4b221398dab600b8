package export

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The record layer and cipher each attempt's gateway ran are columns of
// runs.csv and of the report's run table; rows without a gateway leave
// them empty.
func TestRunsShowGatewayCrypto(t *testing.T) {
	d := testDataset()
	for i := range d.Runs {
		switch d.Level(&d.Runs[i], "security") {
		case "tls":
			d.Runs[i].GatewayRecordLayer, d.Runs[i].GatewayCipher = "crypto/tls", "crypto/cipher"
		case "mtls":
			d.Runs[i].GatewayRecordLayer, d.Runs[i].GatewayCipher = "tlsrec", "aesgcm-vaes"
		}
	}
	dir := t.TempDir()
	analyseInto(t, d, dir)
	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	rl, ci, sec := slices.Index(runs[0], "gateway_record_layer"), slices.Index(runs[0], "gateway_cipher"), slices.Index(runs[0], "security")
	if rl < 0 || ci < 0 || sec < 0 {
		t.Fatalf("runs.csv header %v lacks gateway_record_layer, gateway_cipher or security", runs[0])
	}
	want := map[string][2]string{"plaintext": {"", ""}, "tls": {"crypto/tls", "crypto/cipher"}, "mtls": {"tlsrec", "aesgcm-vaes"}}
	for _, r := range runs[1:] {
		if w := want[r[sec]]; r[rl] != w[0] || r[ci] != w[1] {
			t.Errorf("%s run: record layer %q cipher %q, want %q %q", r[sec], r[rl], r[ci], w[0], w[1])
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<th>gateway crypto</th>", "tlsrec + aesgcm-vaes", "crypto/tls + crypto/cipher"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}
