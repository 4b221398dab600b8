// Package procstat reads a Linux process's CPU time and resident memory
// from /proc, for telemetry and benchmarks that measure a process apart
// from the one reading.
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU is the CPU time process pid has used: the sum of its threads'
// on-CPU nanoseconds from /proc/<pid>/task/*/schedstat (Go threads do not
// exit, so none is missed), or where that is missing user + system time
// from /proc/<pid>/stat, in 10 ms ticks.
func CPU(pid int) (time.Duration, error) {
	if d, err := schedstat(pid); err == nil {
		return d, nil
	}
	user, system, err := UserSystem(pid)
	return user + system, err
}

// UserSystem is the CPU time process pid has spent in user space and in
// the kernel (system calls, and the network stack's work done on its
// behalf), from /proc/<pid>/stat, in 10 ms ticks.
func UserSystem(pid int) (user, system time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; fields count from after
	// its closing parenthesis: utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	var ticks [2]int64
	for j, v := range f[11:13] {
		if ticks[j], err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
	}
	return time.Duration(ticks[0]) * time.Second / clockTicks, time.Duration(ticks[1]) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

func schedstat(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat for process %d", pid)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: %q", t, b)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		sum += n
	}
	return time.Duration(sum), nil
}

// RSS is process pid's resident memory in MiB, from /proc/<pid>/statm;
// -1 when unavailable.
func RSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}

// SelfCPU is the user + system CPU time this process has used, from
// getrusage; 0 when unavailable.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// SelfMaxRSS is this process's peak resident memory in MiB, from
// getrusage; 0 when unavailable.
func SelfMaxRSS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// ThreadSched is the calling thread's scheduling so far, from
// /proc/thread-self/schedstat: the time it was runnable but waited for a
// CPU, and the turns on a CPU it got. The caller must be locked to its
// thread (runtime.LockOSThread).
func ThreadSched() (wait time.Duration, runs int64, err error) {
	return parseSchedstat("/proc/thread-self/schedstat")
}

// parseSchedstat reads a schedstat file: on-CPU ns, run-queue wait ns,
// timeslices.
func parseSchedstat(path string) (time.Duration, int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("%s: %q", path, b)
	}
	wait, err1 := strconv.ParseInt(f[1], 10, 64)
	runs, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s: %q", path, b)
	}
	return time.Duration(wait), runs, nil
}
