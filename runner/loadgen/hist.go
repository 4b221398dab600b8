package loadgen

import (
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry shared by every histogram xp writes: microseconds,
// 1 µs to 60 s, 3 significant digits.
const (
	HistMinUs  = 1
	HistMaxUs  = 60_000_000
	HistDigits = 3
)

// NewHistogram returns an empty histogram of xp's geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistMinUs, HistMaxUs, HistDigits)
}

// EncodeHistogram is the V2-compressed encoding (base64 text, as
// hdrhistogram.Decode and the Java and C readers take it).
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	return h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
}

// recorder keeps one histogram per second of the measurement for one kind.
// Seconds are allocated as first used.
type recorder struct {
	mu   sync.Mutex
	secs []*hdrhistogram.Histogram
}

func newRecorder(seconds int) *recorder {
	return &recorder{secs: make([]*hdrhistogram.Histogram, seconds)}
}

// record adds a latency in nanoseconds to second sec; values outside the
// geometry are clamped to it (never dropped, so counts stay true).
func (r *recorder) record(sec int, ns int64) {
	if sec < 0 || sec >= len(r.secs) {
		return
	}
	us := ns / 1000
	if us < HistMinUs {
		us = HistMinUs
	} else if us > HistMaxUs {
		us = HistMaxUs
	}
	r.mu.Lock()
	h := r.secs[sec]
	if h == nil {
		h = NewHistogram()
		r.secs[sec] = h
	}
	h.RecordValue(us)
	r.mu.Unlock()
}

// total merges every second into one histogram.
func (r *recorder) total() *hdrhistogram.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := NewHistogram()
	for _, h := range r.secs {
		if h != nil {
			t.Merge(h)
		}
	}
	return t
}

// second returns the histogram of second sec (empty when nothing was
// recorded).
func (r *recorder) second(sec int) *hdrhistogram.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.secs[sec]; h != nil {
		return h
	}
	return NewHistogram()
}

// Percentiles are latency summaries in milliseconds.
type Percentiles struct {
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// Summarize reads the percentiles of a microsecond histogram, in ms.
func Summarize(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{
		P50:   ms(h.ValueAtQuantile(50)),
		P75:   ms(h.ValueAtQuantile(75)),
		P90:   ms(h.ValueAtQuantile(90)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		P9999: ms(h.ValueAtQuantile(99.99)),
		Max:   ms(h.Max()),
		Mean:  h.Mean() / 1000,
	}
}
