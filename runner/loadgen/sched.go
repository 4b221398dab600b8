package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/xp-bench/xp/infra/hoststat"
	"github.com/xp-bench/xp/infra/procstat"
)

// Scheduling is what the machine did to the load generator in the
// measurement window: the part of the send delay that is not the
// client's. A send-delay tail beside a large PacerWaitMs or StealPct is
// the machine's; one without them is the client's.
type Scheduling struct {
	// PacerWaitMs is how long the open loop's pacer threads were runnable
	// but waited for a CPU in the window, summed over producers (the
	// run-queue time of their /proc schedstat).
	PacerWaitMs float64 `json:"pacer_wait_ms"`
	// PacerRuns counts the pacers' turns on a CPU in the window, about
	// one per wake-up: PacerWaitMs / PacerRuns is the mean wait of one.
	PacerRuns int64 `json:"pacer_runs"`
	// Pacers is the number of pacer threads measured (0 for a closed
	// loop, which has none).
	Pacers int `json:"pacers"`
	// StealPct is the share of the host's CPU time its hypervisor gave to
	// other guests from the start of the window to the end of the last
	// producer (/proc/stat steal; 0 on bare metal): time no thread of this
	// machine could run.
	StealPct float64 `json:"steal_pct"`
}

// schedWatch accumulates the pacers' scheduling and reads the host's
// steal at the window's start and end.
type schedWatch struct {
	wait, runs atomic.Int64 // ns, turns
	pacers     atomic.Int32
	mu         sync.Mutex
	hostTotal  [2]uint64 // USER_HZ ticks at the window's start and end
	hostSteal  [2]uint64
	hostRead   [2]bool
}

// add records n pacers' wait and turns over the window.
func (s *schedWatch) add(n int, wait time.Duration, runs int64) {
	s.wait.Add(int64(wait))
	s.runs.Add(runs)
	s.pacers.Add(int32(n))
}

// host reads the host's CPU counters at the window's start (0) or end (1).
func (s *schedWatch) host(i int) {
	c, err := hoststat.CPU()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hostTotal[i], s.hostSteal[i], s.hostRead[i] = c.CPUTotal(), c.CPUSteal, err == nil
}

// result is the window's Scheduling; nil when neither the pacers nor the
// host could be read (not Linux).
func (s *schedWatch) result() *Scheduling {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.pacers.Load()
	host := s.hostRead[0] && s.hostRead[1] && s.hostTotal[1] > s.hostTotal[0]
	if n == 0 && !host {
		return nil
	}
	out := &Scheduling{PacerWaitMs: float64(s.wait.Load()) / 1e6, PacerRuns: s.runs.Load(), Pacers: int(n)}
	if host {
		out.StealPct = 100 * float64(s.hostSteal[1]-s.hostSteal[0]) / float64(s.hostTotal[1]-s.hostTotal[0])
	}
	return out
}

// pacerSched measures a pacer thread (the calling one, locked to its
// goroutine) over the window: from when its first record of the window
// is due (start) to its end (stop).
type pacerSched struct {
	wait  time.Duration
	runs  int64
	state int8 // 0 not started, 1 measuring, -1 unreadable
}

func (p *pacerSched) start() {
	if p.state != 0 {
		return
	}
	var err error
	if p.wait, p.runs, err = procstat.ThreadSched(); err != nil {
		p.state = -1
		return
	}
	p.state = 1
}

func (p *pacerSched) stop(s *schedWatch) {
	if p.state != 1 {
		return
	}
	if wait, runs, err := procstat.ThreadSched(); err == nil {
		s.add(1, wait-p.wait, runs-p.runs)
	}
}
