package results

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestHistogramRoundTrip(t *testing.T) {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for v := int64(1); v < 5_000_000; v = v*3/2 + 1 {
		h.RecordValues(v, v%7+1)
	}
	blob, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if len(blob) >= len(text) {
		t.Fatalf("blob %d bytes is not smaller than the base64 text %d", len(blob), len(text))
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"raw blob", blob},
		{"base64 text", text},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeHistogram(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equals(h) {
				t.Fatalf("decoded histogram differs: count %d vs %d, p99 %d vs %d",
					got.TotalCount(), h.TotalCount(), got.ValueAtQuantile(99), h.ValueAtQuantile(99))
			}
		})
	}
	for _, bad := range []struct {
		name string
		data []byte
	}{{"empty", nil}, {"garbage", []byte{0x1c, 1, 2, 3}}, {"text garbage", []byte("HISTnot")}} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := DecodeHistogram(bad.data); err == nil {
				t.Fatal("decoded garbage")
			}
		})
	}
	if _, err := HistogramBlob([]byte("!!")); err == nil {
		t.Fatal("HistogramBlob accepted non-base64")
	}
	again, _ := HistogramBlob(text)
	if !bytes.Equal(again, blob) {
		t.Fatal("HistogramBlob(text) differs from EncodeHistogram")
	}
	if same, err := HistogramBlob(blob); err != nil || !bytes.Equal(same, blob) {
		t.Fatalf("HistogramBlob(raw) changed it: %v", err)
	}
}

func TestCoarsenHistogram(t *testing.T) {
	// Latencies like a real second of a run: log-normal around 1 ms.
	rng := rand.New(rand.NewPCG(1, 2))
	h := hdrhistogram.New(1, 60_000_000, 3)
	for i := 0; i < 10000; i++ {
		h.RecordValue(int64(1000 * math.Exp(rng.NormFloat64()*0.8)))
	}
	h.RecordValue(59_000_000)
	blob, _ := EncodeHistogram(h)
	coarse, err := CoarsenHistogram(blob, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeHistogram(coarse)
	if err != nil {
		t.Fatal(err)
	}
	if c.SignificantFigures() != 2 || c.TotalCount() != h.TotalCount() || len(coarse) >= len(blob)*3/4 {
		t.Fatalf("digits %d, count %d of %d, %d bytes of %d", c.SignificantFigures(), c.TotalCount(), h.TotalCount(),
			len(coarse), len(blob))
	}
	for _, q := range []float64{1, 50, 90, 99, 99.9, 99.99, 100} {
		a, b := float64(h.ValueAtQuantile(q)), float64(c.ValueAtQuantile(q))
		if d := (b - a) / a; d < -0.01 || d > 0.01 {
			t.Errorf("p%v: %v at 3 digits, %v at 2 (%.2f%%, want within 1%%)", q, a, b, 100*d)
		}
	}
	same, err := CoarsenHistogram(coarse, 2)
	if err != nil || !bytes.Equal(same, coarse) {
		t.Fatalf("coarsening to the same digits changed the blob: %v", err)
	}
	if _, err := CoarsenHistogram([]byte{0x1c, 0}, 2); err == nil {
		t.Fatal("coarsened garbage")
	}
}
