package runner

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := writePlan(t, dir, "good", smallSpec("good", []string{"plaintext", "tls"}, 1))
	other := writePlan(t, dir, "other", smallSpec("other", []string{"plaintext", "mtls"}, 1))
	awsPlan := writePlan(t, dir, "awsplan", strings.Replace(smallSpec("awsplan", []string{"plaintext", "tls"}, 1),
		"platform: local", "platform: aws", 1))
	manyPartitions := writePlan(t, dir, "parts", strings.Replace(smallSpec("parts", []string{"plaintext", "tls"}, 1),
		"partitions: 2", "partitions: 1000\n  topics: 1000", 1))

	invalid := filepath.Join(dir, "invalid.jsonl")
	b, _ := os.ReadFile(good)
	os.WriteFile(invalid, []byte(strings.Replace(string(b), `"acks":"all"`, `"acks":"most"`, 1)), 0o644)
	notJSON := filepath.Join(dir, "notjson.jsonl")
	os.WriteFile(notJSON, []byte("{\"campaign\": \n"), 0o644)
	malformed := filepath.Join(dir, "malformed.yaml")
	os.WriteFile(malformed, []byte("platform: [aws\n"), 0o644)
	aws := filepath.Join(dir, "aws.yaml")
	os.WriteFile(aws, []byte("platform: aws\nregion: us-east-1\n"), 0o644)
	mars := filepath.Join(dir, "mars.yaml")
	os.WriteFile(mars, []byte("# a target\nplatform: mars\n"), 0o644)
	list := filepath.Join(dir, "list.yaml")
	os.WriteFile(list, []byte("- platform: local\n"), 0o644)
	noPlatform := filepath.Join(dir, "noplatform.yaml")
	os.WriteFile(noPlatform, []byte("region: x\n"), 0o644)

	// A db from a newer xp.
	newer := filepath.Join(dir, "newer.db")
	{
		s, err := results.Open(ctx, newer)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		// Bump the version with a second, raw writer of the schema table.
		bumpSchema(t, newer)
	}
	// A db that holds a different plan, with progress.
	otherDB := filepath.Join(dir, "other.db")
	{
		s, err := results.Open(ctx, otherDB)
		if err != nil {
			t.Fatal(err)
		}
		p, err := readPlan(other)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Register(ctx, results.Campaign{Name: "other", Plan: p.bytes, Target: "local"}, p.storeRows()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordAttempt(ctx, p.rows[0].Run, time.Now(), nil, results.Evidence{Outcome: results.OutcomeDone}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}

	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"missing plan", Options{Platforms: localPlatforms, Plan: filepath.Join(dir, "nope.jsonl")}, "no such file"},
		{"invalid plan", Options{Platforms: localPlatforms, Plan: invalid}, "invalid.jsonl:1: acks"},
		{"plan not JSON", Options{Platforms: localPlatforms, Plan: notJSON}, "notjson.jsonl:1"},
		{"missing target file", Options{Platforms: localPlatforms, Plan: good, Target: filepath.Join(dir, "nope.yaml")}, "no such file"},
		{"malformed target file", Options{Platforms: localPlatforms, Plan: good, Target: malformed}, "malformed.yaml:1: not valid YAML"},
		{"platform without a target", Options{Platforms: localPlatforms, Plan: good, Target: aws}, `aws.yaml:1: platform "aws" has no target in this xp`},
		{"unknown platform", Options{Platforms: localPlatforms, Plan: good, Target: mars}, `mars.yaml:2: platform: unknown platform "mars"`},
		{"target without platform", Options{Platforms: localPlatforms, Plan: good, Target: noPlatform}, "noplatform.yaml: no platform"},
		{"target file not a mapping", Options{Platforms: localPlatforms, Plan: good, Target: list}, "list.yaml:1: want a mapping"},
		{"no platforms handed in", Options{Plan: good}, "--target local: this xp has no local target"},
		{"unwritable db path", Options{Platforms: localPlatforms, Plan: good, DB: filepath.Join(good, "c.db")}, "cannot write campaign database"},
		{"newer schema db", Options{Platforms: localPlatforms, Plan: good, DB: newer}, fmt.Sprintf("schema version %d", results.SchemaVersion+1)},
		{"different plan in db", Options{Platforms: localPlatforms, Plan: good, DB: otherDB}, "different plan"},
		{"progress without --resume", Options{Platforms: localPlatforms, Plan: other, DB: otherDB}, "add --resume"},
		{"max attempts zero", Options{Platforms: localPlatforms, Plan: good, MaxAttempts: -1}, "--max-attempts"},
		{"rows for a platform the target is not", Options{Platforms: localPlatforms, Plan: awsPlan}, "2 rows want platform aws"},
		{"more partitions than the load generator drives", Options{Platforms: localPlatforms, Plan: manyPartitions}, "the load generator refuses it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := dirSnapshot(t, dir)
			var stderr syncBuffer
			tc.o.Stderr = &stderr
			_, err := Run(ctx, tc.o)
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("err %v, want bad input", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("message %q does not contain %q", err, tc.want)
			}
			if after := dirSnapshot(t, dir); !reflect.DeepEqual(before, after) {
				t.Fatalf("refused run changed files:\nbefore %v\nafter  %v", before, after)
			}
			if stderr.String() != "" {
				t.Fatalf("refused run printed progress: %q", stderr.String())
			}
		})
	}
}

func bumpSchema(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO schema_version (version, applied) VALUES (?, 'future')`, results.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
}

// The local target runs rows through xp's gateway: proxy, encrypt and
// field_encrypt next to a direct baseline, on the row's gateway transport.
// The cluster and the gateways run in processes of their own: telemetry
// samples each, and gateway rows get their gateway CPU per message. Every
// attempt says it measured kfake, at its module version; neither its group
// nor the infra events' group key claims a Kafka version, and neither do
// the run log (which says once, before starting, that kfake runs instead
// of the rows' kafka_version), cells.csv, runs.csv or the report.
func TestGatewayRowsRunLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	spec := smallSpec("gw", []string{"plaintext", "proxy", "encrypt", "field_encrypt"}, 1) +
		"  encoding: json\n  gateway_transport: mtls\n"
	plan := writePlan(t, dir, "gw", spec)
	var stderr syncBuffer
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	checkNamesKfake(t, stderr.String(), DefaultDB(plan))
	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, _ := s.Attempts(ctx)
	modes := map[string]bool{}
	kfake := target.KfakeBroker()
	raw, err := sql.Open("sqlite", "file:"+DefaultDB(plan)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var keys string
	if err := raw.QueryRowContext(ctx, `SELECT group_concat(DISTINCT group_key) FROM infra WHERE group_key != ''`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if want := "local brokers=1 kafka_version="; !strings.HasPrefix(keys, want) || strings.Contains(keys, "kafka=") {
		t.Errorf("infra group keys %q, want %q and no Kafka version claimed", keys, want+"...")
	}
	for _, a := range atts {
		var env struct {
			Mode   string
			Group  string
			Broker *target.Broker
		}
		json.Unmarshal(a.Environment, &env)
		modes[env.Mode] = true
		if env.Broker == nil || env.Broker.Kind != target.BrokerKfake || env.Broker.Version != kfake.Version || env.Broker.Java != "" {
			t.Errorf("%s: broker %+v, want kfake %s", env.Mode, env.Broker, kfake.Version)
		}
		if want := "local brokers=1 kfake=" + kfake.Version + " "; !strings.HasPrefix(env.Group, want) || strings.Contains(env.Group, "kafka=") {
			t.Errorf("%s: group %q, want it to start %q and name no Kafka version", env.Mode, env.Group, want)
		}
		if a.Outcome != results.OutcomeDone || a.Metrics["consumed"] == 0 || a.Metrics["errors"] != 0 {
			t.Errorf("%s: %s %v %s, consumed %v", env.Mode, a.Outcome, a.Reasons, a.Error, a.Metrics["consumed"])
		}
		gwCPU, hasCPU := a.Metrics["gateway_cpu_us_per_msg"]
		has := env.Mode != "plaintext" // a gateway in the path
		switch {
		case !hasCPU:
			t.Errorf("%s: no gateway_cpu_us_per_msg", env.Mode)
		case !has && gwCPU != 0:
			t.Errorf("%s: gateway_cpu_us_per_msg %v on a direct row, want 0", env.Mode, gwCPU)
		case has && (gwCPU <= 0 || gwCPU > 10_000):
			t.Errorf("%s: gateway_cpu_us_per_msg %v, want a positive CPU time per message", env.Mode, gwCPU)
		}
		if c := a.Metrics["host_cpu_broker_us_per_msg"]; c <= 0 || c > 100_000 {
			t.Errorf("%s: host_cpu_broker_us_per_msg %v, want the embedded cluster's process's positive CPU time per message", env.Mode, c)
		}
		tel, err := s.Telemetry(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		cpu, rss := map[string]float64{}, map[string]float64{}
		for _, smp := range tel {
			switch smp.Metric {
			case MetricCPU:
				cpu[smp.Host] = max(cpu[smp.Host], smp.Value)
			case MetricRSS:
				rss[smp.Host] = max(rss[smp.Host], smp.Value)
			}
		}
		busy := []string{target.HostClient, localtarget.HostCluster}
		if has {
			busy = append(busy, localtarget.HostGateway) // idle while a direct row runs
		}
		for _, host := range busy {
			if cpu[host] <= 0 {
				t.Errorf("%s: telemetry has no CPU time for host %q (%v)", env.Mode, host, cpu)
			}
		}
		for _, host := range []string{target.HostClient, localtarget.HostCluster, localtarget.HostGateway} {
			if rss[host] <= 0 {
				t.Errorf("%s: telemetry has no memory for host %q (%v)", env.Mode, host, rss)
			}
		}
	}
	for _, m := range []string{"plaintext", "proxy.mtls", "encrypt.mtls", "field_encrypt.mtls"} {
		if !modes[m] {
			t.Errorf("no attempt ran on %s (ran %v)", m, modes)
		}
	}
}

// Rows the local target cannot serve are refused before anything starts.
func TestLocalTargetRefusesRows(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		want  string
	}{
		{"foreign gateway", "  gateway_kind: kroxylicious\n", "gateway_kind kroxylicious: the local target runs Kroxylicious from a TARGET.yaml (platform: local) with a gateway.kroxylicious section"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writePlan(t, dir, "gwr", smallSpec("gwr", []string{"plaintext", "proxy"}, 1)+tc.extra)
			before := dirSnapshot(t, dir)
			_, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan})
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want bad input with %q", err, tc.want)
			}
			if after := dirSnapshot(t, dir); !reflect.DeepEqual(before, after) {
				t.Fatal("refused plan changed files")
			}
		})
	}
}

func TestRunStoresEvidenceAndRefusesRerun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	plan := writePlan(t, dir, "happy", smallSpec("happy", []string{"plaintext", "tls"}, 1))
	db := DefaultDB(plan)
	var stderr syncBuffer
	sum, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr, WarmupCap: briefWarmup})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if sum.DB != db || sum.Ran != 2 || sum.Rows[results.Done] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	for _, phase := range []string{"phase=provision", "phase=warmup", "phase=measure", "phase=drain", "phase=write", "phase=teardown"} {
		if !strings.Contains(stderr.String(), phase) {
			t.Errorf("progress has no %q line:\n%s", phase, stderr.String())
		}
	}

	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := os.ReadFile(plan)
	if c.Name != "happy" || c.Seed != 7 || c.PlanSHA256 != results.PlanSHA256(pb) || c.Target != "local" || c.XPVersion == "" {
		t.Fatalf("campaign %+v", c)
	}
	var host map[string]any
	if err := json.Unmarshal(c.Host, &host); err != nil || host["cpus"] == nil {
		t.Fatalf("host environment %s: %v", c.Host, err)
	}
	atts, err := s.Attempts(ctx)
	if err != nil || len(atts) != 2 {
		t.Fatalf("attempts %v, %v", atts, err)
	}
	for _, a := range atts {
		if a.Outcome != results.OutcomeDone || a.Number != 1 || a.Ended.Before(a.Started) {
			t.Errorf("attempt %+v", a)
		}
		for _, m := range []string{"publish_rate", "published", "consumed", "publish_ms_p99", "e2e_ms_p9999",
			"send_delay_ms_max", "client_cpu_s", "client_cpu_us_per_msg", "client_rss_max_mib"} {
			if _, ok := a.Metrics[m]; !ok {
				t.Errorf("attempt %d has no metric %s", a.ID, m)
			}
		}
		if r := a.Metrics["publish_rate"]; r < 150 || r > 250 {
			t.Errorf("publish rate %v, want about 200", r)
		}
		hs, err := s.Histograms(ctx, a.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		whole, perSecond := 0, 0
		var wholeCount, secondsCount int64
		for _, h := range hs {
			dh, err := results.DecodeHistogram(h.Data)
			if err != nil {
				t.Fatalf("attempt %d histogram %s/%d: %v", a.ID, h.Kind, h.Second, err)
			}
			if h.Second == results.WholeRun {
				whole++
			} else {
				perSecond++
			}
			if h.Kind == results.KindPublish {
				if h.Second == results.WholeRun {
					wholeCount = dh.TotalCount()
				} else {
					secondsCount += dh.TotalCount()
				}
			}
		}
		if wholeCount == 0 || wholeCount != secondsCount || float64(wholeCount) != a.Metrics["published"] {
			t.Errorf("attempt %d: publish histogram counts whole %d, per second %d, published %v",
				a.ID, wholeCount, secondsCount, a.Metrics["published"])
		}
		if whole != 3 || perSecond < 3 {
			t.Errorf("attempt %d: %d whole-run and %d per-second histograms", a.ID, whole, perSecond)
		}
		ser, _ := s.Series(ctx, a.ID)
		tel, _ := s.Telemetry(ctx, a.ID)
		logs, _ := s.Logs(ctx, a.ID)
		if len(ser) < 2 || len(tel) < 4 || len(logs) != 2 {
			t.Errorf("attempt %d: %d series points, %d telemetry samples, %d logs", a.ID, len(ser), len(tel), len(logs))
		}
	}
	events, _ := s.InfraEvents(ctx)
	if len(events) != 3 || events[0].Event != "up" || events[1].Event != "warmup" || events[2].Event != "down" {
		t.Errorf("infra events %+v", events)
	}
	if _, err := os.Stat(db + ".work"); !os.IsNotExist(err) {
		t.Errorf("the cluster's files (keys) outlive the run: %v", err)
	}

	// A second run without --resume is refused; with it there is nothing
	// left to do.
	before := dirSnapshot(t, dir)
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan}); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("rerun without --resume: %v", err)
	}
	if after := dirSnapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused rerun changed files")
	}
	sum, err = Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Resume: true})
	if err != nil || sum.Ran != 0 {
		t.Fatalf("resume of a finished campaign: ran %d, %v", sum.Ran, err)
	}

	st, err := ReadStatus(ctx, db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows.Total != 2 || st.Rows.Done != 2 || st.Attempts.Total != 2 || !st.Finished || st.Current != nil ||
		st.Writer != 0 || st.LeftS == nil || *st.LeftS != 0 || st.ETAS != nil || st.ElapsedS <= 0 {
		t.Fatalf("status %+v", st)
	}
}

// brokenTLS is the real local target with the tls mode's client config
// pointing at a CA file that does not exist, so tls rows fail at once,
// also after a restart.
type brokenTLS struct{ *localtarget.Target }

func (b brokenTLS) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	return breakTLS(b.Target.Up(ctx, g))
}

func (b brokenTLS) Restart(ctx context.Context, g target.Group) (target.Endpoints, error) {
	return breakTLS(b.Target.Restart(ctx, g))
}

func breakTLS(ep target.Endpoints, err error) (target.Endpoints, error) {
	if err != nil {
		return ep, err
	}
	m := ep.Modes["tls"]
	props, err := kafkaconf.ReadClientConfig(m.ClientConfig)
	if err != nil {
		return ep, err
	}
	props[kafkaconf.SSLCALocation] = filepath.Join(filepath.Dir(m.ClientConfig), "missing-ca.pem")
	broken := filepath.Join(filepath.Dir(m.ClientConfig), "broken-tls.properties")
	if err := kafkaconf.WriteClientConfig(broken, props); err != nil {
		return ep, err
	}
	m.ClientConfig = broken
	ep.Modes["tls"] = m
	return ep, nil
}

func TestFailedRowsRetriedUpToMaxAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	plan := writePlan(t, dir, "flaky", smallSpec("flaky", []string{"plaintext", "tls"}, 1))
	db := DefaultDB(plan)
	broken := brokenTLS{localtarget.New(filepath.Join(dir, "work"))}

	_, err := Run(ctx, Options{Platforms: only(broken), Plan: plan, MaxAttempts: 2, WarmupCap: briefWarmup})
	if !errors.Is(err, ErrUnfinished) {
		t.Fatalf("run with a broken mode: %v, want ErrUnfinished", err)
	}
	st := readDB(t, db)
	failedRun := st.runsIn(results.Failed)
	if len(failedRun) != 1 || len(st.runsIn(results.Done)) != 1 {
		t.Fatalf("states %v", st.states)
	}
	if got := st.attempts[failedRun[0]]; !reflect.DeepEqual(got, []results.Outcome{results.OutcomeFailed, results.OutcomeFailed}) {
		t.Fatalf("attempts of the failed row %v, want two failed", got)
	}
	// The retry ran on the group's services restarted, not on a group
	// provisioned again; each failed attempt keeps the target's logs.
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := s.InfraEvents(ctx)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Event)
	}
	if !slices.Equal(kinds, []string{"up", "warmup", "restart", "warmup", "down"}) {
		t.Fatalf("infra events %v, want up, warm-up, restart, warm-up, down", kinds)
	}
	atts, _ := s.Attempts(ctx)
	for _, a := range atts {
		if a.Run != failedRun[0] {
			continue
		}
		logs, err := s.Logs(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range logs {
			found = found || l.Name == "target/cluster.log" && strings.Contains(string(l.Text), "embedded cluster serving")
		}
		if !found {
			t.Errorf("failed attempt %d has no target/cluster.log with the cluster's start-up line", a.ID)
		}
	}
	s.Close()

	// --resume with the same limit leaves it; a higher limit on a sound
	// target retries it and keeps every attempt.
	sum, err := Run(ctx, Options{Platforms: only(broken), Plan: plan, Resume: true, MaxAttempts: 2})
	if !errors.Is(err, ErrUnfinished) || sum.Ran != 0 || sum.Skipped != 1 {
		t.Fatalf("resume at the limit: ran %d skipped %d, %v", sum.Ran, sum.Skipped, err)
	}
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Resume: true, MaxAttempts: 3, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("resume with a sound target: %v", err)
	}
	st = readDB(t, db)
	if len(st.runsIn(results.Done)) != 2 {
		t.Fatalf("states after retry %v", st.states)
	}
	want := []results.Outcome{results.OutcomeFailed, results.OutcomeFailed, results.OutcomeDone}
	if got := st.attempts[failedRun[0]]; !reflect.DeepEqual(got, want) {
		t.Fatalf("attempts %v, want %v", got, want)
	}
}

func TestInterruptRecordsAndResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writePlan(t, dir, "intr", smallSpec("intr", []string{"plaintext", "tls"}, 1))
	db := DefaultDB(plan)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel, as the first Ctrl-C does, once the first row measures.
	go func() {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if st, err := ReadStatus(context.Background(), db, time.Now()); err == nil &&
				st.Current != nil && st.Current.Phase == "measure" {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var stderr syncBuffer
	_, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr, WarmupCap: briefWarmup})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("run: %v, want ErrInterrupted\n%s", err, stderr.String())
	}
	st := readDB(t, db)
	var interrupted []string
	for run, outs := range st.attempts {
		if slices.Equal(outs, []results.Outcome{results.OutcomeInterrupted}) {
			interrupted = append(interrupted, run)
		}
	}
	if len(interrupted) != 1 || st.states[interrupted[0]] != results.Pending || len(st.runsIn(results.Pending)) != 2 {
		t.Fatalf("after interrupt: states %v attempts %v", st.states, st.attempts)
	}
	s, _ := results.OpenReadOnly(context.Background(), db)
	events, _ := s.InfraEvents(context.Background())
	s.Close()
	if len(events) != 3 || events[2].Event != "down" {
		t.Fatalf("infrastructure not brought down: %+v", events)
	}

	// Resume with --keep: the infrastructure is not taken down at the end
	// and its files stay.
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, Resume: true, Keep: true, WarmupCap: briefWarmup}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	s, _ = results.OpenReadOnly(context.Background(), db)
	events, _ = s.InfraEvents(context.Background())
	s.Close()
	if last := events[len(events)-2]; last.Event != "up" || len(events) != 5 {
		t.Fatalf("with --keep the last infra event but the warm-up is %q of %d, want up of 5", last.Event, len(events))
	}
	if _, err := os.Stat(db + ".work"); err != nil {
		t.Fatalf("with --keep the work directory is gone: %v", err)
	}
	st = readDB(t, db)
	if len(st.runsIn(results.Done)) != 2 {
		t.Fatalf("after resume: %v", st.states)
	}
	want := []results.Outcome{results.OutcomeInterrupted, results.OutcomeDone}
	if got := st.attempts[interrupted[0]]; !slices.Equal(got, want) {
		t.Fatalf("attempts of the interrupted row %v, want %v", got, want)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, "dry", smallSpec("dry", []string{"plaintext", "tls", "mtls"}, 2))
	before := dirSnapshot(t, dir)
	var stdout syncBuffer
	sum, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, DryRun: true, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 6 || !strings.Contains(stdout.String(), "would run 6 rows") {
		t.Fatalf("summary %+v, output %q", sum, stdout.String())
	}
	if after := dirSnapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatal("dry run changed files")
	}
}

func TestSpecKeptWithCampaign(t *testing.T) {
	dir := t.TempDir()
	specText := smallSpec("sp", []string{"plaintext", "tls"}, 1)
	planPath := writePlan(t, dir, "sp", specText)
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte(smallSpec("sp", []string{"plaintext", "mtls"}, 1)), 0o644)
	explicit := filepath.Join(dir, "explicit.yaml")
	os.WriteFile(explicit, []byte(specText), 0o644)
	p, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sibling bool
		spec    string
		want    string
		wantErr string
	}{
		{"no spec anywhere", false, "", "", ""},
		{"sibling spec that expands to the plan", true, "", specText, ""},
		{"explicit spec", false, explicit, specText, ""},
		{"explicit spec of another plan", false, other, "", "does not expand to the plan"},
		{"explicit spec missing", false, filepath.Join(dir, "nope.yaml"), "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sib := filepath.Join(dir, "sp.yaml")
			os.Remove(sib)
			if tc.sibling {
				os.WriteFile(sib, []byte(specText), 0o644)
			}
			got, err := specFor(p, tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("spec %q, err %v; want %q", got, err, tc.want)
			}
		})
	}
	// A mismatching --spec is bad input before anything starts.
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: planPath, Spec: other}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("run with a mismatching --spec: %v", err)
	}
}

func TestFindDB(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  string // file name, or "" for an error
		msg   string
	}{
		{"none", nil, "", "no campaign db"},
		{"one", []string{"a.db", "a.jsonl"}, "a.db", ""},
		{"two", []string{"a.db", "b.db"}, "", "choose one with --db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				os.WriteFile(filepath.Join(dir, f), nil, 0o644)
			}
			got, err := FindDB(dir)
			if tc.want == "" {
				if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err %v, want bad input with %q", err, tc.msg)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, tc.want) {
				t.Fatalf("%q, %v", got, err)
			}
		})
	}
}

// TestPartialSetRunsAgainWhole: a campaign interrupted between the members
// of a matched set resumes by running the whole set again, back to back on
// one cluster; the member that had finished keeps its earlier attempt as
// evidence, marked superseded, and analysis pairs only the new attempts.
func TestPartialSetRunsAgainWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writePlan(t, dir, "partial", smallSpec("partial", []string{"plaintext", "tls"}, 2))
	pl, err := readPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	first, second := pl.rows[0], pl.rows[1] // one matched set: adjacent in plan order
	if first.Pair != second.Pair || first.Replicate != second.Replicate {
		t.Fatalf("plan rows 1 and 2 are not one matched set: %+v %+v", first, second)
	}
	db := DefaultDB(plan)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt as the set's second member starts: its first is done.
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if st, err := ReadStatus(context.Background(), db, time.Now()); err == nil &&
				st.Current != nil && st.Current.Run == second.Run {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: io.Discard, WarmupCap: noWarmup}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("run: %v, want ErrInterrupted", err)
	}
	st := readDB(t, db)
	if st.states[first.Run] != results.Done || st.states[second.Run] != results.Pending {
		t.Fatalf("after the interrupt: %v %v", st.states, st.attempts)
	}

	// A dry run counts the finished member with the rows to run.
	var dry syncBuffer
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, Resume: true, DryRun: true,
		Stdout: &dry, Stderr: io.Discard}); err != nil || !strings.Contains(dry.String(), "would run 4 rows") {
		t.Fatalf("dry run: %v\n%s", err, dry.String())
	}
	var stderr syncBuffer
	if _, err := Run(context.Background(), Options{Platforms: localPlatforms, Plan: plan, Resume: true, Stderr: &stderr, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr.String())
	}
	if want := "matched set " + first.Pair + " replicate 1 was left partial: " + first.Run + " run again"; !strings.Contains(stderr.String(), want) {
		t.Errorf("resume does not say %q:\n%s", want, stderr.String())
	}
	s, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string][]results.Attempt{}
	for _, a := range atts {
		byRun[a.Run] = append(byRun[a.Run], a)
	}
	f, g := byRun[first.Run], byRun[second.Run]
	if len(f) != 2 || f[0].Outcome != results.OutcomeDone || f[0].Superseded == "" || f[1].Outcome != results.OutcomeDone || f[1].Superseded != "" {
		t.Fatalf("attempts of the finished member: %+v", f)
	}
	if len(g) != 2 || g[0].Outcome != results.OutcomeInterrupted || g[1].Outcome != results.OutcomeDone {
		t.Fatalf("attempts of the interrupted member: %+v", g)
	}
	// Back to back on one cluster: the set's new attempts are consecutive
	// and after the resume's one "up".
	if g[1].ID-f[1].ID != 1 && f[1].ID-g[1].ID != 1 {
		t.Errorf("the set's new attempts %d and %d are not back to back", f[1].ID, g[1].ID)
	}
	events, _ := s.InfraEvents(context.Background())
	var ups []time.Time
	for _, e := range events {
		if e.Event == "up" {
			ups = append(ups, e.Time)
		}
	}
	if len(ups) != 2 || f[1].Started.Before(ups[1]) || g[1].Started.Before(ups[1]) {
		t.Errorf("the set's new attempts did not both run on the resume's cluster: ups %v, started %v %v", ups, f[1].Started, g[1].Started)
	}
	d, err := analysis.Load(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Runs {
		if r.Run == first.Run && r.Final != (r.Attempt == 2) {
			t.Errorf("analysis: attempt %d of %s final=%v", r.Attempt, r.Run, r.Final)
		}
	}
}

// checkNamesKfake checks that a campaign on the embedded cluster names no
// Kafka version in its run log (stderr), but for one notice before it
// starts that kfake runs instead, nor in cells.csv, runs.csv or the report
// of its db: their kafka_version says kfake.
func checkNamesKfake(t *testing.T, log, db string) {
	t.Helper()
	v := planner.DefaultKafkaVersion
	if n := strings.Count(log, "runs the embedded cluster"); n != 1 || !strings.Contains(log, "make demo-kafka") {
		t.Errorf("the run log says %d times that the embedded cluster runs instead of kafka_version %s, want once with how to run Apache Kafka:\n%s", n, v, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, v) && !strings.Contains(line, "runs the embedded cluster") {
			t.Errorf("run log line names Kafka %s: %s", v, line)
		}
	}
	d, err := analysis.Load(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := analysis.Analyse(d, analysis.Options{Resamples: 200})
	if err != nil && !errors.Is(err, analysis.ErrNoHealthySet) {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := export.Write(out, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cells.csv", "runs.csv", "report.html"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), v) {
			t.Errorf("%s names Kafka %s", f, v)
		}
		if f != "report.html" && !strings.Contains(string(b), ",kfake,") {
			t.Errorf("%s has no kafka_version kfake:\n%s", f, b)
		}
	}
}
