package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The librdkafka client release is xp's load generator in C (rdkafka/loadgen.c,
// the producers and consumer groups of `xp loadgen --client librdkafka`) with
// the librdkafka it runs on. Debian's librdkafka (2.0.2) cannot log in with
// SCRAM to Kafka 4, so the library is taken from the manylinux wheel of
// Confluent's Python client on PyPI, a current release with its TLS, SASL
// and compression built in (it links only glibc): the wheel's published
// SHA-256 is checked against the one pinned here, the library taken out of
// it, and loadgen.c compiled by gcc against Debian's rdkafka.h (librdkafka
// keeps its ABI within soname .so.1, and every function loadgen.c calls is
// in 2.0.2's header with the signature it has today) with the runtime path
// $ORIGIN/../lib. It is packed as xp-rdkafka-client-VERSION.tgz (VERSION is
// librdkafka's) with bin/xp-rdkafka-loadgen, lib/ and LICENSE.librdkafka.

// RdkafkaWheel is the PyPI wheel whose librdkafka the release carries.
var RdkafkaWheel = Wheel{
	Project: "confluent-kafka",
	Version: "2.16.1",
	File:    "confluent_kafka-2.16.1-cp311-cp311-manylinux_2_28_x86_64.whl",
	SHA256:  "24f613cc81a856b6fbb2d7d11044a9aa770044eecc1f83ff84618688b056be06",
}

// Wheel is one file of a PyPI release, pinned by its SHA-256.
type Wheel struct {
	Project, Version, File, SHA256 string
}

// RdkafkaClientBinary is the load generator's path in the release.
const RdkafkaClientBinary = "bin/xp-rdkafka-loadgen"

//go:embed rdkafka/loadgen.c
var rdkafkaClientSource []byte

// rdkafkaLibRE matches the librdkafka of the wheel (auditwheel names it
// librdkafka-HASH.so.1, its soname too).
var rdkafkaLibRE = regexp.MustCompile(`^librdkafka(-[0-9a-f]+)?\.so\.1$`)

// RdkafkaClientArchiveName is the file name of the librdkafka client
// release with librdkafka version: xp-rdkafka-client-VERSION.tgz.
func RdkafkaClientArchiveName(version string) string { return "xp-rdkafka-client-" + version + ".tgz" }

// PyPI fetches files of PyPI releases: the index (PEP 691's JSON form of
// the simple API) for a file's address and published digest, then the
// file, kept in CacheDir/pypi by its digest so a second run needs no
// network.
type PyPI struct {
	// Index is the simple API's root; default https://pypi.org/simple.
	Index string
	// CacheDir holds downloaded files; default the user's cache (xp/pypi).
	CacheDir string
}

// Fetch returns the path of w on this machine, downloaded from PyPI
// unless cached; the index must publish w.SHA256 for w.File and the file
// must have it.
func (p PyPI) Fetch(ctx context.Context, w Wheel) (string, error) {
	dir := p.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(base, "xp", "pypi")
	}
	path := filepath.Join(dir, w.SHA256[:32]+"-"+w.File)
	if sum, err := sha256File(path); err == nil && sum == w.SHA256 {
		return path, nil
	}
	index := p.Index
	if index == "" {
		index = "https://pypi.org/simple"
	}
	url, err := p.locate(ctx, index, w)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	body, err := httpGet(ctx, url, "")
	if err != nil {
		return "", err
	}
	defer body.Close()
	tmp, err := os.CreateTemp(dir, ".wheel-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), body); err != nil {
		tmp.Close()
		return "", fmt.Errorf("%s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != w.SHA256 {
		return "", fmt.Errorf("%s: SHA-256 %s, but %s %s's %s is pinned at %s", url, got, w.Project, w.Version, w.File, w.SHA256)
	}
	return path, os.Rename(tmp.Name(), path)
}

// locate finds w.File in the project's index and checks its published
// SHA-256 is the pinned one.
func (p PyPI) locate(ctx context.Context, index string, w Wheel) (string, error) {
	page := strings.TrimSuffix(index, "/") + "/" + w.Project + "/"
	body, err := httpGet(ctx, page, "application/vnd.pypi.simple.v1+json")
	if err != nil {
		return "", err
	}
	defer body.Close()
	var idx struct {
		Files []struct {
			Filename string            `json:"filename"`
			URL      string            `json:"url"`
			Hashes   map[string]string `json:"hashes"`
		} `json:"files"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 64<<20)).Decode(&idx); err != nil {
		return "", fmt.Errorf("%s: %w", page, err)
	}
	for _, f := range idx.Files {
		if f.Filename != w.File {
			continue
		}
		if f.Hashes["sha256"] != w.SHA256 {
			return "", fmt.Errorf("%s publishes SHA-256 %q for %s, but %s is pinned", page, f.Hashes["sha256"], w.File, w.SHA256)
		}
		return f.URL, nil
	}
	return "", fmt.Errorf("%s lists no %s", page, w.File)
}

func httpGet(ctx context.Context, url, accept string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// rdkafkaFromWheel returns the name and contents of the librdkafka shared
// library in the wheel at path, and the wheel's license file.
func rdkafkaFromWheel(path string) (name string, lib, license []byte, _ error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", nil, nil, err
	}
	defer zr.Close()
	read := func(f *zip.File) ([]byte, error) {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, 256<<20))
	}
	for _, f := range zr.File {
		dir, base := filepath.Split(f.Name)
		switch {
		case dir == "confluent_kafka.libs/" && rdkafkaLibRE.MatchString(base):
			name = base
			lib, err = read(f)
		case strings.HasSuffix(dir, ".dist-info/licenses/") && base == "LICENSE":
			license, err = read(f)
		}
		if err != nil {
			return "", nil, nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
	}
	if lib == nil || license == nil {
		return "", nil, nil, fmt.Errorf("%s: want confluent_kafka.libs/librdkafka*.so.1 and *.dist-info/licenses/LICENSE", path)
	}
	return name, lib, license, nil
}

// rdkafkaHeader is Debian's librdkafka-dev header loadgen.c compiles
// against.
const rdkafkaHeader = "/usr/include/librdkafka/rdkafka.h"

// AssembleRdkafkaClient fetches RdkafkaWheel (version must be "" or its
// version: the wheel is pinned by digest), takes its librdkafka out,
// compiles the load generator against it with gcc (CC if set), checks the
// binary runs and reports its librdkafka version, and writes
// dir/xp-rdkafka-client-VERSION.tgz with its .sha512 beside it.
func AssembleRdkafkaClient(ctx context.Context, p PyPI, version, dir string) (Written, error) {
	w := RdkafkaWheel
	if version != "" && version != w.Version {
		return Written{}, fmt.Errorf("%s version %q: only %s is pinned (its wheel's SHA-256 is in infra/release/rdkafkaclient.go)", w.Project, version, w.Version)
	}
	if _, err := os.Stat(rdkafkaHeader); err != nil {
		return Written{}, fmt.Errorf("no %s: install Debian's librdkafka-dev (apt-get install librdkafka-dev zlib1g-dev gcc)", rdkafkaHeader)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	wheel, err := p.Fetch(ctx, w)
	if err != nil {
		return Written{}, err
	}
	libName, lib, license, err := rdkafkaFromWheel(wheel)
	if err != nil {
		return Written{}, err
	}
	scratch, err := os.MkdirTemp("", "xp-rdkafka-client-")
	if err != nil {
		return Written{}, err
	}
	defer os.RemoveAll(scratch)
	for _, d := range []string{"bin", "lib", "src"} {
		if err := os.Mkdir(filepath.Join(scratch, d), 0o755); err != nil {
			return Written{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(scratch, "lib", libName), lib, 0o755); err != nil {
		return Written{}, err
	}
	src := filepath.Join(scratch, "src", "loadgen.c")
	if err := os.WriteFile(src, rdkafkaClientSource, 0o644); err != nil {
		return Written{}, err
	}
	bin := filepath.Join(scratch, RdkafkaClientBinary)
	built := fmt.Sprintf("built by make rdkafka-client from PyPI's %s %s (%s, sha256 %s)", w.Project, w.Version, w.File, w.SHA256)
	args := []string{"-O2", "-std=gnu11", "-Wall", "-Werror", "-o", bin, src,
		"-DXP_BUILD=" + cString(built),
		"-L" + filepath.Join(scratch, "lib"), "-l:" + libName, "-Wl,-Bstatic", "-lz", "-Wl,-Bdynamic", "-lm", "-lpthread",
		"-Wl,-rpath,$ORIGIN/../lib"}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, cc, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Written{}, fmt.Errorf("%s loadgen.c: %v\n%s", cc, err, lastLines(out.String(), 20))
	}
	v, err := exec.CommandContext(ctx, bin, "-version").Output()
	if err != nil {
		return Written{}, fmt.Errorf("%s -version: %v", RdkafkaClientBinary, err)
	}
	got, ok := strings.CutPrefix(strings.TrimSpace(string(v)), "librdkafka ")
	if !ok || !versionRE.MatchString(got) {
		return Written{}, fmt.Errorf("%s -version printed %q, want librdkafka VERSION", RdkafkaClientBinary, v)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return Written{}, err
	}
	marker := fmt.Sprintf("xp's librdkafka load generator on librdkafka %s, assembled by xp.\n"+
		"%s is loadgen.c (src/) compiled by %s against Debian's %s, linked with\n"+
		"lib/%s, the librdkafka of PyPI's %s %s wheel\n%s (sha256 %s).\n"+
		"xp loadgen --client librdkafka runs it.\n", got, RdkafkaClientBinary, cc, rdkafkaHeader, libName, w.Project, w.Version, w.File, w.SHA256)
	files := []File{
		{Path: RdkafkaClientBinary, Data: exe, Exec: true},
		{Path: "lib/" + libName, Data: lib},
		{Path: "src/loadgen.c", Data: rdkafkaClientSource},
		{Path: "LICENSE.librdkafka", Data: append([]byte(rdkafkaLicenseNote), license...)},
		{Path: AssembledMarker, Data: []byte(marker)},
	}
	top := strings.TrimSuffix(RdkafkaClientArchiveName(got), ".tgz")
	return Pack(filepath.Join(dir, RdkafkaClientArchiveName(got)), top, "lib", scratch, files)
}

// cString is s as a C string literal.
func cString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// rdkafkaLicenseNote heads LICENSE.librdkafka, before the wheel's own
// license file (confluent-kafka's, then librdkafka's and those of the
// libraries it bundles).
const rdkafkaLicenseNote = `lib/ holds librdkafka (https://github.com/confluentinc/librdkafka) as built
into PyPI's confluent-kafka wheel named in XP-ASSEMBLED.txt: a 2-clause BSD
license, with the libraries it bundles under theirs. What follows is the
wheel's license file as it ships (see "librdkafka licenses" in it).

`

// ErrNotRdkafkaClient is returned by InspectRdkafkaClient for an archive
// that is not a librdkafka client release.
var ErrNotRdkafkaClient = errors.New("not an xp librdkafka client release")

// RdkafkaClientRelease is what InspectRdkafkaClient found in an archive.
type RdkafkaClientRelease struct {
	// Top is the archive's top directory, e.g. "xp-rdkafka-client-2.16.0".
	Top string
	// Version is librdkafka's, from the top directory's name.
	Version string
}

// InspectRdkafkaClient reads the archive at path (gzip'd tar) and says
// which librdkafka client release it holds: one top directory
// xp-rdkafka-client-VERSION with bin/xp-rdkafka-loadgen and
// lib/librdkafka*.so.1.
func InspectRdkafkaClient(path string) (RdkafkaClientRelease, error) {
	hasBin, hasLib := false, false
	top, err := walkArchive(path, ErrNotRdkafkaClient, func(rest string, h *tar.Header) {
		if h.Typeflag != tar.TypeReg {
			return
		}
		if rest == RdkafkaClientBinary {
			hasBin = true
		}
		if lib, ok := strings.CutPrefix(rest, "lib/"); ok && rdkafkaLibRE.MatchString(lib) {
			hasLib = true
		}
	})
	if err != nil {
		return RdkafkaClientRelease{}, err
	}
	v, ok := strings.CutPrefix(top, "xp-rdkafka-client-")
	if !hasBin || !hasLib || !ok || !versionRE.MatchString(v) {
		return RdkafkaClientRelease{}, fmt.Errorf("%s: %w: want %s and lib/librdkafka*.so.1 under one top directory xp-rdkafka-client-VERSION (make rdkafka-client assembles it)", path, ErrNotRdkafkaClient, RdkafkaClientBinary)
	}
	return RdkafkaClientRelease{Top: top, Version: v}, nil
}
