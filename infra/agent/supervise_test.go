package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSupervisor(t *testing.T) {
	s := Supervisor{Dir: t.TempDir()}

	t.Run("start, refuse a second start, stop", func(t *testing.T) {
		pid, err := s.Start("sleeper", []string{"sleep", "60"}, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Status()
		if err != nil || len(st) != 1 || !st[0].Running || st[0].PID != pid {
			t.Fatalf("status %+v %v", st, err)
		}
		if sid, _ := unix.Getsid(pid); sid != pid {
			t.Errorf("service session %d, want its own (%d)", sid, pid)
		}
		if fi, _ := os.Stat(s.pidPath("sleeper")); fi == nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("pid file %v", fi)
		}
		if _, err := s.Start("sleeper", []string{"sleep", "60"}, StartOptions{}); err == nil || !strings.Contains(err.Error(), "already runs") {
			t.Fatalf("second start: %v", err)
		}
		if err := s.Stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Fatal("service still runs after Stop")
		}
		if _, err := os.Stat(s.pidPath("sleeper")); !os.IsNotExist(err) {
			t.Errorf("pid file left: %v", err)
		}
	})

	t.Run("ready when the wait file appears", func(t *testing.T) {
		f := filepath.Join(s.Dir, "ready")
		_, err := s.Start("ready", []string{"sh", "-c", "echo starting; touch " + f + "; exec sleep 60"}, StartOptions{WaitFile: f, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop(time.Second, "ready")
		b, _ := os.ReadFile(s.LogPath("ready"))
		if !strings.Contains(string(b), "starting\n") {
			t.Errorf("log lacks the service's output:\n%s", b)
		}
	})

	t.Run("exit before ready is an error with the log", func(t *testing.T) {
		_, err := s.Start("crash", []string{"sh", "-c", "echo bad config >&2; exit 3"}, StartOptions{WaitFile: filepath.Join(s.Dir, "never"), Timeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "bad config") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("not ready in time: stopped", func(t *testing.T) {
		_, err := s.Start("slow", []string{"sleep", "60"}, StartOptions{WaitFile: filepath.Join(s.Dir, "never"), Timeout: 300 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "not ready after") {
			t.Fatalf("got %v", err)
		}
		if st, _ := s.Status(); len(st) != 0 {
			t.Errorf("services left: %+v", st)
		}
	})

	t.Run("SIGKILL after the grace period", func(t *testing.T) {
		f := filepath.Join(s.Dir, "trapped")
		pid, err := s.Start("stubborn", []string{"sh", "-c", "trap '' TERM; touch " + f + "; while :; do sleep 1; done"}, StartOptions{WaitFile: f})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(200*time.Millisecond, "stubborn"); err != nil {
			t.Fatal(err)
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Fatal("a service ignoring SIGTERM survived Stop")
		}
	})

	t.Run("a reused pid is never signalled", func(t *testing.T) {
		// A pid file naming this test process with another start time: the
		// service is gone and its pid now belongs to someone else.
		st, _ := startTime(os.Getpid())
		os.MkdirAll(filepath.Join(s.Dir, "run"), 0o700)
		os.WriteFile(s.pidPath("stale"), []byte(fmt.Sprintf("%d %d\n", os.Getpid(), st+1)), 0o600)
		if err := s.Stop(time.Second, "stale"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(s.pidPath("stale")); !os.IsNotExist(err) {
			t.Error("stale pid file left")
		}
	})

	t.Run("bad names", func(t *testing.T) {
		if _, err := s.Start("../x", []string{"true"}, StartOptions{}); err == nil {
			t.Fatal("a path as service name was accepted")
		}
	})
}
