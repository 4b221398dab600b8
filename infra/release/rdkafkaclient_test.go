package release_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
)

// TestAssembledRdkafkaClient: make rdkafka-client's archive matches its
// .sha512 and holds the load generator, the wheel's librdkafka, the
// source and the license under one top directory; the binary finds its
// librdkafka through $ORIGIN/../lib and needs nothing else but glibc;
// with every symbol bound at load (LD_BIND_NOW) it reports the
// librdkafka version the archive is named after, and answers a missing
// job with its usage and exit 2.
func TestAssembledRdkafkaClient(t *testing.T) {
	r := disttest.RdkafkaClient(t)
	sum, err := release.SHA512File(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	if sum != r.SHA512 {
		t.Fatalf("%s.sha512 says %s…, the file's SHA-512 is %s…", r.Path, r.SHA512[:16], sum[:16])
	}
	got, err := release.InspectRdkafkaClient(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := release.RdkafkaClientRelease{Top: "xp-rdkafka-client-" + r.Version, Version: r.Version}
	if got != want {
		t.Fatalf("InspectRdkafkaClient = %+v, want %+v", got, want)
	}
	dir := filepath.Join(t.TempDir(), "r")
	if err := release.Unpack(r.Path, dir); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, want.Top)
	for _, f := range []string{"src/loadgen.c", release.AssembledMarker} {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			t.Error(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, "LICENSE.librdkafka")); err != nil || !bytes.Contains(b, []byte("librdkafka - Apache Kafka C driver library")) {
		t.Errorf("LICENSE.librdkafka: %v; want librdkafka's license from the wheel", err)
	}
	bin := filepath.Join(home, release.RdkafkaClientBinary)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	needed, _ := f.ImportedLibraries()
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	rpath, _ := f.DynString(elf.DT_RPATH)
	f.Close()
	for _, n := range needed {
		glibc := slices.Contains([]string{"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"}, n)
		if !glibc && !strings.HasPrefix(n, "librdkafka") {
			t.Errorf("%s needs %s: want only glibc and librdkafka", release.RdkafkaClientBinary, n)
		}
	}
	if !slices.Contains(append(runpath, rpath...), "$ORIGIN/../lib") {
		t.Errorf("runpath %v rpath %v: want $ORIGIN/../lib", runpath, rpath)
	}
	cmd := exec.Command(bin, "-version")
	cmd.Env = append(os.Environ(), "LD_BIND_NOW=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "librdkafka "+r.Version {
		t.Errorf("%s -version: %v, %q; want librdkafka %s", release.RdkafkaClientBinary, err, out, r.Version)
	}
	out, err = exec.Command(bin).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "usage: xp-rdkafka-loadgen") {
		t.Fatalf("xp-rdkafka-loadgen without a job: exit %d, %q; want exit 2 and its usage", code, out)
	}
}

func TestInspectRdkafkaClientRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		path, want string
	}{
		"no load generator": {tgz(t, "xp-rdkafka-client-2.16.0/lib/librdkafka.so.1"), "want bin/xp-rdkafka-loadgen and lib/librdkafka*.so.1"},
		"no librdkafka":     {tgz(t, "xp-rdkafka-client-2.16.0/bin/xp-rdkafka-loadgen"), "want bin/xp-rdkafka-loadgen and lib/librdkafka*.so.1"},
		"no version":        {tgz(t, "rdkafka/bin/xp-rdkafka-loadgen", "rdkafka/lib/librdkafka.so.1"), "top directory xp-rdkafka-client-VERSION"},
		"two tops":          {tgz(t, "a/bin/xp-rdkafka-loadgen", "b/lib/librdkafka.so.1"), "more than one top directory"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := release.InspectRdkafkaClient(c.path)
			if !errors.Is(err, release.ErrNotRdkafkaClient) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("InspectRdkafkaClient: %v; want ErrNotRdkafkaClient naming the file and %q", err, c.want)
			}
		})
	}
}

// TestPyPIFetch: a wheel is taken only when the index publishes its
// pinned SHA-256 and the file has it; once fetched it is served from the
// cache without the network. The index is a loopback server in PEP 691's
// JSON form.
func TestPyPIFetch(t *testing.T) {
	body := []byte("a wheel's bytes")
	h := sha256.Sum256(body)
	sum := hex.EncodeToString(h[:])
	w := release.Wheel{Project: "p", Version: "1.0", File: "p-1.0-py3-none-any.whl", SHA256: sum}
	other := strings.Repeat("0", 64)
	tests := []struct {
		name      string
		published string // the index's digest
		served    []byte // the file's bytes
		want      string // "" fetched
	}{
		{"pinned", sum, body, ""},
		{"index publishes another digest", other, body, "publishes SHA-256 \"" + other + "\""},
		{"file altered", sum, []byte("another wheel"), "is pinned at " + sum},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				hits++
				switch r.URL.Path {
				case "/simple/p/":
					if r.Header.Get("Accept") != "application/vnd.pypi.simple.v1+json" {
						http.Error(rw, "want PEP 691 JSON", http.StatusNotAcceptable)
						return
					}
					fmt.Fprintf(rw, `{"files":[{"filename":%q,"url":"http://%s/files/w","hashes":{"sha256":%q}}]}`, w.File, r.Host, tc.published)
				case "/files/w":
					rw.Write(tc.served)
				default:
					http.NotFound(rw, r)
				}
			}))
			defer srv.Close()
			p := release.PyPI{Index: srv.URL + "/simple", CacheDir: t.TempDir()}
			path, err := p.Fetch(context.Background(), w)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Fetch: %v, want an error with %q", err, tc.want)
				}
				if ents, _ := os.ReadDir(p.CacheDir); len(ents) != 0 {
					t.Errorf("cache holds %d files after a refusal, want none", len(ents))
				}
				return
			}
			if b, rerr := os.ReadFile(path); err != nil || rerr != nil || !bytes.Equal(b, body) {
				t.Fatalf("Fetch: %v (%v), %q", err, rerr, b)
			}
			before := hits
			if again, err := p.Fetch(context.Background(), w); err != nil || again != path || hits != before {
				t.Errorf("second Fetch: %v, %s, %d requests; want the cached file and no request", err, again, hits-before)
			}
		})
	}
}
