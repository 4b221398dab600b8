package runner

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// progress reports on stderr: on a terminal a live bar redrawn in place,
// with log lines scrolling above it; otherwise one log line per event and
// phase, each starting "xp: " and carrying "phase=NAME" where it marks one.
type progress struct {
	w    io.Writer
	term bool
	now  func() time.Time

	mu       sync.Mutex
	total    int
	finished int // done + invalid + failed rows
	invalid  int
	failed   int
	row      *planner.Row
	attempt  int
	phase    string
	ends     time.Time
	rowStart time.Time
	// rowTimes are wall times of rows finished by this process, for the ETA.
	rowTimes []time.Duration
	estimate time.Duration // mean attempt time recorded in the db
	drawn    bool

	stop chan struct{}
	wg   sync.WaitGroup
}

func newProgress(w io.Writer, term bool, now func() time.Time, p results.Progress) *progress {
	pr := &progress{w: w, term: term, now: now, total: p.Total,
		finished: p.Rows[results.Done] + p.Rows[results.Invalid] + p.Rows[results.Failed],
		invalid:  p.Rows[results.Invalid], failed: p.Rows[results.Failed], estimate: p.MeanAttempt,
		stop: make(chan struct{})}
	if term {
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-pr.stop:
					return
				case <-t.C:
					pr.mu.Lock()
					pr.draw()
					pr.mu.Unlock()
				}
			}
		}()
	}
	return pr
}

func (p *progress) close() {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// logf prints one line (above the bar on a terminal).
func (p *progress) logf(f string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(fmt.Sprintf(f, a...))
}

func (p *progress) line(s string) {
	if p.term {
		fmt.Fprintf(p.w, "\r\033[Kxp: %s\n", s)
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "xp: %s %s\n", p.now().Format("15:04:05"), s)
}

func (p *progress) startRow(r planner.Row, attempt int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.row, p.attempt, p.phase, p.rowStart = &r, attempt, "start", p.now()
	p.line(fmt.Sprintf("row %d/%d %s attempt %d: %s", p.finished+1, p.total, r.Run, attempt, factors(&r)))
}

func (p *progress) setPhase(phase string, ends time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if phase == "done" { // the load generator's end; "write" follows at once
		return
	}
	p.phase, p.ends = phase, ends
	if p.term {
		p.draw()
		return
	}
	var where string
	if p.row != nil && phase != "provision" {
		where = fmt.Sprintf("row %d/%d %s ", p.finished+1, p.total, p.row.Run)
	}
	if !ends.IsZero() {
		limit := "for"
		if phase == "drain" {
			limit = "for at most"
		}
		p.line(fmt.Sprintf("%sphase=%s %s %s", where, phase, limit, ends.Sub(p.now()).Round(time.Second)))
	} else if phase != "provision" { // provisioning logs its own line
		p.line(fmt.Sprintf("%sphase=%s", where, phase))
	}
}

func (p *progress) finishRow(r planner.Row, attempt int, ev results.Evidence, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Outcome {
	case results.OutcomeDone:
		p.finished++
	case results.OutcomeInvalid:
		p.finished++
		p.invalid++
	case results.OutcomeFailed:
		// A failed attempt may be retried; the row counts as failed only
		// until then, so count it once as finished when it stays failed.
	}
	if ev.Outcome != results.OutcomeInterrupted {
		p.rowTimes = append(p.rowTimes, took)
	}
	msg := fmt.Sprintf("row %s attempt %d: %s in %s", r.Run, attempt, ev.Outcome, took.Round(100*time.Millisecond))
	if v, ok := ev.Metrics["publish_ms_p99"]; ok && ev.Outcome != results.OutcomeInterrupted && v > 0 {
		msg += ", publish p99 " + latencyWords(v)
	}
	if len(ev.Reasons) > 0 {
		msg += ": " + strings.Join(ev.Reasons, "; ")
	}
	if ev.Error != "" {
		msg += ": " + ev.Error
	}
	p.row, p.phase = nil, ""
	p.line(msg)
}

// rowFailed counts a row that stays failed after its last attempt.
func (p *progress) rowFailed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
	p.failed++
}

// reopen counts n finished rows (invalid of them invalid) as to run
// again: their matched set runs again whole.
func (p *progress) reopen(n, invalid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished -= n
	p.invalid -= invalid
}

// grow counts n rows added to the campaign (a second stage).
func (p *progress) grow(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += n
}

// eta estimates the time left from the mean row time.
func (p *progress) eta() time.Duration {
	mean := p.estimate
	if len(p.rowTimes) > 0 {
		var sum time.Duration
		for _, d := range p.rowTimes {
			sum += d
		}
		mean = sum / time.Duration(len(p.rowTimes))
	}
	left := mean * time.Duration(p.total-p.finished)
	if p.row != nil { // the current row is partly done
		left -= min(p.now().Sub(p.rowStart), mean)
	}
	return max(left, 0)
}

// draw redraws the bar; the caller holds mu.
func (p *progress) draw() {
	if !p.term {
		return
	}
	const width = 24
	filled := 0
	if p.total > 0 {
		filled = width * p.finished / p.total
	}
	var b strings.Builder
	b.WriteString("\r\033[K[")
	b.WriteString(strings.Repeat("#", filled))
	b.WriteString(strings.Repeat(".", width-filled))
	fmt.Fprintf(&b, "] %d/%d", p.finished, p.total)
	if p.invalid > 0 || p.failed > 0 {
		fmt.Fprintf(&b, " (%d invalid, %d failed)", p.invalid, p.failed)
	}
	if p.phase != "" {
		fmt.Fprintf(&b, " | %s", p.phase)
		if !p.ends.IsZero() {
			left := p.ends.Sub(p.now())
			if left < 0 {
				left = 0
			}
			fmt.Fprintf(&b, " %s", left.Round(time.Second))
		}
	}
	if eta := p.eta(); eta > 0 {
		fmt.Fprintf(&b, " | ETA %s", eta.Round(time.Second))
	}
	// The row last: what the line may lose to its width.
	if p.row != nil {
		fmt.Fprintf(&b, " | %s %s", p.row.Run, factors(p.row))
	}
	// One line that never wraps, or the \r redraw would scroll.
	line := []rune(b.String())
	if len(line) > barWidth {
		line = append(line[:barWidth-1], '…')
	}
	fmt.Fprint(p.w, string(line))
	p.drawn = true
}

// barWidth bounds the bar's line (state has no terminal width; 120 columns
// is the common minimum of today's terminals, counting the escape prefix).
const barWidth = 120

// factors is a short description of a row's main factors.
func factors(r *planner.Row) string {
	return fmt.Sprintf("security=%s brokers=%d size=%d rate=%s acks=%s", r.Security, r.Brokers,
		r.MessageSize, r.TargetRate, r.Acks)
}

// latencyWords writes a latency for people: "0.82 ms", "918 ms", "9.2 s".
func latencyWords(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'g', 3, 64) + " ms"
}
