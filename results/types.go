package results

import (
	"encoding/json"
	"time"
)

// State is a row's state.
type State string

// Row states.
const (
	Pending State = "pending"
	Running State = "running"
	Done    State = "done"
	Invalid State = "invalid"
	Failed  State = "failed"
)

// States lists every row state in display order.
var States = []State{Pending, Running, Done, Invalid, Failed}

// Outcome is how an attempt ended.
type Outcome string

// Attempt outcomes.
const (
	// OutcomeDone: the run was healthy.
	OutcomeDone Outcome = "done"
	// OutcomeInvalid: the run completed but failed the health gate; its
	// reasons and evidence are kept.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeFailed: the run could not be completed (an error).
	OutcomeFailed Outcome = "failed"
	// OutcomeInterrupted: a signal or a killed process ended the run.
	OutcomeInterrupted Outcome = "interrupted"
)

// RowState is the state a row takes after an attempt with outcome o: an
// interrupted row goes back to pending.
func (o Outcome) RowState() State {
	switch o {
	case OutcomeDone:
		return Done
	case OutcomeInvalid:
		return Invalid
	case OutcomeFailed:
		return Failed
	default:
		return Pending
	}
}

func (o Outcome) valid() bool {
	switch o {
	case OutcomeDone, OutcomeInvalid, OutcomeFailed, OutcomeInterrupted:
		return true
	}
	return false
}

// Campaign is what is registered once per database.
type Campaign struct {
	Name string
	// Spec is the factor spec (YAML) the plan came from; empty if unknown.
	Spec string
	// Plan is the plan file's bytes as read; PlanSHA256 their hex SHA-256
	// (computed by Register when empty).
	Plan       []byte
	PlanSHA256 string
	// Target is "local" or the target file's text.
	Target    string
	Seed      int64
	XPVersion string
	// Host describes the machine that runs xp (JSON object).
	Host    json.RawMessage
	Created time.Time
}

// Row is one plan row.
type Row struct {
	Run       string
	Order     int
	Cell      string
	Pair      string
	Replicate int
	Block     int
	// Plan is the plan row as JSON (a planner.Row for native campaigns, any
	// object of factors for imported ones).
	Plan  json.RawMessage
	State State
}

// Attempt is one try of a row.
type Attempt struct {
	ID      int64
	Run     string
	Number  int // 1-based per row
	Started time.Time
	Ended   time.Time // zero while running
	// Phase is the last phase reported while running ("provision", "warmup",
	// "measure", "drain", "write", ...).
	Phase string
	// Outcome is empty while the attempt runs.
	Outcome     Outcome
	Reasons     []string
	Error       string
	Environment json.RawMessage
	// Superseded, when not empty, says why this finished attempt no longer
	// counts: its matched set was left partial and ran again whole. It is
	// kept as evidence; analysis pairs only the newer attempt.
	Superseded string
	// Metrics is filled by Attempts; nil elsewhere.
	Metrics map[string]float64
}

// Histogram kinds.
const (
	KindPublish   = "publish"
	KindE2E       = "e2e"
	KindSendDelay = "send_delay"
)

// WholeRun is the Second of a histogram that covers the whole measured run.
const WholeRun = -1

// Histogram is one encoded HDR histogram (V2 compressed, microseconds).
type Histogram struct {
	Kind   string
	Second int // WholeRun, or the second of the measurement from 0
	Data   []byte
}

// SeriesPoint is one second of a run.
type SeriesPoint struct {
	Second    int
	Published int64
	Consumed  int64
	Backlog   int64
}

// Sample is one telemetry reading.
type Sample struct {
	Host   string
	TS     time.Time
	Metric string
	Value  float64
}

// Log is one named raw log; Text is stored gzip-compressed.
type Log struct {
	Name string
	Text []byte
}

// Evidence is everything an attempt leaves, written in one transaction.
type Evidence struct {
	Outcome    Outcome
	Reasons    []string
	Error      string
	Ended      time.Time // defaults to now
	Metrics    map[string]float64
	Histograms []Histogram
	Series     []SeriesPoint
	Telemetry  []Sample
	Logs       []Log
	// Environment, when not empty, replaces the environment recorded when
	// the attempt started, with what became known while it ran (a JSON
	// object).
	Environment json.RawMessage
}

// InfraEvent records infrastructure coming up or going down.
type InfraEvent struct {
	ID int64
	// Event is "up" or "down", or one of a provisioner's own steps
	// ("applying", "apply-failed", "destroying", "destroy-failed").
	Event string
	Group string // infrastructure group key
	Time  time.Time
	// Outputs are the target's outputs (endpoints, hosts) as JSON.
	Outputs json.RawMessage
	// Cost is the cost in USD of the group's time up that ended at Time
	// (on "down"); Progress sums it.
	Cost float64
	// Started is when the step began (zero when it took no time of its
	// own); Duration how long it took.
	Started  time.Time
	Duration time.Duration
	// Error is why the step failed ("" when it did not), with the
	// provisioner's own message.
	Error string
	// HourlyUSD is what the group costs an hour while up (on "up").
	HourlyUSD float64
}
