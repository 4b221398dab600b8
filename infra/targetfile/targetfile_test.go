package targetfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTargetFile(t *testing.T) {
	env := func(k string) string {
		if k == "HOME" {
			return "/home/op"
		}
		return ""
	}
	sha := strings.Repeat("ab", 64)
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, tf *File)
		want  []string // error substrings; nil = parses
	}{
		{name: "aws in full", yaml: `platform: aws
vars: {region: eu-west-1, operator_cidr: 203.0.113.7/32}
ssh: {user: ubuntu, private_key: ~/.ssh/xp_ed25519, known_hosts: strict}
kafka: {version: 3.9.1, distribution: https://downloads.apache.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz, sha512: ` + strings.ToUpper(sha) + `}
teardown: on-success
budget_usd: 50
`, check: func(t *testing.T, tf *File) {
			if tf.Platform != "aws" || tf.Vars["region"] != "eu-west-1" || tf.SSH.PrivateKey != "/home/op/.ssh/xp_ed25519" ||
				tf.SSH.KnownHosts != KnownHostsStrict || tf.Kafka.SHA512 != sha || tf.Teardown != TeardownOnSuccess || tf.BudgetUSD != 50 {
				t.Fatalf("%+v", tf)
			}
			if tf.ModuleName() != "terraform/aws (built in)" {
				t.Fatalf("module %s", tf.ModuleName())
			}
			if _, err := tf.ModuleFS(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "local java", yaml: "platform: local\nkafka:\n  heap: 512m\n  java: ~/jdk/bin/java\n",
			check: func(t *testing.T, tf *File) {
				k := tf.Kafka
				if k.Heap != "512m" || k.Java != "/home/op/jdk/bin/java" {
					t.Fatalf("%+v", k)
				}
				if k.Where("t.yaml", "java") != "t.yaml:4" || k.Where("t.yaml", "sha512") != "t.yaml:2" {
					t.Fatalf("lines %v", k.Lines)
				}
			}},
		{name: "java on hosts", yaml: "platform: hosts\nkafka:\n  java: /opt/jdk/bin/java\n",
			want: []string{"target.yaml:3: kafka.java: only platform local reads it"}},
		{name: "java of the embedded cluster", yaml: "platform: local\nkafka: {distribution: embedded, java: /opt/jdk/bin/java}\n",
			want: []string{"target.yaml:2: kafka: heap, jvm_flags and java are Apache Kafka's JVM settings"}},
		{name: "defaults", yaml: "platform: hosts\n", check: func(t *testing.T, tf *File) {
			if tf.Teardown != TeardownAlways || tf.SSH.KnownHosts != KnownHostsAcceptNew || tf.BudgetUSD != 0 {
				t.Fatalf("%+v", tf)
			}
		}},
		{name: "unknown key with suggestion", yaml: "platform: aws\nbudget: 5\n", want: []string{`target.yaml:2: unknown key "budget"`}},
		{name: "unknown nested key", yaml: "platform: aws\nssh:\n  privat_key: k\n", want: []string{`target.yaml:3: unknown key ssh."privat_key"; did you mean "private_key"?`}},
		{name: "typo in top key", yaml: "platfrom: aws\n", want: []string{`target.yaml:1: unknown key "platfrom"; did you mean "platform"?`, "no platform"}},
		{name: "unknown platform", yaml: "platform: gcp\n", want: []string{`target.yaml:1: platform: "gcp" is not one of aws, azure, hosts, local`}},
		{name: "bad teardown", yaml: "platform: aws\nteardown: onsuccess\n", want: []string{`target.yaml:2: teardown: "onsuccess" is not one of always, on-success, never; did you mean "on-success"?`}},
		{name: "bad known_hosts", yaml: "platform: aws\nssh: {known_hosts: off}\n", want: []string{"ssh.known_hosts"}},
		{name: "ssh keepalive", yaml: "platform: hosts\nssh: {keepalive: 2s}\n", check: func(t *testing.T, tf *File) {
			if tf.SSH.Keepalive != 2*time.Second {
				t.Fatalf("keepalive %v, want 2s", tf.SSH.Keepalive)
			}
		}},
		{name: "ssh wait", yaml: "platform: hosts\nssh: {wait: 10m}\n", check: func(t *testing.T, tf *File) {
			if tf.SSH.Wait != 10*time.Minute {
				t.Fatalf("wait %v, want 10m", tf.SSH.Wait)
			}
		}},
		{name: "bad ssh wait", yaml: "platform: hosts\nssh:\n  wait: 2h\n", want: []string{"target.yaml:3: ssh.wait: want a duration from 1s to 1h"}},
		{name: "bad ssh keepalive", yaml: "platform: hosts\nssh:\n  keepalive: 5\n", want: []string{"target.yaml:3: ssh.keepalive: want a duration from 100ms to 10m"}},
		{name: "url without checksum", yaml: "platform: aws\nkafka: {distribution: https://example.org/k.tgz}\n", want: []string{"target.yaml:2: kafka: a distribution URL needs its sha512"}},
		{name: "short checksum", yaml: "platform: aws\nkafka: {distribution: https://example.org/k.tgz, sha512: abc}\n", want: []string{"target.yaml:2: kafka.sha512: 3 characters, want the tarball's SHA-512 as 128 hex digits (lowercase, as sha512sum prints it)"}},
		// A release file with a short checksum crashed xp run before
		// (slicing the checksum to print it).
		{name: "short checksum of a file", yaml: "platform: hosts\nkafka:\n  distribution: ./k.tgz\n  sha512: abc\n", want: []string{"target.yaml:4: kafka.sha512: 3 characters"}},
		{name: "short checksum of a listed file", yaml: "platform: hosts\nkafka:\n  releases:\n    - {distribution: ./k.tgz, sha512: abc}\n", want: []string{"target.yaml:4: kafka.releases[0].sha512: 3 characters"}},
		{name: "checksum grouped as Apache writes it", yaml: "platform: aws\nkafka:\n  version: 3.9.1\n  distribution: https://example.org/k.tgz\n  sha512: \"" + strings.ToUpper(strings.Join(chunks(sha, 8), " ")) + "\"\n", check: func(t *testing.T, tf *File) {
			if tf.Kafka.SHA512 != sha {
				t.Fatalf("sha512 %q, want %q", tf.Kafka.SHA512, sha)
			}
		}},
		{name: "non-hex checksum", yaml: "platform: aws\nkafka: {version: 3.9.1, distribution: https://example.org/k.tgz, sha512: " + strings.Repeat("ab", 63) + "zz}\n", want: []string{`target.yaml:2: kafka.sha512: 'z' at position 127 is not a hex digit`}},
		{name: "kroxylicious short checksum of a file", yaml: "platform: hosts\ngateway:\n  kroxylicious:\n    url: ./k.tgz\n    sha512: 00ff\n", want: []string{"target.yaml:5: gateway.kroxylicious.sha512: 4 characters, want the tarball's SHA-512 as 128 hex digits"}},
		{name: "vault short checksum", yaml: "platform: hosts\ngateway:\n  kroxylicious:\n    version: 0.12.0\n    url: https://example.org/k.tgz\n    sha512: " + sha + "\n    kms: vault\n    vault: {url: https://example.org/v.zip, sha256: " + sha + "}\n", want: []string{"target.yaml:8: gateway.kroxylicious.vault.sha256: 128 characters, want the zip's SHA-256 as 64 hex digits (lowercase, as sha256sum prints it)"}},
		{name: "one release", yaml: "platform: aws\nkafka: {version: 3.9.1, distribution: https://example.org/k.tgz, sha512: " + sha + "}\n", check: func(t *testing.T, tf *File) {
			r, ok := tf.Kafka.Release("3.9.1")
			if len(tf.Kafka.Releases) != 1 || !ok || r.Distribution != "https://example.org/k.tgz" || r.SHA512 != sha || r.Line != 2 || tf.Kafka.Embedded() {
				t.Fatalf("%+v", tf.Kafka)
			}
		}},
		{name: "releases", yaml: "platform: aws\nkafka:\n  releases:\n    - {version: 3.9.1, distribution: https://example.org/a.tgz, sha512: " + sha + "}\n    - version: 4.1.0\n      distribution: https://example.org/b.tgz\n      sha512: " + strings.ToUpper(sha) + "\n", check: func(t *testing.T, tf *File) {
			r, ok := tf.Kafka.Release("4.1.0")
			if got := strings.Join(tf.Kafka.Versions(), ","); got != "3.9.1,4.1.0" || !ok || r.Distribution != "https://example.org/b.tgz" || r.SHA512 != sha || r.Line != 5 || tf.Kafka.Line != 2 || tf.Kafka.Releases[0].Line != 4 {
				t.Fatalf("%+v", tf.Kafka)
			}
			if _, ok := tf.Kafka.Release("3.8.0"); ok {
				t.Fatal("3.8.0 has no release")
			}
		}},
		{name: "embedded", yaml: "platform: hosts\nkafka: {distribution: embedded}\n", check: func(t *testing.T, tf *File) {
			if !tf.Kafka.Embedded() || len(tf.Kafka.Releases) != 0 {
				t.Fatalf("%+v", tf.Kafka)
			}
		}},
		{name: "heap and jvm flags", yaml: "platform: hosts\nkafka:\n  version: 3.9.1\n  distribution: https://example.org/k.tgz\n  sha512: " + sha + "\n  heap: 2g\n  jvm_flags: -XX:+UseZGC   -XX:+AlwaysPreTouch\n", check: func(t *testing.T, tf *File) {
			if tf.Kafka.Heap != "2g" || tf.Kafka.HeapMiB() != 2048 || tf.Kafka.JVMFlags != "-XX:+UseZGC -XX:+AlwaysPreTouch" {
				t.Fatalf("%+v", tf.Kafka)
			}
		}},
		{name: "heap without unit", yaml: "platform: hosts\nkafka:\n  heap: 512\n", want: []string{`target.yaml:3: kafka.heap: "512": want a size in MiB or GiB`}},
		{name: "heap too small", yaml: "platform: hosts\nkafka:\n  heap: 64m\n", want: []string{"target.yaml:3: kafka.heap: 64m is less than the 256m"}},
		{name: "heap in jvm flags", yaml: "platform: hosts\nkafka:\n  jvm_flags: -Xmx1g\n", want: []string{"target.yaml:3: kafka.jvm_flags: -Xmx1g: give the heap as kafka.heap"}},
		{name: "shell in jvm flags", yaml: "platform: hosts\nkafka:\n  jvm_flags: -XX:+UseG1GC;id\n", want: []string{`target.yaml:3: kafka.jvm_flags: "-XX:+UseG1GC;id": want JVM flags`}},
		{name: "heap of the embedded cluster", yaml: "platform: hosts\nkafka: {distribution: embedded, heap: 1g}\n", want: []string{"target.yaml:2: kafka: heap, jvm_flags and java are Apache Kafka's JVM settings"}},
		{name: "url without version", yaml: "platform: aws\nkafka: {distribution: https://example.org/k.tgz, sha512: " + sha + "}\n", want: []string{"target.yaml:2: kafka: a distribution URL needs its version"}},
		{name: "releases and single", yaml: "platform: aws\nkafka:\n  version: 3.9.1\n  releases: [{version: 3.9.1, distribution: https://example.org/a.tgz, sha512: " + sha + "}]\n", want: []string{"target.yaml:3: kafka: give either releases: or one release's"}},
		{name: "releases not a list", yaml: "platform: aws\nkafka:\n  releases: {version: 3.9.1}\n", want: []string{"target.yaml:3: kafka.releases: want a list"}},
		{name: "release without sha512", yaml: "platform: aws\nkafka:\n  releases:\n    - {version: 3.9.1, distribution: https://example.org/a.tgz}\n", want: []string{"target.yaml:4: kafka.releases[0]: a distribution URL needs its sha512"}},
		{name: "release embedded", yaml: "platform: aws\nkafka:\n  releases:\n    - {version: 3.9.1, distribution: embedded, sha512: " + sha + "}\n", want: []string{"target.yaml:4: kafka.releases[0].distribution: \"embedded\" is not the URL"}},
		{name: "release version twice", yaml: "platform: aws\nkafka:\n  releases:\n    - {version: 3.9.1, distribution: https://example.org/a.tgz, sha512: " + sha + "}\n    - {version: 3.9.1, distribution: https://example.org/b.tgz, sha512: " + sha + "}\n", want: []string{"target.yaml:5: kafka.releases[1]: version 3.9.1 is listed twice (first at line 4)"}},
		{name: "release unknown key", yaml: "platform: aws\nkafka:\n  releases:\n    - {version: 3.9.1, url: https://example.org/a.tgz, sha512: " + sha + "}\n", want: []string{`target.yaml:4: unknown key kafka.releases[0]."url"`, "no distribution"}},
		{name: "bad release version", yaml: "platform: aws\nkafka: {version: latest, distribution: https://example.org/k.tgz, sha512: " + sha + "}\n", want: []string{`target.yaml:2: kafka.version: "latest" is not a release number`}},
		{name: "derived var", yaml: "platform: aws\nvars: {broker_count: 3}\n", want: []string{"target.yaml:2: vars.broker_count is set by xp from the plan's rows"}},
		{name: "negative budget", yaml: "platform: aws\nbudget_usd: -1\n", want: []string{"target.yaml:2: budget_usd"}},
		{name: "duplicate key", yaml: "platform: aws\nplatform: azure\n", want: []string{"platform appears twice (first at line 1)"}},
		{name: "missing module dir", yaml: "platform: aws\nmodule: nowhere\n", want: []string{"target.yaml:2: module:", "has no .tf files"}},
		{name: "not a mapping", yaml: "- aws\n", want: []string{"want a mapping"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "target.yaml")
			if err := os.WriteFile(filepath.Join(dir, "k.tgz"), []byte("not a release"), 0o644); err != nil {
				t.Fatal(err)
			}
			tf, err := Parse(path, []byte(tc.yaml), env)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, tf)
				return
			}
			if err == nil {
				t.Fatalf("parsed: %+v", tf)
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %T is no *targetfile.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A module of one's own is read from the directory module: names, relative
// to the target file.
func TestTargetFileOwnModule(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "mine"), 0o755)
	os.WriteFile(filepath.Join(dir, "mine", "main.tf"), []byte("terraform {}\n"), 0o644)
	tf, err := Parse(filepath.Join(dir, "target.yaml"), []byte("platform: hosts\nmodule: mine\n"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tf.ModuleFS()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fsysRead(fsys, "main.tf"); err != nil || b != "terraform {}\n" {
		t.Fatalf("%q %v", b, err)
	}
}

func fsysRead(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	return string(b), err
}

// chunks splits s into pieces of n characters.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}
