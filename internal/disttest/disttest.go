// Package disttest finds, for tests, the releases `make kafka-dist` and
// `make kroxylicious-dist` assembled into out/dist of the source tree. A
// release that is not there fails the test, naming the make target that
// makes it: tests that claim something about Kafka run on Kafka.
package disttest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
)

// Dir is out/dist of the source tree the test runs in.
func Dir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "out", "dist")
		}
		if filepath.Dir(d) == d {
			t.Fatalf("disttest: no go.mod above %s", wd)
		}
	}
}

// Release is an archive in out/dist with its digest.
type Release struct {
	Path    string
	Version string
	SHA512  string
}

var kafkaRE = regexp.MustCompile(`^kafka_2\.13-([0-9]+)\.([0-9]+)\.([0-9]+)\.tgz$`)

// Kafka is the Kafka release of major version major (4 or 3) in out/dist,
// the newest there is of it.
func Kafka(t testing.TB, major int) Release {
	t.Helper()
	dir := Dir(t)
	des, _ := os.ReadDir(dir)
	type found struct {
		name string
		v    [3]int
	}
	var all []found
	for _, de := range des {
		m := kafkaRE.FindStringSubmatch(de.Name())
		if m == nil {
			continue
		}
		var f found
		f.name = de.Name()
		for i := range 3 {
			f.v[i], _ = strconv.Atoi(m[i+1])
		}
		if f.v[0] == major {
			all = append(all, f)
		}
	}
	if len(all) == 0 {
		hint := "make kafka-dist"
		if major != 4 {
			hint = "make kafka-dist KAFKA_VERSION=" + strconv.Itoa(major) + ".x.y"
		}
		t.Fatalf("disttest: no Kafka %d.x release in %s: run %s (make test does)", major, dir, hint)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].v, all[j].v
		for k := range 3 {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return false
	})
	return load(t, filepath.Join(dir, all[0].name), strings.TrimSuffix(strings.TrimPrefix(all[0].name, "kafka_2.13-"), ".tgz"))
}

func load(t testing.TB, path, version string) Release {
	t.Helper()
	sum, err := release.ReadSHA512File(path + ".sha512")
	if err != nil {
		t.Fatalf("disttest: %v (run the make target again)", err)
	}
	return Release{Path: path, Version: version, SHA512: sum}
}

var kroxyRE = regexp.MustCompile(`^kroxylicious-app-([0-9]+)\.([0-9]+)\.([0-9]+)-bin\.tar\.gz$`)

// Kroxylicious is the newest Kroxylicious release in out/dist.
func Kroxylicious(t testing.TB) Release {
	t.Helper()
	dir := Dir(t)
	des, _ := os.ReadDir(dir)
	best, bestV := "", [3]int{-1}
	for _, de := range des {
		m := kroxyRE.FindStringSubmatch(de.Name())
		if m == nil {
			continue
		}
		var v [3]int
		for i := range 3 {
			v[i], _ = strconv.Atoi(m[i+1])
		}
		if best == "" || v[0] > bestV[0] || v[0] == bestV[0] && (v[1] > bestV[1] || v[1] == bestV[1] && v[2] > bestV[2]) {
			best, bestV = de.Name(), v
		}
	}
	if best == "" {
		t.Fatalf("disttest: no Kroxylicious release in %s: run make kroxylicious-dist (make test does)", dir)
	}
	return load(t, filepath.Join(dir, best), strings.TrimSuffix(strings.TrimPrefix(best, "kroxylicious-app-"), "-bin.tar.gz"))
}

var javaClientRE = regexp.MustCompile(`^xp-java-client-([0-9]+\.[0-9]+\.[0-9]+)\.tgz$`)

// JavaClient is the Java client release (xp's Java load generator) in
// out/dist, the newest there is.
func JavaClient(t testing.TB) Release {
	t.Helper()
	dir := Dir(t)
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		if javaClientRE.MatchString(de.Name()) {
			names = append(names, de.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("disttest: no xp-java-client-*.tgz in %s: run make java-client (make test does)", dir)
	}
	sort.Slice(names, func(i, j int) bool {
		return release.AtLeast(javaClientRE.FindStringSubmatch(names[i])[1], javaClientRE.FindStringSubmatch(names[j])[1])
	})
	path := filepath.Join(dir, names[0])
	sum, err := release.ReadSHA512File(path + ".sha512")
	if err != nil {
		t.Fatalf("disttest: %v", err)
	}
	return Release{Path: path, Version: javaClientRE.FindStringSubmatch(names[0])[1], SHA512: sum}
}

var rdkafkaClientRE = regexp.MustCompile(`^xp-rdkafka-client-([0-9]+\.[0-9]+\.[0-9]+)\.tgz$`)

// RdkafkaClient is the librdkafka client release (xp's librdkafka load
// generator) in out/dist, the newest there is.
func RdkafkaClient(t testing.TB) Release {
	t.Helper()
	dir := Dir(t)
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		if rdkafkaClientRE.MatchString(de.Name()) {
			names = append(names, de.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("disttest: no xp-rdkafka-client-*.tgz in %s: run make rdkafka-client (make test does)", dir)
	}
	sort.Slice(names, func(i, j int) bool {
		return release.AtLeast(rdkafkaClientRE.FindStringSubmatch(names[i])[1], rdkafkaClientRE.FindStringSubmatch(names[j])[1])
	})
	path := filepath.Join(dir, names[0])
	sum, err := release.ReadSHA512File(path + ".sha512")
	if err != nil {
		t.Fatalf("disttest: %v", err)
	}
	return Release{Path: path, Version: rdkafkaClientRE.FindStringSubmatch(names[0])[1], SHA512: sum}
}
