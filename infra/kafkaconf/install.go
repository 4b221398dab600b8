package kafkaconf

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"text/template"

	"github.com/xp-bench/xp/internal/shfetch"
)

// Install describes how one node gets Apache Kafka onto its host: a Java
// runtime from the distribution's packages, the release tarball from URL
// checked against SHA512, storage formatted once. The script it renders
// installs, verifies and formats only; the server itself runs under xp's
// agent (ServerCommand), so teardown and `xp infra down` stop it like every
// other service. The script holds no secret; server.properties (which
// does) is uploaded beside it, 0600.
type Install struct {
	// Version is the Kafka version, e.g. 3.9.1 (the directory name).
	Version string
	// URL is the release tarball (kafka_2.13-VERSION.tgz).
	URL string
	// SHA512 is the tarball's hex SHA-512, as the release's .sha512 file
	// gives it (spaces and case do not matter).
	SHA512 string
	// Dir is the node's directory on the host: server.properties is read
	// from it; kafka-VERSION/ (the release, one directory per version, so
	// groups of different kafka_version never run each other's) and logs/
	// (LOG_DIR) are written in it.
	Dir string
	// LogDirs is log.dirs of the node, formatted when it holds no
	// meta.properties yet.
	LogDirs string
	// ClusterID is the KRaft cluster id every node is formatted with
	// (NewClusterID).
	ClusterID string
	// JavaPackage is the Debian/Ubuntu package installed when no java is
	// on PATH; default openjdk-17-jre-headless (Kafka 3.x and 4.x run on
	// Java 17; Debian 12 and Ubuntu 22.04/24.04 ship it).
	JavaPackage string
	// HeapOpts is KAFKA_HEAP_OPTS; default Kafka's own (-Xmx1G -Xms1G).
	HeapOpts string
}

var (
	sha512RE  = regexp.MustCompile(`^[0-9a-f]{128}$`)
	versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)
	clusterRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{21}$`)
	pathRE    = regexp.MustCompile(`^/[A-Za-z0-9._/,-]*$`)
	heapRE    = regexp.MustCompile(`^[A-Za-z0-9:=. -]*$`)
)

// NewClusterID returns a random KRaft cluster id (16 bytes, URL-safe
// base64 without padding), as Kafka's Uuid.randomUuid makes them for
// kafka-storage.sh random-uuid: never the reserved all-zero and one ids,
// and never starting with '-', which `kafka-storage.sh format -t` would
// take for an option.
func NewClusterID() string {
	b := make([]byte, 16)
	for {
		rand.Read(b)
		id := base64.RawURLEncoding.EncodeToString(b)
		if clusterRE.MatchString(id) && !reservedUUID(b) {
			return id
		}
	}
}

// reservedUUID reports Kafka's reserved Uuid.ZERO_UUID and Uuid.ONE_UUID.
func reservedUUID(b []byte) bool {
	for _, c := range b[:15] {
		if c != 0 {
			return false
		}
	}
	return b[15] <= 1
}

// NormalizeSHA512 lower-cases a hex SHA-512 and drops the spaces the
// Apache release files put in it; errors say what is wrong.
func NormalizeSHA512(s string) (string, error) {
	var b []byte
	for _, c := range []byte(s) {
		switch {
		case c == ' ' || c == '\t' || c == '\n':
		case c >= 'A' && c <= 'F':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	if !sha512RE.Match(b) {
		if bytes.IndexFunc(b, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }) >= 0 {
			return "", fmt.Errorf("sha512 %q: not hexadecimal", s)
		}
		return "", fmt.Errorf("sha512 %q: %d hex digits, want 128", s, len(b))
	}
	return string(b), nil
}

func (in *Install) check() error {
	if !versionRE.MatchString(in.Version) {
		return fmt.Errorf("kafka version %q: want a release number such as 3.9.1", in.Version)
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("kafka distribution %q: want the http(s) URL of a release tarball", in.URL)
	}
	if bytes.ContainsAny([]byte(in.URL), "'\"\\$` \n") {
		return fmt.Errorf("kafka distribution %q: quotes, spaces, backslashes, $ and ` are not allowed in the URL", in.URL)
	}
	sum, err := NormalizeSHA512(in.SHA512)
	if err != nil {
		return fmt.Errorf("kafka %w", err)
	}
	in.SHA512 = sum
	if !clusterRE.MatchString(in.ClusterID) {
		return fmt.Errorf("kafka cluster id %q: want 22 URL-safe base64 characters, the first not '-' (NewClusterID)", in.ClusterID)
	}
	for name, p := range map[string]string{"directory": in.Dir, "log.dirs": in.LogDirs} {
		if !pathRE.MatchString(p) {
			return fmt.Errorf("kafka %s %q: want an absolute path of letters, digits and ._-/", name, p)
		}
	}
	if in.JavaPackage == "" {
		in.JavaPackage = "openjdk-17-jre-headless"
	}
	if !regexp.MustCompile(`^[a-z0-9.+-]+$`).MatchString(in.JavaPackage) {
		return fmt.Errorf("java package %q: not a package name", in.JavaPackage)
	}
	if !heapRE.MatchString(in.HeapOpts) {
		return fmt.Errorf("kafka heap options %q: letters, digits, '-', ':', '=' and '.' only", in.HeapOpts)
	}
	return nil
}

// Script renders the node's install script (POSIX sh). Running it again is
// safe: what is installed or formatted is left as it is.
func (in Install) Script() ([]byte, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := installTmpl.Execute(&b, in); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ServerCommand is the node's server in the foreground, for xp's agent to
// start and supervise: kafka-server-start.sh with server.properties, its
// log4j files in Dir/logs (LOG_DIR) and HeapOpts as KAFKA_HEAP_OPTS. The
// script kafka-server-start.sh execs java, so the agent's pid is the JVM's.
func (in Install) ServerCommand() ([]string, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	argv := []string{"env", "LOG_DIR=" + in.Dir + "/logs"}
	if in.HeapOpts != "" {
		argv = append(argv, "KAFKA_HEAP_OPTS="+in.HeapOpts)
	}
	return append(argv, in.Dir+"/kafka-"+in.Version+"/bin/kafka-server-start.sh", in.Dir+"/server.properties"), nil
}

var installTmpl = template.Must(template.New("install").Funcs(shfetch.Funcs).Parse(`#!/bin/sh
# written by xp: install Apache Kafka {{.Version}} and format this node's storage;
# xp's agent starts the server (kafka-server-start.sh) afterwards
set -eu
dir={{.Dir}}
kafka="$dir/kafka-{{.Version}}"
mkdir -p "$dir/logs"

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kafka/bin/kafka-server-start.sh" ]; then
{{download "kafka" .URL .SHA512 "sha512" "$dir/kafka.tgz.part"}}
	rm -rf "$kafka.part"
	mkdir -p "$kafka.part"
	tar -xzf "$dir/kafka.tgz.part" -C "$kafka.part" --strip-components=1
	rm -f "$dir/kafka.tgz.part"
	if [ ! -x "$kafka.part/bin/kafka-server-start.sh" ] || [ ! -x "$kafka.part/bin/kafka-storage.sh" ]; then
		echo "kafka: {{.URL}} holds no bin/kafka-server-start.sh and bin/kafka-storage.sh: not a Kafka release" >&2
		rm -rf "$kafka.part"
		exit 1
	fi
	mv "$kafka.part" "$kafka"
fi

# Java from the distribution's packages.
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
if ! command -v java >/dev/null 2>&1; then
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {{.JavaPackage}} >/dev/null
fi
java -version 2>&1 | head -n 1

# Storage, formatted once.
if [ ! -f "{{.LogDirs}}/meta.properties" ]; then
	"$kafka/bin/kafka-storage.sh" format --ignore-formatted -t {{.ClusterID}} -c "$dir/server.properties"
fi

echo "kafka: {{.Version}} installed and formatted in $dir"
`))
