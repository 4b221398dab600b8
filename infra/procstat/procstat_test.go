package procstat

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestCPUAndRSS measures this process (which burns a known amount of CPU
// between two readings) and a child that does nothing, against getrusage
// and the kernel's own accounting.
func TestCPUAndRSS(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	spinUntil := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(spinUntil) {
		x++
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	after, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	got := after - before
	want := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()) - time.Duration(ru0.Utime.Nano()+ru0.Stime.Nano())
	// getrusage and schedstat account the same running time; allow for
	// the readings not being simultaneous and tick rounding.
	if got < want/2 || got > want*2+20*time.Millisecond || got <= 0 {
		t.Errorf("CPU over a busy loop: %v, getrusage says %v (x=%d)", got, want, x)
	}
	if rss := RSS(pid); rss <= 1 || rss > 4096 {
		t.Errorf("RSS of this test process: %v MiB", rss)
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
