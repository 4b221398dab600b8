package loadgen

import (
	"context"
	"time"

	"github.com/xp-bench/xp/infra/procstat"
)

// sampler records a run's series, one Second per second from the start of
// measurement until it is stopped after the drain, and the process's CPU
// time over the measurement window. Between seconds it samples the backlog
// every 10 ms, so the backlog's maximum cannot hide between two seconds.
type sampler struct {
	series           []Second
	cpuStart, cpuEnd float64 // process CPU seconds at the window's start and end
	stopc, done      chan struct{}
}

// startSampler starts sampling at warmEnd, the start of measurement, and
// reports the measure phase (ending at measEnd) then. Sampling ends when
// stop is called or ctx ends.
func (r *run) startSampler(ctx context.Context, warmEnd, measEnd time.Time) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go r.sample(ctx, s, warmEnd, measEnd)
	return s
}

// sample is the sampler's goroutine.
func (r *run) sample(ctx context.Context, s *sampler, warmEnd, measEnd time.Time) {
	defer close(s.done)
	if !sleepUntil(ctx, warmEnd) {
		return
	}
	s.cpuStart = procstat.SelfCPU().Seconds()
	lastPub, lastCons := r.ackedAll.Load(), r.consumedAll.Load()
	r.phase("measure", measEnd)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for sec := 0; ; sec++ {
		next := warmEnd.Add(time.Duration(sec+1) * time.Second)
		stopped := false
		for !stopped && time.Now().Before(next) {
			select {
			case <-tick.C:
				r.sampleBacklog()
			case <-s.stopc:
				stopped = true
			case <-ctx.Done():
				stopped = true
			}
		}
		r.sampleBacklog()
		p, c := r.ackedAll.Load(), r.consumedAll.Load()
		s.series = append(s.series, Second{Second: sec, Published: p - lastPub, Consumed: c - lastCons, Backlog: r.backlog()})
		lastPub, lastCons = p, c
		if sec+1 == r.nsec {
			s.cpuEnd = procstat.SelfCPU().Seconds()
		}
		if stopped {
			return
		}
	}
}

// stop ends sampling (the last, partial second is recorded) and waits for
// the sampler to finish. A window cut short has its CPU time read now.
func (s *sampler) stop() {
	close(s.stopc)
	<-s.done
	if s.cpuEnd == 0 && s.cpuStart != 0 {
		s.cpuEnd = procstat.SelfCPU().Seconds()
	}
}

// cpu is the process's CPU seconds in the measurement window; call after
// stop.
func (s *sampler) cpu() float64 {
	return max(0, s.cpuEnd-s.cpuStart)
}

// backlog is the acknowledged records not yet consumed, summed over the
// groups.
func (r *run) backlog() int64 {
	return max(0, int64(r.cfg.ConsumerGroups)*r.ackedAll.Load()-r.consumedAll.Load())
}

// sampleBacklog raises the backlog's maximum to the backlog now.
func (r *run) sampleBacklog() {
	bl := r.backlog()
	for {
		cur := r.backlogMax.Load()
		if bl <= cur || r.backlogMax.CompareAndSwap(cur, bl) {
			return
		}
	}
}
