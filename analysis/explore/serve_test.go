package explore

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerRoutes: the server lays out the static site's files, read from
// the database now; anything else is not found, and it only reads.
func TestServerRoutes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	makeCampaign(t, db, demoShape(3), 3)
	srv := httptest.NewServer(NewServer([]string{db}, Options{Analysis: testAnalysis}))
	defer srv.Close()
	tests := []struct {
		name, method, path string
		code               int
		body               string
	}{
		{"the page", "GET", "/", 200, `<script src="assets/app.js">`},
		{"a library", "GET", "/assets/plot-0.6.17.umd.min.js", 200, "Observable"},
		{"the site index, live", "GET", "/data/site.js", 200, `XP.put("site"`},
		{"a campaign", "GET", "/data/c0.js", 200, `XP.put("c0"`},
		{"its effects", "GET", "/data/c0-e0.js", 200, `XP.put("c0-e0"`},
		{"its runs' evidence", "GET", "/data/c0-r1.js", 200, `XP.put("c0-r1"`},
		{"the comparisons", "GET", "/data/compare.js", 200, `XP.put("compare"`},
		{"no such campaign", "GET", "/data/c1.js", 404, ""},
		{"no such chunk", "GET", "/data/c0-r99.js", 404, ""},
		{"no such effects part", "GET", "/data/c0-e99.js", 404, ""},
		{"the checksums are not served", "GET", "/assets/SHA256SUMS", 404, ""},
		{"outside the site", "GET", "/etc/passwd", 404, ""},
		{"a write", "POST", "/data/c0.js", 405, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
				t.Errorf("%s %s: %d %.200q, want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.body)
			}
		})
	}
}
