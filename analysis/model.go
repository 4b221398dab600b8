// Package analysis turns a campaign's evidence into paired effects with
// bootstrap confidence intervals, per-cell significance and factor
// sensitivity. It works on a Dataset, an in-memory view of a campaign that
// Load fills from a campaign database; analysis/export writes the results.
package analysis

import (
	"errors"
	"fmt"
	"strings"
)

// Outcomes of an attempt, as the evidence store records them. A row that
// never ran has an empty outcome.
const (
	OutcomeDone        = "done"
	OutcomeInvalid     = "invalid"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
	// OutcomeRunning marks an attempt still in flight (Load).
	OutcomeRunning = "running"
)

// Dataset is a campaign as analysis sees it, independent of storage.
type Dataset struct {
	Campaign string
	// Seed is the campaign seed; the bootstrap derives from it unless
	// Options.Seed is set.
	Seed int64
	// Treatment names the compared factor (e.g. "security"); Baseline is
	// its reference level.
	Treatment string
	Baseline  string
	// Factors names every factor column, in output order, Treatment among
	// them.
	Factors []string
	// Info describes the campaign, environment and provenance for the
	// report (e.g. spec, target, xp version), in display order.
	Info []Field
	// Metrics lists the metrics to analyse, in output order.
	Metrics []MetricDef
	// Imported is true for a campaign from xp import. Its plan is the data,
	// so a matched set that lacks a level's run is counted as excluded (an
	// unpaired row); in a native campaign a pair without a row of a level
	// was never planned (a constraint), and is no set of that level.
	Imported bool
	// Runs holds one entry per attempt (and one per row never attempted),
	// in plan order and attempt number.
	Runs []Run
	// Stage is the campaign's two-stage design (xp run --halfwidth), nil
	// without one.
	Stage *StageDesign
}

// Field is a named value.
type Field struct{ Name, Value string }

// MetricDef says how a metric is analysed.
type MetricDef struct {
	Name string
	// Unit is written to effects.csv for differences: "ms", "msg/s",
	// "us/msg" or "value".
	Unit string
	// Higher is true when larger is better (throughput); the penalty is
	// then (baseline - treatment) / baseline.
	Higher bool
	// MaxOnly restricts the metric to saturating (target_rate "max") rows:
	// achieved throughput means nothing for a capped row.
	MaxOnly bool
}

// Run is one attempt of one plan row.
type Run struct {
	Run       string
	Cell      string
	Pair      string
	Replicate int
	// Attempt is the 1-based attempt number; 0 for a row never attempted.
	Attempt int
	// Final marks the row's latest attempt, the one analysed.
	Final bool
	// Superseded, when not empty, says why this attempt is not analysed:
	// its matched set was left partial and ran again whole.
	Superseded string
	// Saturating is true for target_rate "max" (closed-loop) rows; capped
	// and saturating rows are never pooled in one estimate.
	Saturating bool
	// Factors holds the factor values, aligned with Dataset.Factors.
	Factors []string
	Outcome string
	Reasons []string
	Error   string
	// GatewayRecordLayer and GatewayCipher are what the attempt's gateway
	// ran its cryptography on (crypto/tls, tlsrec, or tlsrec+crypto/tls
	// when crypto/tls kept some legs; crypto/cipher or aesgcm-vaes); empty
	// for rows without a gateway.
	GatewayRecordLayer string
	GatewayCipher      string
	// GatewayTLSKept lists the gateway TLS legs crypto/tls carried instead
	// of tlsrec during the attempt (gateway_crypto fast), as
	// leg:reason=legs;... sorted; "" when none (or no tlsrec), or
	// TLSKeptNotCounted. The record layer of a run with kept legs reads
	// tlsrec+crypto/tls.
	GatewayTLSKept string
	// TelemetryGaps says which hosts' telemetry covers less than the
	// attempt's measured window ("client-0 12.0 s of 30.0 s; ..."), as
	// the runner records it (environment telemetry_gaps); "" when every
	// host's does.
	TelemetryGaps string
	// Broker is the broker software the attempt measured, "KIND VERSION":
	// "apache 4.1.0" (Apache Kafka), "kfake v1.2.3" (the embedded
	// cluster) or "existing v4.0 (guessed from ApiVersions)" (a cluster
	// someone else runs); "" where the attempt did not record it.
	Broker string
	// BrokerRuntime is Apache Kafka's Java runtime and JVM flags.
	BrokerRuntime string
	Metrics       map[string]float64
	// Histograms maps a kind (publish, e2e, send_delay) to the attempt's
	// whole-run HDR histogram, V2-compressed.
	Histograms map[string][]byte
	// Hosts is what each host sampled during a healthy attempt did over
	// its measured window (Load; none for imports or an attempt without a
	// recorded window).
	Hosts []HostUse
	// Outliers lists the metrics for which Analyse flagged the run as
	// extreme against its configuration's other replicates (Outlier).
	Outliers []string
	// Series is the attempt's rate series as Save stores it (imports);
	// Load leaves it empty.
	Series []SeriesPoint
}

// SeriesPoint is one sample of a run's rates: messages a second published
// and consumed, and the backlog, at Second from the start of the run.
type SeriesPoint struct {
	Second                       int
	Published, Consumed, Backlog int64
}

// Level returns the run's value of factor f, or "" when it has none.
func (d *Dataset) Level(r *Run, f string) string {
	for i, n := range d.Factors {
		if n == f && i < len(r.Factors) {
			return r.Factors[i]
		}
	}
	return ""
}

// Errors callers branch on.
var (
	// ErrNoHealthySet: no matched set has a healthy baseline and treatment
	// run; the result is partial (runs, exclusions) and the command exits 3.
	ErrNoHealthySet = errors.New("no healthy matched set: every set has an unhealthy, failed or missing run")
	// ErrOneLevel: the treatment has a single level; there is nothing to
	// compare.
	ErrOneLevel = errors.New("the treatment has a single level: nothing to compare")
	// ErrBadOption: an Options value out of range.
	ErrBadOption = errors.New("bad analysis option")
)

// BaselineError reports a baseline that is not a level of the treatment.
type BaselineError struct {
	Baseline  string
	Treatment string
	Levels    []string
}

func (e *BaselineError) Error() string {
	return fmt.Sprintf("baseline %q is not a level of %s; the levels are: %s (choose one with --baseline)",
		e.Baseline, e.Treatment, strings.Join(e.Levels, ", "))
}

// Options tune an analysis. Zero values take the defaults.
type Options struct {
	// Baseline overrides the campaign's baseline level.
	Baseline string
	// Method is the interval method; default MethodBCa.
	Method Method
	// Resamples is the bootstrap size; default 10,000.
	Resamples int
	// Confidence is the interval's confidence level; default 0.95.
	Confidence float64
	// Seed, when SeedSet, replaces the campaign seed for the bootstrap.
	Seed    int64
	SeedSet bool
	// Workers bounds the parallel bootstrap workers; default GOMAXPROCS.
	// The output does not depend on it.
	Workers int
}

func (o Options) withDefaults(d *Dataset) (Options, error) {
	if o.Baseline == "" {
		o.Baseline = d.Baseline
	}
	if o.Method == "" {
		o.Method = MethodBCa
	}
	if o.Method != MethodBCa && o.Method != MethodPercentile {
		return o, fmt.Errorf("%w: unknown interval method %q: want --method bca or percentile", ErrBadOption, o.Method)
	}
	if o.Resamples == 0 {
		o.Resamples = 10000
	}
	if o.Resamples < 100 {
		return o, fmt.Errorf("%w: --resamples %d too few: want at least 100 (default 10000)", ErrBadOption, o.Resamples)
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return o, fmt.Errorf("%w: --confidence %v out of range: want a level between 0 and 1, e.g. 0.95", ErrBadOption, o.Confidence)
	}
	if !o.SeedSet {
		o.Seed = d.Seed
	}
	return o, nil
}
