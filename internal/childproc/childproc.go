// Package childproc starts the long-lived processes xp runs beside itself
// (Apache Kafka's brokers, Kroxylicious) so that none outlives xp by
// accident: each in a process group of its own (a terminal's Ctrl-C
// reaches xp, which stops them itself, not the processes under the run in
// flight), and with SIGKILL as its parent-death signal unless it is meant
// to outlive xp.
package childproc

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Proc is a running child process.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	// err is cmd.Wait's error, set before done closes.
	err error
}

// Start starts cmd in a process group of its own. Unless keep, the child
// gets SIGKILL when xp dies, however it dies (SIGKILL included): the
// parent-death signal is bound to the thread that forks, so the fork
// happens on a goroutine locked to its thread until the child ends, and
// that thread outlives the child. cmd.SysProcAttr is replaced.
func Start(cmd *exec.Cmd, keep bool) (*Proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !keep {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
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

// Pid is the child's process id (and its process group's).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the child's exit (cmd.Wait's error) once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the child has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// killWait bounds how long Kill and Stop wait for the child to end after
// SIGKILL.
const killWait = 10 * time.Second

// Kill sends SIGKILL to the child's process group and waits (at most 10
// seconds) for the child to end.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	syscall.Kill(-p.Pid(), syscall.SIGKILL)
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
}

// Stop sends SIGTERM to the child's process group, then SIGKILL when it
// has not ended within grace, and waits for it as Kill does.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}
