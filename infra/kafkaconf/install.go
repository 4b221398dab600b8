package kafkaconf

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"text/template"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/shfetch"
)

// Install describes how one node gets Apache Kafka onto its host: a Java
// runtime from the distribution's packages, the release tarball (from URL,
// or File already on the host) checked against SHA512, storage formatted
// once. The script it renders installs, verifies and formats only; the
// server itself runs under xp's agent (ServerCommand), so teardown and `xp
// infra down` stop it like every other service. Both start Kafka's main
// classes with `java -cp 'libs/*'`, never the release's bin/ scripts, so an
// official Apache release and one `make kafka-dist` assembled run the
// same way. The script holds no secret; server.properties (which does) is
// uploaded beside it, 0600.
type Install struct {
	// Version is the Kafka version, e.g. 3.9.1 (the directory name).
	Version string
	// URL is the release tarball (kafka_2.13-VERSION.tgz) the script
	// downloads; empty when File is given.
	URL string
	// File is the release tarball already on the host (xp uploads a
	// kafka.distribution file there), checked and unpacked instead of a
	// download, and removed once unpacked.
	File string
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
	// HeapOpts are the server's heap flags (KAFKA_HEAP_OPTS); default
	// kafka-server-start.sh's own, -Xmx1G -Xms1G.
	HeapOpts string
	// JVMFlags are the server's other JVM flags (KAFKA_JVM_PERFORMANCE_OPTS);
	// default DefaultJVMFlags.
	JVMFlags string
}

// DefaultJVMFlags are the JVM flags Kafka's kafka-run-class.sh gives a
// broker unless KAFKA_JVM_PERFORMANCE_OPTS says otherwise.
const DefaultJVMFlags = "-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 " +
	"-XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true"

// defaultHeapOpts is kafka-server-start.sh's KAFKA_HEAP_OPTS default.
const defaultHeapOpts = "-Xmx1G -Xms1G"

var (
	sha512RE  = regexp.MustCompile(`^[0-9a-f]{128}$`)
	versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)
	clusterRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{21}$`)
	pathRE    = regexp.MustCompile(`^/[A-Za-z0-9._/,-]*$`)
	heapRE    = regexp.MustCompile(`^[A-Za-z0-9:=. -]*$`)
	jvmRE     = regexp.MustCompile(`^[A-Za-z0-9:=.,+/_ -]*$`)
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
	switch {
	case in.File != "" && in.URL != "":
		return fmt.Errorf("kafka distribution: a URL (%s) or a file (%s), not both", in.URL, in.File)
	case in.File != "":
		if !pathRE.MatchString(in.File) {
			return fmt.Errorf("kafka release file %q: want an absolute path of letters, digits and ._-/", in.File)
		}
	default:
		u, err := url.Parse(in.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("kafka distribution %q: want the http(s) URL of a release tarball", in.URL)
		}
		if bytes.ContainsAny([]byte(in.URL), "'\"\\$` \n") {
			return fmt.Errorf("kafka distribution %q: quotes, spaces, backslashes, $ and ` are not allowed in the URL", in.URL)
		}
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
	if !jvmRE.MatchString(in.JVMFlags) {
		return fmt.Errorf("kafka JVM flags %q: letters, digits, spaces and -:=.,+/_ only", in.JVMFlags)
	}
	return nil
}

// MinJava is the oldest Java major version the release runs on.
func (in Install) MinJava() int { return release.KafkaRelease{Version: in.Version}.MinJava() }

// home is the directory the release is unpacked in.
func (in Install) home() string { return in.Dir + "/kafka-" + in.Version }

// LogConfig is the path of the log configuration the script writes
// (release.LogConfig: the release's logging dialect, everything to
// Dir/logs/server.log) and the java property that points the JVM at it.
func (in Install) LogConfig() (path, property string) {
	name, _ := release.LogConfig(in.Version)
	path = in.Dir + "/" + name
	if name == "log4j.properties" {
		return path, "-Dlog4j.configuration=file:" + path
	}
	return path, "-Dlog4j2.configurationFile=" + path
}

// Script renders the node's install script (POSIX sh). Running it again is
// safe: what is installed or formatted is left as it is.
func (in Install) Script() ([]byte, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	logPath, logProp := in.LogConfig()
	_, logConf := release.LogConfig(in.Version)
	data := struct {
		Install
		LogPath, LogProperty, LogText, StorageClass string
		MinJava                                     int
	}{in, logPath, logProp, string(logConf), release.KafkaStorageClass, in.MinJava()}
	var b bytes.Buffer
	if err := installTmpl.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ServerCommand is the node's server in the foreground, for xp's agent to
// start and supervise: `java -cp 'libs/*' kafka.Kafka server.properties`
// with the heap and JVM flags, the log configuration the script wrote and
// kafka.logs.dir Dir/logs, as kafka-server-start.sh would run it. The
// agent's pid is the JVM's.
func (in Install) ServerCommand() ([]string, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	_, logProp := in.LogConfig()
	return JavaCommand(in.home(), in.heap(), in.jvmFlags(), logProp, in.Dir+"/logs", release.KafkaServerClass, in.Dir+"/server.properties"), nil
}

// JVMOptions are the heap and other JVM flags ServerCommand runs the
// server with, as one line (what an attempt records).
func (in Install) JVMOptions() string { return in.heap() + " " + in.jvmFlags() }

func (in Install) heap() string {
	if in.HeapOpts == "" {
		return defaultHeapOpts
	}
	return in.HeapOpts
}

func (in Install) jvmFlags() string {
	if in.JVMFlags == "" {
		return DefaultJVMFlags
	}
	return in.JVMFlags
}

// JavaCommand is the command line that runs class of the Kafka release
// unpacked in home with `java -cp 'HOME/libs/*'` (java expands the
// wildcard; no shell is involved): heap and jvmFlags (space-separated),
// logProperty (the second result of Install.LogConfig) and kafka.logs.dir
// logDir before the class, args after it.
func JavaCommand(home, heap, jvmFlags, logProperty, logDir, class string, args ...string) []string {
	argv := append([]string{"java"}, strings.Fields(heap)...)
	argv = append(argv, strings.Fields(jvmFlags)...)
	argv = append(argv, logProperty, "-Dkafka.logs.dir="+logDir, "-cp", home+"/libs/*", class)
	return append(argv, args...)
}

var installTmpl = template.Must(template.New("install").Funcs(shfetch.Funcs).Parse(`#!/bin/sh
# written by xp: install Apache Kafka {{.Version}} and format this node's storage;
# xp's agent starts the server (java -cp "$kafka/libs/*" kafka.Kafka) afterwards
set -eu
dir={{.Dir}}
kafka="$dir/kafka-{{.Version}}"
mkdir -p "$dir/logs"

# The release, checked against its SHA-512 before it is unpacked; a
# release is its libs/ (Kafka's main classes run from there), whatever its
# bin/ scripts are.
if [ ! -d "$kafka" ]; then
{{- if .File}}
	tgz={{.File}}
	echo "{{.SHA512}}  $tgz" | sha512sum -c --quiet - || {
		echo "kafka: $tgz (kafka.distribution, uploaded) does not match the sha512 of the target file" >&2
		rm -f "$tgz"
		exit 1
	}
{{- else}}
{{download "kafka" .URL .SHA512 "sha512" "$dir/kafka.tgz.part"}}
	tgz="$dir/kafka.tgz.part"
{{- end}}
	rm -rf "$kafka.part"
	mkdir -p "$kafka.part"
	tar -xzf "$tgz" -C "$kafka.part" --strip-components=1
	rm -f "$tgz"
	set -- "$kafka.part"/libs/kafka_2.13-*.jar
	if [ ! -f "$1" ]; then
		echo "kafka: {{if .File}}the release file{{else}}{{.URL}}{{end}} holds no libs/kafka_2.13-*.jar: not a Kafka release" >&2
		rm -rf "$kafka.part"
		exit 1
	fi
	mv "$kafka.part" "$kafka"
fi

# Java from the distribution's packages.
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
if ! command -v java >/dev/null 2>&1; then
	# On a fresh machine cloud-init, and the unattended upgrades it
	# starts, hold dpkg's lock: wait for cloud-init, then let apt wait
	# for the lock rather than fail.
	if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout={{aptLockTimeout}}
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout={{aptLockTimeout}} {{.JavaPackage}} >/dev/null
fi
java -version 2>&1 | head -n 1
# Kafka {{.Version}} runs on Java {{.MinJava}} or later.
java_version=$(java -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
java_major=$(echo "$java_version" | sed 's/^1\.//; s/[^0-9].*//')
if [ -z "$java_major" ] || [ "$java_major" -lt {{.MinJava}} ]; then
	echo "kafka: Kafka {{.Version}} needs Java {{.MinJava}} or later, but $(command -v java) is Java ${java_version:-of an unknown version}: install one ({{.JavaPackage}} or newer) and make it the java on PATH (update-alternatives --config java)" >&2
	exit 1
fi

# The log configuration, in the release's dialect: everything to
# $dir/logs/server.log.
cat >"{{.LogPath}}" <<'EOF'
{{.LogText}}EOF

# Storage, formatted once (a static quorum: controller.quorum.voters), by a
# JVM made to start fast: it runs for a second.
if [ ! -f "{{.LogDirs}}/meta.properties" ]; then
	java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC {{.LogProperty}} -Dkafka.logs.dir="$dir/logs" -cp "$kafka/libs/*" {{.StorageClass}} format --ignore-formatted -t {{.ClusterID}} -c "$dir/server.properties"
fi

echo "kafka: {{.Version}} installed and formatted in $dir"
`))
