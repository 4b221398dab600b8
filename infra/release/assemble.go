// Package release makes and inspects the release archives xp runs: Apache
// Kafka and Kroxylicious assembled from Maven Central in their official
// releases' layout (resolved by mvn with checksum verification on, cached
// in the Maven local repository), and the checks an archive passes before
// a group starts on it, whether it was assembled here or downloaded from
// the project.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Artifact is a Maven coordinate: groupId:artifactId:version, the version
// a single version or a Maven range such as [4.0.0,5.0.0).
type Artifact struct {
	Group, ID, Version string
}

func (a Artifact) String() string { return a.Group + ":" + a.ID + ":" + a.Version }

// File is a file of an archive that is not a resolved jar: a script or a
// configuration of xp's own.
type File struct {
	// Path is relative to the archive's top directory, e.g. "bin/kafka-run-class.sh".
	Path string
	Data []byte
	// Exec marks an executable (mode 0755, else 0644).
	Exec bool
}

// Maven runs mvn. Its zero value runs "mvn" from PATH, writes its output
// to nowhere and uses the Maven local repository of the user.
type Maven struct {
	// Path is the mvn binary; default "mvn".
	Path string
	// Repo is the Maven local repository (-Dmaven.repo.local); default
	// mvn's own (~/.m2/repository).
	Repo string
	// Log receives mvn's output; nil discards it (it is in the error when
	// mvn fails).
	Log io.Writer
}

// ErrNoMaven is returned when mvn cannot be found.
var ErrNoMaven = errors.New("mvn not found: install Maven 3.8 or later (apt-get install maven) and a JDK 17")

// Resolve copies the runtime closure of arts into dir. It tries the Maven
// local repository alone first (-o), so a second run needs no network, and
// goes online only when something is missing there. Checksums are strict
// (-C): an artifact whose checksum does not match is an error, never used.
func (m Maven) Resolve(ctx context.Context, arts []Artifact, dir string) error {
	return m.ResolveManaged(ctx, nil, arts, dir)
}

// ResolveManaged is Resolve with the versions of arts that have none
// (Version "") taken from the dependency management of the boms (each
// imported as a bill of materials, type pom, scope import): a release's
// parent pom pins the versions of the libraries it was built with.
func (m Maven) ResolveManaged(ctx context.Context, boms, arts []Artifact, dir string) error {
	mvn := m.Path
	if mvn == "" {
		mvn = "mvn"
	}
	if _, err := exec.LookPath(mvn); err != nil {
		return ErrNoMaven
	}
	work, err := os.MkdirTemp("", "xp-mvn-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pom := filepath.Join(work, "pom.xml")
	if err := os.WriteFile(pom, renderPOM(boms, arts), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	args := []string{"-B", "-C", "-f", pom,
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory=" + abs}
	if m.Repo != "" {
		args = append(args, "-Dmaven.repo.local="+m.Repo)
	}
	// A range is resolved online first, so it finds the newest version the
	// repository has; an exact version from the local repository first.
	// Either falls back to the other way.
	offline := append([]string{"-o"}, args...)
	tries := [][]string{offline, args}
	if hasRange(arts) || hasRange(boms) {
		tries = [][]string{args, offline}
	}
	var out bytes.Buffer
	for _, t := range tries {
		out.Reset()
		if err = m.run(ctx, mvn, t, &out); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("mvn could not resolve %s, online or from the local repository: %w\n%s",
		artifactList(arts), err, lastLines(out.String(), 15))
}

func hasRange(arts []Artifact) bool {
	for _, a := range arts {
		if strings.ContainsAny(a.Version, "[(") {
			return true
		}
	}
	return false
}

func (m Maven) run(ctx context.Context, mvn string, args []string, out *bytes.Buffer) error {
	cmd := exec.CommandContext(ctx, mvn, args...)
	var w io.Writer = out
	if m.Log != nil {
		w = io.MultiWriter(out, m.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	return cmd.Run()
}

func artifactList(arts []Artifact) string {
	s := make([]string, len(arts))
	for i, a := range arts {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// lastLines keeps the last n lines of s that say something (mvn's
// [ERROR] lines are at the end).
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func renderPOM(boms, arts []Artifact) []byte {
	var b bytes.Buffer
	b.WriteString(`<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>xp</groupId>
  <artifactId>xp-release</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
`)
	if len(boms) > 0 {
		b.WriteString("  <dependencyManagement>\n    <dependencies>\n")
		for _, a := range boms {
			fmt.Fprintf(&b, "      <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><type>pom</type><scope>import</scope></dependency>\n",
				xmlText(a.Group), xmlText(a.ID), xmlText(a.Version))
		}
		b.WriteString("    </dependencies>\n  </dependencyManagement>\n")
	}
	b.WriteString("  <dependencies>\n")
	for _, a := range arts {
		version := ""
		if a.Version != "" {
			version = "<version>" + xmlText(a.Version) + "</version>"
		}
		fmt.Fprintf(&b, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId>%s</dependency>\n",
			xmlText(a.Group), xmlText(a.ID), version)
	}
	b.WriteString("  </dependencies>\n</project>\n")
	return b.Bytes()
}

func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// archiveTime is every entry's modification time: archives of the same
// jars and files are byte-identical, whenever they are made.
var archiveTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Written is an archive Pack wrote.
type Written struct {
	// Path is the .tgz (or .tar.gz); Path+".sha512" holds its digest.
	Path string
	// SHA512 is the archive's hex SHA-512.
	SHA512 string
}

// Pack writes the archive path (gzip'd tar, entries sorted, times fixed,
// owned by root) of the jars in libs under top/libDir and files under
// top, with path.sha512 beside it: the hex SHA-512, two spaces and the
// file's name, as sha512sum prints it. Both are replaced only when
// complete.
func Pack(path, top, libDir, libs string, files []File) (Written, error) {
	jars, err := os.ReadDir(libs)
	if err != nil {
		return Written{}, err
	}
	entries := make([]entry, 0, len(jars)+len(files))
	for _, j := range jars {
		if j.IsDir() || !strings.HasSuffix(j.Name(), ".jar") {
			continue
		}
		entries = append(entries, entry{path: libDir + "/" + j.Name(), src: filepath.Join(libs, j.Name())})
	}
	for _, f := range files {
		entries = append(entries, entry{path: f.Path, data: f.Data, exec: f.Exec})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Written{}, err
	}
	sum, err := writeArchive(path, top, entries)
	if err != nil {
		return Written{}, err
	}
	line := fmt.Sprintf("%s  %s\n", sum, filepath.Base(path))
	if err := writeAtomic(path+".sha512", []byte(line), 0o644); err != nil {
		return Written{}, err
	}
	return Written{Path: path, SHA512: sum}, nil
}

type entry struct {
	path string
	src  string // a file to copy, or
	data []byte // the contents
	exec bool
}

func writeArchive(path, top string, entries []entry) (string, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha512.New()
	zw, _ := gzip.NewWriterLevel(io.MultiWriter(tmp, h), gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: archiveTime, Format: tar.FormatPAX})
	}
	if err := addDir(top); err != nil {
		return "", err
	}
	for _, e := range entries {
		name := top + "/" + e.path
		if err := addParents(addDir, top, name); err != nil {
			return "", err
		}
		data := e.data
		if e.src != "" {
			if data, err = os.ReadFile(e.src); err != nil {
				return "", err
			}
		}
		mode := int64(0o644)
		if e.exec {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: archiveTime, Format: tar.FormatPAX}); err != nil {
			return "", err
		}
		if _, err := tw.Write(data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// addParents adds the directories between top and name, outermost first.
func addParents(addDir func(string) error, top, name string) error {
	var parents []string
	for d := filepath.Dir(name); d != top && d != "." && d != "/"; d = filepath.Dir(d) {
		parents = append(parents, d)
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if err := addDir(parents[i]); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
