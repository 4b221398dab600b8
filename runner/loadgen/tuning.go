package loadgen

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

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

// pacerSlice is the scheduler slice asked for a pacer thread. Linux's
// EEVDF scheduler (6.6 and later; custom slices from 6.12) gives a thread
// with a short slice an early deadline, so when it wakes it preempts a
// thread running a long one instead of waiting out that thread's slice
// (3 ms by default), the whole send-delay tail on a busy machine. It needs
// no privilege; older kernels ignore the value.
const pacerSlice = 100_000 // ns, the kernel's minimum

// pacerNice is a pacer thread's nice value where the process may raise
// priority (root or CAP_SYS_NICE): its weight then wins the CPU back from
// busy threads sooner. The pacer uses little CPU, so this costs the rest
// of the machine little, and it shortens the send-delay tail on a busy
// machine beyond what the short slice alone does.
const pacerNice = -10

// pacerWake is the shortest sleep of a pacer: when the next record is due
// sooner, the pacer sleeps this long and then sends every record that has
// come due. A pacer that woke for each record at high rates (20 us apart
// at 50k msg/s) would spend its CPU on wake-ups (a timer and two context
// switches each, and exits to the hypervisor on a virtual machine) and,
// never sleeping long, would lose the scheduler's wake-up preference and
// wait milliseconds behind busy threads. It adds at most pacerWake to a
// record's send delay. The Java and C load generators use the same value.
const pacerWake = 50 * time.Microsecond

// The pacer threads' timer slack: the kernel may fire a sleeping thread's
// timer this late to coalesce wake-ups (50 us by default), and with the
// default slack a pacer's wake-ups come late by milliseconds now and then
// even on an idle machine. A thread sets its own without privilege; the
// Java and C pacers set theirs (the client's own threads keep the
// default).
const pacerTimerSlack = 1 // ns

// Pacer priorities, as the result's config reports them, each followed by
// the pacer's timer slack (withSlack).
const (
	PacerNiceSlice = "nice -10, slice 0.1 ms"
	PacerSlice     = "slice 0.1 ms"
	PacerDefault   = "default"
)

// hintLatency raises the calling thread's scheduling priority (the thread
// is locked to the pacer goroutine) as far as it is allowed, and sets its
// timer slack to pacerTimerSlack. It returns what it set (withSlack) and
// the function that gives the thread the defaults back before it is
// unlocked.
func hintLatency() (restore func(), applied string) {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, pacerTimerSlack, 0, 0, 0)
	slack, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	applied = withSlack(hintThread(0), slack)
	return func() {
		// The defaults; raising nice needs no privilege, and a slack of 0
		// restores the thread's default slack.
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
		_ = unix.SchedSetAttr(0, &a, 0)
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
	}, applied
}

// hintThread gives thread tid (0: the calling thread) a pacer's
// scheduling as far as this process may: nice -10 and a short slice, else
// the short slice alone. It returns what it set.
func hintThread(tid int) string {
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Runtime: pacerSlice, Nice: pacerNice}
	if unix.SchedSetAttr(tid, &a, 0) == nil {
		return PacerNiceSlice
	}
	a.Nice = 0
	if unix.SchedSetAttr(tid, &a, 0) == nil {
		return PacerSlice
	}
	return PacerDefault
}

// withSlack is a pacer priority with the timer slack the pacer thread
// reported (ns), as config.pacer_priority records it.
func withSlack(priority string, slack int) string {
	return fmt.Sprintf("%s; timer slack %d ns", priority, slack)
}

// ownThread reports whether tid is a thread of process pid.
func ownThread(pid, tid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", pid, tid))
	return err == nil
}
