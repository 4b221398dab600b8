package procstat

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestCPUAndRSS measures this process (which burns at least 200 ms of CPU,
// by getrusage, between two readings) from /proc against getrusage (SelfCPU), and a
// child that does nothing.
func TestCPUAndRSS(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	self0 := SelfCPU()
	x := spin(t, 200*time.Millisecond, func() time.Duration { return SelfCPU() - self0 })
	self1 := SelfCPU()
	after, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	got := after - before
	want := self1 - self0
	// getrusage and schedstat account the same running time; allow for
	// the readings not being simultaneous and tick rounding.
	if got < want/2 || got > want*2+20*time.Millisecond || got <= 0 {
		t.Errorf("CPU over a busy loop: %v, getrusage says %v (x=%d)", got, want, x)
	}
	if rss := RSS(pid); rss <= 1 || rss > 4096 {
		t.Errorf("RSS of this test process: %v MiB", rss)
	} else if peak := SelfMaxRSS(); peak < rss*0.9 {
		t.Errorf("peak RSS %v MiB below the current %v MiB", peak, rss)
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if c, err := CPU(cmd.Process.Pid); err != nil || c > time.Second {
		t.Errorf("CPU of an idle sleep(1): %v, %v", c, err)
	}
	if _, err := CPU(1 << 30); err == nil {
		t.Error("CPU of a process that does not exist: no error")
	}
	if r := RSS(1 << 30); r != -1 {
		t.Errorf("RSS of a process that does not exist: %v, want -1", r)
	}
}

// TestUserSystem: a busy loop shows as user time, reading a file over and
// over as system time, each against this process's own getrusage.
func TestUserSystem(t *testing.T) {
	pid := os.Getpid()
	u0, s0, err := UserSystem(pid)
	if err != nil {
		t.Fatal(err)
	}
	ru0 := rusage(t)
	x := spin(t, 300*time.Millisecond, func() time.Duration {
		return utime(rusage(t)) - utime(ru0)
	})
	u1, s1, err := UserSystem(pid)
	if err != nil {
		t.Fatal(err)
	}
	if du := u1 - u0; du < 150*time.Millisecond {
		t.Errorf("user time over a busy loop of 300 ms of user CPU: %v (x=%d)", du, x)
	}
	ru1 := rusage(t)
	buf := make([]byte, 1<<20)
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deadline := time.Now().Add(time.Minute)
	for stime(rusage(t))-stime(ru1) < 300*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("reading /dev/zero for a minute did not use 300 ms of system CPU")
		}
		if _, err := f.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	_, s2, err := UserSystem(pid)
	if err != nil {
		t.Fatal(err)
	}
	if ds := s2 - s1; ds < 100*time.Millisecond {
		t.Errorf("system time over reading /dev/zero for 300 ms of system CPU: %v (before that %v)", ds, s1-s0)
	}
	if _, _, err := UserSystem(1 << 30); err == nil {
		t.Error("UserSystem of a process that does not exist: no error")
	}
}

// spin burns CPU until used() reports at least d, so the amount measured
// does not depend on how busy the machine is; a minute of wall time is the
// bound. It returns the loop count so the loop is not optimised away.
func spin(t *testing.T, d time.Duration, used func() time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	x := 0
	for used() < d {
		for i := 0; i < 1<<16; i++ {
			x++
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute of busy looping used less than %v of CPU", d)
		}
	}
	return x
}

func rusage(t *testing.T) syscall.Rusage {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru
}

func utime(ru syscall.Rusage) time.Duration { return time.Duration(ru.Utime.Nano()) }
func stime(ru syscall.Rusage) time.Duration { return time.Duration(ru.Stime.Nano()) }

// TestThreadSched: a thread that sleeps 50 times gets at least 50 more
// turns on a CPU, and its run-queue wait never goes back.
func TestThreadSched(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w0, r0, err := ThreadSched()
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		time.Sleep(200 * time.Microsecond)
	}
	w1, r1, err := ThreadSched()
	if err != nil {
		t.Fatal(err)
	}
	if r1-r0 < 50 || w1 < w0 {
		t.Errorf("over 50 sleeps: turns %d -> %d, wait %v -> %v; want 50 more turns and no less wait", r0, r1, w0, w1)
	}
}
