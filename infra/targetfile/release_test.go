package targetfile

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
			tf, err := Parse(path, []byte(c.yaml), env)
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

// gateway.kroxylicious.url may be a release file on the operator's
// machine, as kafka.distribution: checked against sha512 and found to hold
// Kroxylicious (its version read from libs/ when not given, its Java
// package chosen by it); kms inmemory needs the in-memory KMS in it.
func TestTargetFileKroxyliciousFile(t *testing.T) {
	rel := disttest.Kroxylicious(t)
	dir := t.TempDir()
	project := filepath.Join(dir, "kroxylicious-app-0.23.0-bin.tar.gz") // the project's archives have no in-memory KMS
	writeTGZ(t, project, "kroxylicious-app-0.23.0/bin/kroxylicious-start.sh", "kroxylicious-app-0.23.0/libs/kroxylicious-runtime-0.23.0.jar")
	projectSum := sha512Of(t, project)
	old := filepath.Join(dir, "old.tgz")
	writeTGZ(t, old, "k/bin/kroxylicious-start.sh", "k/libs/kroxylicious-runtime-0.10.0.jar")
	notKroxy := filepath.Join(dir, "kafka.tgz")
	writeTGZ(t, notKroxy, "kafka_2.13-4.1.0/libs/kafka_2.13-4.1.0.jar")
	wrong := strings.Repeat("0", 128)
	section := func(body string) string { return "platform: hosts\ngateway:\n  kroxylicious: {" + body + "}\n" }
	for _, c := range []struct {
		name, yaml string
		check      func(t *testing.T, k *Kroxylicious)
		want       []string
	}{
		{name: "assembled, in-memory KMS", yaml: section("url: " + rel.Path + ", sha512: " + rel.SHA512 + ", kms: inmemory"), check: func(t *testing.T, k *Kroxylicious) {
			if k.Version != rel.Version || !k.Local() || k.KMS != KMSInMemory || k.Java != "openjdk-17-jre-headless" {
				t.Fatalf("%+v", k)
			}
		}},
		{name: "project's archive, vault", yaml: section("url: kroxylicious-app-0.23.0-bin.tar.gz, sha512: " + projectSum + ", vault: {url: https://example.org/v.zip, sha256: " + strings.Repeat("ab", 32) + "}"),
			check: func(t *testing.T, k *Kroxylicious) {
				if k.Version != "0.23.0" || k.URL != project || k.KMS != KMSVault || k.Java != "openjdk-21-jre-headless" {
					t.Fatalf("%+v", k)
				}
			}},
		{name: "project's archive has no in-memory KMS", yaml: section("url: " + project + ", sha512: " + projectSum + ", kms: inmemory"),
			want: []string{"target.yaml:3: gateway.kroxylicious: kms inmemory, but " + project + " has no libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar"}},
		{name: "checksum differs", yaml: section("url: " + rel.Path + ", sha512: " + wrong),
			want: []string{"target.yaml:3: gateway.kroxylicious: " + rel.Path + " has SHA-512 " + rel.SHA512[:16], "not the release named"}},
		{name: "version differs", yaml: section("version: 0.23.0, url: " + rel.Path + ", sha512: " + rel.SHA512),
			want: []string{"gateway.kroxylicious.version: 0.23.0, but " + rel.Path + " holds Kroxylicious " + rel.Version}},
		{name: "too old", yaml: section("url: old.tgz, sha512: " + sha512Of(t, old)), want: []string{"holds Kroxylicious 0.10.0: xp renders the config of Kroxylicious 0.11.0 or later"}},
		{name: "not kroxylicious", yaml: section("url: kafka.tgz, sha512: " + sha512Of(t, notKroxy)),
			want: []string{"gateway.kroxylicious.url: " + notKroxy + ": not a Kroxylicious release"}},
		{name: "missing file", yaml: section("url: nowhere.tgz, sha512: " + wrong),
			want: []string{"gateway.kroxylicious.url: " + filepath.Join(dir, "nowhere.tgz") + ": no such release file (make kroxylicious-dist"}},
		{name: "a URL needs its version", yaml: section("url: https://example.org/k.tgz, sha512: " + wrong), want: []string{"gateway.kroxylicious: no version"}},
		{name: "kms vault without vault", yaml: section("url: " + rel.Path + ", sha512: " + rel.SHA512 + ", kms: vault"),
			want: []string{"gateway.kroxylicious.kms: vault needs gateway.kroxylicious.vault"}},
		{name: "in-memory with a vault", yaml: section("url: " + rel.Path + ", sha512: " + rel.SHA512 + ", kms: inmemory, vault: {url: https://example.org/v.zip, sha256: " + strings.Repeat("ab", 32) + "}"),
			want: []string{"gateway.kroxylicious.vault: the keys are in Kroxylicious's in-memory KMS"}},
		{name: "unknown kms", yaml: section("url: " + rel.Path + ", sha512: " + rel.SHA512 + ", kms: aws"),
			want: []string{`gateway.kroxylicious.kms: "aws" is not one of vault, inmemory`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tf, err := Parse(filepath.Join(dir, "target.yaml"), []byte(c.yaml), func(string) string { return "" })
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				c.check(t, tf.Gateway.Kroxylicious)
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
