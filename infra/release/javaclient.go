package release

import (
	"archive/tar"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The Java client release is xp's load generator in Java (loadgen/Loadgen.java,
// the producers and consumer groups of `xp loadgen --client java`) with the
// jars it runs on: Apache Kafka's kafka-clients and the reference
// HdrHistogram, from Maven Central with strict checksums, compiled here by
// javac against them and packed as xp-java-client-VERSION.tgz (VERSION is
// kafka-clients'), with bin/xp-java-loadgen and libs/.

// JavaClientClass is the main class of the Java client release.
const JavaClientClass = "xp.loadgen.Loadgen"

// DefaultJavaClientRange is the Maven range `make java-client` takes
// kafka-clients' version from when none is given: the newest 4.x.
const DefaultJavaClientRange = DefaultKafkaRange

// HdrHistogramVersion is the reference HdrHistogram the Java client
// records into (the release Kafka 4.x ships in its libs/).
const HdrHistogramVersion = "2.2.2"

// javaClientJar is the load generator's jar in libs/.
const javaClientJar = "xp-java-loadgen.jar"

//go:embed loadgen/Loadgen.java
var javaClientSource []byte

// Jose4jVersion and JacksonVersion are the jose4j and jackson-databind
// the Java client release carries: Kafka's OAUTHBEARER login handler
// (OAuthBearerLoginCallbackHandler) needs both, but kafka-clients' pom
// leaves them out (Apache Kafka's release ships them beside
// kafka-clients; these are 4.4's).
const (
	Jose4jVersion  = "0.9.6"
	JacksonVersion = "2.21.7"
)

// JavaClientArtifacts are the Maven artifacts of the Java client release
// with kafka-clients version (a release number or a range).
func JavaClientArtifacts(version string) []Artifact {
	return []Artifact{
		{"org.apache.kafka", "kafka-clients", version},
		{"org.hdrhistogram", "HdrHistogram", HdrHistogramVersion},
		{"org.bitbucket.b_c", "jose4j", Jose4jVersion},
		{"com.fasterxml.jackson.core", "jackson-databind", JacksonVersion},
	}
}

// JavaClientArchiveName is the file name of the Java client release with
// kafka-clients version: xp-java-client-VERSION.tgz.
func JavaClientArchiveName(version string) string { return "xp-java-client-" + version + ".tgz" }

var clientsJarRE = regexp.MustCompile(`^kafka-clients-([0-9]+\.[0-9]+\.[0-9]+)\.jar$`)

// AssembleJavaClient resolves kafka-clients version (empty: the newest of
// DefaultJavaClientRange; a minor version such as 3.9: its newest) with
// HdrHistogram, compiles the load generator against them with the javac
// beside the java on PATH (or JAVA_HOME's) for Java 17, and writes
// dir/xp-java-client-VERSION.tgz with its .sha512 beside it.
func AssembleJavaClient(ctx context.Context, m Maven, version, dir string) (Written, error) {
	want := version
	switch {
	case version == "":
		want = DefaultJavaClientRange
	case minorRE.MatchString(version):
		want = fmt.Sprintf("[%s.0,%s.9999)", version, version)
	case !versionRE.MatchString(version):
		return Written{}, fmt.Errorf("kafka-clients version %q: want a release number such as 4.1.0, or a minor version such as 3.9", version)
	}
	javac, err := findJavac()
	if err != nil {
		return Written{}, err
	}
	scratch, err := os.MkdirTemp("", "xp-java-client-")
	if err != nil {
		return Written{}, err
	}
	defer os.RemoveAll(scratch)
	libs := filepath.Join(scratch, "libs")
	arts := JavaClientArtifacts(want)
	if err := m.Resolve(ctx, arts, libs); err != nil {
		return Written{}, err
	}
	names, err := jarNames(libs)
	if err != nil {
		return Written{}, err
	}
	got := javaClientVersionOf(names)
	if got == "" {
		return Written{}, fmt.Errorf("mvn resolved no kafka-clients jar for %s", want)
	}
	if versionRE.MatchString(version) && got != version {
		return Written{}, fmt.Errorf("mvn resolved kafka-clients %s, not %s", got, version)
	}
	jar, err := compileJar(ctx, javac, libs, filepath.Join(scratch, "loadgen"),
		javaSource{class: JavaClientClass, source: javaClientSource, what: "the Java load generator", createdBy: "make java-client"})
	if err != nil {
		return Written{}, err
	}
	if err := os.WriteFile(filepath.Join(libs, javaClientJar), jar, 0o644); err != nil {
		return Written{}, err
	}
	names = append(names, javaClientJar)
	sort.Strings(names)
	var marker strings.Builder
	fmt.Fprintf(&marker, "xp's Java load generator on kafka-clients %s, assembled by xp from Maven Central.\n", got)
	fmt.Fprintf(&marker, "bin/xp-java-loadgen runs %s (libs/%s, its source inside); xp loadgen --client java runs it.\n\nRequested:\n", JavaClientClass, javaClientJar)
	for _, a := range arts {
		fmt.Fprintf(&marker, "  %s\n", a)
	}
	marker.WriteString("\nlibs/:\n")
	for _, n := range names {
		fmt.Fprintf(&marker, "  %s\n", n)
	}
	files := []File{
		{Path: "bin/xp-java-loadgen", Data: []byte(javaClientScript), Exec: true},
		{Path: AssembledMarker, Data: []byte(marker.String())},
	}
	top := strings.TrimSuffix(JavaClientArchiveName(got), ".tgz")
	return Pack(filepath.Join(dir, JavaClientArchiveName(got)), top, "libs", libs, files)
}

func javaClientVersionOf(names []string) string {
	for _, n := range names {
		if m := clientsJarRE.FindStringSubmatch(n); m != nil {
			return m[1]
		}
	}
	return ""
}

// javaClientScript runs the load generator with JAVA (else java on PATH)
// and XP_JAVA_OPTS before the class.
const javaClientScript = `#!/bin/sh
# Runs xp's Java load generator (assembled by xp from Maven Central; see XP-ASSEMBLED.txt).
base=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
: "${JAVA:=java}"
# shellcheck disable=SC2086
exec "$JAVA" ${XP_JAVA_OPTS:-} -cp "$base/libs/*" ` + JavaClientClass + ` "$@"
`

// ErrNotJavaClient is returned by InspectJavaClient for an archive that is
// not a Java client release.
var ErrNotJavaClient = errors.New("not an xp Java client release")

// JavaClientRelease is what InspectJavaClient found in an archive.
type JavaClientRelease struct {
	// Top is the archive's top directory, e.g. "xp-java-client-4.4.0".
	Top string
	// Version is kafka-clients' version.
	Version string
}

// InspectJavaClient reads the archive at path (gzip'd tar) and says which
// Java client release it holds: one top directory with
// libs/xp-java-loadgen.jar and libs/kafka-clients-VERSION.jar.
func InspectJavaClient(path string) (JavaClientRelease, error) {
	var r JavaClientRelease
	hasJar := false
	top, err := walkArchive(path, ErrNotJavaClient, func(rest string, h *tar.Header) {
		if lib, ok := strings.CutPrefix(rest, "libs/"); ok && h.Typeflag == tar.TypeReg {
			if lib == javaClientJar {
				hasJar = true
			}
			if m := clientsJarRE.FindStringSubmatch(lib); m != nil {
				r.Version = m[1]
			}
		}
	})
	if err != nil {
		return JavaClientRelease{}, err
	}
	r.Top = top
	if !hasJar || r.Version == "" {
		return JavaClientRelease{}, fmt.Errorf("%s: %w: want libs/%s and libs/kafka-clients-VERSION.jar under one top directory (make java-client assembles it)", path, ErrNotJavaClient, javaClientJar)
	}
	return r, nil
}
