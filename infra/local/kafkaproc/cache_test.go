package kafkaproc

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
)

// TestPrepare: a release file is checked and unpacked once into the
// cache; a URL is downloaded once, checked before it is kept; a wrong
// digest and a tarball without Kafka are refused naming the file.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	d := disttest.Kafka(t, 4)
	cache := t.TempDir()
	r, err := Prepare(ctx, cache, d.Path, d.SHA512)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != d.Version || r.Archive != d.Path {
		t.Fatalf("release %+v, want %s from %s", r, d.Version, d.Path)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "libs", "kafka_2.13-"+d.Version+".jar")); err != nil {
		t.Fatal(err)
	}
	again, err := Prepare(ctx, cache, d.Path, d.SHA512)
	if err != nil || again.Dir != r.Dir {
		t.Fatalf("second Prepare: %+v, %v; want the same directory", again, err)
	}

	// Over HTTP: downloaded once.
	gets := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		gets++
		http.ServeFile(w, req, d.Path)
	}))
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(d.Path)
	ucache := t.TempDir()
	for range 2 {
		u, err := Prepare(ctx, ucache, url, d.SHA512)
		if err != nil {
			t.Fatal(err)
		}
		if u.Version != d.Version || !strings.HasPrefix(u.Archive, filepath.Join(ucache, "kafka")) {
			t.Fatalf("from %s: %+v", url, u)
		}
	}
	if gets != 1 {
		t.Errorf("%d downloads, want 1", gets)
	}
	wrong := strings.Repeat("ab", 64)
	_, err = Prepare(ctx, t.TempDir(), url, wrong)
	if err == nil || !strings.Contains(err.Error(), url+" has SHA-512 "+d.SHA512[:16]) || !strings.Contains(err.Error(), "not the release named") {
		t.Errorf("wrong digest over HTTP: %v", err)
	}
	_, err = Prepare(ctx, t.TempDir(), d.Path, wrong)
	if err == nil || !strings.Contains(err.Error(), d.Path+" has SHA-512") {
		t.Errorf("wrong digest of a file: %v", err)
	}

	// A tarball without libs/kafka_2.13-*.jar.
	other := filepath.Join(t.TempDir(), "other.tgz")
	f, _ := os.Create(other)
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "other-1/libs/kafka-clients-4.1.0.jar", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	f.Close()
	sum, _ := release.SHA512File(other)
	_, err = Prepare(ctx, t.TempDir(), other, sum)
	if !errors.Is(err, release.ErrNotKafka) || !strings.Contains(err.Error(), other) {
		t.Errorf("not Kafka: %v", err)
	}
}
