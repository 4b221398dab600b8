package kafkaproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
)

// fakeJava writes an executable java into a new directory that prints
// versionLine as `java -version` does (on stderr) and returns the
// directory.
func fakeJava(t *testing.T, versionLine string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho '" + versionLine + "' >&2\necho 'Java(TM) SE Runtime Environment' >&2\n"
	if err := os.WriteFile(filepath.Join(dir, "java"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestJavaMajor(t *testing.T) {
	for line, want := range map[string]int{
		`openjdk version "17.0.21.1" 2026-11-17`: 17,
		`java version "1.8.0_392"`:               8,
		`openjdk version "21" 2023-09-19`:        21,
		`openjdk version "11.0.2-ea"`:            11,
		`no version here`:                        0,
	} {
		if got := javaMajor(line); got != want {
			t.Errorf("javaMajor(%q) = %d, want %d", line, got, want)
		}
	}
}

// TestFindJava: the java of kafka.java, of JAVA_HOME, or of PATH, in that
// order, with its version and vendor; a Java too old for the release is
// refused naming both versions and the fix.
func TestFindJava(t *testing.T) {
	ctx := context.Background()
	old := fakeJava(t, `java version "1.8.0_392"`)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	j, err := FindJava(ctx, "", env(map[string]string{"PATH": old + ":/usr/bin"}))
	if err != nil {
		t.Fatal(err)
	}
	if j.Path != filepath.Join(old, "java") || j.Major != 8 || j.Version != `java version "1.8.0_392"` {
		t.Fatalf("found %+v, want the fake Java 8 first on PATH", j)
	}
	err = j.Suits(release.KafkaRelease{Version: "4.4.0"})
	for _, want := range []string{"Kafka 4.4.0 needs Java 17 or later", filepath.Join(old, "java") + " is Java 8", "kafka.java or JAVA_HOME"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Suits: %v, want it to say %q", err, want)
		}
	}
	if err := j.Suits(release.KafkaRelease{Version: "3.9.2"}); err != nil {
		t.Errorf("Java 8 for Kafka 3.9.2: %v", err)
	}

	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "bin"), 0o755)
	os.Symlink(filepath.Join(fakeJava(t, `openjdk version "21.0.1" 2023-10-17`), "java"), filepath.Join(home, "bin", "java"))
	j, err = FindJava(ctx, "", env(map[string]string{"JAVA_HOME": home, "PATH": old}))
	if err != nil || j.Major != 21 {
		t.Fatalf("JAVA_HOME: %+v, %v; want its Java 21 before PATH's", j, err)
	}
	if j, err = FindJava(ctx, filepath.Join(old, "java"), env(map[string]string{"JAVA_HOME": home})); err != nil || j.Major != 8 {
		t.Fatalf("named java: %+v, %v", j, err)
	}
	if _, err := FindJava(ctx, "", env(map[string]string{"PATH": t.TempDir()})); !errors.Is(err, ErrNoJava) || !strings.Contains(err.Error(), "apt-get install openjdk-17-jre-headless") {
		t.Fatalf("no java: %v", err)
	}
	if _, err := FindJava(ctx, "/nonexistent/java", env(nil)); !errors.Is(err, ErrNoJava) {
		t.Fatalf("missing named java: %v", err)
	}
}

// TestJavaCheckFlags: the real JVM refuses a flag it does not know, and
// reads its vendor.
func TestJavaCheckFlags(t *testing.T) {
	j := testJava(t)
	if j.Major < 17 || j.Vendor == "" {
		t.Errorf("java on PATH: %+v, want 17 or later with a vendor", j)
	}
	if err := j.CheckFlags(context.Background(), []string{"-Xmx256m", "-XX:+UseG1GC"}); err != nil {
		t.Fatal(err)
	}
	err := j.CheckFlags(context.Background(), []string{"-XX:+NoSuchFlagAtAll"})
	if err == nil || !strings.Contains(err.Error(), "NoSuchFlagAtAll") {
		t.Fatalf("an unknown flag: %v", err)
	}
}

func TestParseHeapAndFit(t *testing.T) {
	for s, want := range map[string]int64{"512m": 512, "1g": 1024, "1536M": 1536, "2G": 2048, "262144k": 256} {
		if got, err := ParseHeap(s); err != nil || got != want {
			t.Errorf("ParseHeap(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1x", "64m", "-1g", "1.5g"} {
		if _, err := ParseHeap(s); err == nil {
			t.Errorf("ParseHeap(%q) accepted", s)
		}
	}
	if why := FitHeap(1024, 3, 8192); why != "" {
		t.Errorf("3 × 1 GiB in 8 GiB: %s", why)
	}
	if why := FitHeap(4096, 3, 8192); !strings.Contains(why, "3 broker(s) × (4096 MiB heap + 256 MiB beside it) = 13056 MiB, more than this machine's 8192 MiB") {
		t.Errorf("3 × 4 GiB in 8 GiB: %q", why)
	}
	if m, err := MemTotalMiB(); err != nil || m < 256 {
		t.Errorf("MemTotalMiB = %d, %v", m, err)
	}
}
