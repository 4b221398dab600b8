package kafkaproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nodeMarker is the system property every broker JVM is started with,
// naming its node directory: Sweep finds leftover brokers by it, and it
// says in `ps` whose broker a JVM is.
const nodeMarker = "-Dxp.kafka.node="

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
