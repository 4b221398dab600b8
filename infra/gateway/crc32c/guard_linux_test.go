package crc32c

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel's first load starts up to 63 bytes before p, masked. With p at
// the start of a page after an inaccessible one, and ending at the end of a
// page before another, a load that touched either would fault.
func TestGuardPages(t *testing.T) {
	if !useFold {
		t.Skip("no AVX-512 VPCLMULQDQ on this machine")
	}
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
			if got, want := updateFold(0x9E3779B9, p), stdlib(0x9E3779B9, p); got != want {
				t.Fatalf("len %d: got %#08x, want %#08x", n, got, want)
			}
		}
	}
}
