package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
)

// The releases make kafka-dist assembled: Apache Kafka's layout, the
// broker, the tools and the logging binding of the release's major
// version in libs/, a digest that matches, and both start their classes
// from libs/ alone.
func TestAssembledKafka(t *testing.T) {
	for _, major := range []int{4, 3} {
		r := disttest.Kafka(t, major)
		t.Run(r.Version, func(t *testing.T) {
			sum, err := release.SHA512File(r.Path)
			if err != nil {
				t.Fatal(err)
			}
			if sum != r.SHA512 {
				t.Fatalf("%s.sha512 says %s…, the file's SHA-512 is %s…", r.Path, r.SHA512[:16], sum[:16])
			}
			got, err := release.InspectKafka(r.Path)
			if err != nil {
				t.Fatal(err)
			}
			want := release.KafkaRelease{Top: "kafka_2.13-" + r.Version, Version: r.Version, Assembled: true}
			if got != want {
				t.Fatalf("InspectKafka = %+v, want %+v", got, want)
			}
			dir := filepath.Join(t.TempDir(), "k")
			if err := release.Unpack(r.Path, dir); err != nil {
				t.Fatal(err)
			}
			libs := filepath.Join(dir, want.Top, "libs")
			binding := "log4j-slf4j-impl-"
			if major < 4 {
				binding = "slf4j-reload4j-"
			}
			for _, prefix := range []string{"kafka_2.13-" + r.Version, "kafka-tools-" + r.Version, "kafka-clients-" + r.Version, binding} {
				if m, _ := filepath.Glob(filepath.Join(libs, prefix+"*.jar")); len(m) == 0 {
					t.Errorf("libs/ has no %s*.jar", prefix)
				}
			}
			for _, f := range []string{"bin/kafka-server-start.sh", "bin/kafka-storage.sh", "bin/kafka-producer-perf-test.sh"} {
				fi, err := os.Stat(filepath.Join(dir, want.Top, f))
				if err != nil || fi.Mode()&0o111 == 0 {
					t.Errorf("%s: not an executable in the release (%v)", f, err)
				}
			}
			name, _ := release.LogConfig(r.Version)
			if _, err := os.Stat(filepath.Join(dir, want.Top, "config", name)); err != nil {
				t.Errorf("config/%s: %v", name, err)
			}
			// The storage tool runs from libs/ alone and makes a cluster id.
			out, err := exec.Command("java", "-cp", libs+"/*", release.KafkaStorageClass, "random-uuid").Output()
			if err != nil {
				t.Fatalf("java -cp libs/* %s random-uuid: %v", release.KafkaStorageClass, err)
			}
			if id := strings.TrimSpace(string(out)); len(id) != 22 {
				t.Fatalf("random-uuid printed %q, want a 22-character id", out)
			}
		})
	}
}

// Packing the same files twice gives the same bytes, and Unpack gives
// them back.
func TestPackUnpack(t *testing.T) {
	libs := t.TempDir()
	if err := os.WriteFile(filepath.Join(libs, "a-1.0.jar"), []byte("jar a"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []release.File{{Path: "bin/run.sh", Data: []byte("#!/bin/sh\n"), Exec: true}, {Path: "config/x.properties", Data: []byte("k=v\n")}}
	dir := t.TempDir()
	w1, err := release.Pack(filepath.Join(dir, "one.tgz"), "top-1", "libs", libs, files)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := release.Pack(filepath.Join(dir, "two.tgz"), "top-1", "libs", libs, files)
	if err != nil {
		t.Fatal(err)
	}
	if w1.SHA512 != w2.SHA512 {
		t.Fatalf("two packings differ: %s vs %s", w1.SHA512, w2.SHA512)
	}
	line, _ := os.ReadFile(w1.Path + ".sha512")
	if string(line) != w1.SHA512+"  one.tgz\n" {
		t.Fatalf("one.tgz.sha512 = %q", line)
	}
	if got, err := release.ReadSHA512File(w1.Path + ".sha512"); err != nil || got != w1.SHA512 {
		t.Fatalf("ReadSHA512File = %q, %v", got, err)
	}
	out := filepath.Join(t.TempDir(), "u")
	if err := release.Unpack(w1.Path, out); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"top-1/libs/a-1.0.jar": "jar a", "top-1/bin/run.sh": "#!/bin/sh\n", "top-1/config/x.properties": "k=v\n"} {
		b, err := os.ReadFile(filepath.Join(out, p))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(out, "top-1/bin/run.sh")); fi == nil || fi.Mode()&0o111 == 0 {
		t.Errorf("bin/run.sh lost its executable bit")
	}
}

func TestReadSHA512FileApacheForm(t *testing.T) {
	sum := strings.Repeat("ab", 64)
	p := filepath.Join(t.TempDir(), "k.tgz.sha512")
	// gpg --print-md SHA512, as Apache publishes: upper case in groups of 8, over lines.
	upper := strings.ToUpper(sum)
	text := "kafka_2.13-3.9.1.tgz: " + upper[:40] + " " + upper[40:80] + "\n                      " + upper[80:] + "\n"
	os.WriteFile(p, []byte(text), 0o644)
	if got, err := release.ReadSHA512File(p); err != nil || got != sum {
		t.Fatalf("ReadSHA512File = %q, %v", got, err)
	}
	os.WriteFile(p, []byte("deadbeef  k.tgz\n"), 0o644)
	if _, err := release.ReadSHA512File(p); err == nil {
		t.Fatal("a short digest was read")
	}
}

// tgz writes a gzip'd tar of entries (name → contents; a name ending in
// "@" is a symlink).
func tgz(t *testing.T, entries ...string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, name := range entries {
		if n, ok := strings.CutSuffix(name, "@"); ok {
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: "/etc/passwd"})
			continue
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: 1})
		tw.Write([]byte("x"))
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(t.TempDir(), "r.tgz")
	os.WriteFile(p, b.Bytes(), 0o644)
	return p
}

func TestInspectKafkaRefuses(t *testing.T) {
	notGzip := filepath.Join(t.TempDir(), "x.tgz")
	os.WriteFile(notGzip, []byte("<html>not found</html>"), 0o644)
	for name, c := range map[string]struct {
		path, want string
	}{
		"no broker jar": {tgz(t, "kafka_2.13-4.1.0/libs/kafka-clients-4.1.0.jar", "kafka_2.13-4.1.0/bin/kafka-server-start.sh"), "no libs/kafka_2.13-*.jar"},
		"two tops":      {tgz(t, "a/libs/kafka_2.13-4.1.0.jar", "b/libs/x.jar"), "more than one top directory"},
		"not gzip":      {notGzip, "not a gzip'd tar"},
		"sources only":  {tgz(t, "k/libs/kafka_2.13-4.1.0-sources.jar"), "no libs/kafka_2.13-*.jar"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := release.InspectKafka(c.path)
			if !errors.Is(err, release.ErrNotKafka) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("InspectKafka: %v; want ErrNotKafka naming the file and %q", err, c.want)
			}
		})
	}
}

func TestUnpackRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		path, want string
	}{
		"outside": {tgz(t, "top/a", "../escape"), "outside"},
		"symlink": {tgz(t, "top/a", "top/link@"), "not a file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "u")
			err := release.Unpack(c.path, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Unpack: %v, want an error saying %q", err, c.want)
			}
			if _, serr := os.Stat(dir); serr == nil {
				t.Fatalf("%s exists after a refused archive", dir)
			}
		})
	}
}

// A version Maven Central does not have is an error naming it, and
// writes nothing.
func TestAssembleKafkaUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	_, err := release.AssembleKafka(context.Background(), release.Maven{}, "0.0.1", dir)
	if err == nil || !strings.Contains(err.Error(), "org.apache.kafka:kafka_2.13:0.0.1") {
		t.Fatalf("AssembleKafka 0.0.1: %v, want mvn's refusal naming the artifact", err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 0 {
		t.Fatalf("%s holds %d files after a failed assembly", dir, len(des))
	}
	if _, err := release.AssembleKafka(context.Background(), release.Maven{}, "4.1.x", dir); err == nil || !strings.Contains(err.Error(), "want a release number") {
		t.Fatalf("AssembleKafka 4.1.x: %v", err)
	}
}

// The release make kroxylicious-dist assembled: the official release's
// layout (bin/kroxylicious-start.sh, config/log4j2.yaml, libs/ with the
// runtime, the Record Encryption filter, both KMS providers, Log4j 2 and
// xp's launcher), a digest that matches, and the start script runs the
// launcher, which names the runtime's version.
func TestAssembledKroxylicious(t *testing.T) {
	r := disttest.Kroxylicious(t)
	sum, err := release.SHA512File(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	if sum != r.SHA512 {
		t.Fatalf("%s.sha512 says %s…, the file's SHA-512 is %s…", r.Path, r.SHA512[:16], sum[:16])
	}
	got, err := release.InspectKroxylicious(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := release.KroxyliciousRelease{Top: "kroxylicious-app-" + r.Version, Version: r.Version, Assembled: true, InMemoryKMS: true}
	if got != want {
		t.Fatalf("InspectKroxylicious = %+v, want %+v", got, want)
	}
	dir := filepath.Join(t.TempDir(), "k")
	if err := release.Unpack(r.Path, dir); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, want.Top)
	for _, prefix := range []string{"kroxylicious-runtime-" + r.Version, "kroxylicious-record-encryption-" + r.Version,
		"kroxylicious-kms-provider-kroxylicious-inmemory-" + r.Version, "kroxylicious-kms-provider-hashicorp-vault-" + r.Version,
		"log4j-core-", "log4j-slf4j2-impl-", "disruptor-", "kafka-clients-", "xp-kroxylicious-launcher"} {
		if m, _ := filepath.Glob(filepath.Join(home, "libs", prefix+"*.jar")); len(m) == 0 {
			t.Errorf("libs/ has no %s*.jar", prefix)
		}
	}
	for _, f := range []string{"config/log4j2.yaml", "config/example-proxy-config.yaml", release.AssembledMarker} {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	out, err := exec.Command(filepath.Join(home, "bin", "kroxylicious-start.sh"), "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "kroxylicious: "+r.Version {
		t.Fatalf("kroxylicious-start.sh --version: %q, %v; want kroxylicious: %s", out, err, r.Version)
	}
	out, err = exec.Command(filepath.Join(home, "bin", "kroxylicious-start.sh"), "--config", filepath.Join(dir, "none.yaml")).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "does not exist") {
		t.Fatalf("kroxylicious-start.sh with a missing config: exit %d, %q; want exit 2 naming it", code, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestInspectKroxyliciousRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		path, want string
	}{
		"no runtime jar":  {tgz(t, "k/bin/kroxylicious-start.sh", "k/libs/kroxylicious-api-0.12.0.jar"), "no libs/kroxylicious-runtime-*.jar"},
		"no start script": {tgz(t, "k/libs/kroxylicious-runtime-0.12.0.jar"), "no bin/kroxylicious-start.sh"},
		"kafka":           {tgz(t, "kafka_2.13-4.1.0/libs/kafka_2.13-4.1.0.jar"), "no libs/kroxylicious-runtime-*.jar"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := release.InspectKroxylicious(c.path)
			if !errors.Is(err, release.ErrNotKroxylicious) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("InspectKroxylicious: %v; want ErrNotKroxylicious naming the file and %q", err, c.want)
			}
		})
	}
	// The project's own archives have no in-memory KMS.
	r, err := release.InspectKroxylicious(tgz(t, "kroxylicious-app-0.23.0/bin/kroxylicious-start.sh", "kroxylicious-app-0.23.0/libs/kroxylicious-runtime-0.23.0.jar"))
	if err != nil || r != (release.KroxyliciousRelease{Top: "kroxylicious-app-0.23.0", Version: "0.23.0"}) || r.MinJava() != 21 {
		t.Fatalf("InspectKroxylicious = %+v (Java %d), %v", r, r.MinJava(), err)
	}
}

func TestAtLeast(t *testing.T) {
	tests := []struct {
		v, min string
		want   bool
	}{
		{"0.11.0", "0.11.0", true},
		{"0.23.0", "0.22.0", true},
		{"0.21.9", "0.22.0", false},
		{"0.10.0", "0.11.0", false},
		{"1.0.0", "0.22.0", true},
		{"0.100.0", "0.22.0", true},
		{"0.22.0-rc1", "0.22.0", true},
		{"0.9.10", "0.11.0", false},
	}
	for _, tc := range tests {
		if got := release.AtLeast(tc.v, tc.min); got != tc.want {
			t.Errorf("AtLeast(%s, %s) = %v, want %v", tc.v, tc.min, got, tc.want)
		}
	}
	if release.KroxyliciousMinJava("0.12.0") != 17 || release.KroxyliciousMinJava("0.22.0") != 21 {
		t.Error("KroxyliciousMinJava: want 17 before 0.22.0, 21 from it")
	}
}
