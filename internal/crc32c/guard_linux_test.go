package crc32c

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel's first load starts up to 63 bytes before p, masked. With p at
// the start of a page after an inaccessible one, and ending at the end of a
// page before another, a load that touched either would fault.
func TestGuardPages(t *testing.T) {
	k := kernel(t)
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	for _, guard := range [][]byte{mem[:page], mem[3*page:]} {
		if err := unix.Mprotect(guard, unix.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	data := mem[page : 3*page]
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	for n := 1; n <= len(data); n += 1 + n/16 {
		for _, p := range [][]byte{data[:n], data[len(data)-n:]} {
			if got, want := k(0x9E3779B9, p), stdlib(0x9E3779B9, p); got != want {
				t.Fatalf("len %d: got %#08x, want %#08x", n, got, want)
			}
		}
	}
}

// The kernel must be chosen exactly where the kernel's flags are: the
// kernel reports them from /proc/cpuinfo independently of x/sys/cpu.
func TestAcceleratedMatchesCPUFlags(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for line := range strings.Lines(string(info)) {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			flags = strings.Fields(value)
			break
		}
	}
	want := runtime.GOARCH == "amd64"
	for _, f := range []string{"avx512f", "avx512vl", "avx512bw", "bmi2", "vpclmulqdq", "pclmulqdq", "sse4_2"} {
		want = want && slices.Contains(flags, f)
	}
	if Accelerated() != want {
		t.Fatalf("Accelerated() = %v, want %v from flags %v", Accelerated(), want, flags)
	}
}
