package runner

import (
	"context"
	"sync"
	"time"
)

// phaseEvent is a phase the load generator reported, and when it ends.
type phaseEvent struct {
	name string
	ends time.Time
}

// phaseRecorder records the phases of an attempt in a goroutine of its
// own: the load generator reports them from its timing-critical
// goroutines, which must not wait for a database fsync.
type phaseRecorder struct {
	r      *run
	wctx   context.Context
	id     int64
	log    *attemptLog
	events chan phaseEvent
	ended  chan struct{}

	mu sync.Mutex
	// done is set when the load generator reported "done": the run
	// itself finished.
	done bool
	// closed is set when the load run returned: a report after it has
	// nothing to record.
	closed bool
}

// recordPhases starts recording the phases of attempt id, each also
// marked in tel, until end.
func (r *run) recordPhases(wctx context.Context, id int64, tel *telemetry, log *attemptLog) *phaseRecorder {
	p := &phaseRecorder{r: r, wctx: wctx, id: id, log: log,
		events: make(chan phaseEvent, 16), ended: make(chan struct{})}
	go func() {
		defer close(p.ended)
		for e := range p.events {
			tel.phase(e.name)
			p.record(e.name, e.ends)
		}
	}()
	return p
}

// report is the load generator's callback: phase name began and ends at
// ends.
func (p *phaseRecorder) report(name string, ends time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name == "done" {
		p.done = true
	}
	if p.closed {
		return
	}
	select {
	case p.events <- phaseEvent{name, ends}:
	default: // never: loadgen reports four phases
	}
}

// end stops recording once the phases reported are recorded.
func (p *phaseRecorder) end() {
	p.mu.Lock()
	p.closed = true
	close(p.events)
	p.mu.Unlock()
	<-p.ended
}

// record records phase name at once: a phase after the load run, or one
// the recording goroutine took from the load generator.
func (p *phaseRecorder) record(name string, ends time.Time) {
	p.r.prog.setPhase(name, ends)
	p.log.printf("phase %s", name)
	p.r.store.SetPhase(p.wctx, p.id, name)
}

// completed says whether the load generator reported "done".
func (p *phaseRecorder) completed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}
