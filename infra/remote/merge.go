package remote

import (
	"errors"
	"fmt"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/runner/loadgen"
)

// Part is one client host's share of a run.
type Part struct {
	Host   string
	Result loadgen.Result
}

// Merge combines the results of one run split over client hosts into the
// result of the whole run: counts and rates add up, HDR histograms merge
// (so percentiles are those of every record, not an average of
// percentiles), the per-second series add up second by second, and the run
// is healthy only if every part is. Reasons, warnings and error samples
// keep the host they came from.
func Merge(parts []Part) (loadgen.Result, error) {
	if len(parts) == 0 {
		return loadgen.Result{}, errors.New("remote: no client results to merge")
	}
	if len(parts) == 1 {
		return parts[0].Result, nil
	}
	out := mergeBase(parts[0].Result)
	closed := false
	series := map[int]*loadgen.Second{}
	hists := [3]*hdrhistogram.Histogram{loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()}
	for _, p := range parts {
		r := &p.Result
		addPart(&out, p.Host, r)
		if r.TargetRate == 0 {
			closed = true
		}
		addSeries(series, r.Series)
		if err := mergeHistograms(&hists, p.Host, r.Histograms); err != nil {
			return loadgen.Result{}, err
		}
	}
	if closed {
		out.TargetRate = 0
	}
	out.Config.Rate = out.TargetRate
	out.Series, out.BacklogMax = sortedSeries(series)
	if len(out.Series) == 0 {
		for _, p := range parts {
			out.BacklogMax += p.Result.BacklogMax
		}
	}
	encoded := [3]string{}
	for i, h := range hists {
		b, err := loadgen.EncodeHistogram(h)
		if err != nil {
			return loadgen.Result{}, err
		}
		encoded[i] = string(b)
	}
	out.Histograms = loadgen.Histograms{Publish: encoded[0], E2E: encoded[1], SendDelay: encoded[2]}
	var err error
	if out.Connections, err = mergeConnections(parts); err != nil {
		return loadgen.Result{}, err
	}
	out.PublishLatencyMs = loadgen.Summarize(hists[0])
	out.E2ELatencyMs = loadgen.Summarize(hists[1])
	out.SendDelayMs = loadgen.Summarize(hists[2])
	return out, nil
}

// mergeBase is first, the first part's result, with what the parts add up
// to cleared and healthy: what it keeps (the config, the run's identity)
// is the whole run's.
func mergeBase(first loadgen.Result) loadgen.Result {
	out := first
	out.Healthy = true
	out.Reasons, out.Warnings, out.ErrorSamples, out.Topics, out.Series = nil, nil, nil, nil, nil
	out.TargetRate, out.PublishRate, out.ConsumeRate = 0, 0, 0
	out.Published, out.Consumed, out.Errors, out.Duplicates = 0, 0, 0, 0
	out.BacklogMax, out.DrainS, out.ClientCPUS, out.ClientRSSMaxMiB = 0, 0, 0, 0
	out.Warmup = loadgen.WarmupCounts{}
	out.Scheduling = nil
	out.Intervals = nil
	return out
}

// addPart adds the counts, rates, topics, time span and health of r, the
// part of host, to out.
func addPart(out *loadgen.Result, host string, r *loadgen.Result) {
	if !r.Healthy {
		out.Healthy = false
	}
	for _, s := range r.Reasons {
		out.Reasons = append(out.Reasons, host+": "+s)
	}
	for _, s := range r.Warnings {
		out.Warnings = append(out.Warnings, host+": "+s)
	}
	for _, s := range r.ErrorSamples {
		out.ErrorSamples = append(out.ErrorSamples, host+": "+s)
	}
	out.TargetRate += r.TargetRate
	out.PublishRate += r.PublishRate
	out.ConsumeRate += r.ConsumeRate
	out.Published += r.Published
	out.Consumed += r.Consumed
	out.Errors += r.Errors
	out.Duplicates += r.Duplicates
	out.DrainS = max(out.DrainS, r.DrainS)
	out.ClientCPUS += r.ClientCPUS
	out.ClientRSSMaxMiB = max(out.ClientRSSMaxMiB, r.ClientRSSMaxMiB)
	out.Warmup.Seconds = max(out.Warmup.Seconds, r.Warmup.Seconds)
	out.Warmup.Published += r.Warmup.Published
	out.Warmup.Consumed += r.Warmup.Consumed
	out.Topics = append(out.Topics, r.Topics...)
	if s := r.Scheduling; s != nil {
		// Each host's pacers add up; steal is each host's own, and the
		// worst host's is what the merged run suffered.
		if out.Scheduling == nil {
			out.Scheduling = &loadgen.Scheduling{}
		}
		out.Scheduling.PacerWaitMs += s.PacerWaitMs
		out.Scheduling.PacerRuns += s.PacerRuns
		out.Scheduling.Pacers += s.Pacers
		out.Scheduling.StealPct = max(out.Scheduling.StealPct, s.StealPct)
	}
	if r.Start.Before(out.Start) {
		out.Start = r.Start
	}
	if r.End.After(out.End) {
		out.End = r.End
	}
}

// addSeries adds a part's per-second series to series, second by second.
func addSeries(series map[int]*loadgen.Second, part []loadgen.Second) {
	for _, s := range part {
		m := series[s.Second]
		if m == nil {
			m = &loadgen.Second{Second: s.Second}
			series[s.Second] = m
		}
		m.Published += s.Published
		m.Consumed += s.Consumed
		m.Backlog += s.Backlog
	}
}

// sortedSeries is series in order of its seconds, and the largest backlog
// of any second.
func sortedSeries(series map[int]*loadgen.Second) ([]loadgen.Second, int64) {
	secs := make([]int, 0, len(series))
	for s := range series {
		secs = append(secs, s)
	}
	sort.Ints(secs)
	var out []loadgen.Second
	var backlogMax int64
	for _, s := range secs {
		out = append(out, *series[s])
		backlogMax = max(backlogMax, series[s].Backlog)
	}
	return out, backlogMax
}

// mergeConnections combines the parts' connections: reconnects,
// handshakes and handshakes per second add up and the reconnect-time
// histograms merge; what was negotiated (TLS version, suite and key, SASL
// mechanism), which each part checked against the row, must agree. Nil
// when no part reports connections.
func mergeConnections(parts []Part) (*loadgen.Connections, error) {
	var out *loadgen.Connections
	hist := loadgen.NewHistogram()
	for _, p := range parts {
		c := p.Result.Connections
		if c == nil {
			continue
		}
		if out == nil {
			first := *c
			first.Reconnects, first.Handshakes, first.HandshakesPerS = 0, 0, 0
			out = &first
		}
		if c.TLSVersion != out.TLSVersion || c.TLSCipher != out.TLSCipher || c.TLSKey != out.TLSKey || c.SASLMechanism != out.SASLMechanism {
			return nil, fmt.Errorf("remote: client %s negotiated %s %s %s %s, another client %s %s %s %s", p.Host,
				c.TLSVersion, c.TLSCipher, c.TLSKey, c.SASLMechanism, out.TLSVersion, out.TLSCipher, out.TLSKey, out.SASLMechanism)
		}
		out.Reconnects += c.Reconnects
		out.Handshakes += c.Handshakes
		out.HandshakesPerS += c.HandshakesPerS
		if c.Reconnect == "" {
			continue
		}
		h, err := hdrhistogram.Decode([]byte(c.Reconnect))
		if err != nil {
			return nil, fmt.Errorf("remote: reconnect histogram from %s: %w", p.Host, err)
		}
		if dropped := hist.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("remote: reconnect histogram from %s: %d values outside xp's range", p.Host, dropped)
		}
	}
	if out == nil {
		return nil, nil
	}
	b, err := loadgen.EncodeHistogram(hist)
	if err != nil {
		return nil, err
	}
	out.Reconnect, out.ReconnectMs = string(b), loadgen.Summarize(hist)
	return out, nil
}

// mergeHistograms merges the encoded histograms of host's part into
// hists (publish, end-to-end, send delay).
func mergeHistograms(hists *[3]*hdrhistogram.Histogram, host string, enc loadgen.Histograms) error {
	for i, e := range []string{enc.Publish, enc.E2E, enc.SendDelay} {
		if e == "" {
			continue
		}
		h, err := hdrhistogram.Decode([]byte(e))
		if err != nil {
			return fmt.Errorf("remote: histogram from %s: %w", host, err)
		}
		if dropped := hists[i].Merge(h); dropped != 0 {
			return fmt.Errorf("remote: histogram from %s: %d values outside xp's range", host, dropped)
		}
	}
	return nil
}
