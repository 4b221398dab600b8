package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Fetch is one release archive for Cache: where it is and what it must be.
type Fetch struct {
	// Kind names the software ("kafka", "kroxylicious"): the cache's
	// subdirectory, and the release's name in messages.
	Kind string
	// Distribution is a gzip'd tar on this machine or an http(s) URL.
	Distribution string
	// SHA512 is its hex SHA-512 (128 digits, lower case); SHA512Key the
	// key that gave it (kafka.sha512), named in the fix of a mismatch.
	SHA512, SHA512Key string
	// Inspect reads the checked archive and returns its top directory
	// (the one entry at the archive's root) and the subdirectory of it
	// whose presence means the archive is unpacked whole (libs); an error
	// refuses the archive.
	Inspect func(archive string) (top, marker string, err error)
}

// Cached is a release archive checked and unpacked in the cache.
type Cached struct {
	// Archive is the tarball: the file given, or the download in the cache.
	Archive string
	// Dir is the release's top directory, unpacked.
	Dir string
}

// DownloadTimeout bounds one release download.
const DownloadTimeout = 10 * time.Minute

// Cache makes the release f names ready to run from cacheDir/KIND: a URL
// is downloaded once (to <sha512 prefix>.tgz), kept only when its SHA-512
// is f.SHA512; a file is checked against it; the archive is inspected and
// unpacked once into <sha512 prefix>/, so a second call, or a second
// campaign, reuses it (Unpack renames a whole directory into place, so
// two xp unpacking at once both end with a whole copy). A digest that
// differs, or an archive Inspect refuses, is an error naming it; nothing
// unchecked is kept.
func Cache(ctx context.Context, cacheDir string, f Fetch) (Cached, error) {
	if len(f.SHA512) != 128 {
		return Cached{}, fmt.Errorf("%s release %s: sha512 %q: want 128 hex digits", f.Kind, f.Distribution, f.SHA512)
	}
	dir := filepath.Join(cacheDir, f.Kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Cached{}, err
	}
	archive := f.Distribution
	if strings.HasPrefix(archive, "https://") || strings.HasPrefix(archive, "http://") {
		archive = filepath.Join(dir, f.SHA512[:32]+".tgz")
		if _, err := os.Stat(archive); errors.Is(err, fs.ErrNotExist) {
			if err := download(ctx, f, archive); err != nil {
				return Cached{}, err
			}
		} else if err != nil {
			return Cached{}, err
		}
	}
	sum, err := SHA512File(archive)
	if err != nil {
		return Cached{}, fmt.Errorf("%s release: %w", f.Kind, err)
	}
	if sum != f.SHA512 {
		return Cached{}, fmt.Errorf("%s release %s has SHA-512 %s…, not the %s… given: not the release named (download it again, or correct %s)",
			f.Kind, archive, sum[:16], f.SHA512[:16], f.SHA512Key)
	}
	top, marker, err := f.Inspect(archive)
	if err != nil {
		return Cached{}, err
	}
	unpacked := filepath.Join(dir, f.SHA512[:32])
	whole := filepath.Join(unpacked, top, marker)
	if _, err := os.Stat(whole); errors.Is(err, fs.ErrNotExist) {
		if err := Unpack(archive, unpacked); err != nil {
			// Another xp may have unpacked it meanwhile: its copy is
			// whole.
			if _, serr := os.Stat(whole); serr != nil {
				return Cached{}, fmt.Errorf("%s release %s: unpack into %s: %w", f.Kind, archive, unpacked, err)
			}
		}
	} else if err != nil {
		return Cached{}, err
	}
	return Cached{Archive: archive, Dir: filepath.Join(unpacked, top)}, nil
}

// download fetches f's URL into path, keeping it only when its SHA-512 is
// f.SHA512.
func download(ctx context.Context, f Fetch, path string) error {
	url := f.Distribution
	ctx, cancel := context.WithTimeout(ctx, DownloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%s release %s: %w", f.Kind, url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s release: download %s: %w", f.Kind, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s release: download %s: %s", f.Kind, url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s release: download %s: %w", f.Kind, url, err)
	}
	sum, err := SHA512File(tmp.Name())
	if err != nil {
		return err
	}
	if sum != f.SHA512 {
		return fmt.Errorf("%s release: %s has SHA-512 %s…, not the %s… of %s: not the release named (check the URL and the sha512 from the release's .sha512 file)",
			f.Kind, url, sum[:16], f.SHA512[:16], f.SHA512Key)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
