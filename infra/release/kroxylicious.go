package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kroxylicious is published to Maven Central as its runtime, filters and
// KMS providers, but not as kroxylicious-app, the module holding the
// official release's main class and its -bin.tar.gz archive. xp therefore
// assembles the release's layout itself: bin/kroxylicious-start.sh,
// config/ and libs/ with the runtime closure of the runtime, the Record
// Encryption filter and its KMS providers, plus a launcher of xp's own
// (launcher/Kroxylicious.java, compiled here against those jars) in the
// place of kroxylicious-app's main class.

// DefaultKroxyliciousRange is the Maven range `make kroxylicious-dist`
// takes its version from when none is given: the newest release whose
// config xp renders.
const DefaultKroxyliciousRange = "[" + KroxyliciousMinVersion + ",)"

// KroxyliciousLauncherClass is the main class of an assembled release.
const KroxyliciousLauncherClass = "xp.launcher.Kroxylicious"

// kroxyLauncherJar is the launcher's jar in libs/.
const kroxyLauncherJar = "xp-kroxylicious-launcher.jar"

//go:embed launcher/Kroxylicious.java
var kroxyLauncherSource []byte

// ErrNoJavac is returned when javac, needed to compile the launcher,
// cannot be found.
var ErrNoJavac = errors.New("javac not found: install a JDK 17 or later (apt-get install openjdk-17-jdk-headless)")

// kroxyInMemoryJar is the start of the in-memory KMS's jar name.
const kroxyInMemoryJar = "kroxylicious-kms-provider-kroxylicious-inmemory-"

// kroxyliciousGroup is the Maven group of Kroxylicious's artifacts.
const kroxyliciousGroup = "io.kroxylicious"

// KroxyliciousArtifacts are the Maven artifacts of a Kroxylicious release
// of version (a release number or a range): the runtime (the proxy, its
// config parser and TLS), the Record Encryption filter, and the KMS
// providers it can use here: the in-memory one (KEKs given in the config)
// and HashiCorp Vault. The logging the official release ships (Log4j 2
// through SLF4J, asynchronous loggers on the LMAX disruptor) comes with
// its versions from the release's parent pom (KroxyliciousBOM).
func KroxyliciousArtifacts(version string) []Artifact {
	return []Artifact{
		{kroxyliciousGroup, "kroxylicious-runtime", version},
		{kroxyliciousGroup, "kroxylicious-record-encryption", version},
		{kroxyliciousGroup, "kroxylicious-kms-provider-kroxylicious-inmemory", version},
		{kroxyliciousGroup, "kroxylicious-kms-provider-hashicorp-vault", version},
		{"org.apache.logging.log4j", "log4j-api", ""},
		{"org.apache.logging.log4j", "log4j-core", ""},
		{"org.apache.logging.log4j", "log4j-slf4j2-impl", ""},
		{"org.slf4j", "slf4j-jdk-platform-logging", ""},
		{"com.lmax", "disruptor", ""},
	}
}

// KroxyliciousBOM is the release's parent pom, whose dependency
// management pins the library versions the release was built with.
func KroxyliciousBOM(version string) Artifact {
	return Artifact{kroxyliciousGroup, "kroxylicious-parent", version}
}

// KroxyliciousArchiveName is the file name of a release:
// kroxylicious-app-VERSION-bin.tar.gz, as the project names them.
func KroxyliciousArchiveName(version string) string {
	return "kroxylicious-app-" + version + "-bin.tar.gz"
}

// kroxyliciousTop is the archive's top directory.
func kroxyliciousTop(version string) string { return "kroxylicious-app-" + version }

var kroxyRuntimeJarRE = regexp.MustCompile(`^kroxylicious-runtime-([0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*)\.jar$`)

// AssembleKroxylicious resolves Kroxylicious version (empty: the newest
// release DefaultKroxyliciousRange has on Maven Central) and writes
// dir/kroxylicious-app-VERSION-bin.tar.gz in the official release's
// layout, with its .sha512 beside it. The launcher is compiled with the
// javac beside the java on PATH (or JAVA_HOME's), for Java 17.
func AssembleKroxylicious(ctx context.Context, m Maven, version, dir string) (Written, error) {
	if version != "" && !versionRE.MatchString(version) {
		return Written{}, fmt.Errorf("kroxylicious version %q: want a release number such as 0.12.0", version)
	}
	javac, err := findJavac()
	if err != nil {
		return Written{}, err
	}
	scratch, err := os.MkdirTemp("", "xp-kroxylicious-")
	if err != nil {
		return Written{}, err
	}
	defer os.RemoveAll(scratch)
	got := version
	if got == "" {
		// The newest release first, then its whole closure with the
		// versions its parent pom manages.
		probe := filepath.Join(scratch, "probe")
		if err := m.Resolve(ctx, []Artifact{{kroxyliciousGroup, "kroxylicious-runtime", DefaultKroxyliciousRange}}, probe); err != nil {
			return Written{}, err
		}
		names, err := jarNames(probe)
		if err != nil {
			return Written{}, err
		}
		if got = kroxyliciousVersionOf(names); got == "" {
			return Written{}, fmt.Errorf("mvn resolved no kroxylicious-runtime jar for %s", DefaultKroxyliciousRange)
		}
	}
	libs := filepath.Join(scratch, "libs")
	arts := KroxyliciousArtifacts(got)
	if err := m.ResolveManaged(ctx, []Artifact{KroxyliciousBOM(got)}, arts, libs); err != nil {
		return Written{}, err
	}
	names, err := jarNames(libs)
	if err != nil {
		return Written{}, err
	}
	if v := kroxyliciousVersionOf(names); v != got {
		return Written{}, fmt.Errorf("mvn resolved kroxylicious-runtime %q, not %s", v, got)
	}
	jar, err := compileJar(ctx, javac, libs, filepath.Join(scratch, "launcher"),
		javaSource{class: KroxyliciousLauncherClass, source: kroxyLauncherSource, what: "the Kroxylicious launcher", createdBy: "make kroxylicious-dist"})
	if err != nil {
		return Written{}, err
	}
	if err := os.WriteFile(filepath.Join(libs, kroxyLauncherJar), jar, 0o644); err != nil {
		return Written{}, err
	}
	names = append(names, kroxyLauncherJar)
	sort.Strings(names)
	files := kroxyliciousFiles(got, arts, names)
	return Pack(filepath.Join(dir, KroxyliciousArchiveName(got)), kroxyliciousTop(got), "libs", libs, files)
}

func kroxyliciousVersionOf(names []string) string {
	for _, n := range names {
		if m := kroxyRuntimeJarRE.FindStringSubmatch(n); m != nil && versionRE.MatchString(m[1]) {
			return m[1]
		}
	}
	return ""
}

// findJavac is the javac of JAVA_HOME, else the one beside the java on
// PATH (so both come from one JDK), else javac on PATH.
func findJavac() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if j := filepath.Join(h, "bin", "javac"); isExec(j) {
			return j, nil
		}
	}
	if java, err := exec.LookPath("java"); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			if j := filepath.Join(filepath.Dir(real), "javac"); isExec(j) {
				return j, nil
			}
		}
	}
	if j, err := exec.LookPath("javac"); err == nil {
		return j, nil
	}
	return "", ErrNoJavac
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// javaSource is one class of xp's own in Java, compiled into a jar of its
// own by compileJar.
type javaSource struct {
	class     string // the main class, e.g. xp.launcher.Kroxylicious
	source    []byte
	what      string // named in errors
	createdBy string // the manifest's Created-By
}

// compileJar compiles src against the jars in libs for Java 17 and returns
// its jar: the classes, the source and a manifest naming the main class,
// entries sorted and dated archiveTime so that the same JDK makes the same
// bytes.
func compileJar(ctx context.Context, javac, libs, work string, src javaSource) ([]byte, error) {
	srcPath := filepath.Join(append([]string{work, "src"}, strings.Split(src.class, ".")...)...) + ".java"
	srcName := strings.ReplaceAll(src.class, ".", "/") + ".java"
	classes := filepath.Join(work, "classes")
	if err := os.MkdirAll(filepath.Dir(srcPath), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(srcPath, src.source, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, javac, "--release", "17", "-encoding", "UTF-8", "-nowarn",
		"-cp", filepath.Join(libs, "*"), "-d", classes, srcPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compiling %s with %s: %w\n%s", src.what, javac, err, lastLines(string(out), 20))
	}
	var paths []string
	err := filepath.WalkDir(classes, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: archiveTime})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	manifest := "Manifest-Version: 1.0\r\nMain-Class: " + src.class + "\r\nCreated-By: xp (" + src.createdBy + ")\r\n\r\n"
	if err := add("META-INF/MANIFEST.MF", []byte(manifest)); err != nil {
		return nil, err
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(classes, p)
		if err := add(filepath.ToSlash(rel), data); err != nil {
			return nil, err
		}
	}
	if err := add(srcName, src.source); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// kroxyliciousFiles are the files of xp's own in an assembled release: the
// start script, the logging configuration, an example config and the
// marker listing what the release was made of.
func kroxyliciousFiles(version string, arts []Artifact, jars []string) []File {
	var marker strings.Builder
	fmt.Fprintf(&marker, "Kroxylicious %s, assembled by xp from Maven Central; not a Kroxylicious release archive.\n", version)
	marker.WriteString("Maven Central has no kroxylicious-app (the official release's main class): bin/kroxylicious-start.sh\n")
	fmt.Fprintf(&marker, "runs %s (libs/%s, its source inside), which reads --config with the runtime's\n", KroxyliciousLauncherClass, kroxyLauncherJar)
	marker.WriteString("ConfigParser and runs io.kroxylicious.proxy.KafkaProxy.\n\nRequested:\n")
	fmt.Fprintf(&marker, "  %s (bill of materials)\n", KroxyliciousBOM(version))
	for _, a := range arts {
		fmt.Fprintf(&marker, "  %s\n", a)
	}
	marker.WriteString("\nlibs/:\n")
	for _, j := range jars {
		fmt.Fprintf(&marker, "  %s\n", j)
	}
	return []File{
		{Path: "bin/kroxylicious-start.sh", Data: []byte(kroxyStartScript), Exec: true},
		{Path: "config/log4j2.yaml", Data: []byte(kroxyLog4j2)},
		{Path: "config/example-proxy-config.yaml", Data: []byte(kroxyExampleConfig)},
		{Path: AssembledMarker, Data: []byte(marker.String())},
	}
}

// kroxyStartScript takes the official script's environment: JAVA_HOME
// (else java on PATH), JAVA_OPTIONS, KROXYLICIOUS_CLASSPATH appended to
// libs/, and KROXYLICIOUS_LOGGING_OPTIONS replacing the default logging
// (config/log4j2.yaml, asynchronous loggers).
const kroxyStartScript = `#!/bin/sh
# Starts Kroxylicious: kroxylicious-start.sh --config FILE
# (assembled by xp from Maven Central; see XP-ASSEMBLED.txt)
set -eu
base=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
java=java
if [ -n "${JAVA_HOME:-}" ]; then java="$JAVA_HOME/bin/java"; fi
cp="$base/libs/*"
if [ -n "${KROXYLICIOUS_CLASSPATH:-}" ]; then cp="$cp:$KROXYLICIOUS_CLASSPATH"; fi
if [ "${KROXYLICIOUS_LOGGING_OPTIONS+set}" != set ]; then
	KROXYLICIOUS_LOGGING_OPTIONS="-Dlog4j2.configurationFile=$base/config/log4j2.yaml -Dlog4j2.contextSelector=org.apache.logging.log4j.core.async.AsyncLoggerContextSelector"
fi
# shellcheck disable=SC2086
exec "$java" $KROXYLICIOUS_LOGGING_OPTIONS ${JAVA_OPTIONS:-} -cp "$cp" ` + KroxyliciousLauncherClass + ` "$@"
`

// kroxyLog4j2 logs to standard output: Kroxylicious's own loggers at INFO,
// the rest at WARN, each settable as the official release's are
// (KROXYLICIOUS_APP_LOG_LEVEL, KROXYLICIOUS_ROOT_LOG_LEVEL).
const kroxyLog4j2 = `Configuration:
  status: WARN
  Appenders:
    Console:
      name: STDOUT
      target: SYSTEM_OUT
      PatternLayout:
        pattern: "%d{yyyy-MM-dd HH:mm:ss} <%t> %-5p %c - %m%n"
  Loggers:
    Root:
      level: "${env:KROXYLICIOUS_ROOT_LOG_LEVEL:-WARN}"
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: io.kroxylicious
        level: "${env:KROXYLICIOUS_APP_LOG_LEVEL:-${env:KROXYLICIOUS_ROOT_LOG_LEVEL:-INFO}}"
        additivity: false
        AppenderRef:
          - ref: STDOUT
`

const kroxyExampleConfig = `# A passthrough proxy in front of a broker on localhost:9092: clients
# bootstrap from localhost:9192, node N is served on port 9193+N.
virtualClusters:
  - name: demo
    targetCluster:
      bootstrapServers: localhost:9092
    gateways:
      - name: default
        portIdentifiesNode:
          bootstrapAddress: localhost:9192
`

// KroxyliciousRelease is what InspectKroxylicious found in a release
// archive.
type KroxyliciousRelease struct {
	// Top is the archive's top directory, e.g. "kroxylicious-app-0.12.0".
	Top string
	// Version is the runtime jar's version, e.g. "0.12.0".
	Version string
	// Assembled is true for a release xp assembled (AssembledMarker).
	Assembled bool
	// InMemoryKMS is true when libs/ has Kroxylicious's in-memory KMS
	// (kroxylicious-kms-provider-kroxylicious-inmemory), which xp's
	// assembled releases have and the project's archives do not.
	InMemoryKMS bool
}

// MinJava is the oldest Java major version this release runs on: 21 from
// 0.22.0, 17 before.
func (r KroxyliciousRelease) MinJava() int { return KroxyliciousMinJava(r.Version) }

// KroxyliciousMinJava is the oldest Java major version Kroxylicious
// version runs on: 21 from 0.22.0, 17 before.
func KroxyliciousMinJava(version string) int {
	if AtLeast(version, "0.22.0") {
		return 21
	}
	return 17
}

// ErrNotKroxylicious is returned by InspectKroxylicious for an archive that
// is not a Kroxylicious release.
var ErrNotKroxylicious = errors.New("not a Kroxylicious release")

// InspectKroxylicious reads the archive at path (gzip'd tar) and says which
// Kroxylicious release it holds: one top directory with
// bin/kroxylicious-start.sh and libs/kroxylicious-runtime-VERSION.jar. The
// error of anything else wraps ErrNotKroxylicious and names the file.
func InspectKroxylicious(path string) (KroxyliciousRelease, error) {
	var r KroxyliciousRelease
	start := false
	top, err := walkArchive(path, ErrNotKroxylicious, func(rest string, h *tar.Header) {
		switch {
		case rest == AssembledMarker:
			r.Assembled = true
		case rest == "bin/kroxylicious-start.sh" && h.Typeflag == tar.TypeReg:
			start = true
		}
		if lib, ok := strings.CutPrefix(rest, "libs/"); ok && h.Typeflag == tar.TypeReg {
			if m := kroxyRuntimeJarRE.FindStringSubmatch(lib); m != nil && versionRE.MatchString(m[1]) {
				r.Version = m[1]
			}
			if strings.HasPrefix(lib, kroxyInMemoryJar) {
				r.InMemoryKMS = true
			}
		}
	})
	if err != nil {
		return KroxyliciousRelease{}, err
	}
	r.Top = top
	switch {
	case r.Version == "":
		return KroxyliciousRelease{}, fmt.Errorf("%s: %w: no libs/kroxylicious-runtime-*.jar in it (make kroxylicious-dist assembles one; the project's are kroxylicious-app-VERSION-bin.tar.gz)", path, ErrNotKroxylicious)
	case !start:
		return KroxyliciousRelease{}, fmt.Errorf("%s: %w: no bin/kroxylicious-start.sh in it", path, ErrNotKroxylicious)
	}
	return r, nil
}

// KroxyliciousMinVersion is the oldest Kroxylicious release whose config
// format xp renders: 0.11.0 made virtualClusters a list with gateways and
// management the admin endpoint; older releases want a map and
// clusterNetworkAddressConfigProvider.
const KroxyliciousMinVersion = "0.11.0"

// AtLeast says whether release number v (MAJOR.MINOR.PATCH with an
// optional suffix) is min or later, by its three numbers; a suffix
// (0.23.0-rc1) is not ordered.
func AtLeast(v, min string) bool {
	a, b := releaseNumbers(v), releaseNumbers(min)
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func releaseNumbers(v string) [3]int {
	var n [3]int
	for i, f := range strings.SplitN(v, ".", 3) {
		end := 0
		for end < len(f) && f[end] >= '0' && f[end] <= '9' {
			end++
		}
		n[i], _ = strconv.Atoi(f[:end])
	}
	return n
}
