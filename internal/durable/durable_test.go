package durable

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name    string
		old     string // "" when absent
		perm    os.FileMode
		want    string
		wantErr string
		path    func(dir string) string
	}{
		{name: "creates", perm: 0o600, want: "a\n"},
		{name: "replaces", old: "a much longer old content\n", perm: 0o640, want: "b\n"},
		{name: "missing directory", perm: 0o600, wantErr: "no such file or directory",
			path: func(dir string) string { return filepath.Join(dir, "nope", "f") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tc.path != nil {
				path = tc.path(dir)
			}
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteFile(path, []byte(tc.want), tc.perm)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != tc.want {
				t.Fatalf("content %q (%v), want %q", b, err, tc.want)
			}
			fi, _ := os.Stat(path)
			if fi.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("temporary files left: %v", ents)
			}
		})
	}
}

func TestAppendAndRemove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "known_hosts")
	for _, line := range []string{"one\n", "two\n"} {
		if err := Append(path, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\n" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("not removed: %v", err)
	}
	if err := Remove(path); err != nil {
		t.Errorf("removing an absent file: %v", err)
	}
	if err := Append(filepath.Join(dir, "sub", "f"), nil, 0o600); err == nil {
		t.Error("append into a missing directory succeeded")
	}
	os.MkdirAll(filepath.Join(dir, "sub", "x"), 0o700)
	if err := Remove(filepath.Join(dir, "sub")); err == nil {
		t.Error("removing a non-empty directory succeeded")
	}
}

// TestSyncsReachTheKernel runs WriteFile, Append and Remove under strace
// and checks each fsyncs what makes it durable: the data (the temporary
// file before its rename, the appended file) and the directory entry
// (after the rename, the creation, the removal).
func TestSyncsReachTheKernel(t *testing.T) {
	if dir := os.Getenv("XP_DURABLE_CHILD"); dir != "" {
		WriteFile(filepath.Join(dir, "vars.json"), []byte("{}\n"), 0o600)
		Append(filepath.Join(dir, "known_hosts"), []byte("h key\n"), 0o600)
		Append(filepath.Join(dir, "known_hosts"), []byte("h2 key\n"), 0o600)
		Remove(filepath.Join(dir, "vars.json"))
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("this test needs strace (Debian package strace): %v", err)
	}
	dir := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-y", "-qq", "-e", "trace=fsync,rename,renameat,renameat2,unlink,unlinkat,openat", "-o", trace,
		os.Args[0], "-test.run=^TestSyncsReachTheKernel$")
	cmd.Env = append(os.Environ(), "XP_DURABLE_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// The calls on files in dir, in order, as "call path".
	var calls []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, dir) || strings.Contains(line, "= -1") {
			continue
		}
		_, call, _ := strings.Cut(line, " ")
		name, rest, _ := strings.Cut(strings.TrimSpace(call), "(")
		switch name {
		case "fsync":
			// fsync(3</tmp/.../vars.json.tmp123>) = 0
			p := rest[strings.Index(rest, "<")+1 : strings.Index(rest, ">")]
			calls = append(calls, "fsync "+strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"))
		case "rename", "renameat", "renameat2":
			calls = append(calls, "rename")
		case "unlink", "unlinkat":
			calls = append(calls, "unlink")
		}
	}
	got := strings.Join(calls, "\n")
	want := []string{
		"fsync .vars.json.tmp", "rename", "fsync \n", // WriteFile: data, rename, directory
		"fsync known_hosts\nfsync \n",         // Append creating the file: data, directory
		"fsync known_hosts\nunlink\nfsync \n", // Append to it (data only), then Remove: directory
	}
	rest := got + "\n"
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("calls lack %q in order:\n%s\n\nstrace:\n%s", w, got, b)
		}
		rest = rest[i+len(w):]
	}
}
