package kafkaproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nodeMarker is the system property every broker JVM is started with,
// naming its node directory: Sweep finds leftover brokers by it, and it
// says in `ps` whose broker a JVM is.
const nodeMarker = "-Dxp.kafka.node="

// proc is a running broker JVM.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	// err is cmd.Wait's error, set before done closes.
	err error
}

// startProc starts cmd in a process group of its own (a terminal's Ctrl-C
// reaches xp, which stops its brokers itself, not the JVMs under the run in
// flight). Unless keep, the JVM gets SIGKILL when xp dies, however it
// dies: the parent-death signal is bound to the thread that forks, so the
// fork happens on a goroutine locked to its thread until the JVM ends.
func startProc(cmd *exec.Cmd, keep bool) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !keep {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(p.done)
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the JVM at once and waits for it: a group's brokers hold no
// data anyone keeps (Down removes their directory).
func (p *proc) kill() {
	if p.exited() {
		return
	}
	syscall.Kill(-p.pid(), syscall.SIGKILL)
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// Leftovers lists the processes of this user that kafkaproc started for a
// node under dir (their command line holds nodeMarker with a path under
// dir) and that have not ended.
func Leftovers(dir string) ([]int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	prefix := nodeMarker + dir + string(filepath.Separator)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) != nil || int(st.Uid) != uid {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(b, []byte{0}) {
			if strings.HasPrefix(string(arg), prefix) {
				if alive(pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out, nil
}

// Sweep kills the Leftovers of dir: brokers a run with --keep left, or any
// a killed run could not take with it. It returns the pids killed. Call it
// only while holding what makes dir yours (the campaign db's writer lock).
func Sweep(dir string) ([]int, error) {
	pids, err := Leftovers(dir)
	if err != nil {
		return nil, err
	}
	var killed []int
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, pid)
		}
	}
	// Wait (bounded) until they are gone, so their ports are free.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range killed {
		for time.Now().Before(deadline) && alive(pid) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			return killed, fmt.Errorf("kafkaproc: leftover broker %d did not end after SIGKILL", pid)
		}
	}
	return killed, nil
}

// alive reports whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
