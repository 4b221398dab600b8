package release

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SHA512File is the hex SHA-512 of the file at path.
func SHA512File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadSHA512File reads a .sha512 file: its first word is the hex digest
// (sha512sum's format, and xp's); Apache's "NAME: HEX HEX ..." form is
// read too. The digest is returned in lower case without spaces.
func ReadSHA512File(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := string(b)
	if name, rest, ok := strings.Cut(s, ":"); ok && !strings.ContainsAny(name, " \t\n") {
		s = rest // Apache's gpg --print-md form
	} else if f := strings.Fields(s); len(f) > 0 {
		s = f[0]
	}
	sum := strings.ToLower(strings.Join(strings.Fields(s), ""))
	if len(sum) != 128 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s: no SHA-512 in it (want 128 hex digits first)", path)
	}
	return sum, nil
}

// Unpack extracts the gzip'd tar at path into dir (made 0755), which must
// not exist yet: the archive is unpacked beside it and renamed into place,
// so a dir that exists is always whole. Only directories and regular files
// are taken; an entry that would land outside dir, a link or a device is an
// error naming it.
func Unpack(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: not a gzip'd tar: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q lies outside the archive's directory", path, h.Name)
		}
		dst := filepath.Join(tmp, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %s: %w", path, h.Name, err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("%s: entry %q is not a file or directory (type %q); xp unpacks only those", path, h.Name, h.Typeflag)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
