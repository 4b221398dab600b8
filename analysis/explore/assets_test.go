package explore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsChecksums: every vendored library in assets/ is the pinned
// release's built file (assets/SHA256SUMS, which make explore-assets
// checks against npm's), every one is listed, and index.html loads exactly
// those.
func TestAssetsChecksums(t *testing.T) {
	sums, err := fs.ReadFile(assets, "assets/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q: want HASH  NAME", sc.Text())
		}
		b, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %s (make explore-assets fetches the pinned release again)", name, got, want)
		}
		listed[name] = true
	}
	ents, err := fs.ReadDir(assets, "assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".min.js") && !listed[e.Name()] {
			t.Errorf("assets/%s is not in SHA256SUMS", e.Name())
		}
	}
	page, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, m := range regexp.MustCompile(`src="assets/([^"]+\.min\.js)"`).FindAllStringSubmatch(string(page), -1) {
		loaded[m[1]] = true
	}
	for name := range listed {
		if !loaded[name] {
			t.Errorf("index.html does not load %s", name)
		}
	}
	if len(loaded) != len(listed) {
		t.Errorf("index.html loads %v, SHA256SUMS lists %v", loaded, listed)
	}
	// No page reaches beyond the site: no absolute URL in the pages or
	// the explorer's own script (the network test in a browser is
	// TestStaticSite).
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/app.css"} {
		b, _ := fs.ReadFile(assets, name)
		// The SVG namespace names, it is never fetched.
		b = bytes.ReplaceAll(b, []byte("http://www.w3.org/2000/svg"), nil)
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).Find(b); m != nil {
			t.Errorf("%s names an outside address: %s", name, m)
		}
	}
}
