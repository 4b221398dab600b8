package loadgen

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHintLatency: a pacer thread gets the pacers' timer slack and what
// scheduling the process may give it, reported as such, and the thread
// has its defaults back after restore.
func TestHintLatency(t *testing.T) {
	want := withSlack(pacerPriorityAllowed(t), pacerTimerSlack)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	restore, applied := hintLatency()
	slack, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if applied != want || slack != pacerTimerSlack {
		t.Errorf("hintLatency reported %q with timer slack %d; want %q, %d", applied, slack, want, pacerTimerSlack)
	}
	if a.Runtime != pacerSlice {
		t.Errorf("pacer slice %d ns, want %d", a.Runtime, pacerSlice)
	}
	after, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	r, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before || r.Nice != 0 || r.Runtime == pacerSlice {
		t.Errorf("after restore: timer slack %d (was %d), nice %d, slice %d ns: want the defaults back", after, before, r.Nice, r.Runtime)
	}
}

// TestOwnThread: a pacer's announced thread id is honoured only for a
// thread of the announcing process.
func TestOwnThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !ownThread(os.Getpid(), unix.Gettid()) {
		t.Error("this thread is not reported as this process's")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if ownThread(cmd.Process.Pid, unix.Gettid()) {
		t.Error("this thread is reported as a child's")
	}
	if !ownThread(cmd.Process.Pid, cmd.Process.Pid) {
		t.Error("the child's main thread is not reported as its own")
	}
}
