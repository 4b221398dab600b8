package agent

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Info is what an attempt records about a host.
type Info struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Kernel    string `json:"kernel"`
	Distro    string `json:"distro,omitempty"`
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
	// Java is the first line of `java -version`, empty without Java.
	Java string `json:"java,omitempty"`
}

// HostInfo describes this host.
func HostInfo(ctx context.Context) Info {
	in := Info{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		in.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				in.Distro = strings.Trim(v, `"`)
			}
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		in.MemoryMiB = int64(si.Totalram) * int64(si.Unit) >> 20
	}
	if _, err := exec.LookPath("java"); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, _ := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
		in.Java, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	return in
}
