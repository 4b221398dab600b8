package loadgen

import (
	"os"
	"runtime/debug"
	"sync"

	"golang.org/x/sys/unix"
)

// loadGOGC is the garbage collector's target while a load runs. A load
// allocates fast over a small live heap (franz-go reads every fetch
// response into a fresh buffer), so the default of 100 collects many
// times a second, and each cycle's mark phase takes one of the process's
// Ps, which the pacer may be waiting for when it wakes. 200 halves the
// cycles; higher targets let the heap grow too close to the load
// generator's memory target (BenchmarkMemory). A GOGC set in the
// environment wins.
const loadGOGC = 200

var gcTune struct {
	sync.Mutex
	n    int // loads running
	prev int
}

// tuneGC raises the GC target for the duration of a load; the returned
// function restores it when the last concurrent load ends.
func tuneGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcTune.Lock()
	defer gcTune.Unlock()
	if gcTune.n == 0 {
		gcTune.prev = debug.SetGCPercent(loadGOGC)
	}
	gcTune.n++
	return func() {
		gcTune.Lock()
		defer gcTune.Unlock()
		if gcTune.n--; gcTune.n == 0 {
			debug.SetGCPercent(gcTune.prev)
		}
	}
}

// pacerSlice is the scheduler slice asked for the pacer's thread. Linux's
// EEVDF scheduler (6.6 and later; custom slices from 6.12) gives a thread
// with a short slice an early deadline, so when it wakes it preempts a
// thread running a long one instead of waiting out that thread's slice
// (3 ms by default), the whole send-delay tail on a busy machine. It needs
// no privilege; older kernels ignore the value.
const pacerSlice = 100_000 // ns, the kernel's minimum

// pacerNice is the pacer thread's nice value where the process may raise
// priority (root or CAP_SYS_NICE): its weight then wins the CPU back from
// busy threads sooner. The pacer uses little CPU, so this costs the rest
// of the machine little, and it shortens the send-delay tail on a busy
// machine beyond what the short slice alone does.
const pacerNice = -10

// Pacer priorities, as the result's config reports them.
const (
	PacerNiceSlice = "nice -10, slice 0.1 ms"
	PacerSlice     = "slice 0.1 ms"
	PacerDefault   = "default"
)

// hintLatency raises the calling thread's scheduling priority (the thread
// is locked to the pacer goroutine) as far as it is allowed: nice -10 and
// a short slice, else the short slice alone. It returns what it set and
// the function that gives the thread the defaults back before it is
// unlocked.
func hintLatency() (restore func(), applied string) {
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Runtime: pacerSlice, Nice: pacerNice}
	applied = PacerNiceSlice
	if unix.SchedSetAttr(0, &a, 0) != nil {
		a.Nice, applied = 0, PacerSlice
		if unix.SchedSetAttr(0, &a, 0) != nil {
			return func() {}, PacerDefault
		}
	}
	return func() {
		a.Runtime, a.Nice = 0, 0 // the defaults; raising nice needs no privilege
		_ = unix.SchedSetAttr(0, &a, 0)
	}, applied
}
