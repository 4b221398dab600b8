package procstat

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestCPUAndRSS measures this process (which burns a known amount of CPU
// between two readings) from /proc against getrusage (SelfCPU), and a
// child that does nothing.
func TestCPUAndRSS(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	self0 := SelfCPU()
	spinUntil := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(spinUntil) {
		x++
	}
	self1 := SelfCPU()
	after, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	got := after - before
	want := self1 - self0
	if want < 100*time.Millisecond {
		t.Errorf("SelfCPU over a 200 ms busy loop: %v", want)
	}
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
	until := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(until) {
		x++
	}
	u1, s1, err := UserSystem(pid)
	if err != nil {
		t.Fatal(err)
	}
	if du := u1 - u0; du < 150*time.Millisecond {
		t.Errorf("user time over a 300 ms busy loop: %v (x=%d)", du, x)
	}
	until = time.Now().Add(300 * time.Millisecond)
	buf := make([]byte, 1<<20)
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for time.Now().Before(until) {
		if _, err := f.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	_, s2, err := UserSystem(pid)
	if err != nil {
		t.Fatal(err)
	}
	if ds := s2 - s1; ds < 100*time.Millisecond {
		t.Errorf("system time over 300 ms of reading /dev/zero: %v (before that %v)", ds, s1-s0)
	}
	if _, _, err := UserSystem(1 << 30); err == nil {
		t.Error("UserSystem of a process that does not exist: no error")
	}
}
