// Package agent is what xp does on a remote host: it starts services
// detached and keeps track of them itself (a pid file and a log file per
// service under one directory, no systemd, so cloud machines and test hosts
// take the same path), stops them, and says what the host is.
//
// The xp binary uploaded to every host runs it as `xp agent ...`.
package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supervisor keeps services under Dir: run/NAME.pid holds "PID STARTTIME"
// (the kernel's start time of the process, so a pid reused by another
// process is never signalled), logs/NAME.log the service's output.
type Supervisor struct {
	Dir string
}

var serviceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Service is one supervised service.
type Service struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Running bool   `json:"running"`
	Log     string `json:"log"`
}

func (s Supervisor) pidPath(name string) string { return filepath.Join(s.Dir, "run", name+".pid") }

// LogPath is the log file of service name.
func (s Supervisor) LogPath(name string) string {
	return filepath.Join(s.Dir, "logs", name+".log")
}

// StartOptions are the optional parts of Start.
type StartOptions struct {
	// WaitFile, when set, is a file the service writes once it is ready:
	// Start returns when it exists, or fails when the service exits or
	// Timeout passes first.
	WaitFile string
	// Ready, when set, is polled (every 50ms, after WaitFile exists if
	// that is set too) until it returns nil: the service is ready; it
	// fails like WaitFile when the service exits or Timeout passes first.
	// ReadyWhat describes it in errors ("a Kafka ApiVersions answer on
	// 198.18.0.2:19192").
	Ready     func() error
	ReadyWhat string
	// Timeout bounds the wait; default 60s.
	Timeout time.Duration
}

// Start starts argv as service name in a session of its own, its standard
// input /dev/null, its output appended to its log. A service of that name
// that still runs is an error.
func (s Supervisor) Start(name string, argv []string, o StartOptions) (int, error) {
	if !serviceNameRE.MatchString(name) {
		return 0, fmt.Errorf("agent: service name %q: lower-case letters, digits, '.', '_' and '-'", name)
	}
	if len(argv) == 0 {
		return 0, errors.New("agent: no command to start")
	}
	if pid, ok := s.running(name); ok {
		return 0, fmt.Errorf("agent: service %s already runs as pid %d", name, pid)
	}
	for _, d := range []string{"run", "logs"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o700); err != nil {
			return 0, fmt.Errorf("agent: %w", err)
		}
	}
	if o.WaitFile != "" {
		if err := os.Remove(o.WaitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("agent: %w", err)
		}
	}
	logf, err := os.OpenFile(s.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("agent: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- xp agent: %s starting at %s: %s\n", name, time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("agent: start %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	st, err := startTime(pid)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, fmt.Errorf("agent: %s: %w", name, err)
	}
	if err := writePrivate(s.pidPath(name), fmt.Sprintf("%d %d\n", pid, st)); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if o.WaitFile == "" && o.Ready == nil {
		return pid, nil
	}
	what := o.ReadyWhat
	if o.WaitFile != "" {
		what = "no " + o.WaitFile
	}
	var lastErr error
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ready := true
		if o.WaitFile != "" {
			_, err := os.Stat(o.WaitFile)
			ready = err == nil
		}
		if ready && o.Ready != nil {
			lastErr = o.Ready()
			ready = lastErr == nil
		}
		if ready {
			return pid, nil
		}
		select {
		case err := <-exited:
			os.Remove(s.pidPath(name))
			return 0, fmt.Errorf("agent: %s exited before it was ready (%v); the end of %s:\n%s", name, err, s.LogPath(name), tailFile(s.LogPath(name), logTail))
		case <-deadline.C:
			s.Stop(10*time.Second, name)
			if lastErr != nil {
				what = fmt.Sprintf("%s: %v", o.ReadyWhat, lastErr)
			}
			return 0, fmt.Errorf("agent: %s not ready after %v (%s); stopped it; the end of %s:\n%s", name, timeout, what, s.LogPath(name), tailFile(s.LogPath(name), logTail))
		case <-tick.C:
		}
	}
}

// logTail is how much of a service's log a failed start reports: what
// fits, with the line saying what happened, in the 2 KiB of standard error
// an SSH command's error keeps (ssh.ExitError), so the operator reads both.
const logTail = 1536

// Stop stops the named services (every one when none is named): SIGTERM to
// the service's process group, SIGKILL after grace. Services already gone
// are fine.
func (s Supervisor) Stop(grace time.Duration, names ...string) error {
	if len(names) == 0 {
		all, err := s.names()
		if err != nil {
			return err
		}
		names = all
	}
	var errs []error
	for _, name := range names {
		if err := s.stop(name, grace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s Supervisor) stop(name string, grace time.Duration) error {
	pid, ok := s.running(name)
	if ok {
		syscall.Kill(-pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for s.alive(name) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if s.alive(name) {
			syscall.Kill(-pid, syscall.SIGKILL)
			for i := 0; s.alive(name) && i < 250; i++ {
				time.Sleep(20 * time.Millisecond)
			}
			if s.alive(name) {
				return fmt.Errorf("agent: %s (pid %d) still runs after SIGKILL", name, pid)
			}
		}
	}
	if err := os.Remove(s.pidPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// Status lists every service with a pid file.
func (s Supervisor) Status() ([]Service, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Service
	for _, n := range names {
		pid, ok := s.running(n)
		if !ok {
			pid, _, _ = s.readPid(n)
		}
		out = append(out, Service{Name: n, PID: pid, Running: ok, Log: s.LogPath(n)})
	}
	return out, nil
}

func (s Supervisor) names() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, "run"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

func (s Supervisor) readPid(name string) (int, uint64, error) {
	b, err := os.ReadFile(s.pidPath(name))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("agent: %s: want \"PID STARTTIME\"", s.pidPath(name))
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("agent: %s: want \"PID STARTTIME\"", s.pidPath(name))
	}
	return pid, st, nil
}

// running returns the pid of service name if that very process still
// runs (a zombie does not).
func (s Supervisor) running(name string) (int, bool) {
	pid, st, err := s.readPid(name)
	if err != nil {
		return 0, false
	}
	now, err := startTime(pid)
	if err != nil || now != st || zombie(pid) {
		return pid, false
	}
	return pid, true
}

func (s Supervisor) alive(name string) bool {
	_, ok := s.running(name)
	return ok
}

// stat returns the fields of /proc/PID/stat after the command name.
func stat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot.
func startTime(pid int) (uint64, error) {
	f, err := stat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func zombie(pid int) bool {
	f, err := stat(pid)
	return err != nil || len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

func writePrivate(path, text string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return os.Rename(tmp, path)
}

// tailFile returns the last max bytes of path.
func tailFile(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	return string(b[:n])
}
