package tf

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Without terraform on PATH and with the download impossible, Find says
// how to install terraform.
func TestFindWithoutTerraformSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9") // nothing listens: every download fails
	t.Setenv("https_proxy", "http://127.0.0.1:9")
	_, err := Find(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNoTerraform) || !strings.Contains(err.Error(), "install terraform from https://developer.hashicorp.com/terraform/install") ||
		!strings.Contains(err.Error(), "no terraform >= 1.5.0 on PATH") {
		t.Fatalf("err = %v", err)
	}
}

// A terraform on PATH is found and is at least MinVersion.
func TestFindOnPath(t *testing.T) {
	path := terraformPath(t)
	if path == "" || !strings.HasSuffix(path, "terraform") {
		t.Fatalf("found %q", path)
	}
}
