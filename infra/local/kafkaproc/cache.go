package kafkaproc

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

	"github.com/xp-bench/xp/infra/release"
)

// Release is an Apache Kafka release unpacked on this machine.
type Release struct {
	// Dir is the release's top directory (with libs/).
	Dir string
	// Archive is the tarball it was unpacked from.
	Archive string
	release.KafkaRelease
}

// downloadTimeout bounds one release download.
const downloadTimeout = 10 * time.Minute

// Prepare makes the release of distribution (a tarball file on this
// machine or an http(s) URL) ready to run: a URL is downloaded once into
// cacheDir/kafka, checked against sha512 (lower-case hex) before it is
// kept; the tarball is checked, inspected and unpacked once into
// cacheDir/kafka/<sha512 prefix>/. A release whose digest differs, or
// that holds no Kafka, is an error naming it; nothing unchecked is kept.
func Prepare(ctx context.Context, cacheDir, distribution, sha512 string) (Release, error) {
	if len(sha512) != 128 {
		return Release{}, fmt.Errorf("kafka release %s: sha512 %q: want 128 hex digits", distribution, sha512)
	}
	dir := filepath.Join(cacheDir, "kafka")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Release{}, err
	}
	archive := distribution
	if strings.HasPrefix(distribution, "https://") || strings.HasPrefix(distribution, "http://") {
		archive = filepath.Join(dir, sha512[:32]+".tgz")
		if _, err := os.Stat(archive); errors.Is(err, fs.ErrNotExist) {
			if err := download(ctx, distribution, archive, sha512); err != nil {
				return Release{}, err
			}
		} else if err != nil {
			return Release{}, err
		}
	}
	sum, err := release.SHA512File(archive)
	if err != nil {
		return Release{}, fmt.Errorf("kafka release: %w", err)
	}
	if sum != sha512 {
		return Release{}, fmt.Errorf("kafka release %s has SHA-512 %s…, not the %s… given: not the release named (download it again, or correct kafka.sha512)",
			archive, sum[:16], sha512[:16])
	}
	rel, err := release.InspectKafka(archive)
	if err != nil {
		return Release{}, err
	}
	unpacked := filepath.Join(dir, sha512[:32])
	if _, err := os.Stat(filepath.Join(unpacked, rel.Top, "libs")); errors.Is(err, fs.ErrNotExist) {
		if err := release.Unpack(archive, unpacked); err != nil {
			// Another xp may have unpacked it meanwhile: its copy is
			// whole (Unpack renames a finished directory into place).
			if _, serr := os.Stat(filepath.Join(unpacked, rel.Top, "libs")); serr != nil {
				return Release{}, fmt.Errorf("kafka release %s: unpack into %s: %w", archive, unpacked, err)
			}
		}
	} else if err != nil {
		return Release{}, err
	}
	return Release{Dir: filepath.Join(unpacked, rel.Top), Archive: archive, KafkaRelease: rel}, nil
}

// download fetches url into path, keeping it only when its SHA-512 is
// sha512.
func download(ctx context.Context, url, path, sha512 string) error {
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("kafka release %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kafka release: download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kafka release: download %s: %s", url, resp.Status)
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
		return fmt.Errorf("kafka release: download %s: %w", url, err)
	}
	sum, err := release.SHA512File(tmp.Name())
	if err != nil {
		return err
	}
	if sum != sha512 {
		return fmt.Errorf("kafka release: %s has SHA-512 %s…, not the %s… of kafka.sha512: not the release named (check the URL and the sha512 from the release's .sha512 file)",
			url, sum[:16], sha512[:16])
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
