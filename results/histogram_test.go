package results

import (
	"bytes"
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
}
