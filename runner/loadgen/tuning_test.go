package loadgen

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartTimerSlack: a process started by startTimerSlack, and a thread
// it creates, run with the pacers' timer slack, and the starting thread
// has its own slack back.
func TestStartTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The shell's own slack, then that of a thread of a child process
	// (the child's leader; a new process is its creator's thread's copy).
	cmd := exec.Command("sh", "-c", "cat /proc/self/timerslack_ns; sh -c 'cat /proc/$$/timerslack_ns'")
	var out strings.Builder
	cmd.Stdout = &out
	if err := startTimerSlack(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out.String()); len(got) != 2 || got[0] != "1" || got[1] != "1" {
		t.Errorf("started process's and its child's timer slack %q, want 1 and 1 (ns)", got)
	}
	after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("starting thread's timer slack %d after, %d before", after, before)
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
