// Package runner executes a campaign: it registers the plan in the evidence
// store, groups rows by the infrastructure they need, brings each group up
// once through a Target, runs every row with the built-in load generator,
// health-gates it, and stores the evidence, one transaction per state
// change, so that a campaign killed at any instant resumes where it was.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// Errors callers branch on.
var (
	// ErrBadInput marks errors found before anything started (exit 2).
	ErrBadInput = errors.New("bad input")
	// ErrInterrupted: a signal stopped the campaign; --resume continues it
	// (exit 130).
	ErrInterrupted = errors.New("interrupted")
	// ErrUnfinished: the campaign ended with invalid or failed rows (exit 3).
	ErrUnfinished = errors.New("campaign finished with invalid or failed runs")
)

// badInput wraps err as ErrBadInput, keeping its message.
type badInput struct{ err error }

func (e *badInput) Error() string        { return e.err.Error() }
func (e *badInput) Unwrap() []error      { return []error{ErrBadInput, e.err} }
func badInputf(f string, a ...any) error { return &badInput{fmt.Errorf(f, a...)} }

// Options configure Run. Zero values take the stated defaults.
type Options struct {
	// Plan is the JSONL campaign file.
	Plan string
	// DB is the evidence store; default the plan's path with ".db".
	DB string
	// Spec is the factor spec the plan came from, kept with the campaign;
	// it must expand to the plan. Default: the plan's name with .yaml when
	// that expands to it.
	Spec string
	// Target is "local" (default) or a TARGET.yaml path.
	Target string
	// Platforms are the platforms this xp can provision, each with the
	// opener of its target; cmd fills them in. A --target (or rows) on a
	// platform not here is refused as not supported.
	Platforms target.Platforms
	// JavaClient is the Java client release that rows with client java
	// run (loadgen.Config.JavaClient): its archive or unpacked directory;
	// cmd fills it in (--java-client).
	JavaClient string
	// RdkafkaClient is the librdkafka client release that rows with client
	// librdkafka run (loadgen.Config.RdkafkaClient); cmd fills it in
	// (--rdkafka-client).
	RdkafkaClient string
	// JVMOpts are the Java client's JVM flags; default none.
	JVMOpts []string
	// Resume continues a campaign that has progress.
	Resume bool
	// DryRun validates everything and prints what would run; nothing is
	// written.
	DryRun bool
	// MaxAttempts bounds the failed attempts of a row; default 3.
	MaxAttempts int
	// UpRetry bounds the retries of a target's Up and Restart on transient
	// errors (target.IsTransient).
	UpRetry Retry
	// Sleep waits between those retries; default a timer that ends early
	// when ctx does. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// LogTimeout bounds fetching the target's logs after a failed attempt
	// (target.LogCollector); default 30s.
	LogTimeout time.Duration
	// Keep leaves the infrastructure up at the end (the embedded cluster
	// still ends with the process).
	Keep bool
	// WorkDir receives per-group cluster files (certificates, keys, client
	// configs); default DB + ".work". It is emptied when the run starts
	// (under the db's writer lock, so only files of a killed run go) and
	// removed at the end unless Keep.
	WorkDir string
	// Stdout receives the dry-run listing and the final summary; Stderr
	// progress and logs. Default io.Discard.
	Stdout, Stderr io.Writer
	// Terminal draws a live progress bar instead of log lines.
	Terminal bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// XPVersion is recorded with the campaign; default the build's.
	XPVersion string
	// WarmupCap bounds the discarded warm-up load the runner runs on a
	// group's cluster each time it comes up or is restarted, before its
	// rows (docs/running.md, "Warm-up"); default DefaultWarmupCap,
	// negative: no warm-up.
	WarmupCap time.Duration
	// TwoStage, when set, runs the campaign as a two-stage design (it is
	// recorded in the db; a resumed campaign keeps the one it has, and
	// asking another is refused).
	TwoStage *TwoStage
}

// Summary is what a Run did.
type Summary struct {
	DB       string
	Total    int
	Ran      int // attempts made by this Run
	Rows     map[results.State]int
	Skipped  int // failed rows left with MaxAttempts failed attempts
	Duration time.Duration
}

// DefaultDB is the database path for a plan: its name with ".db".
func DefaultDB(planPath string) string {
	return strings.TrimSuffix(planPath, filepath.Ext(planPath)) + ".db"
}

func (o *Options) defaults() {
	if o.DB == "" {
		o.DB = DefaultDB(o.Plan)
	}
	if o.Target == "" {
		o.Target = "local"
	}
	if o.WorkDir == "" {
		o.WorkDir = o.DB + ".work"
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	o.UpRetry.defaults()
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.LogTimeout == 0 {
		o.LogTimeout = 30 * time.Second
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WarmupCap == 0 {
		o.WarmupCap = DefaultWarmupCap
	}
	if o.XPVersion == "" {
		o.XPVersion = buildVersion()
	}
}

// Run executes (or resumes) a campaign. Errors found before anything starts
// wrap ErrBadInput and change nothing. A cancelled ctx (first signal)
// records the run in flight as interrupted, brings the infrastructure down
// unless Keep, and returns ErrInterrupted.
func Run(ctx context.Context, o Options) (Summary, error) {
	o.defaults()
	start := o.Now()
	if o.MaxAttempts < 1 {
		return Summary{}, badInputf("--max-attempts %d: want 1 or more", o.MaxAttempts)
	}
	if o.UpRetry.Tries < 1 || o.UpRetry.Backoff < 0 || o.UpRetry.MaxBackoff < o.UpRetry.Backoff {
		return Summary{}, badInputf("retry of the target's steps: %d tries, backoff %s up to %s: want 1 or more tries and 0 <= backoff <= max",
			o.UpRetry.Tries, o.UpRetry.Backoff, o.UpRetry.MaxBackoff)
	}
	if o.Plan == "" {
		return Summary{}, badInputf("no plan: give the JSONL campaign file, e.g. xp run out/quickstart.jsonl")
	}
	p, err := readPlan(o.Plan)
	if err != nil {
		return Summary{}, &badInput{err}
	}
	campaign := ""
	if len(p.rows) > 0 {
		campaign = p.rows[0].Campaign
	}
	tgt, err := openTarget(o.Target, o.Platforms, o.WorkDir, o.DB, campaign, o.Keep)
	if err != nil {
		return Summary{}, &badInput{err}
	}
	if err := checkRows(ctx, p, tgt, o); err != nil {
		return Summary{}, err
	}
	groups := groupRows(p.rows)
	spec, err := specFor(p, o.Spec)
	if err != nil {
		return Summary{}, &badInput{err}
	}

	if o.TwoStage != nil {
		first := 0
		for _, r := range p.rows {
			first = max(first, r.Replicate)
		}
		if _, err := o.TwoStage.stageConfig(first); err != nil {
			return Summary{}, &badInput{err}
		}
	}
	pre, err := preflight(ctx, tgt.Target, p, o)
	if err != nil {
		return Summary{}, err
	}

	if o.DryRun {
		sayEmbedded(o, tgt.Target, groups)
		return dryRun(ctx, o, p, tgt.Target, groups, pre)
	}

	// A different plan, or progress without --resume, is refused under the
	// writer lock before the db is changed.
	store, err := results.OpenChecked(ctx, o.DB, func(peek results.Peek) error {
		return refuseExisting(o, p, peek)
	})
	if err != nil {
		if errors.Is(err, ErrBadInput) {
			return Summary{}, err
		}
		return Summary{}, &badInput{err}
	}
	defer store.Close()
	camp := results.Campaign{
		Name: p.rows[0].Campaign, Spec: spec, Plan: p.bytes, Target: tgt.recorded, Seed: campaignSeed(p),
		XPVersion: o.XPVersion, Host: hostEnvironment(), Created: o.Now(),
	}
	_, err = store.Register(ctx, camp, p.storeRows())
	if err != nil {
		if errors.Is(err, results.ErrPlanMismatch) {
			return Summary{}, &badInput{fmt.Errorf("%w (plan %s)", err, o.Plan)}
		}
		return Summary{}, err
	}
	// Files a killed run left behind; the writer lock makes them ours.
	if err := os.RemoveAll(o.WorkDir); err != nil {
		return Summary{}, fmt.Errorf("clear work directory: %w", err)
	}
	if !o.Keep {
		defer os.RemoveAll(o.WorkDir)
	}
	if pre != nil {
		if _, err := store.AddInfraEvent(ctx, results.InfraEvent{Event: "preflight", Time: o.Now(), Outputs: pre.Outputs}); err != nil {
			return Summary{}, err
		}
	}
	sayEmbedded(o, tgt.Target, groups)
	r := &run{o: o, store: store, target: tgt.Target, plan: p, groups: groups}
	if err := r.loadStage(ctx); err != nil {
		return Summary{}, err
	}
	recordEventsIn(tgt.Target, store)
	sum, err := r.execute(ctx)
	if ferr := finish(ctx, tgt.Target, o.Keep, err == nil); ferr != nil && err == nil {
		err = ferr
	}
	sum.DB, sum.Duration = o.DB, o.Now().Sub(start)
	return sum, err
}

// refuseExisting refuses a db that holds a different plan, or progress
// without --resume.
func refuseExisting(o Options, p *plan, peek results.Peek) error {
	if !peek.Campaign {
		return nil
	}
	if sha := results.PlanSHA256(p.bytes); peek.PlanSHA256 != sha {
		return &badInput{fmt.Errorf("%w (plan %s)",
			&results.PlanMismatchError{Path: o.DB, Registered: peek.PlanSHA256, Given: sha}, o.Plan)}
	}
	if peek.Attempts > 0 && !o.Resume {
		finished := peek.Rows[results.Done] + peek.Rows[results.Invalid] + peek.Rows[results.Failed]
		total := 0
		for _, n := range peek.Rows {
			total += n
		}
		return badInputf("%s already has progress (%d of %d rows finished): add --resume to continue it, or give a new --db",
			o.DB, finished, total)
	}
	return nil
}

// checkRows refuses, before anything starts, rows the target cannot serve.
func checkRows(ctx context.Context, p *plan, t openedTarget, o Options) error {
	platform := t.platform
	var problems []string
	wrong := map[string][]string{}
	var wrongOrder []string
	for _, r := range p.rows {
		rp := r.Platform
		if rp == "" {
			rp = "local"
		}
		if rp != platform {
			if wrong[rp] == nil {
				wrongOrder = append(wrongOrder, rp)
			}
			wrong[rp] = append(wrong[rp], r.Run)
		}
	}
	for _, rp := range wrongOrder {
		msg := fmt.Sprintf("%d rows want platform %s (e.g. %s) but the target (--target %s) is platform %s",
			len(wrong[rp]), rp, wrong[rp][0], o.Target, platform)
		if o.Platforms[rp] == nil {
			msg += fmt.Sprintf("; platform %s has no target in this xp", rp)
		}
		problems = append(problems, msg)
	}
	bad := 0
	for i := range p.rows {
		if err := checkLoad(&p.rows[i], o); err != nil {
			if bad++; bad <= 5 {
				problems = append(problems, fmt.Sprintf("row %s: the load generator refuses it: %v", p.rows[i].Run, err))
			}
		}
	}
	if bad > 5 {
		problems = append(problems, fmt.Sprintf("(%d rows in all the load generator refuses)", bad))
	}
	problems = append(problems, surfaceProblems(t.Target, o.Target, p.rows)...)
	if rc, ok := t.Target.(target.RowChecker); ok {
		refused := map[string][]string{}
		var reasons []string
		for i := range p.rows {
			if err := rc.CheckRow(&p.rows[i]); err != nil {
				if refused[err.Error()] == nil {
					reasons = append(reasons, err.Error())
				}
				refused[err.Error()] = append(refused[err.Error()], p.rows[i].Run)
			}
		}
		for _, why := range reasons {
			problems = append(problems, fmt.Sprintf("%d rows (e.g. %s): %s", len(refused[why]), refused[why][0], why))
		}
	}
	if ml, ok := t.Target.(target.ModeLister); ok {
		modes, err := ml.Modes(ctx)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, m := range modes {
			have[m] = true
		}
		missing := map[string][]string{}
		for _, r := range p.rows {
			if !have[r.Security] {
				missing[r.Security] = append(missing[r.Security], r.Run)
			}
		}
		var names []string
		for m := range missing {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			why := "the target does not serve it"
			if planner.NeedsGateway(m) {
				why = "it needs a gateway, which the " + platform + " target does not provide yet"
			}
			problems = append(problems, fmt.Sprintf("%d rows use security %s (e.g. %s): %s (it serves %s)",
				len(missing[m]), m, missing[m][0], why, strings.Join(modes, ", ")))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("… and %d more", len(problems)-10))
	}
	return badInputf("plan %s cannot run on this target:\n  %s\nremove those rows from the spec, or run them on a target that serves them",
		p.path, strings.Join(problems, "\n  "))
}

// groupRows groups rows by infrastructure (planner.GroupByInfra): rows in
// run order, groups in the order of their first row.
func groupRows(rows []planner.Row) []target.Group {
	var groups []target.Group
	for _, rs := range planner.GroupByInfra(rows) {
		groups = append(groups, target.Group{Key: rs[0].InfraKey(), Rows: rs})
	}
	return groups
}

// sayEmbedded prints embeddedNotice, if any, once, as the campaign starts.
func sayEmbedded(o Options, t target.Target, groups []target.Group) {
	if n := embeddedNotice(t, groups); n != "" {
		fmt.Fprintln(o.Stderr, n)
	}
}

// embeddedNotice says, when the target will run the embedded cluster for
// groups whose rows name a kafka_version, that kfake runs instead of that
// Apache Kafka and how to run Apache Kafka; "" otherwise.
func embeddedNotice(t target.Target, groups []target.Group) string {
	bp, ok := t.(target.BrokerPlanner)
	if !ok {
		return ""
	}
	var versions []string
	for _, g := range groups {
		v := g.Key.KafkaVersion
		if b := bp.PlannedBroker(g.Key); b.Kind == target.BrokerKfake && v != "" && !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return ""
	}
	return fmt.Sprintf("xp: the rows name kafka_version %s, but this target runs the embedded cluster (%s) instead: every number of this campaign is kfake's, not Apache Kafka's. "+
		"To measure Apache Kafka, give --target a TARGET.yaml with platform: local and a kafka: release (docs/targets.md); make demo-kafka does so.",
		strings.Join(versions, ", "), target.KfakeBroker())
}

// campaignSeed is the seed the planner wrote into every row.
func campaignSeed(p *plan) int64 { return p.rows[0].Seed }

func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "-dirty"
		}
	}
	return v
}

// hostEnvironment describes the machine xp runs on.
func hostEnvironment() json.RawMessage {
	host, _ := os.Hostname()
	env := map[string]any{
		"hostname": host,
		"os":       runtime.GOOS,
		"arch":     runtime.GOARCH,
		"cpus":     runtime.NumCPU(),
		"go":       runtime.Version(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				env["cpu_model"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			env["mem_mib"] = kb / 1024
		}
	}
	b, _ := json.Marshal(env)
	return b
}

// surfaceProblems refuses the rows whose security surface settings
// (target.SurfaceSettings) the target does not serve: all of them on a
// target that is not a target.SurfaceServer, else those it refuses; one
// line per reason, with a count and an example row.
func surfaceProblems(t target.Target, name string, rows []planner.Row) []string {
	ss, serves := t.(target.SurfaceServer)
	refused := map[string][]string{}
	var reasons []string
	for i := range rows {
		settings := target.SurfaceSettings(&rows[i])
		if len(settings) == 0 {
			continue
		}
		var why string
		if !serves {
			why = fmt.Sprintf("the target (--target %s) does not serve %s; it serves every security surface field at its default only", name, settings[0])
		} else if err := ss.ServesSurface(&rows[i]); err != nil {
			why = err.Error()
		} else {
			continue
		}
		if refused[why] == nil {
			reasons = append(reasons, why)
		}
		refused[why] = append(refused[why], rows[i].Run)
	}
	var out []string
	for _, why := range reasons {
		out = append(out, fmt.Sprintf("%d rows (e.g. %s): %s", len(refused[why]), refused[why][0], why))
	}
	return out
}
