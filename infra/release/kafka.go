package release

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kafka's main classes, in every release from 3.5 on: xp starts brokers and
// formats storage with `java -cp 'libs/*'` and these, so the same code runs
// an official Apache release and one assembled here, whatever their bin/
// scripts do.
const (
	KafkaServerClass = "kafka.Kafka"
	// KafkaStorageClass is kafka-storage.sh's class (format, random-uuid).
	KafkaStorageClass = "kafka.tools.StorageTool"
	// ProducerPerformanceClass is kafka-producer-perf-test.sh's class, in
	// kafka-tools.
	ProducerPerformanceClass = "org.apache.kafka.tools.ProducerPerformance"
)

// KafkaScala is the Scala version of the releases xp runs (kafka_2.13).
const KafkaScala = "2.13"

// DefaultKafkaRange is the Maven range `make kafka-dist` takes its
// version from when none is given: the newest 4.x Maven Central has.
const DefaultKafkaRange = "[4.0.0,5.0.0)"

// AssembledMarker is the file at the top of a release xp assembled, listing
// what it was made of; an official Apache release has none.
const AssembledMarker = "XP-ASSEMBLED.txt"

// KafkaArtifacts are the Maven artifacts of a Kafka release of version (a
// version or a range of one major version): the broker (kafka_2.13) and
// the tools (kafka-tools, ProducerPerformance among them) with their
// runtime closure, and the logging binding the official release ships:
// reload4j through slf4j-reload4j up to 3.x, Log4j 2 from 4.0.
func KafkaArtifacts(version string) []Artifact {
	arts := []Artifact{
		{"org.apache.kafka", "kafka_" + KafkaScala, version},
		{"org.apache.kafka", "kafka-tools", version},
	}
	if kafkaMajor(version) < 4 {
		return append(arts,
			Artifact{"org.slf4j", "slf4j-reload4j", "1.7.36"},
			Artifact{"ch.qos.reload4j", "reload4j", "1.2.25"})
	}
	return append(arts,
		Artifact{"org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"},
		Artifact{"org.apache.logging.log4j", "log4j-core", "2.24.3"})
}

// kafkaMajor is the major version of a version or range ("[4.0.0,5.0.0)"
// is 4); 0 when there is none.
func kafkaMajor(v string) int {
	v = strings.TrimLeft(v, "[(")
	n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return n
}

// KafkaArchiveName is the file name of a release: kafka_2.13-VERSION.tgz,
// as Apache names them.
func KafkaArchiveName(version string) string {
	return "kafka_" + KafkaScala + "-" + version + ".tgz"
}

// AssembleKafka resolves Kafka version (empty: the newest 4.x; a minor
// version such as 3.9: its newest release) from Maven
// Central and writes dir/kafka_2.13-VERSION.tgz in the official release's
// layout (libs/ with the runtime closure, config/ and bin/ of xp's own,
// AssembledMarker) with its .sha512 beside it.
func AssembleKafka(ctx context.Context, m Maven, version, dir string) (Written, error) {
	want, exact := version, true
	switch {
	case want == "":
		want, exact = DefaultKafkaRange, false
	case minorRE.MatchString(want):
		// 3.9: the newest 3.9.x
		major, minor, _ := strings.Cut(want, ".")
		n, _ := strconv.Atoi(minor)
		want, exact = fmt.Sprintf("[%s.%d.0,%s.%d.0)", major, n, major, n+1), false
	case !versionRE.MatchString(want):
		return Written{}, fmt.Errorf("kafka version %q: want a release number such as 4.1.0 or 3.9.1, or a minor version such as 3.9 for its newest release", version)
	}
	scratch, err := os.MkdirTemp("", "xp-kafka-")
	if err != nil {
		return Written{}, err
	}
	defer os.RemoveAll(scratch)
	libs := filepath.Join(scratch, "libs")
	arts := KafkaArtifacts(want)
	if err := m.Resolve(ctx, arts, libs); err != nil {
		return Written{}, err
	}
	names, err := jarNames(libs)
	if err != nil {
		return Written{}, err
	}
	got, err := kafkaVersionOf(names)
	if err != nil {
		return Written{}, err
	}
	if tools := jarVersion(names, "kafka-tools-"); tools != got {
		return Written{}, fmt.Errorf("mvn resolved kafka_%s %s but kafka-tools %s: give KAFKA_VERSION", KafkaScala, got, tools)
	}
	if exact && got != version {
		return Written{}, fmt.Errorf("mvn resolved kafka_%s %s, not %s", KafkaScala, got, version)
	}
	top := strings.TrimSuffix(KafkaArchiveName(got), ".tgz")
	files := kafkaFiles(got, arts, names)
	return Pack(filepath.Join(dir, KafkaArchiveName(got)), top, "libs", libs, files)
}

var (
	versionRE  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	minorRE    = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	kafkaJarRE = regexp.MustCompile(`^kafka_2\.13-([0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*)\.jar$`)
)

func jarNames(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	sort.Strings(names)
	return names, nil
}

// kafkaVersionOf finds the broker jar among names and returns its version.
func kafkaVersionOf(names []string) (string, error) {
	for _, n := range names {
		if m := kafkaJarRE.FindStringSubmatch(n); m != nil && !strings.HasSuffix(m[1], "-test") && !strings.HasSuffix(m[1], "-sources") {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("no libs/kafka_%s-*.jar", KafkaScala)
}

// jarVersion is the version of the jar named prefix+VERSION.jar in names.
func jarVersion(names []string, prefix string) string {
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, prefix); ok && strings.HasSuffix(v, ".jar") {
			v = strings.TrimSuffix(v, ".jar")
			if versionRE.MatchString(v) {
				return v
			}
		}
	}
	return ""
}

// kafkaFiles are the files of xp's own in an assembled release: the bin/
// scripts a user of the release expects (each a java -cp 'libs/*' of
// Kafka's class), a log configuration in the release's logging dialect,
// and the marker listing what the release was made of.
func kafkaFiles(version string, arts []Artifact, jars []string) []File {
	script := func(class string) []byte {
		return []byte(`#!/bin/sh
# Runs ` + class + ` from this release's libs/ (assembled by xp from Maven Central).
# KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS and KAFKA_OPTS are passed to java as Kafka's own scripts pass them.
base=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
: "${JAVA:=java}"
: "${LOG_DIR:=$base/logs}"
# shellcheck disable=SC2086
exec "$JAVA" ${KAFKA_HEAP_OPTS:-} ${KAFKA_JVM_PERFORMANCE_OPTS:-} ${KAFKA_OPTS:-} ` + logProperty(version) + ` -Dkafka.logs.dir="$LOG_DIR" -cp "$base/libs/*" ` + class + ` "$@"
`)
	}
	var marker strings.Builder
	fmt.Fprintf(&marker, "Apache Kafka %s (Scala %s), assembled by xp from Maven Central; not an Apache release archive.\n\nRequested:\n", version, KafkaScala)
	for _, a := range arts {
		fmt.Fprintf(&marker, "  %s\n", a)
	}
	marker.WriteString("\nlibs/:\n")
	for _, j := range jars {
		fmt.Fprintf(&marker, "  %s\n", j)
	}
	files := []File{
		{Path: "bin/kafka-server-start.sh", Data: script(KafkaServerClass), Exec: true},
		{Path: "bin/kafka-storage.sh", Data: script(KafkaStorageClass), Exec: true},
		{Path: "bin/kafka-producer-perf-test.sh", Data: script(ProducerPerformanceClass), Exec: true},
		{Path: AssembledMarker, Data: []byte(marker.String())},
	}
	name, conf := LogConfig(version)
	return append(files, File{Path: "config/" + name, Data: conf})
}

// logProperty is the java property that points the release's logging at
// its configuration in config/.
func logProperty(version string) string {
	name, _ := LogConfig(version)
	if kafkaMajor(version) < 4 {
		return `-Dlog4j.configuration="file:$base/config/` + name + `"`
	}
	return `-Dlog4j2.configurationFile="$base/config/` + name + `"`
}

// LogConfig is a log configuration for a broker of version in its
// release's dialect: its file name and contents. Everything goes to
// ${kafka.logs.dir}/server.log; the request log and the state change log
// (noisy at the rates xp runs) are off.
func LogConfig(version string) (name string, data []byte) {
	if kafkaMajor(version) < 4 {
		return "log4j.properties", []byte(`log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.controller=INFO
`)
	}
	return "log4j2.properties", []byte(`status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
`)
}

// KafkaRelease is what Inspect found in a Kafka release archive.
type KafkaRelease struct {
	// Top is the archive's top directory, e.g. "kafka_2.13-4.1.0".
	Top string
	// Version is the broker jar's version, e.g. "4.1.0".
	Version string
	// Assembled is true for a release xp assembled (AssembledMarker), false
	// for an official Apache one.
	Assembled bool
}

// MinJava is the oldest Java major version a Kafka broker of this release
// runs on: 17 from 4.0, 8 before.
func (r KafkaRelease) MinJava() int {
	if kafkaMajor(r.Version) >= 4 {
		return 17
	}
	return 8
}

// ErrNotKafka is returned by InspectKafka for an archive that is not a
// Kafka release.
var ErrNotKafka = errors.New("not a Kafka release")

// InspectKafka reads the archive at path (gzip'd tar) and says which Kafka
// release it holds: one top directory with libs/kafka_2.13-VERSION.jar.
// The error of anything else wraps ErrNotKafka and names the file.
func InspectKafka(path string) (KafkaRelease, error) {
	var r KafkaRelease
	top, err := walkArchive(path, ErrNotKafka, func(rest string, h *tar.Header) {
		if rest == AssembledMarker {
			r.Assembled = true
		}
		if lib, ok := strings.CutPrefix(rest, "libs/"); ok && h.Typeflag == tar.TypeReg {
			if m := kafkaJarRE.FindStringSubmatch(lib); m != nil && versionRE.MatchString(m[1]) {
				r.Version = m[1]
			}
		}
	})
	if err != nil {
		return KafkaRelease{}, err
	}
	r.Top = top
	if r.Version == "" {
		return KafkaRelease{}, fmt.Errorf("%s: %w: no libs/kafka_%s-*.jar in it (make kafka-dist assembles one; Apache's are kafka_%s-VERSION.tgz)", path, ErrNotKafka, KafkaScala, KafkaScala)
	}
	return r, nil
}

// walkArchive reads the release archive at path (gzip'd tar), which must
// hold one top directory, and calls visit with each entry's path below it.
// It returns the top directory; its errors wrap kind and name the file.
func walkArchive(path string, kind error, visit func(rest string, h *tar.Header)) (top string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w: not a gzip'd tar (%v)", path, kind, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return top, nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w: %v", path, kind, err)
		}
		t, rest, _ := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		if top == "" {
			top = t
		} else if t != top {
			return "", fmt.Errorf("%s: %w: more than one top directory (%s, %s)", path, kind, top, t)
		}
		visit(rest, h)
	}
}
