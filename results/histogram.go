package results

import (
	"encoding/base64"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram blobs are the HdrHistogram V2-compressed encoding as raw bytes
// (what Java's encodeIntoCompressedByteBuffer writes; cookie 0x1c849304),
// not the base64 text of histogram logs, which would cost a third more.

// DecodeHistogram decodes a stored histogram blob. It also accepts the
// base64 text form (hdrhistogram-go's Encode output).
func DecodeHistogram(data []byte) (*hdrhistogram.Histogram, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty histogram")
	}
	text := data
	if data[0] == 0x1c { // raw V2-compressed: wrap as hdrhistogram.Decode expects
		text = make([]byte, base64.StdEncoding.EncodedLen(len(data)))
		base64.StdEncoding.Encode(text, data)
	}
	h, err := hdrhistogram.Decode(text)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// EncodeHistogram returns the blob DecodeHistogram reads.
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	text, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, err
	}
	return HistogramBlob(text)
}

// HistogramBlob turns hdrhistogram-go's base64 text encoding into the
// stored blob; a blob already raw passes as it is.
func HistogramBlob(base64Text []byte) ([]byte, error) {
	if len(base64Text) > 0 && base64Text[0] == 0x1c {
		return base64Text, nil
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(base64Text)))
	n, err := base64.StdEncoding.Decode(raw, base64Text)
	if err != nil {
		return nil, fmt.Errorf("histogram is not base64 text: %w", err)
	}
	if n == 0 || raw[0] != 0x1c {
		return nil, fmt.Errorf("histogram is not a V2-compressed HdrHistogram encoding")
	}
	return raw[:n], nil
}

// PerSecondDigits is the precision of stored per-second histograms: 3
// significant digits, as the load generator records them and as whole-run
// ones are stored. At 10k msg/s (the top rate of the shipped plans) a 30 s
// run then stays inside its 128 KiB evidence budget (BenchmarkRunner);
// CoarsenHistogram is the lever should a budget need fewer digits.
const PerSecondDigits = 3

// CoarsenHistogram re-records a stored histogram at fewer significant
// digits, keeping its range, total count and every value's bucket (HDR
// buckets of fewer digits contain whole buckets of more).
func CoarsenHistogram(blob []byte, digits int) ([]byte, error) {
	h, err := DecodeHistogram(blob)
	if err != nil {
		return nil, err
	}
	if int(h.SignificantFigures()) <= digits {
		return blob, nil
	}
	c := hdrhistogram.New(h.LowestTrackableValue(), h.HighestTrackableValue(), digits)
	for _, bar := range h.Distribution() {
		if bar.Count > 0 {
			if err := c.RecordValues(bar.From, bar.Count); err != nil {
				return nil, fmt.Errorf("coarsen histogram: %w", err)
			}
		}
	}
	return EncodeHistogram(c)
}
