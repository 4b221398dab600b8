package explore

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/xp-bench/xp/results"
)

// assets are the pages, their script and style, and the vendored charting
// libraries (checked against assets/SHA256SUMS by a test and by make
// explore-assets).
//
//go:embed assets
var assets embed.FS

// Site is every campaign the explorer shows and their comparisons.
type Site struct {
	Campaigns   []*Campaign
	Comparisons []Comparison
	// Live marks a site served while campaigns may run: the pages reload
	// their data.
	Live bool
	opt  Options
}

// siteIndex is data/site.js: what the pages load first.
type siteIndex struct {
	Live      bool           `json:"live"`
	Campaigns []campaignStub `json:"campaigns"`
}

type campaignStub struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	DB          string `json:"db"`
	Provisional bool   `json:"provisional"`
}

// Build loads and analyses every campaign database, in the order given,
// and compares every two of them as xp compare does.
func Build(ctx context.Context, paths []string, opt Options) (*Site, error) {
	s := &Site{opt: opt.withDefaults()}
	for i, p := range paths {
		c, err := LoadCampaign(ctx, p, i, opt)
		if err != nil {
			return nil, err
		}
		s.Campaigns = append(s.Campaigns, c)
	}
	s.compare()
	return s, nil
}

func (s *Site) compare() {
	s.Comparisons = []Comparison{}
	for i := range s.Campaigns {
		for j := i + 1; j < len(s.Campaigns); j++ {
			s.Comparisons = append(s.Comparisons, compareCampaigns(s.Campaigns[i], s.Campaigns[j], s.opt.Analysis))
		}
	}
}

func (s *Site) index() siteIndex {
	idx := siteIndex{Live: s.Live}
	for _, c := range s.Campaigns {
		idx.Campaigns = append(idx.Campaigns, campaignStub{c.Index, c.Name, c.DB, c.Provisional})
	}
	return idx
}

// dataScript wraps v as a script that hands the pages its gzip-compressed
// JSON: XP.put(name, base64). A script, not a .json file, because a page
// opened from disk may load scripts beside it but not fetch files.
func dataScript(name string, v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("data/%s.js: %w", name, err)
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	w.Write(js)
	w.Close()
	var b bytes.Buffer
	b.WriteString("XP.put(")
	b.WriteString(strconv.Quote(name))
	b.WriteString(",\"")
	b.WriteString(base64.StdEncoding.EncodeToString(z.Bytes()))
	b.WriteString("\");\n")
	return b.Bytes(), nil
}

// campaignName and chunkName are the data files' names, without ".js".
func campaignName(c int) string      { return "c" + strconv.Itoa(c) }
func chunkName(c, chunk int) string  { return fmt.Sprintf("c%d-r%d", c, chunk) }
func effectsName(c, part int) string { return fmt.Sprintf("c%d-e%d", c, part) }

// WriteSite writes the static site of the databases into dir: index.html,
// assets/ and data/. It opens every database read-only.
func WriteSite(ctx context.Context, dir string, paths []string, opt Options) (*Site, error) {
	s, err := Build(ctx, paths, opt)
	if err != nil {
		return nil, err
	}
	if err := writeAssets(dir); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	write := func(name string, v any) error {
		b, err := dataScript(name, v)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(data, name+".js"), b, 0o644)
	}
	if err := write("site", s.index()); err != nil {
		return nil, err
	}
	if err := write("compare", s.Comparisons); err != nil {
		return nil, err
	}
	for i, c := range s.Campaigns {
		if err := write(campaignName(c.Index), c); err != nil {
			return nil, err
		}
		for k := range c.EffectParts {
			if err := write(effectsName(c.Index, k), c.effectPart(k)); err != nil {
				return nil, err
			}
		}
		if err := s.writeChunks(ctx, paths[i], c, write); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeChunks writes every run-evidence data file of campaign c.
func (s *Site) writeChunks(ctx context.Context, path string, c *Campaign, write func(string, any) error) error {
	st, err := results.OpenReadOnly(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	ix, err := readEvidenceIndex(ctx, st)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for k := range c.Chunks {
		from := k * c.RunsPerChunk
		ds, err := c.runDetails(ctx, st, from, from+c.RunsPerChunk, ix, s.opt.MaxSeriesPoints)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := write(chunkName(c.Index, k), ds); err != nil {
			return err
		}
	}
	return nil
}

// writeAssets copies the pages and libraries into dir.
func writeAssets(dir string) error {
	return fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if p == "assets/index.html" {
			dst = filepath.Join(dir, "index.html")
		}
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if filepath.Base(p) == "SHA256SUMS" {
			return nil
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
