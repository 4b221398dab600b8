package kafkaproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/release"
)

// Java is a Java runtime found on this machine.
type Java struct {
	// Path is the java executable.
	Path string `json:"path"`
	// Version is the first line of `java -version`, e.g. `openjdk version
	// "17.0.13" 2024-10-15`.
	Version string `json:"version"`
	// Major is the feature release: 8 for 1.8.0_x, 17 for 17.0.x.
	Major int `json:"major"`
	// Vendor is the java.vendor property, e.g. "Debian", "Eclipse Adoptium".
	Vendor string `json:"vendor,omitempty"`
}

// ErrNoJava is returned by FindJava when there is no usable java.
var ErrNoJava = errors.New("no java")

// javaProbeTimeout bounds one `java -version`.
const javaProbeTimeout = 30 * time.Second

// FindJava finds the java executable: path when given (kafka.java), else
// $JAVA_HOME/bin/java, else the first java on $PATH (getenv reads both),
// and reads its version and vendor.
func FindJava(ctx context.Context, path string, getenv func(string) string) (Java, error) {
	if path == "" {
		if home := getenv("JAVA_HOME"); home != "" {
			path = filepath.Join(home, "bin", "java")
		} else {
			p, err := lookPath("java", getenv("PATH"))
			if err != nil {
				return Java{}, fmt.Errorf("%w on PATH and JAVA_HOME is not set: install a Java runtime (Debian: apt-get install openjdk-17-jre-headless), or name one with kafka.java", ErrNoJava)
			}
			path = p
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return Java{}, fmt.Errorf("%w: %s is not an executable", ErrNoJava, path)
	}
	return probeJava(ctx, path, nil)
}

// probeJava runs java with flags and -XshowSettings:properties -version
// and reads what it says; a JVM that refuses the flags is an error quoting
// its message.
func probeJava(ctx context.Context, path string, flags []string) (Java, error) {
	ctx, cancel := context.WithTimeout(ctx, javaProbeTimeout)
	defer cancel()
	args := append(append([]string{}, flags...), "-XshowSettings:properties", "-version")
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return Java{}, fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), err, firstLines(out, 3))
	}
	j := Java{Path: path}
	for _, line := range strings.Split(string(out), "\n") {
		t := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(t, "java.vendor = "); ok {
			j.Vendor = v
		}
		if j.Version == "" && versionLineRE.MatchString(t) {
			j.Version = t
		}
	}
	if j.Version == "" {
		return Java{}, fmt.Errorf("%w: %s -version printed no version line: %s", ErrNoJava, path, firstLines(out, 3))
	}
	j.Major = javaMajor(j.Version)
	if j.Major == 0 {
		return Java{}, fmt.Errorf("%w: %s: cannot read a version from %q", ErrNoJava, path, j.Version)
	}
	return j, nil
}

// versionLineRE is java -version's first line: `openjdk version "17.0.2"
// 2022-01-18`, `java version "1.8.0_392"`.
var versionLineRE = regexp.MustCompile(`^[A-Za-z]+ version "([0-9][^"]*)"`)

// javaMajor is the feature release of a java -version line: 8 for
// "1.8.0_392", 17 for "17.0.2", 21 for "21"; 0 when there is none.
func javaMajor(line string) int {
	m := versionLineRE.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	v := m[1]
	if rest, ok := strings.CutPrefix(v, "1."); ok {
		v = rest
	}
	n, _ := strconv.Atoi(strings.FieldsFunc(v, func(r rune) bool { return r < '0' || r > '9' })[0])
	return n
}

// CheckFlags runs java with flags (the brokers' JVM flags, heap included)
// and -version, so a flag the JVM refuses is found before a broker starts.
func (j Java) CheckFlags(ctx context.Context, flags []string) error {
	_, err := probeJava(ctx, j.Path, flags)
	return err
}

// Suits says why j cannot run a broker of rel (too old a Java), with
// the fix; nil when it can.
func (j Java) Suits(rel release.KafkaRelease) error {
	if need := rel.MinJava(); j.Major < need {
		//lint:ignore ST1005 Kafka is a proper noun, and the message follows its key
		return fmt.Errorf("Kafka %s needs Java %d or later, but %s is Java %d (%s): install Java %d or later (Debian: apt-get install openjdk-17-jre-headless) and name it with kafka.java or JAVA_HOME",
			rel.Version, need, j.Path, j.Major, j.Version, need)
	}
	return nil
}

// String is the runtime as provenance records it: version line and vendor.
func (j Java) String() string {
	if j.Vendor == "" {
		return j.Version
	}
	return j.Version + " (" + j.Vendor + ")"
}

func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// firstLines is the first n lines of out, trimmed, for an error message.
func firstLines(out []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(bytes.ToValidUTF8(out, nil))), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
