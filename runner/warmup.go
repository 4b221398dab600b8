package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// The warm-up's stability rule (docs/running.md, "Warm-up"): a mode is
// warm once, over its last warmWindow seconds, neither its publish latency
// p50 falls nor its publish rate rises: the Mann-Kendall test finds no
// such trend (p < trendAlpha) of practical size (latency ×warmFall or
// less, rate ×warmRise or more, by Sen's slope). A cold JVM's latency
// falls by an order of magnitude in its first seconds; a warm cluster's
// noise, however loud, has no trend. The first round runs warmWindow
// seconds, each further round warmRound.
const (
	warmWindow = 6
	warmRound  = 3
	warmFall   = 2.0 / 3
	warmRise   = 1.1
	// DefaultWarmupCap bounds a group's warm-up load.
	DefaultWarmupCap = 2 * time.Minute
)

// warmSecond is one second of a warm-up load: records published and the
// publish latency p50 of the records sent in it.
type warmSecond struct {
	Rate  float64 `json:"rate"`
	P50Ms float64 `json:"p50_ms"`
}

// warmedUp applies the stability rule to a mode's warm-up seconds so far.
func warmedUp(s []warmSecond) bool {
	if len(s) < warmWindow {
		return false
	}
	last := s[len(s)-warmWindow:]
	lat, rate := make([]float64, 0, warmWindow), make([]float64, 0, warmWindow)
	for _, x := range last {
		if x.P50Ms > 0 {
			lat = append(lat, math.Log(x.P50Ms))
		}
		rate = append(rate, math.Log(max(x.Rate, 1)))
	}
	change := func(xs []float64) (float64, bool) {
		mk := mannKendall(xs)
		return math.Exp(mk.Slope * float64(len(xs)-1)), mk.P < trendAlpha
	}
	if f, sig := change(lat); sig && f <= warmFall {
		return false
	}
	if f, sig := change(rate); sig && f >= warmRise {
		return false
	}
	return true
}

// warmMode is the warm-up of one mode of a group: the row whose load it
// runs and the seconds measured so far.
type warmMode struct {
	Mode    string       `json:"mode"`
	Run     string       `json:"row"`
	Rate    string       `json:"target_rate"`
	Stable  bool         `json:"stable"`
	Seconds []warmSecond `json:"seconds"`
	row     planner.Row
	ep      target.Endpoint
}

// warmupRecord is the warm-up's infrastructure event ("warmup"): how long
// it ran, whether every mode was warm before the cap, and each mode's
// seconds.
type warmupRecord struct {
	Stable bool        `json:"stable"`
	LoadS  int         `json:"load_s"`
	CapS   float64     `json:"cap_s"`
	Rule   string      `json:"rule"`
	Modes  []*warmMode `json:"modes"`
}

// warmRows picks, per mode of the group in plan order, the row whose load
// warms it: the one of the lowest capped rate (a saturating row only when
// the mode has no other), so that the warm-up itself does not overload
// the cluster.
func warmRows(rows []planner.Row) []planner.Row {
	var out []planner.Row
	at := map[string]int{}
	gentler := func(a, b planner.Row) bool {
		switch {
		case a.TargetRate.IsMax():
			return false
		case b.TargetRate.IsMax():
			return true
		}
		return a.TargetRate < b.TargetRate
	}
	for _, r := range rows {
		k := target.ModeKey(&r)
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, r)
			continue
		}
		if gentler(r, out[i]) {
			out[i] = r
		}
	}
	return out
}

// warmUp runs the discarded warm-up load of group g after its cluster
// came up (or was restarted): every mode at once, in rounds, until each
// mode is warm (warmedUp) or the load has run o.WarmupCap (a cap shorter
// than warmWindow shortens the first round); and records it
// as the group's "warmup" event with its length. A load that fails ends
// the warm-up: the error is recorded, and the rows that follow meet the
// cluster as it is.
func (r *run) warmUp(ctx, wctx context.Context, g target.Group, ep target.Endpoints) error {
	if _, attached := r.target.(target.Attached); attached || r.o.WarmupCap < 0 {
		return nil
	}
	started := r.o.Now()
	r.prog.setPhase("cluster-warmup", time.Time{})
	var modes []*warmMode
	for _, row := range warmRows(g.Rows) {
		e, ok := ep.Modes[target.ModeKey(&row)]
		if !ok {
			continue
		}
		modes = append(modes, &warmMode{Mode: target.ModeKey(&row), Run: row.Run, Rate: row.TargetRate.String(), row: row, ep: e})
	}
	rec := warmupRecord{CapS: r.o.WarmupCap.Seconds(), Modes: modes,
		Rule: fmt.Sprintf("over the last %d s, no Mann-Kendall trend (p < %g) of the publish latency p50 falling to ×%.2g or of the rate rising ×%g", warmWindow, trendAlpha, warmFall, warmRise)}
	var loadErr error
	capS := int(r.o.WarmupCap.Seconds())
	for round := 0; ; round++ {
		secs := warmRound
		if round == 0 {
			// A cap shorter than the rule's window bounds the first round
			// too (at least a second of load): too short to find the
			// cluster warm, it is recorded as not warm.
			secs = max(1, min(warmWindow, capS))
		}
		if rec.LoadS+secs > capS && round > 0 {
			break
		}
		if loadErr = r.warmRound(ctx, modes, secs); loadErr != nil {
			break
		}
		rec.LoadS += secs
		rec.Stable = true
		for _, m := range modes {
			m.Stable = m.Stable || warmedUp(m.Seconds)
			rec.Stable = rec.Stable && m.Stable
		}
		if rec.Stable {
			break
		}
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	ended := r.o.Now()
	ev := results.InfraEvent{Event: "warmup", Group: g.Key.ID(), Time: ended, Started: started, Duration: ended.Sub(started)}
	ev.Outputs, _ = json.Marshal(rec)
	what := "every mode warm"
	if !rec.Stable {
		var cold []string
		for _, m := range modes {
			if !m.Stable {
				cold = append(cold, m.Mode)
			}
		}
		what = fmt.Sprintf("not warm within the cap of %s: %s", r.o.WarmupCap, strings.Join(cold, ", "))
	}
	if loadErr != nil {
		ev.Error = loadErr.Error()
		what = "a warm-up load failed: " + loadErr.Error()
	}
	r.prog.logf("phase=cluster-warmup group=%q: %d s of discarded load on %d modes in %s, %s",
		r.groupName(g.Key), rec.LoadS, len(modes), ev.Duration.Round(time.Second), what)
	_, err := r.store.AddInfraEvent(wctx, ev)
	return err
}

// warmRound runs one round of the warm-up: a load of secs seconds on
// every mode at once, each adding its seconds to its mode.
func (r *run) warmRound(ctx context.Context, modes []*warmMode, secs int) error {
	errs := make([]error, len(modes))
	var wg sync.WaitGroup
	for i, m := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := m.row
			row.WarmupS, row.DurationS, row.DrainTimeoutS = 0, secs, min(row.DrainTimeoutS, 10)
			actx, cancel := context.WithTimeout(ctx, attemptBound(&row))
			defer cancel()
			res, err := r.runLoad(actx, row, m.ep, func(string, time.Time) {}, true)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.Mode, err)
				return
			}
			m.Seconds = append(m.Seconds, warmSeconds(res)...)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// warmSeconds are the seconds of a warm-up load's window: records
// published (acknowledged) in each and the publish latency p50 of the
// records sent in it (0 when none was).
func warmSeconds(res *loadgen.Result) []warmSecond {
	nsec := int(math.Ceil(res.Config.DurationS))
	out := make([]warmSecond, 0, nsec)
	for _, s := range res.Series {
		if s.Second < nsec {
			out = append(out, warmSecond{Rate: float64(s.Published)})
		}
	}
	for _, iv := range res.Intervals {
		if iv.Second < len(out) {
			out[iv.Second].P50Ms, _ = secondP50(iv)
		}
	}
	return out
}
