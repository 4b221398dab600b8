package shfetch

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDownload runs the rendered lines with sh and curl against a file://
// release: a matching checksum keeps the file, a wrong one removes it and
// exits 1 with the message naming what, where from and which checksum.
func TestDownload(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	release := filepath.Join(dir, "release.tgz")
	data := []byte("not really a release\n")
	if err := os.WriteFile(release, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s512, s256 := sha512.Sum512(data), sha256.Sum256(data)
	sums := map[string]string{"sha512": hex.EncodeToString(s512[:]), "sha256": hex.EncodeToString(s256[:])}
	for _, algo := range []string{"sha512", "sha256"} {
		for _, good := range []bool{true, false} {
			sum := sums[algo]
			if !good {
				sum = strings.Repeat("0", len(sum))
			}
			part := filepath.Join(dir, algo+".part")
			lines, err := Download("kafka", "file://"+release, sum, algo, `"`+part+`"`)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("sh", "-euc", "if true; then\n"+lines+"\nfi").CombinedOutput()
			_, statErr := os.Stat(part)
			switch {
			case good && (err != nil || statErr != nil):
				t.Errorf("%s, right sum: %v %v\n%s", algo, err, statErr, out)
			case !good && err == nil:
				t.Errorf("%s, wrong sum accepted", algo)
			case !good && statErr == nil:
				t.Errorf("%s, wrong sum: %s left behind", algo, part)
			case !good && !strings.Contains(string(out), "kafka: "+part+" from file://"+release+" does not match the "+algo+" of the target file"):
				t.Errorf("%s, wrong sum: message %q", algo, out)
			}
			os.Remove(part)
		}
	}
}

func TestDownloadRefuses(t *testing.T) {
	for name, c := range map[string][2]string{
		"md5":   {"https://example.org/r.tgz", "md5"},
		"quote": {"https://example.org/r'.tgz", "sha512"},
		"nl":    {"https://example.org/r\n.tgz", "sha512"},
	} {
		if _, err := Download("kafka", c[0], "00", c[1], "$dir/r.part"); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}
