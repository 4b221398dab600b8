package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// run is one execution of a campaign.
type run struct {
	o      Options
	store  *results.Store
	target target.Target
	plan   *plan
	groups []target.Group
	prog   *progress
	// stage is the campaign's two-stage design, nil without one.
	stage *results.TwoStage

	ran int
}

// todo decides which rows of the campaign this run executes.
func (r *run) todo(ctx context.Context) (map[string]bool, int, error) {
	rows, err := r.store.Rows(ctx)
	if err != nil {
		return nil, 0, err
	}
	counts, err := r.store.AttemptCounts(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]bool{}
	skipped := 0
	for _, row := range rows {
		switch row.State {
		case results.Pending:
			out[row.Run] = true
		case results.Failed:
			if counts[row.Run][results.OutcomeFailed] < r.o.MaxAttempts {
				out[row.Run] = true
			} else {
				skipped++
			}
		}
	}
	return out, skipped, nil
}

// wholeSets keeps matched sets whole: a set (one pair and replicate) with
// a member about to run and members already finished was left partial by
// an interrupt. Its finished members' attempts are kept but superseded, and
// they run again with the rest, back to back on one cluster (rows of a set
// are adjacent in plan order). todo gains them.
func (r *run) wholeSets(ctx context.Context, todo map[string]bool) error {
	rows, err := r.store.Rows(ctx)
	if err != nil {
		return err
	}
	type setKey struct {
		pair string
		rep  int
	}
	sets := map[setKey][]results.Row{}
	var keys []setKey
	for _, row := range rows {
		k := setKey{row.Pair, row.Replicate}
		if sets[k] == nil {
			keys = append(keys, k)
		}
		sets[k] = append(sets[k], row)
	}
	var again []string
	for _, k := range keys {
		pending, finished := false, []string(nil)
		for _, row := range sets[k] {
			switch {
			case todo[row.Run]:
				pending = true
			case row.State == results.Done || row.State == results.Invalid:
				finished = append(finished, row.Run)
			}
		}
		if !pending || len(finished) == 0 {
			continue
		}
		fmt.Fprintf(r.o.Stderr, "xp: matched set %s replicate %d was left partial: %s run again with the rest on one cluster (the earlier attempts are kept, superseded)\n",
			k.pair, k.rep, strings.Join(finished, ", "))
		again = append(again, finished...)
	}
	if len(again) == 0 {
		return nil
	}
	why := fmt.Sprintf("its matched set was left partial; run again whole from %s", r.o.Now().UTC().Format(time.RFC3339))
	if _, err := r.store.Supersede(ctx, again, why); err != nil {
		return err
	}
	for _, run := range again {
		todo[run] = true
	}
	return nil
}

func (r *run) execute(ctx context.Context) (Summary, error) {
	// Writes that record an interruption must outlive the cancelled ctx.
	wctx := context.WithoutCancel(ctx)
	sum := Summary{Total: len(r.plan.rows)}

	if n, err := r.store.ReconcileInterrupted(wctx, r.o.Now()); err != nil {
		return sum, err
	} else if n > 0 {
		fmt.Fprintf(r.o.Stderr, "xp: %d attempt(s) left running by an earlier process recorded as interrupted\n", n)
	}
	todo, skipped, err := r.todo(ctx)
	if err != nil {
		return sum, err
	}
	if err := r.wholeSets(wctx, todo); err != nil {
		return sum, err
	}
	sum.Skipped = skipped
	pr, err := r.store.Progress(ctx)
	if err != nil {
		return sum, err
	}
	r.prog = newProgress(r.o.Stderr, r.o.Terminal, r.o.Now, pr)
	defer r.prog.close()
	r.prog.logf("campaign %s: %d rows (%d done, %d invalid, %d failed), %d to run, db %s",
		r.plan.rows[0].Campaign, pr.Total, pr.Rows[results.Done], pr.Rows[results.Invalid],
		pr.Rows[results.Failed], len(todo), r.o.DB)
	if skipped > 0 {
		r.prog.logf("%d failed rows have %d failed attempts already and are skipped (raise --max-attempts to retry them)",
			skipped, r.o.MaxAttempts)
	}

	runErr := r.runGroups(ctx, wctx, todo)
	sum.Ran, sum.Total = r.ran, len(r.plan.rows)
	if final, err := r.store.Progress(wctx); err == nil {
		sum.Rows = final.Rows
		r.prog.logf("%d of %d rows done, %d invalid, %d failed, %d pending; %d attempts made now; see xp status --db %s",
			final.Rows[results.Done], final.Total, final.Rows[results.Invalid], final.Rows[results.Failed],
			final.Rows[results.Pending]+final.Rows[results.Running], r.ran, r.o.DB)
	}
	if runErr != nil {
		return sum, runErr
	}
	if sum.Rows[results.Invalid] > 0 || sum.Rows[results.Failed] > 0 {
		return sum, fmt.Errorf("%w: %d invalid, %d failed (see xp status)", ErrUnfinished,
			sum.Rows[results.Invalid], sum.Rows[results.Failed])
	}
	return sum, nil
}

func (r *run) runGroups(ctx, wctx context.Context, todo map[string]bool) (err error) {
	live := &liveGroup{}
	defer func() {
		if derr := r.takeDown(wctx, live, true); derr != nil && err == nil {
			err = derr
		}
	}()
	// The first pass runs the plan; a second the second stage of a
	// two-stage design, decided when the first is done.
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			added, err := r.secondStage(ctx, wctx, todo)
			if err != nil {
				return err
			}
			if !added {
				break
			}
		}
		for _, g := range r.groups {
			rows := takeTodo(g.Rows, todo)
			if len(rows) == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return ErrInterrupted
			}
			if err := r.runGroup(ctx, wctx, live, target.Group{Key: g.Key, Rows: rows}); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveGroup is the group whose infrastructure is up, if one is, and its
// endpoints.
type liveGroup struct {
	up bool
	g  target.Group
	ep target.Endpoints
}

// takeTodo returns the rows among rows that todo holds, in order, and
// takes them out of todo.
func takeTodo(rows []planner.Row, todo map[string]bool) []planner.Row {
	var out []planner.Row
	for _, row := range rows {
		if todo[row.Run] {
			delete(todo, row.Run)
			out = append(out, row)
		}
	}
	return out
}

// takeDown takes the live group down; at the end (and on interrupt)
// --keep leaves it up, but never between groups, where it would only run
// up a bill.
func (r *run) takeDown(wctx context.Context, live *liveGroup, end bool) error {
	if !live.up {
		return nil
	}
	live.up = false
	if end && r.o.Keep {
		r.prog.logf("infrastructure %s left up (--keep)", r.groupName(live.g.Key))
		return nil
	}
	return r.down(wctx, live.g)
}

// runGroup runs the rows of g on its infrastructure, brought up unless it
// is the live group already (which stays up for its own second stage).
// A group that cannot be brought up has its rows recorded failed.
func (r *run) runGroup(ctx, wctx context.Context, live *liveGroup, g target.Group) error {
	if !live.up || live.g.Key != g.Key {
		// A failure to take the last group down is logged and recorded
		// by down; the campaign goes on with the next group.
		_ = r.takeDown(wctx, live, false)
		var err error
		live.ep, err = r.up(ctx, wctx, g)
		var gf *groupFailure
		if errors.As(err, &gf) {
			return r.failRows(wctx, g.Rows, gf)
		}
		if err != nil {
			return err
		}
		live.up, live.g = true, g
		if err := r.warmUp(ctx, wctx, g, live.ep); err != nil {
			return err
		}
	}
	live.up, live.g = true, g
	return r.runRows(ctx, wctx, live, g.Rows)
}

// runRows runs rows on the live group, each until it succeeds or has no
// attempts left. A failed attempt restarts the services where the target
// can, and the row's matched set runs again whole on them; services that
// cannot be restarted have the rest of the rows recorded failed.
func (r *run) runRows(ctx, wctx context.Context, live *liveGroup, rows []planner.Row) error {
rows:
	for i := 0; i < len(rows); i++ {
		row := rows[i]
		for {
			if err := ctx.Err(); err != nil {
				return ErrInterrupted
			}
			retry, err := r.runRow(ctx, wctx, row, live.ep)
			if err != nil {
				return err
			}
			if !retry {
				break
			}
			// A failed attempt may be the services' fault (a broker
			// gone): restart them, but never provision again, which on
			// a cloud would destroy and re-create machines.
			rs, ok := r.target.(target.Restarter)
			if !ok {
				r.prog.logf("row %s failed; retrying on the same infrastructure", row.Run)
				continue
			}
			r.prog.logf("row %s failed; restarting the services of %s before retrying", row.Run, r.groupName(live.g.Key))
			var gf *groupFailure
			live.ep, err = r.restart(ctx, wctx, live.g, rs)
			if errors.As(err, &gf) {
				return r.failRows(wctx, rows[i:], gf)
			}
			if err != nil {
				return err
			}
			if err := r.warmUp(ctx, wctx, live.g, live.ep); err != nil {
				return err
			}
			// The retry runs on a new instance of the services: the
			// row's matched set runs again whole on it, back to back.
			again, err := r.rejoin(wctx, row, rows[:i])
			if err != nil {
				return err
			}
			if len(again) > 0 {
				rows = slices.Concat(rows[:i], again, rows[i:])
				i-- // the loop's i++ lands on again[0]
				continue rows
			}
		}
	}
	return nil
}

// rejoin keeps row's matched set whole after a restart of the services
// before row's retry: the set's members among earlier (rows run in this
// group before row) that finished ran on the old instance, so their
// attempts are superseded, as on resume, and they are returned to run
// again, in plan order, just before row on the new instance.
func (r *run) rejoin(wctx context.Context, row planner.Row, earlier []planner.Row) ([]planner.Row, error) {
	all, err := r.store.Rows(wctx)
	if err != nil {
		return nil, err
	}
	state := make(map[string]results.State, len(all))
	for _, x := range all {
		state[x.Run] = x.State
	}
	var again []planner.Row
	var runs []string
	seen := map[string]bool{}
	invalid := 0
	for _, m := range earlier {
		if m.Run == row.Run || m.Pair != row.Pair || m.Replicate != row.Replicate || seen[m.Run] {
			continue
		}
		seen[m.Run] = true
		switch state[m.Run] {
		case results.Invalid:
			invalid++
		case results.Done:
		default:
			continue
		}
		again = append(again, m)
		runs = append(runs, m.Run)
	}
	if len(again) == 0 {
		return nil, nil
	}
	why := fmt.Sprintf("%s of its matched set was retried on restarted services; run again whole from %s",
		row.Run, r.o.Now().UTC().Format(time.RFC3339))
	if _, err := r.store.Supersede(wctx, runs, why); err != nil {
		return nil, err
	}
	r.prog.reopen(len(runs), invalid)
	r.prog.logf("matched set %s replicate %d: %s ran on the services before the restart; run again with %s on the restarted ones (the earlier attempts are kept, superseded)",
		row.Pair, row.Replicate, strings.Join(runs, ", "), row.Run)
	return again, nil
}

// runRow makes one attempt of a row unless it already failed MaxAttempts
// times. retry is true when the attempt failed and another is allowed.
func (r *run) runRow(ctx, wctx context.Context, row planner.Row, ep target.Endpoints) (retry bool, err error) {
	if err := r.checkBudget(wctx); err != nil {
		return false, err
	}
	atts, err := r.store.RunAttempts(wctx, row.Run)
	if err != nil {
		return false, err
	}
	failed := 0
	for _, a := range atts {
		if a.Outcome == results.OutcomeFailed {
			failed++
		}
	}
	if failed >= r.o.MaxAttempts {
		return false, nil
	}
	outcome, err := r.attempt(ctx, wctx, row, ep)
	if err != nil {
		return false, err
	}
	switch {
	case outcome == results.OutcomeInterrupted:
		return false, ErrInterrupted
	case outcome != results.OutcomeFailed:
		return false, nil
	case failed+1 >= r.o.MaxAttempts:
		r.prog.rowFailed()
		return false, nil
	case ctx.Err() != nil:
		return false, ErrInterrupted
	}
	return true, nil
}

// attempt makes one attempt of a row and records it. The error is for the
// campaign (the store failed); the row's own failure is the outcome.
func (r *run) attempt(ctx, wctx context.Context, row planner.Row, ep target.Endpoints) (results.Outcome, error) {
	mode, ok := ep.Modes[target.ModeKey(&row)]
	started := r.o.Now()
	env := r.envOf(&row, ep, mode)
	envJSON, _ := json.Marshal(env)
	a, err := r.store.StartAttempt(wctx, row.Run, started, envJSON)
	if err != nil {
		return "", err
	}
	r.ran++
	r.prog.startRow(row, a.Number)
	log := &attemptLog{now: r.o.Now}
	log.printf("attempt %d of %s (%s) started", a.Number, row.Run, row.Security)

	tel := startTelemetry(wctx, r.o.Now, telemetrySources(r.target))
	phases := r.recordPhases(wctx, a.ID, tel, log)
	var ev results.Evidence
	if !ok {
		phases.end()
		tel.stop()
		ev = results.Evidence{Outcome: results.OutcomeFailed,
			Error: fmt.Sprintf("the target gave no endpoint for %s", target.ModeKey(&row))}
	} else {
		ev = r.measure(ctx, wctx, row, mode, &env, tel, phases, log)
	}
	return r.finishAttempt(wctx, row, a, &env, ev, log)
}

// envOf is the environment of row's attempt on endpoints ep, mode being
// row's own.
func (r *run) envOf(row *planner.Row, ep target.Endpoints, mode target.Endpoint) attemptEnv {
	env := attemptEnv{Security: row.Security, Mode: target.ModeKey(row), Bootstrap: mode.Bootstrap, Group: row.InfraKey().WithBroker("", ""),
		XPVersion: r.o.XPVersion, Hosts: ep.Hosts, Client: &loadgen.ClientInfo{Name: row.Client}}
	if mode.Crypto != nil {
		env.GatewayCrypto = &attemptCrypto{CryptoInfo: *mode.Crypto}
	}
	env.Gateway = mode.Gateway
	if hd, ok := r.target.(target.ModeHostDescriber); ok {
		env.Machines = hd.DescribeModeHosts(env.Mode)
	} else if hd, ok := r.target.(target.HostDescriber); ok {
		env.Machines = hd.DescribeHosts()
	}
	if b, ok := brokerOf(r.target, env.Machines); ok {
		env.Broker = &b
		env.Group = row.InfraKey().WithBroker(b.Kind, b.Version)
	}
	return env
}

// measure runs row's load on mode and returns its evidence: the load
// generator's result, the telemetry's samples and the CPU per message, or
// an interruption. It ends phases and tel, and records the gaps of the
// telemetry and the TLS legs kept in env.
func (r *run) measure(ctx, wctx context.Context, row planner.Row, mode target.Endpoint, env *attemptEnv,
	tel *telemetry, phases *phaseRecorder, log *attemptLog) results.Evidence {
	// A run that outlives its phases by far is stuck (a broker that
	// neither answers nor fails): end it as failed, not the campaign.
	kept := r.startKept(wctx, row.Run, env)
	actx, cancel := context.WithTimeout(ctx, attemptBound(&row))
	res, lerr := r.runLoad(actx, row, mode, phases.report, false)
	if kept != nil {
		kept(log)
	}
	if lerr != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		lerr = fmt.Errorf("attempt exceeded its time bound of %s: %w", attemptBound(&row), lerr)
	}
	cancel()
	phases.end()
	samples := tel.stop()
	log.printf("%s", tel.describe())
	if env.TelemetryGaps = tel.gaps(); len(env.TelemetryGaps) > 0 {
		var hs []string
		for _, g := range env.TelemetryGaps {
			hs = append(hs, fmt.Sprintf("%s %.1f s of %.1f s", g.Host, g.MissingS, g.WindowS))
		}
		log.printf("telemetry covers less than the measured window: missing %s", strings.Join(hs, ", "))
	}
	phases.record("write", time.Time{})
	if res != nil {
		env.Connections = res.Connections
	}
	if res != nil && res.Client.Name != "" {
		env.Client = &res.Client
	}
	ev := evidenceOf(res, lerr, samples)
	judgeSteady(&row, res, &ev)
	if res != nil && res.Published > 0 && ev.Metrics != nil {
		_, hasTelemetry := r.target.(target.TelemetrySource)
		maps.Copy(ev.Metrics, cpuPerMessage(tel, res.Published, row.NeedsGateway(), hasTelemetry))
	}
	if ctx.Err() != nil && (lerr != nil || !phases.completed()) {
		// A run cut short by a signal is neither healthy nor unhealthy.
		ev.Outcome, ev.Reasons = results.OutcomeInterrupted, nil
		ev.Error = "interrupted by a signal"
		if lerr != nil {
			ev.Error += ": " + lerr.Error()
		}
	}
	return ev
}

// cpuPerMessage is the CPU time, in microseconds per published message,
// that the broker-side hosts of each role spent in tel's measurement
// window, summed over the role's hosts and named by role
// (planner.HostCPUMetric: host_cpu_broker_us_per_msg, with the embedded
// cluster's process as the broker, and host_cpu_controller_us_per_msg),
// so every target names them alike; and the gateways together
// (gateway_cpu_us_per_msg). A role has none unless each of its hosts was
// read at both ends. A row with no gateway in its path has a gateway CPU
// of 0 where the target samples its hosts (hasTelemetry): runs.csv says
// so, and effects skip zero baselines.
func cpuPerMessage(tel *telemetry, published int64, needsGateway, hasTelemetry bool) map[string]float64 {
	m := map[string]float64{}
	perMsg := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(published) }
	sums := map[string]time.Duration{}
	complete := map[string]bool{}
	for _, role := range []string{planner.RoleCluster, planner.RoleBroker, planner.RoleController} {
		name := planner.HostCPUMetric(role)
		for _, host := range tel.hostsOf(role) {
			if _, seen := complete[name]; !seen {
				complete[name] = true
			}
			cpu, ok := tel.cpu(host)
			sums[name] += cpu
			complete[name] = complete[name] && ok
		}
	}
	for name, ok := range complete {
		if ok {
			m[name] = perMsg(sums[name])
		}
	}
	if !needsGateway {
		if hasTelemetry {
			m["gateway_cpu_us_per_msg"] = 0
		}
	} else if gws := tel.hostsOf(planner.RoleGateway); len(gws) > 0 {
		var sum time.Duration
		all := true
		for _, host := range gws {
			cpu, ok := tel.cpu(host)
			sum, all = sum+cpu, all && ok
		}
		if all {
			m["gateway_cpu_us_per_msg"] = perMsg(sum)
		}
	}
	return m
}

// finishAttempt records attempt a of row ending with evidence ev: the
// logs of a failure, the environment when the attempt added to it, and the
// runner's log.
func (r *run) finishAttempt(wctx context.Context, row planner.Row, a results.Attempt, env *attemptEnv,
	ev results.Evidence, log *attemptLog) (results.Outcome, error) {
	if ev.Outcome == results.OutcomeFailed {
		ev.Logs = append(ev.Logs, r.collectLogs(wctx, a.Started, log)...)
	}
	if env.GatewayCrypto != nil && (env.GatewayCrypto.TLSKept != nil || env.GatewayCrypto.TLSKeptError != "") || len(env.TelemetryGaps) > 0 ||
		env.Client != nil && env.Client.Version != "" ||
		env.Connections != nil && (env.Connections.TLSVersion != "" || env.Connections.SASLMechanism != "" || env.Connections.Churn > 0) {
		ev.Environment, _ = json.Marshal(env)
	}
	ev.Ended = r.o.Now()
	for _, reason := range ev.Reasons {
		log.printf("unhealthy: %s", reason)
	}
	if ev.Error != "" {
		log.printf("error: %s", ev.Error)
	}
	log.printf("outcome %s after %s", ev.Outcome, ev.Ended.Sub(a.Started).Round(time.Millisecond))
	ev.Logs = append(ev.Logs, results.Log{Name: "runner", Text: log.bytes()})
	if err := r.store.FinishAttempt(wctx, a.ID, ev); err != nil {
		return "", fmt.Errorf("record attempt %d of %s: %w", a.Number, row.Run, err)
	}
	r.prog.finishRow(row, a.Number, ev, ev.Ended.Sub(a.Started))
	return ev.Outcome, nil
}

// keptTimeout bounds one reading of a gateway's tls_kept counters.
const keptTimeout = 5 * time.Second

// startKept reads the tls_kept counters of env's gateway before its load
// starts, when tlsrec is its record layer and the target can count them;
// the function it returns reads them again after the load and records the
// difference in env. nil when there is nothing to count.
func (r *run) startKept(wctx context.Context, run string, env *attemptEnv) func(log *attemptLog) {
	kr, ok := r.target.(target.TLSKeptReader)
	if !ok || env.GatewayCrypto == nil || env.GatewayCrypto.RecordLayer != target.RecordLayerTLSRec {
		return nil
	}
	read := func() (target.TLSKept, error) {
		ctx, cancel := context.WithTimeout(wctx, keptTimeout)
		defer cancel()
		return kr.TLSKept(ctx, env.Mode)
	}
	before, err := read()
	return func(log *attemptLog) {
		var after target.TLSKept
		if err == nil {
			after, err = read()
		}
		var kept target.TLSKept
		if err == nil {
			kept = after.Since(before)
		}
		for _, rs := range kept {
			for reason, n := range rs {
				if n < 0 && err == nil {
					err = fmt.Errorf("the counter of %s went back by %d during the attempt (a restarted gateway?)", reason, -n)
				}
			}
		}
		if err != nil {
			env.GatewayCrypto.TLSKeptError = err.Error()
			log.printf("gateway legs kept on crypto/tls: not counted: %v", err)
			r.prog.logf("row %s (%s): the gateway TLS legs crypto/tls kept instead of tlsrec were not counted: %v", run, env.Mode, err)
			return
		}
		env.GatewayCrypto.TLSKept = &kept
		if kept.Total() > 0 {
			log.printf("gateway legs kept on crypto/tls instead of tlsrec: %s", kept)
			r.prog.logf("row %s (%s): crypto/tls, not tlsrec, carried %d of its gateway's TLS legs (%s)", run, env.Mode, kept.Total(), kept)
		}
	}
}

// attemptBound is the longest an attempt may take: its phases plus two
// minutes for topic set-up and teardown.
func attemptBound(r *planner.Row) time.Duration {
	return time.Duration(r.WarmupS+r.DurationS+r.DrainTimeoutS)*time.Second + 2*time.Minute
}

// brokerOf is the broker software of the group that is up: what the
// target reports (target.BrokerReporter), else, when it reports nothing,
// what its machines say they run (the first broker or cluster host whose
// Kafka names apache or kfake, with its Java).
func brokerOf(t target.Target, machines []target.HostInfo) (target.Broker, bool) {
	if br, ok := t.(target.BrokerReporter); ok {
		if b := br.Broker(); b.Kind != "" {
			return b, true
		}
	}
	for _, m := range machines {
		if m.Role != planner.RoleBroker && m.Role != planner.RoleCluster {
			continue
		}
		if b, ok := target.ParseBroker(m.Kafka); ok {
			if b.Kind == target.BrokerApache {
				b.Java, b.JVMFlags = m.Java, strings.Fields(m.JVMFlags)
			}
			return b, true
		}
	}
	return target.Broker{}, false
}

// attemptEnv is an attempt's environment column.
type attemptEnv struct {
	Security  string   `json:"security"`
	Mode      string   `json:"mode"`
	Bootstrap []string `json:"bootstrap"`
	Group     string   `json:"group"`
	Hosts     []string `json:"hosts,omitempty"`
	// Machines describes the group's machines where the target can
	// (target.HostDescriber): instance type, kernel, Java, Kafka.
	Machines []target.HostInfo `json:"machines,omitempty"`
	// Broker is the broker software the attempt measured: Apache Kafka
	// with its release, Java and JVM flags, or kfake with its version;
	// absent where the target cannot say (then Group keeps the rows'
	// kafka_version).
	Broker    *target.Broker `json:"broker,omitempty"`
	XPVersion string         `json:"xp_version"`
	// Gateway names the gateway the row ran through (gateway modes only,
	// as the target reports it).
	Gateway *target.GatewayInfo `json:"gateway,omitempty"`
	// GatewayCrypto is the record layer and cipher the row's gateway ran
	// (gateway modes only).
	GatewayCrypto *attemptCrypto `json:"gateway_crypto,omitempty"`
	// TelemetryGaps are the hosts whose telemetry covers less than the
	// measured window, and how much less.
	TelemetryGaps []telemetryGap `json:"telemetry_gaps,omitempty"`
	// Client is the Kafka client that ran the load: the row's client at
	// the start, then with its version and runtime (Go, or the JVM and
	// its flags) as the load generator reported them.
	Client *loadgen.ClientInfo `json:"client,omitempty"`
	// Connections is what the load generator's connections negotiated
	// (TLS version and suite, SASL mechanism, read back from the
	// connections) and, with connection_churn, how often they were made.
	Connections *loadgen.Connections `json:"connections,omitempty"`
}

// attemptCrypto is what the row's gateway ran its cryptography on and,
// when tlsrec is its record layer and the target counts them
// (target.TLSKeptReader), the TLS legs crypto/tls kept instead during the
// attempt.
type attemptCrypto struct {
	target.CryptoInfo
	// TLSKept counts, by leg and reason, the legs crypto/tls kept from
	// just before the load started until it ended (the legs are made as
	// the clients connect, before the measured window opens): {} when
	// none; absent when not counted.
	TLSKept *target.TLSKept `json:"tls_kept,omitempty"`
	// TLSKeptError says why the legs could not be counted.
	TLSKeptError string `json:"tls_kept_error,omitempty"`
}

// attemptLog collects the runner's log lines of one attempt (stored
// compressed with it).
type attemptLog struct {
	now func() time.Time
	b   []byte
}

func (l *attemptLog) printf(f string, a ...any) {
	l.b = l.now().UTC().AppendFormat(l.b, "15:04:05.000 ")
	l.b = fmt.Appendf(l.b, f, a...)
	l.b = append(l.b, '\n')
}

func (l *attemptLog) bytes() []byte { return l.b }
