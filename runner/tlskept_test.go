package runner

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// tls12Target is the local target whose first replicate of a gateway row
// gains, while its load's measured window is open, a TLS 1.2 client: kcat
// held to TLS 1.2 by OpenSSL's own configuration, asking the gateway for
// metadata. A crypto fast gateway leaves that client's legs to crypto/tls.
//
// Its third replicate's second reading of the gateway's counters fails, as
// when the gateway's metrics endpoint cannot be reached.
type tls12Target struct {
	*localtarget.Target
	opensslConf string
	kcat        chan error
	failNext    atomic.Bool
}

func (t *tls12Target) TLSKept(ctx context.Context, modeKey string) (gateway.TLSKept, error) {
	if t.failNext.Swap(false) {
		return nil, errors.New("the gateway's metrics endpoint went away")
	}
	return t.Target.TLSKept(ctx, modeKey)
}

func (t *tls12Target) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	if !l.Warmup && l.Row.NeedsGateway() && l.Row.Replicate == 3 {
		defer t.failNext.Store(true)
	}
	if l.Warmup || !l.Row.NeedsGateway() || l.Row.Replicate != 1 {
		return t.Target.RunLoad(ctx, l)
	}
	done := make(chan error, 1)
	inner := l.Config.OnPhase
	l.Config.OnPhase = func(p string, ends time.Time) {
		inner(p, ends)
		if p == "measure" {
			go func() {
				cmd := exec.CommandContext(ctx, "/usr/bin/kcat", "-F", l.Endpoint.ClientConfig, "-L", "-m", "10")
				cmd.Env = append(os.Environ(), "OPENSSL_CONF="+t.opensslConf)
				out, err := cmd.CombinedOutput()
				if err != nil {
					err = &kcatError{err, string(out)}
				}
				done <- err
			}()
		}
	}
	res, err := t.Target.RunLoad(ctx, l)
	select {
	case kerr := <-done: // within the attempt: its legs count for it
		t.kcat <- kerr
	case <-ctx.Done():
		t.kcat <- ctx.Err()
	}
	return res, err
}

type kcatError struct {
	err error
	out string
}

func (e *kcatError) Error() string { return "kcat: " + e.err.Error() + "\n" + e.out }

// A crypto fast gateway row whose TLS 1.2 client's legs crypto/tls kept
// records them, by leg and reason, in its attempt's environment, and
// runs.csv shows them; its next replicate, without such a client, records
// that none were kept and shows nothing; a replicate whose counters could
// not be read records why and shows "not counted".
func TestGatewayTLSKeptRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	conf := filepath.Join(dir, "openssl-tls12.cnf")
	if err := os.WriteFile(conf, []byte(`openssl_conf = xp_conf
[xp_conf]
ssl_conf = xp_ssl
[xp_ssl]
system_default = xp_tls12
[xp_tls12]
MaxProtocol = TLSv1.2
`), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := `campaign: kept
seed: 7
replicates: 3
treatment: security
baseline: plaintext
factors:
  security: [plaintext, proxy]
fixed:
  platform: local
  gateway_crypto: fast
  brokers: 1
  partitions: 2
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 5
`
	plan := writePlan(t, dir, "kept", spec)
	tt := &tls12Target{Target: localtarget.New(filepath.Join(dir, "work")), opensslConf: conf, kcat: make(chan error, 4)}
	var stderr syncBuffer
	if _, err := Run(ctx, Options{Platforms: only(tt), Plan: plan, Stderr: &stderr, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	close(tt.kcat)
	kcats := 0
	for err := range tt.kcat {
		kcats++
		if err != nil {
			t.Fatalf("the TLS 1.2 client: %v", err)
		}
	}
	if kcats != 1 {
		t.Fatalf("the TLS 1.2 client ran %d times, want once", kcats)
	}

	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	atts, err := s.Attempts(ctx)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	type csvWant struct{ kept, layer string }
	want := map[string]csvWant{} // run → what runs.csv must say
	for _, a := range atts {
		var env attemptEnv
		if err := json.Unmarshal(a.Environment, &env); err != nil {
			t.Fatal(err)
		}
		if a.Outcome != results.OutcomeDone {
			t.Errorf("%s: %s %v %s", a.Run, a.Outcome, a.Reasons, a.Error)
		}
		gc := env.GatewayCrypto
		switch {
		case env.Security == "plaintext":
			if gc != nil {
				t.Errorf("%s: a direct row records gateway crypto %s", a.Run, a.Environment)
			}
			want[a.Run] = csvWant{}
		case gc == nil || gc.RecordLayer != gateway.RecordLayerTLSRec:
			t.Errorf("%s: environment %s: want tlsrec with its tls_kept counted", a.Run, a.Environment)
		case strings.HasSuffix(a.Run, "-r3"):
			if gc.TLSKept != nil || !strings.Contains(gc.TLSKeptError, "metrics endpoint went away") {
				t.Errorf("%s (counters unread): environment %s, want tls_kept_error and no tls_kept", a.Run, a.Environment)
			}
			want[a.Run] = csvWant{analysis.TLSKeptNotCounted, "tlsrec"}
		case strings.HasSuffix(a.Run, "-r1"):
			if gc.TLSKept == nil {
				t.Fatalf("%s: environment %s: no tls_kept", a.Run, a.Environment)
			}
			k := *gc.TLSKept
			n := k[gateway.LegClient]["not_tls13_aesgcm"]
			if n < 1 || k.Total() != n {
				t.Errorf("%s (TLS 1.2 client): tls_kept %v, want only client legs not_tls13_aesgcm", a.Run, k)
			}
			t.Logf("%s (TLS 1.2 client): tls_kept %s", a.Run, k)
			want[a.Run] = csvWant{k.String(), "tlsrec+crypto/tls"}
		default:
			if gc.TLSKept == nil || len(*gc.TLSKept) != 0 || !strings.Contains(string(a.Environment), `"tls_kept":{}`) {
				t.Errorf("%s (no TLS 1.2 client): environment %s, want tls_kept {}", a.Run, a.Environment)
			}
			want[a.Run] = csvWant{"", "tlsrec"}
		}
	}
	if len(want) != 6 {
		t.Fatalf("attempts of %d runs, want 6", len(want))
	}
	for _, line := range []string{"crypto/tls, not tlsrec, carried", "were not counted: the gateway's metrics endpoint went away"} {
		if !strings.Contains(stderr.String(), line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr.String())
		}
	}

	d, err := analysis.Load(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	res, err := analysis.Analyse(d, analysis.Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := export.Write(out, res); err != nil {
		t.Fatal(err)
	}
	rows := readRunsCSV(t, filepath.Join(out, "runs.csv"))
	run, kc, rl := slices.Index(rows[0], "run"), slices.Index(rows[0], "gateway_tls_kept"), slices.Index(rows[0], "gateway_record_layer")
	if kc < 0 || rl < 0 {
		t.Fatalf("runs.csv header %v lacks gateway_tls_kept or gateway_record_layer", rows[0])
	}
	got := map[string]csvWant{}
	for _, r := range rows[1:] {
		got[r[run]] = csvWant{r[kc], r[rl]}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runs.csv gateway_tls_kept and gateway_record_layer %v, want %v", got, want)
	}
}

func readRunsCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %d rows, %v", path, len(rows), err)
	}
	return rows
}
