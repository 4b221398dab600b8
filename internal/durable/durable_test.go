package durable

import (
	"os"
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
