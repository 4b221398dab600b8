package childproc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a parent that starts `sleep` through
// Start (keep when the value is "keep"), prints its pid and waits.
const helperEnv = "XP_CHILDPROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		p, err := Start(exec.Command("sleep", "120"), mode == "keep")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// alive says whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestParentDeath: a child started without keep dies with SIGKILL when its
// parent is killed with SIGKILL; one started with keep outlives it. Both
// run in a process group of their own.
func TestParentDeath(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"die", "keep"} {
		t.Run(mode, func(t *testing.T) {
			parent := exec.Command(self)
			parent.Env = append(os.Environ(), helperEnv+"="+mode)
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(line[:len(line)-1])
			if err != nil {
				t.Fatalf("the parent said %q", line)
			}
			defer syscall.Kill(pid, syscall.SIGKILL)
			if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
				t.Errorf("child %d in process group %d (%v), want its own", pid, pgid, err)
			}
			parent.Process.Signal(syscall.SIGKILL)
			parent.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) && mode == "die" && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if alive(pid) != (mode == "keep") {
				t.Errorf("child %d alive %v after its parent was killed, want %v", pid, alive(pid), mode == "keep")
			}
		})
	}
}

// TestStop: Stop ends a child that ignores SIGTERM with SIGKILL after the
// grace period, and Err reports how it ended.
func TestStop(t *testing.T) {
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo trapped; sleep 60 & wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd, false)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "trapped\n" {
		t.Fatalf("sh said %q, %v", line, err)
	}
	p.Stop(200 * time.Millisecond)
	if !p.Exited() {
		t.Fatal("child still running after Stop")
	}
	if err := p.Err(); err == nil {
		t.Error("Err is nil for a child killed by a signal")
	}
}
