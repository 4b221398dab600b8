package tf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-version"
	install "github.com/hashicorp/hc-install"
	"github.com/hashicorp/hc-install/fs"
	"github.com/hashicorp/hc-install/product"
	"github.com/hashicorp/hc-install/releases"
	"github.com/hashicorp/hc-install/src"
)

// MinVersion is the oldest terraform xp drives; PinnedVersion is the
// release it installs when none is found.
const (
	MinVersion    = "1.5.0"
	PinnedVersion = "1.11.4"
)

// ErrNoTerraform is returned by Find when terraform is neither found nor
// installable.
var ErrNoTerraform = errors.New("terraform not found")

// Find returns the path of a terraform >= MinVersion: the first on PATH,
// else one installed earlier into cacheDir, else PinnedVersion downloaded
// (signature checked) into cacheDir. Where that download is impossible
// the error says how to install terraform.
func Find(ctx context.Context, cacheDir string) (string, error) {
	minimum, err := version.NewConstraint(">= " + MinVersion)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, "terraform", PinnedVersion)
	found := &fs.Version{Product: product.Terraform, Constraints: minimum, ExtraPaths: []string{dir}}
	if path, err := install.NewInstaller().Ensure(ctx, []src.Source{found}); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoTerraform, err)
	}
	// One try with a plain client: where the download is impossible, say
	// so at once rather than after a retrying client's back-off.
	client := &http.Client{Timeout: 5 * time.Minute}
	rel := &releases.ExactVersion{Product: product.Terraform, Version: version.Must(version.NewVersion(PinnedVersion)),
		InstallDir: dir, HTTPClient: client}
	path, err := install.NewInstaller().Ensure(ctx, []src.Source{rel})
	if err != nil {
		return "", fmt.Errorf("%w: no terraform >= %s on PATH, and installing %s into %s failed (%v); install terraform from https://developer.hashicorp.com/terraform/install and put it on PATH",
			ErrNoTerraform, MinVersion, PinnedVersion, dir, err)
	}
	return path, nil
}

// CacheDir is xp's cache directory: $XDG_CACHE_HOME/xp or ~/.cache/xp.
func CacheDir(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "xp")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "xp")
	}
	return filepath.Join(os.TempDir(), "xp-cache")
}
