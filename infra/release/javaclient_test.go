package release_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
)

// TestAssembledJavaClient: make java-client's archive matches its
// .sha512, holds kafka-clients, HdrHistogram and the load generator's jar
// (with its source) under one top directory, and its script runs the load
// generator, which answers a missing job with its usage and exit 2.
func TestAssembledJavaClient(t *testing.T) {
	r := disttest.JavaClient(t)
	sum, err := release.SHA512File(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	if sum != r.SHA512 {
		t.Fatalf("%s.sha512 says %s…, the file's SHA-512 is %s…", r.Path, r.SHA512[:16], sum[:16])
	}
	got, err := release.InspectJavaClient(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := release.JavaClientRelease{Top: "xp-java-client-" + r.Version, Version: r.Version}
	if got != want {
		t.Fatalf("InspectJavaClient = %+v, want %+v", got, want)
	}
	dir := filepath.Join(t.TempDir(), "j")
	if err := release.Unpack(r.Path, dir); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, want.Top)
	for _, prefix := range []string{"kafka-clients-" + r.Version, "HdrHistogram-" + release.HdrHistogramVersion, "jose4j-" + release.Jose4jVersion, "jackson-databind-" + release.JacksonVersion, "xp-java-loadgen"} {
		if m, _ := filepath.Glob(filepath.Join(home, "libs", prefix+"*.jar")); len(m) == 0 {
			t.Errorf("libs/ has no %s*.jar", prefix)
		}
	}
	if _, err := os.Stat(filepath.Join(home, release.AssembledMarker)); err != nil {
		t.Error(err)
	}
	out, err := exec.Command(filepath.Join(home, "bin", "xp-java-loadgen")).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "usage: xp.loadgen.Loadgen") {
		t.Fatalf("xp-java-loadgen without a job: exit %d, %q; want exit 2 and its usage", code, out)
	}
}

func TestInspectJavaClientRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		path, want string
	}{
		"no load generator": {tgz(t, "j/libs/kafka-clients-4.4.0.jar"), "want libs/xp-java-loadgen.jar"},
		"no kafka-clients":  {tgz(t, "j/libs/xp-java-loadgen.jar"), "want libs/xp-java-loadgen.jar and libs/kafka-clients-VERSION.jar"},
		"two tops":          {tgz(t, "a/libs/xp-java-loadgen.jar", "b/libs/kafka-clients-4.4.0.jar"), "more than one top directory"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := release.InspectJavaClient(c.path)
			if !errors.Is(err, release.ErrNotJavaClient) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("InspectJavaClient: %v; want ErrNotJavaClient naming the file and %q", err, c.want)
			}
		})
	}
}
