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

// denseWindow is how many of the latest seconds a recorder keeps as dense
// histograms (fast to record into, ~140 KiB each); older seconds move to
// sparse packed histograms (a few KiB), so memory stays flat however long
// the run. Late records for an old second still land in its packed form.
const denseWindow = 3

// recorder keeps one histogram per second of the measurement for one kind.
type recorder struct {
	mu     sync.Mutex
	dense  []*hdrhistogram.Histogram       // per second, nil once packed
	packed []*hdrhistogram.PackedHistogram // per second, set once packed
	latest int                             // highest second recorded
	spare  []*hdrhistogram.Histogram       // reset dense histograms to reuse
}

func newRecorder(seconds int) *recorder {
	return &recorder{
		dense:  make([]*hdrhistogram.Histogram, seconds),
		packed: make([]*hdrhistogram.PackedHistogram, seconds),
	}
}

// record adds a latency in nanoseconds to second sec; values outside the
// geometry are clamped to it (never dropped, so counts stay true).
func (r *recorder) record(sec int, ns int64) {
	if sec < 0 || sec >= len(r.dense) {
		return
	}
	us := ns / 1000
	if us < HistMinUs {
		us = HistMinUs
	} else if us > HistMaxUs {
		us = HistMaxUs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.packed[sec]; p != nil {
		p.RecordValue(us)
		return
	}
	h := r.dense[sec]
	if h == nil {
		if n := len(r.spare); n > 0 {
			h, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			h = NewHistogram()
		}
		r.dense[sec] = h
	}
	h.RecordValue(us)
	if sec > r.latest {
		r.latest = sec
		r.packOlder(sec - denseWindow)
	}
}

// packOlder moves every dense second up to and including last to packed.
func (r *recorder) packOlder(last int) {
	for s := min(last, len(r.dense)-1); s >= 0; s-- {
		h := r.dense[s]
		if h == nil {
			if r.packed[s] != nil {
				return // everything before is packed already
			}
			continue
		}
		p := hdrhistogram.NewPacked(HistMinUs, HistMaxUs, HistDigits)
		p.MergeFrom(h)
		r.packed[s] = p
		r.dense[s] = nil
		h.Reset()
		r.spare = append(r.spare, h)
	}
}

// total merges every second into one histogram.
func (r *recorder) total() *hdrhistogram.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := NewHistogram()
	for s := range r.dense {
		if h := r.dense[s]; h != nil {
			t.Merge(h)
		}
		if p := r.packed[s]; p != nil {
			p.MergeInto(t)
		}
	}
	return t
}

// encodeSecond is second sec's histogram in EncodeHistogram's form (an
// empty histogram when nothing was recorded).
func (r *recorder) encodeSecond(sec int) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.packed[sec]; p != nil {
		return p.EncodeV2()
	}
	if h := r.dense[sec]; h != nil {
		return h.EncodeV2()
	}
	return NewHistogram().EncodeV2()
}

// countSecond is the number of values recorded in second sec.
func (r *recorder) countSecond(sec int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.packed[sec]; p != nil {
		return p.TotalCount()
	}
	if h := r.dense[sec]; h != nil {
		return h.TotalCount()
	}
	return 0
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
