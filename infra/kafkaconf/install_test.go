package kafkaconf

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/disttest"
)

func TestServerCommand(t *testing.T) {
	const dir = "/home/ubuntu/xp/c1/kafka-1"
	tail := []string{"-Dkafka.logs.dir=" + dir + "/logs", "-cp", dir + "/kafka-3.9.1/libs/*", "kafka.Kafka", dir + "/server.properties"}
	for _, tc := range []struct {
		name, heap, jvm string
		want            []string
	}{
		{"kafka's heap and flags", "", "", append(append([]string{"java", "-Xmx1G", "-Xms1G"}, strings.Fields(DefaultJVMFlags)...),
			append([]string{"-Dlog4j.configuration=file:" + dir + "/log4j.properties"}, tail...)...)},
		{"a heap and flags", "-Xmx384m -Xms384m", "-XX:+UseZGC -XX:+AlwaysPreTouch", append([]string{"java", "-Xmx384m", "-Xms384m", "-XX:+UseZGC", "-XX:+AlwaysPreTouch",
			"-Dlog4j.configuration=file:" + dir + "/log4j.properties"}, tail...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInstall()
			in.HeapOpts, in.JVMFlags = tc.heap, tc.jvm
			got, err := in.ServerCommand()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Kafka 4.x logs through Log4j 2.
	in := testInstall()
	in.Version = "4.4.0"
	got, err := in.ServerCommand()
	if err != nil || !strings.Contains(strings.Join(got, " "), " -Dlog4j2.configurationFile="+dir+"/log4j2.properties -Dkafka.logs.dir=") {
		t.Errorf("4.4.0: %q %v, want a Log4j 2 configuration", got, err)
	}
	in = testInstall()
	in.HeapOpts = "-Xmx1g; rm -rf /"
	if _, err := in.ServerCommand(); err == nil || !strings.Contains(err.Error(), "kafka heap options") {
		t.Errorf("heap options with a shell command: %v", err)
	}
}

// writeTGZ writes a gzip'd tar at path with an empty file per name.
func writeTGZ(t *testing.T, path string, names ...string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Typeflag: tar.TypeReg})
	}
	tw.Close()
	zw.Close()
	f.Close()
	b, _ := os.ReadFile(path)
	sum := sha512.Sum512(b)
	return hex.EncodeToString(sum[:])
}

// runScript renders in's script and runs it with sh, PATH prefixed with
// pathDir when given.
func runScript(t *testing.T, in Install, pathDir string) (string, error) {
	t.Helper()
	b, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", string(b))
	if pathDir != "" {
		cmd.Env = append(os.Environ(), "PATH="+pathDir+":"+os.Getenv("PATH"))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstallRefusesBadRelease runs the script on release files that it
// must refuse before anything starts, each with its reason, leaving no
// release behind: one without libs/kafka_2.13-*.jar (bin/ scripts alone
// do not make a release), and a Kafka 4 release on a host whose java is
// Java 11 (a stand-in java on PATH saying so).
func TestInstallRefusesBadRelease(t *testing.T) {
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "java"), []byte("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version, path string
		entries             []string
		want                string
	}{
		{"no broker jar", "4.4.0", "", []string{"kafka_2.13-4.4.0/bin/kafka-server-start.sh", "kafka_2.13-4.4.0/bin/kafka-storage.sh", "kafka_2.13-4.4.0/libs/kafka-clients-4.4.0.jar"},
			"holds no libs/kafka_2.13-*.jar: not a Kafka release"},
		{"java too old", "4.4.0", stub, []string{"kafka_2.13-4.4.0/libs/kafka_2.13-4.4.0.jar"},
			"kafka: Kafka 4.4.0 needs Java 17 or later, but " + stub + "/java is Java 11.0.2: install one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := testInstall()
			in.Version, in.URL, in.Dir, in.LogDirs = tc.version, "", dir, filepath.Join(dir, "data")
			in.File = filepath.Join(dir, "kafka_2.13-"+tc.version+".tgz")
			in.SHA512 = writeTGZ(t, in.File, tc.entries...)
			out, err := runScript(t, in, tc.path)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("%v\n%s\nwant %q", err, out, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "data", "meta.properties")); err == nil {
				t.Error("storage formatted anyway")
			}
			if _, err := os.Stat(filepath.Join(dir, "kafka-"+tc.version+".part")); err == nil {
				t.Error("the unpacked release left behind")
			}
		})
	}
	// A release file on the host that is not the one named: refused,
	// removed.
	dir := t.TempDir()
	in := testInstall()
	in.URL, in.Dir, in.LogDirs = "", dir, filepath.Join(dir, "data")
	in.File = filepath.Join(dir, "kafka.tgz")
	writeTGZ(t, in.File, "kafka_2.13-3.9.1/libs/kafka_2.13-3.9.1.jar")
	out, err := runScript(t, in, "")
	if err == nil || !strings.Contains(out, "kafka: "+in.File+" (kafka.distribution, uploaded) does not match the sha512 of the target file") {
		t.Fatalf("a file with another checksum: %v\n%s", err, out)
	}
	for _, left := range []string{"kafka.tgz", "kafka-3.9.1"} {
		if _, err := os.Stat(filepath.Join(dir, left)); err == nil {
			t.Errorf("%s left behind", left)
		}
	}
}

// TestInstallFormatsRelease runs the script on the releases make
// kafka-dist assembled (Kafka 4, Log4j 2; Kafka 3.9, reload4j), each given
// as a file on the host, with the java on this machine: unpacked, the
// file removed, the log configuration of the release's dialect written,
// storage formatted by Kafka's StorageTool with the cluster id of a
// single combined node; run again, nothing is formatted twice.
func TestInstallFormatsRelease(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java is not installed: apt-get install openjdk-17-jre-headless (.ci/run installs it)")
	}
	for _, major := range []int{4, 3} {
		rel := disttest.Kafka(t, major)
		t.Run(rel.Version, func(t *testing.T) {
			dir := t.TempDir()
			s := NewServer([]string{"127.0.0.1"}, nil)
			s.LogDirs = filepath.Join(dir, "data")
			s.Keystore, s.Truststore = filepath.Join(dir, "ks.pem"), filepath.Join(dir, "ca.pem")
			s.SASLUser, s.SASLPassword = "xp", "pw"
			props, err := s.Properties(s.Nodes[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "server.properties"), props, 0o600)
			in := Install{Version: rel.Version, File: filepath.Join(dir, "upload.tgz"), SHA512: rel.SHA512, Dir: dir,
				LogDirs: s.LogDirs, ClusterID: NewClusterID()}
			b, err := os.ReadFile(rel.Path)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(in.File, b, 0o644)
			out, err := runScript(t, in, "")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			meta, err := os.ReadFile(filepath.Join(dir, "data", "meta.properties"))
			if err != nil || !strings.Contains(string(meta), "cluster.id="+in.ClusterID) || !strings.Contains(string(meta), "node.id=1") {
				t.Fatalf("meta.properties (%v):\n%s\nscript:\n%s", err, meta, out)
			}
			if _, err := os.Stat(in.File); err == nil {
				t.Error("the release file is kept after unpacking")
			}
			logPath, prop := in.LogConfig()
			want := map[int]string{4: "log4j2.properties", 3: "log4j.properties"}[major]
			if filepath.Base(logPath) != want || !strings.Contains(prop, logPath) {
				t.Errorf("log config %s (%s), want %s", logPath, prop, want)
			}
			if _, err := os.Stat(logPath); err != nil {
				t.Error(err)
			}
			// Again: the release is there, storage formatted.
			out, err = runScript(t, in, "")
			if err != nil {
				t.Fatalf("second run: %v\n%s", err, out)
			}
			meta2, _ := os.ReadFile(filepath.Join(dir, "data", "meta.properties"))
			if string(meta2) != string(meta) {
				t.Errorf("formatted again:\n%s", meta2)
			}
		})
	}
}
