package analysis

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/results"
)

// published is a result from OMB's own repository (see testdata/omb/README.md).
const published = "testdata/omb/1-topic-1-partition-1kb-Kafka-2024-02-08-10-51-41.json"

// withDriver writes a copy of the published result with another driver name
// and, optionally, one aggregate field replaced by raw JSON.
func withDriver(t *testing.T, dir, name, driver, field, value string) string {
	t.Helper()
	b, err := os.ReadFile(published)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"driver" : "Kafka"`), []byte(`"driver" : "`+driver+`"`), 1)
	if field != "" {
		i := bytes.Index(b, []byte(`"`+field+`" : `))
		if i < 0 {
			t.Fatalf("no %s in %s", field, published)
		}
		j := i + len(field) + 5
		k := j + bytes.IndexAny(b[j:], ",\n")
		b = append(b[:j:j], append([]byte(value), b[k:]...)...)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportOMBPublishedResult: OMB's own published result imports with
// the rate, percentiles and per-sample series its charts and log show. The
// expected numbers were read off the file with Python: the mean of the 74
// publishRate samples before the 13 trailing zeros, the aggregated
// percentiles as written (the run's log prints "99%: 106.6"), and one
// series point per 10 s sample.
func TestImportOMBPublishedResult(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain := withDriver(t, dir, "kafka-latency.json", "Kafka", "", "")
	tls := withDriver(t, dir, "ssl-kafka.json", "Kafka", "", "")
	db := filepath.Join(dir, "omb.db")
	d, err := Import(ctx, db, []string{plain, tls}, ImportOptions{Levels: []string{"plaintext=kafka-latency.json", "tls=ssl-*"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Treatment != "driver" || d.Baseline != "plaintext" || len(d.Runs) != 2 || d.Runs[0].Pair != d.Runs[1].Pair {
		t.Fatalf("treatment %s baseline %s runs %+v", d.Treatment, d.Baseline, d.Runs)
	}
	st, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	atts, err := st.Attempts(ctx)
	if err != nil || len(atts) != 2 {
		t.Fatalf("attempts %v %v", atts, err)
	}
	want := map[string]float64{
		"publish_rate":      49467.07102847571,
		"consume_rate":      49466.41022990949,
		"publish_ms_p50":    12.15,
		"publish_ms_p99":    106.617,
		"publish_ms_p9999":  654.731,
		"e2e_ms_p99":        116.0,
		"e2e_ms_p999":       548.003,
		"send_delay_ms_p99": 3.366,
	}
	for _, a := range atts {
		for k, w := range want {
			if g, ok := a.Metrics[k]; !ok || math.Abs(g-w) > 1e-6*w {
				t.Errorf("%s: %s = %v (present %v), want %v", a.Run, k, g, ok, w)
			}
		}
		s, err := st.Series(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 87 || s[0] != (results.SeriesPoint{Second: 0, Published: 54560, Consumed: 54577, Backlog: 0}) ||
			s[1].Second != 10 || s[73].Published != 5764 || s[74].Published != 0 || s[86].Second != 860 {
			t.Errorf("%s: series of %d points: %+v ... %+v", a.Run, len(s), s[:2], s[72:75])
		}
	}
}

// TestImportOMBNullPercentileIsNoValue: OMB writes null for a percentile it
// did not measure. It is stored as no value (not 0, which analysed as a
// -100 % penalty), and a value that is not a finite number is refused with
// file and line.
func TestImportOMBNullPercentileIsNoValue(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, value string
		wantErr     string // empty: imports
	}{
		{"null", "null", ""},
		{"nan-string", `"NaN"`, "aggregatedPublishLatency99pct: \"NaN\" is not a finite number"},
		{"infinity-string", `"Infinity"`, "is not a finite number"},
		{"text", `"fast"`, "is not a finite number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := []string{withDriver(t, dir, "a.json", "kafka-plain", "", ""),
				withDriver(t, dir, "b.json", "kafka-tls", "aggregatedPublishLatency99pct", c.value)}
			db := filepath.Join(dir, "o.db")
			d, err := Import(ctx, db, files, ImportOptions{})
			if c.wantErr != "" {
				var ie *ImportError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.wantErr) || ie.Line != 33 || ie.File != files[1] {
					t.Fatalf("err %v, want %s at %s:33", err, c.wantErr, files[1])
				}
				if _, err := os.Stat(db); err == nil {
					t.Fatal("a refused import left a db")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := d.Runs[1].Metrics["publish_ms_p99"]; ok {
				t.Fatalf("null stored as %v", d.Runs[1].Metrics["publish_ms_p99"])
			}
			res, err := Analyse(d, Options{Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range res.Effects {
				if e.Metric == "publish_ms_p99" {
					t.Fatalf("an effect on a percentile one run lacks: %+v", e)
				}
			}
		})
	}
}

// TestImportCSVBadNumbers: every metric is a finite number or the import is
// refused naming file and line; a byte-order mark before the header is no
// part of the first column's name.
func TestImportCSVBadNumbers(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ name, text, wantErr string }{
		{"bom", "\ufeffmode,size,lat\nplain,1,2\ntls,1,3\n", ""},
		{"nan", "mode,size,lat\nplain,1,2\ntls,1,NaN\n", "r.csv:3: metric lat: \"NaN\" is not a finite number"},
		{"inf", "mode,size,lat\nplain,1,2\ntls,1,Inf\n", "r.csv:3: metric lat: \"Inf\" is not a finite number"},
		{"minus-infinity", "mode,size,lat\nplain,1,-infinity\ntls,1,2\n", "r.csv:2: metric lat"},
		{"overflow", "mode,size,lat\nplain,1,1e999\ntls,1,2\n", "r.csv:2: metric lat: \"1e999\" is not a finite number"},
		{"one-level", "mode,size,lat\nplain,1,2\nplain,2,3\n", "every run has mode = plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "r.csv")
			os.WriteFile(p, []byte(c.text), 0o644)
			db := filepath.Join(dir, "r.db")
			d, err := Import(ctx, db, []string{p}, ImportOptions{Treatment: "mode", Metrics: []string{"lat"}})
			if c.wantErr == "" {
				if err != nil || d.Baseline != "plain" || len(d.Runs) != 2 {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("a refused import left files: %v", ents)
			}
		})
	}
}

// TestSaveIsOneTransaction: a Save that fails after the campaign is
// registered leaves no database and nothing beside it.
func TestSaveIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	d := Synthetic(SyntheticConfig{Seed: 5, Levels: []string{"plaintext", "tls"}, Factors: smallShape(), Replicates: 2,
		Penalty: map[string]float64{"tls": 10}})
	d.Runs[len(d.Runs)-1].Outcome = "exploded" // the store refuses it after the rows are registered
	dir := t.TempDir()
	if err := Save(ctx, filepath.Join(dir, "c.db"), d, SaveOptions{}); err == nil || !strings.Contains(err.Error(), "exploded") {
		t.Fatalf("save: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed save left %v", ents)
	}
	d.Runs[len(d.Runs)-1].Outcome = OutcomeDone
	d.Runs[0].Metrics["x"] = math.Inf(1)
	if err := Save(ctx, filepath.Join(dir, "c.db"), d, SaveOptions{}); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Fatalf("save of Inf: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed save left %v", ents)
	}
}

// TestUnpairedImportedRowsAreExcluded: an imported row without its partner
// is a matched set excluded with its reason, counted and listed.
func TestUnpairedImportedRowsAreExcluded(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, text              string
		sets, healthy, excluded int
		wantErr                 error
		reasonLevel             string
	}{
		{"one-unpaired", "mode,size,lat\nplain,1,2\ntls,1,3\nplain,2,2\n", 2, 1, 1, nil, "tls"},
		{"none-paired", "mode,size,lat\nplain,1,2\ntls,2,3\n", 2, 0, 2, ErrNoHealthySet, "plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "r.csv")
			os.WriteFile(p, []byte(c.text), 0o644)
			db := filepath.Join(dir, "r.db")
			if _, err := Import(ctx, db, []string{p}, ImportOptions{Treatment: "mode", Metrics: []string{"lat"}}); err != nil {
				t.Fatal(err)
			}
			d, err := Load(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Analyse(d, Options{Resamples: 200})
			if !errors.Is(err, c.wantErr) && err != c.wantErr {
				t.Fatalf("err %v, want %v", err, c.wantErr)
			}
			cnt := res.Counts[0]
			if cnt.Sets != c.sets || cnt.Healthy != c.healthy || cnt.Excluded != c.excluded || len(res.Excluded) != c.excluded {
				t.Fatalf("counts %+v, excluded %+v", cnt, res.Excluded)
			}
			if !slices.ContainsFunc(res.Excluded, func(e ExcludedSet) bool {
				return len(e.Reasons) == 1 && strings.HasPrefix(e.Reasons[0], c.reasonLevel+": no run") && strings.Contains(e.Reasons[0], "unpaired")
			}) {
				t.Fatalf("excluded %+v", res.Excluded)
			}
		})
	}
}
