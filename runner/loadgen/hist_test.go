package loadgen

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestRecorderClampsAndMerges(t *testing.T) {
	r := newRecorder(3)
	cases := []struct {
		name string
		sec  int
		ns   int64
		want int64 // µs recorded, 0 = dropped
	}{
		{"below 1 µs", 0, 10, HistMinUs},
		{"negative (clock step)", 0, -5000, HistMinUs},
		{"1 ms", 1, 1_000_000, 1000},
		{"above 60 s", 2, 90e9, HistMaxUs},
		{"second out of range", 3, 1000, 0},
		{"negative second", -1, 1000, 0},
	}
	var kept int64
	for _, tc := range cases {
		r.record(tc.sec, tc.ns)
		if tc.want != 0 {
			kept++
			enc, err := r.encodeSecond(tc.sec)
			if err != nil {
				t.Fatal(err)
			}
			h, err := hdrhistogram.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !h.ValuesAreEquivalent(h.Max(), tc.want) && !h.ValuesAreEquivalent(h.Min(), tc.want) {
				t.Errorf("%s: second %d holds min %d max %d, want %d", tc.name, tc.sec, h.Min(), h.Max(), tc.want)
			}
		}
	}
	if got := r.total().TotalCount(); got != kept {
		t.Fatalf("total count %d, want %d", got, kept)
	}
}

// TestRecorderPacksOldSeconds: past the dense window seconds move to packed
// histograms, late values still count, and encodings and totals hold every
// value.
func TestRecorderPacksOldSeconds(t *testing.T) {
	const seconds = 40
	r := newRecorder(seconds)
	want := make([]int64, seconds)
	for s := range seconds {
		for v := range 100 + s {
			r.record(s, int64(v+1)*int64(time.Millisecond)/7)
			want[s]++
		}
		if s >= 10 { // a late ack for a second long gone by
			r.record(s-10, 5*int64(time.Millisecond))
			want[s-10]++
		}
	}
	dense := 0
	for s := range seconds {
		if r.dense[s] != nil {
			dense++
		}
		enc, err := r.encodeSecond(s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := hdrhistogram.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		if h.TotalCount() != want[s] || r.countSecond(s) != want[s] {
			t.Fatalf("second %d: encoded %d, counted %d, want %d", s, h.TotalCount(), r.countSecond(s), want[s])
		}
	}
	if dense > denseWindow+1 {
		t.Fatalf("%d dense seconds kept, want at most %d", dense, denseWindow+1)
	}
	var all int64
	for _, n := range want {
		all += n
	}
	if got := r.total().TotalCount(); got != all {
		t.Fatalf("total %d, want %d", got, all)
	}
}

func TestSummarizeAndEncodingRoundTrip(t *testing.T) {
	h := NewHistogram()
	for v := int64(1); v <= 10000; v++ {
		h.RecordValue(v) // 1 µs .. 10 ms, uniform
	}
	p := Summarize(h)
	for name, c := range map[string]struct{ got, want float64 }{
		"p50": {p.P50, 5}, "p90": {p.P90, 9}, "p99": {p.P99, 9.9}, "max": {p.Max, 10}, "mean": {p.Mean, 5.0005},
	} {
		if math.Abs(c.got-c.want) > c.want*0.002 {
			t.Errorf("%s = %v ms, want %v ± 0.2%%", name, c.got, c.want)
		}
	}
	if (Summarize(NewHistogram()) != Percentiles{}) {
		t.Error("empty histogram has percentiles")
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := hdrhistogram.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equals(h) {
		t.Fatal("histogram changed in an encode/decode round trip")
	}
	if back.LowestTrackableValue() != HistMinUs || back.HighestTrackableValue() < HistMaxUs || back.SignificantFigures() != HistDigits {
		t.Fatalf("geometry %d..%d/%d", back.LowestTrackableValue(), back.HighestTrackableValue(), back.SignificantFigures())
	}
}

func TestRateJSON(t *testing.T) {
	for _, r := range []Rate{0, 1, 100000} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Rate
		if err := json.Unmarshal(b, &back); err != nil || back != r {
			t.Fatalf("%d -> %s -> %d (%v)", r, b, back, err)
		}
	}
	if b, _ := json.Marshal(Rate(0)); string(b) != `"max"` {
		t.Fatalf("max rate written %s", b)
	}
	var r Rate
	if err := json.Unmarshal([]byte(`"fast"`), &r); err == nil {
		t.Fatal(`"fast" accepted`)
	}
	for in, want := range map[string]int64{"max": 0, "MAX": 0, "500": 500} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Fatalf("ParseRate(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "-3", "1e3", ""} {
		if _, err := ParseRate(in); err == nil {
			t.Fatalf("ParseRate(%q) accepted", in)
		}
	}
}
