package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// identityFields are plan-row fields that identify a run rather than
// describe its configuration.
var identityFields = map[string]bool{"campaign": true, "run": true, "cell": true, "pair": true,
	"replicate": true, "block": true, "order": true, "seed": true, "treatment": true, "baseline": true}

// ImportSpec is the campaign spec `xp import` records (as JSON, under the
// key "import"), so an imported campaign says how to analyse itself.
type ImportSpec struct {
	Format    string      `json:"format"` // "omb" or "csv"
	Files     []string    `json:"files"`
	Treatment string      `json:"treatment"`
	Baseline  string      `json:"baseline"`
	Metrics   []MetricDef `json:"metrics"`
}

// Load reads a campaign database into a Dataset: every row and attempt,
// metrics, and the whole-run publish and end-to-end histograms.
func Load(ctx context.Context, path string) (*Dataset, error) {
	st, err := results.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	c, err := st.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := st.Rows(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: rows: %w", path, err)
	}
	atts, err := st.Attempts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: attempts: %w", path, err)
	}
	hists, err := st.WholeRunHistograms(ctx, CurveKinds...)
	if err != nil {
		return nil, fmt.Errorf("%s: histograms: %w", path, err)
	}
	hosts, err := loadHosts(ctx, st, atts)
	if err != nil {
		return nil, fmt.Errorf("%s: telemetry: %w", path, err)
	}

	d := &Dataset{Campaign: c.Name, Seed: c.Seed}
	imp := importSpec(c.Spec)
	d.Imported = imp != nil
	if d.Info, err = campaignInfo(ctx, st, c, path, atts); err != nil {
		return nil, err
	}
	if d.Stage, err = loadStage(ctx, st, &d.Info); err != nil {
		return nil, fmt.Errorf("%s: two-stage design: %w", path, err)
	}
	metricNames, err := d.addRuns(path, rows, atts, hists, hosts)
	if err != nil {
		return nil, err
	}
	d.kafkaVersionAsMeasured()
	if d.Treatment == "" {
		d.Treatment = "security"
	}
	if imp != nil {
		d.Metrics = imp.Metrics
		if imp.Treatment != "" {
			d.Treatment = imp.Treatment
		}
		if imp.Baseline != "" {
			d.Baseline = imp.Baseline
		}
	} else {
		d.Metrics = NativeMetrics()
		slices.Sort(metricNames)
		d.Metrics = append(d.Metrics, ExtraMetrics(metricNames)...)
	}
	if !slices.Contains(d.Factors, d.Treatment) {
		return nil, fmt.Errorf("%s: the treatment factor %q is not a field of the plan rows (fields: %v)", path, d.Treatment, d.Factors)
	}
	return d, nil
}

// importSpec is the ImportSpec an imported campaign's spec holds, or nil
// for a campaign xp ran.
func importSpec(spec string) *ImportSpec {
	var wrapper struct {
		Import *ImportSpec `json:"import"`
	}
	if json.Unmarshal([]byte(spec), &wrapper) == nil && wrapper.Import != nil {
		return wrapper.Import
	}
	return nil
}

// campaignInfo is what the report says about the campaign: its identity
// and provenance, the infrastructure groups and brokers its attempts ran
// on, the recorded infrastructure cost, and the spec.
func campaignInfo(ctx context.Context, st *results.Store, c results.Campaign, path string, atts []results.Attempt) ([]Field, error) {
	info := []Field{{"campaign", c.Name}, {"database", filepath.Base(path)}, {"created", c.Created.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"seed", strconv.FormatInt(c.Seed, 10)}, {"xp version", c.XPVersion}, {"plan sha256", c.PlanSHA256},
		{"target", c.Target}, {"host", string(c.Host)}}
	groups, brokers := infrastructureOf(atts)
	if len(groups) > 0 {
		info = append(info, Field{"infrastructure groups", strings.Join(groups, "\n")})
	}
	if len(brokers) > 0 {
		info = append(info, Field{"brokers measured", strings.Join(brokers, "\n")})
	}
	events, err := st.InfraEvents(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: infrastructure events: %w", path, err)
	}
	var cost float64
	var warm []string
	for _, e := range events {
		cost += e.Cost
		if e.Event == "warmup" {
			warm = append(warm, warmupLine(e))
		}
	}
	if len(warm) > 0 {
		info = append(info, Field{"warm-ups", strings.Join(warm, "\n")})
	}
	if cost > 0 {
		info = append(info, Field{"infrastructure cost", fmt.Sprintf("$%.2f (machines up, as recorded when destroyed)", cost)})
	}
	return append(info, Field{"spec", c.Spec}), nil
}

// warmupLine describes a group's warm-up (the runner's "warmup" event):
// its length, its load and whether every mode was warm before the cap.
func warmupLine(e results.InfraEvent) string {
	var w struct {
		Stable bool `json:"stable"`
		LoadS  int  `json:"load_s"`
		Modes  []struct {
			Mode   string `json:"mode"`
			Stable bool   `json:"stable"`
		} `json:"modes"`
	}
	json.Unmarshal(e.Outputs, &w)
	state := "warm"
	if !w.Stable {
		var cold []string
		for _, m := range w.Modes {
			if !m.Stable {
				cold = append(cold, m.Mode)
			}
		}
		state = "cap reached, not warm: " + strings.Join(cold, ", ")
	}
	if e.Error != "" {
		state = "a load failed: " + e.Error
	}
	return fmt.Sprintf("%s: %.1f s, %d s of discarded load on %d modes, %s", e.Started.UTC().Format("15:04:05"), e.Duration.Seconds(), w.LoadS, len(w.Modes), state)
}

// infrastructureOf lists, sorted, the infrastructure groups the attempts
// ran on and the brokers they measured ("VERSION on RUNTIME").
func infrastructureOf(atts []results.Attempt) (groups, brokers []string) {
	for _, a := range atts {
		var env struct {
			Group string `json:"group"`
		}
		if json.Unmarshal(a.Environment, &env) == nil && env.Group != "" && !slices.Contains(groups, env.Group) {
			groups = append(groups, env.Group)
		}
		if b, rt := brokerOf(a.Environment); b != "" {
			line := b
			if rt != "" {
				line += " on " + rt
			}
			if !slices.Contains(brokers, line) {
				brokers = append(brokers, line)
			}
		}
	}
	slices.Sort(groups)
	slices.Sort(brokers)
	return groups, brokers
}

// loadStage reads the campaign's two-stage design, if it has one, and adds
// a line describing it to info.
func loadStage(ctx context.Context, st *results.Store, info *[]Field) (*StageDesign, error) {
	ts, ok, err := st.ReadTwoStage(ctx)
	if err != nil || !ok {
		return nil, err
	}
	stage := &StageDesign{HalfWidth: ts.HalfWidth, Metric: ts.Metric, Confidence: ts.Confidence,
		MaxReplicates: ts.MaxReplicates, FirstStage: ts.FirstStage, Decided: !ts.Decided.IsZero(), Replicates: map[string]int{}}
	for _, dec := range ts.Decisions {
		stage.Replicates[dec.Pair] = dec.Replicates
	}
	state := "second stage not decided yet"
	if stage.Decided {
		state = "second stage decided " + ts.Decided.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	*info = append(*info, Field{"two-stage design", fmt.Sprintf("half-width %g%% on %s at %g%%, first stage %d replicates, at most %d; %s",
		ts.HalfWidth, ts.Metric, ts.Confidence*100, ts.FirstStage, ts.MaxReplicates, state)})
	return stage, nil
}

// addRuns adds the runs of every plan row, in plan order, with the
// factors, treatment and baseline the rows name, and returns the names of
// the metrics the attempts recorded. Rows written before a factor first
// appeared get "" for it.
func (d *Dataset) addRuns(path string, rows []results.Row, atts []results.Attempt,
	hists map[int64]map[string][]byte, hosts map[int64][]HostUse) (metricNames []string, _ error) {
	byRun := map[string][]results.Attempt{}
	for _, a := range atts {
		byRun[a.Run] = append(byRun[a.Run], a)
	}
	factorSeen := map[string]bool{}
	metricSeen := map[string]bool{}
	for _, r := range rows {
		base, err := d.planRun(r, factorSeen)
		if err != nil {
			return nil, fmt.Errorf("%s: row %s: plan row: %w", path, r.Run, err)
		}
		ra := byRun[r.Run]
		runs := attemptRuns(base, ra, hists, hosts)
		d.Runs = append(d.Runs, runs...)
		for _, run := range runs {
			for name := range run.Metrics {
				if !metricSeen[name] {
					metricSeen[name] = true
					metricNames = append(metricNames, name)
				}
			}
		}
	}
	for i := range d.Runs {
		for len(d.Runs[i].Factors) < len(d.Factors) {
			d.Runs[i].Factors = append(d.Runs[i].Factors, "")
		}
	}
	return metricNames, nil
}

// planRun is a plan row as a Run without an attempt: its identity and its
// factor values in d.Factors order. Factors first seen in this row are
// added to d.Factors (factorSeen tracks them), and the first treatment and
// baseline named set d's.
func (d *Dataset) planRun(r results.Row, factorSeen map[string]bool) (Run, error) {
	fields, err := orderedFields(r.Plan)
	if err != nil {
		return Run{}, err
	}
	vals := map[string]string{}
	for _, f := range fields {
		switch f.Name {
		case "treatment":
			if d.Treatment == "" {
				d.Treatment = f.Value
			}
		case "baseline":
			if d.Baseline == "" {
				d.Baseline = f.Value
			}
		}
		if identityFields[f.Name] {
			continue
		}
		vals[f.Name] = f.Value
		if !factorSeen[f.Name] {
			factorSeen[f.Name] = true
			d.Factors = append(d.Factors, f.Name)
		}
	}
	base := Run{Run: r.Run, Cell: r.Cell, Pair: r.Pair, Replicate: r.Replicate, Saturating: vals["target_rate"] == "max"}
	base.Factors = make([]string, 0, len(d.Factors))
	for _, f := range d.Factors {
		base.Factors = append(base.Factors, vals[f])
	}
	return base, nil
}

// attemptRuns are a row's runs: one per attempt (ra, in order), the last
// final unless superseded; and a final run without an attempt when the row
// has none, or its last attempt was superseded and it has not run again.
// A superseded attempt is evidence, never paired: its matched set ran (or
// will run) again whole.
func attemptRuns(base Run, ra []results.Attempt, hists map[int64]map[string][]byte, hosts map[int64][]HostUse) []Run {
	if len(ra) == 0 {
		run := base
		run.Final = true
		return []Run{run}
	}
	out := make([]Run, 0, len(ra)+1)
	for i, a := range ra {
		run := base
		run.Factors = slices.Clone(base.Factors)
		run.Attempt = a.Number
		run.Final = i == len(ra)-1 && a.Superseded == ""
		run.Superseded = a.Superseded
		run.Outcome = string(a.Outcome)
		if run.Outcome == "" {
			run.Outcome = OutcomeRunning
		}
		run.Reasons = a.Reasons
		run.Error = a.Error
		run.GatewayRecordLayer, run.GatewayCipher, run.GatewayTLSKept = gatewayCrypto(a.Environment)
		run.TelemetryGaps = telemetryGaps(a.Environment)
		run.Broker, run.BrokerRuntime = brokerOf(a.Environment)
		run.Metrics = hostMetricsByRole(a.Metrics, hosts[a.ID])
		run.Histograms = hists[a.ID]
		run.Hosts = hosts[a.ID]
		out = append(out, run)
	}
	if ra[len(ra)-1].Superseded != "" { // superseded, not yet run again
		run := base
		run.Final = true
		out = append(out, run)
	}
	return out
}

// hostMetricsByRole reads host CPU metrics an earlier xp named by host
// (host_cpu_cluster_us_per_msg, host_cpu_broker-1_us_per_msg,
// host_cpu_b1_us_per_msg) by role, as xp names them now
// (planner.HostCPUMetric), summing a role's hosts; the host's role is the
// one its telemetry recorded, else what its local-target name says
// (cluster, broker-N, controller-N). A host whose role is unknown keeps
// its name. m is returned as is when it has nothing to rename.
func hostMetricsByRole(m map[string]float64, hosts []HostUse) map[string]float64 {
	role := func(host string) string {
		for _, h := range hosts {
			if h.Host == host {
				return h.Role
			}
		}
		return localRole(host)
	}
	var out map[string]float64
	for k, v := range m {
		host, ok := strings.CutPrefix(k, "host_cpu_")
		if !ok {
			continue
		}
		host, ok = strings.CutSuffix(host, "_us_per_msg")
		if !ok || host == planner.RoleBroker || host == planner.RoleController {
			continue
		}
		r := role(host)
		if r != planner.RoleCluster && r != planner.RoleBroker && r != planner.RoleController {
			continue
		}
		if out == nil {
			out = maps.Clone(m)
		}
		delete(out, k)
		out[planner.HostCPUMetric(r)] += v
	}
	if out == nil {
		return m
	}
	return out
}

// kafkaVersionAsMeasured makes the kafka_version factor say "kfake" for
// every run of a pair whose attempts measured the embedded cluster: such a
// pair ran no Apache Kafka, and cells.csv, runs.csv and the report must
// not name the release its rows asked for (design rule 7).
func (d *Dataset) kafkaVersionAsMeasured() {
	fi := slices.Index(d.Factors, "kafka_version")
	if fi < 0 {
		return
	}
	kfake := map[string]bool{}
	for _, r := range d.Runs {
		if strings.HasPrefix(r.Broker, "kfake ") {
			kfake[r.Pair] = true
		}
	}
	for i := range d.Runs {
		if kfake[d.Runs[i].Pair] {
			d.Runs[i].Factors[fi] = "kfake"
		}
	}
}

// orderedFields decodes a JSON object keeping its key order; values become
// canonical strings (strings as is, numbers as written, others as JSON).
func orderedFields(raw json.RawMessage) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %v", t)
	}
	var out []Field
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, Field{Name: kt.(string), Value: canonical(v)})
	}
	return out, nil
}

func canonical(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var c bytes.Buffer
	if json.Compact(&c, v) == nil {
		return c.String()
	}
	return string(v)
}

// loadHosts summarises, per healthy attempt with telemetry, what each
// sampled host did over the attempt's measured window, read from its
// loadgen.json log; an attempt without a recorded window gets none. Only
// the samples that decide the summary are read (results.TelemetryAround).
func loadHosts(ctx context.Context, st *results.Store, atts []results.Attempt) (map[int64][]HostUse, error) {
	done := map[int64]*results.Attempt{}
	for i := range atts {
		if atts[i].Outcome == results.OutcomeDone {
			done[atts[i].ID] = &atts[i]
		}
	}
	windows, err := st.NamedLogs(ctx, "loadgen.json")
	if err != nil {
		return nil, err
	}
	out := map[int64][]HostUse{}
	ids := make([]int64, 0, len(done))
	for id := range done {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var ws []results.Window
	byID := map[int64]results.Window{}
	for _, id := range ids {
		if start, end, ok := measuredWindow(windows[id]); ok {
			w := results.Window{Attempt: id, Start: start, End: end}
			ws = append(ws, w)
			byID[id] = w
		}
	}
	// Memory is the only metric summarised by its largest sample.
	err = st.TelemetryAround(ctx, ws, []string{telCPU, telMem, telNetIn, telNetOut, telDiskRead, telDiskWrite}, []string{telMem}, func(id int64, samples []results.Sample) error {
		w := byID[id]
		out[id] = summariseHosts(samples, HostRoles(done[id].Environment), w.Start, w.End)
		return nil
	})
	return out, err
}

// telemetryGaps reads the hosts whose telemetry covers less than the
// attempt's measured window from its environment (runner's
// telemetry_gaps) as "HOST MISSING s of WINDOW s; ...".
func telemetryGaps(env json.RawMessage) string {
	var e struct {
		Gaps []struct {
			Host     string  `json:"host"`
			MissingS float64 `json:"missing_s"`
			WindowS  float64 `json:"window_s"`
		} `json:"telemetry_gaps"`
	}
	if json.Unmarshal(env, &e) != nil {
		return ""
	}
	var parts []string
	for _, g := range e.Gaps {
		parts = append(parts, fmt.Sprintf("%s %.1f s of %.1f s", g.Host, g.MissingS, g.WindowS))
	}
	return strings.Join(parts, "; ")
}

// brokerOf reads the broker software an attempt measured from its
// environment (the runner's "broker"): "KIND VERSION" (a version guessed
// from the brokers' API versions marked so), and for Apache Kafka its Java
// runtime and JVM flags; "" for attempts that did not record it.
func brokerOf(env json.RawMessage) (broker, runtime string) {
	var e struct {
		Broker *struct {
			Kind           string   `json:"kind"`
			Version        string   `json:"version"`
			VersionGuessed bool     `json:"version_guessed"`
			Java           string   `json:"java"`
			JVMFlags       []string `json:"jvm_flags"`
		} `json:"broker"`
	}
	if json.Unmarshal(env, &e) != nil || e.Broker == nil || e.Broker.Kind == "" {
		return "", ""
	}
	b := e.Broker
	broker = b.Kind + " " + b.Version
	if b.VersionGuessed {
		// A cluster someone else runs: the release its API versions match.
		broker += " (guessed from ApiVersions)"
	}
	return broker, strings.TrimSpace(b.Java + " " + strings.Join(b.JVMFlags, " "))
}
