package tf

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
)

// kafka.distribution may be a release file on the operator's machine:
// relative to the TARGET.yaml or absolute, checked against sha512 and
// found to hold Kafka (its version read from libs/ when not given).
func TestTargetFileReleaseFile(t *testing.T) {
	rel := disttest.Kafka(t, 4)
	dir := t.TempDir()
	// The release beside the TARGET.yaml, named relatively.
	local := filepath.Join(dir, "dist", filepath.Base(rel.Path))
	os.MkdirAll(filepath.Dir(local), 0o755)
	if err := os.Symlink(rel.Path, local); err != nil {
		t.Fatal(err)
	}
	notKafka := filepath.Join(dir, "other.tgz")
	writeTGZ(t, notKafka, "other-1/libs/kafka-clients-4.1.0.jar")
	otherSum := sha512Of(t, notKafka)
	wrong := strings.Repeat("0", 128)
	env := func(string) string { return "" }
	for _, c := range []struct {
		name, yaml string
		want       []string // error substrings; nil: parses to rel
	}{
		{name: "relative, version read", yaml: "platform: local\nkafka: {distribution: dist/" + filepath.Base(rel.Path) + ", sha512: " + rel.SHA512 + "}\n"},
		{name: "absolute, version given", yaml: "platform: local\nkafka: {version: " + rel.Version + ", distribution: " + rel.Path + ", sha512: " + strings.ToUpper(rel.SHA512) + "}\n"},
		{name: "in releases", yaml: "platform: hosts\nkafka:\n  releases:\n    - {distribution: " + rel.Path + ", sha512: " + rel.SHA512 + "}\n"},
		{name: "checksum differs", yaml: "platform: local\nkafka: {distribution: " + rel.Path + ", sha512: " + wrong + "}\n",
			want: []string{"target.yaml:2: kafka: " + rel.Path + " has SHA-512 " + rel.SHA512[:16], "not the release named"}},
		{name: "no sha512", yaml: "platform: local\nkafka: {distribution: " + rel.Path + "}\n",
			want: []string{"target.yaml:2: kafka: a release file needs its sha512"}},
		{name: "missing file", yaml: "platform: local\nkafka: {distribution: nowhere/kafka.tgz, sha512: " + wrong + "}\n",
			want: []string{"target.yaml:2: kafka.distribution: " + filepath.Join(dir, "nowhere/kafka.tgz") + ": no such release file (make kafka-dist"}},
		{name: "not kafka", yaml: "platform: local\nkafka: {distribution: other.tgz, sha512: " + otherSum + "}\n",
			want: []string{"target.yaml:2: kafka.distribution: " + notKafka + ": not a Kafka release: no libs/kafka_2.13-*.jar"}},
		{name: "version differs", yaml: "platform: local\nkafka: {version: 3.0.0, distribution: " + rel.Path + ", sha512: " + rel.SHA512 + "}\n",
			want: []string{"target.yaml:2: kafka: version 3.0.0, but " + rel.Path + " holds Kafka " + rel.Version}},
		{name: "other scheme", yaml: "platform: local\nkafka: {distribution: ftp://example.org/k.tgz, sha512: " + wrong + "}\n",
			want: []string{`kafka.distribution: "ftp://example.org/k.tgz": want an http(s) URL, a file, or embedded`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "target.yaml")
			tf, err := ParseTargetFile(path, []byte(c.yaml), env)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(tf.Kafka.Releases) != 1 {
					t.Fatalf("releases %+v", tf.Kafka.Releases)
				}
				r := tf.Kafka.Releases[0]
				if r.Version != rel.Version || r.SHA512 != rel.SHA512 || !r.Local() || !filepath.IsAbs(r.Distribution) {
					t.Fatalf("release %+v, want version %s, sha512 %s…, an absolute local path", r, rel.Version, rel.SHA512[:16])
				}
				return
			}
			if err == nil {
				t.Fatal("parsed")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func writeTGZ(t *testing.T, path string, names ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: 1})
		tw.Write([]byte("x"))
	}
	tw.Close()
	zw.Close()
	f.Close()
}

func sha512Of(t *testing.T, path string) string {
	t.Helper()
	s, err := release.SHA512File(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
