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
	out := parts[0].Result
	out.Healthy = true
	out.Reasons, out.Warnings, out.ErrorSamples, out.Topics, out.Series = nil, nil, nil, nil, nil
	out.TargetRate, out.PublishRate, out.ConsumeRate = 0, 0, 0
	out.Published, out.Consumed, out.Errors, out.Duplicates = 0, 0, 0, 0
	out.BacklogMax, out.DrainS, out.ClientCPUS, out.ClientRSSMaxMiB = 0, 0, 0, 0
	out.Warmup = loadgen.WarmupCounts{}
	out.Intervals = nil
	closed := false
	series := map[int]*loadgen.Second{}
	hists := [3]*hdrhistogram.Histogram{loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()}
	for _, p := range parts {
		r := p.Result
		if !r.Healthy {
			out.Healthy = false
		}
		for _, s := range r.Reasons {
			out.Reasons = append(out.Reasons, p.Host+": "+s)
		}
		for _, s := range r.Warnings {
			out.Warnings = append(out.Warnings, p.Host+": "+s)
		}
		for _, s := range r.ErrorSamples {
			out.ErrorSamples = append(out.ErrorSamples, p.Host+": "+s)
		}
		if r.TargetRate == 0 {
			closed = true
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
		if r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		for _, s := range r.Series {
			m := series[s.Second]
			if m == nil {
				m = &loadgen.Second{Second: s.Second}
				series[s.Second] = m
			}
			m.Published += s.Published
			m.Consumed += s.Consumed
			m.Backlog += s.Backlog
		}
		for i, enc := range []string{r.Histograms.Publish, r.Histograms.E2E, r.Histograms.SendDelay} {
			if enc == "" {
				continue
			}
			h, err := hdrhistogram.Decode([]byte(enc))
			if err != nil {
				return loadgen.Result{}, fmt.Errorf("remote: histogram from %s: %w", p.Host, err)
			}
			if dropped := hists[i].Merge(h); dropped != 0 {
				return loadgen.Result{}, fmt.Errorf("remote: histogram from %s: %d values outside xp's range", p.Host, dropped)
			}
		}
	}
	if closed {
		out.TargetRate = 0
	}
	out.Config.Rate = out.TargetRate
	secs := make([]int, 0, len(series))
	for s := range series {
		secs = append(secs, s)
	}
	sort.Ints(secs)
	for _, s := range secs {
		out.Series = append(out.Series, *series[s])
		out.BacklogMax = max(out.BacklogMax, series[s].Backlog)
	}
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
	out.PublishLatencyMs = loadgen.Summarize(hists[0])
	out.E2ELatencyMs = loadgen.Summarize(hists[1])
	out.SendDelayMs = loadgen.Summarize(hists[2])
	return out, nil
}
