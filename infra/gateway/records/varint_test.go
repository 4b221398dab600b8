package records

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// varint agrees with binary.Varint on every value around its one- and
// two-byte fast paths and the extremes, on non-minimal encodings (which
// binary accepts), and on truncated, empty and overlong input.
func TestVarintMatchesBinary(t *testing.T) {
	values := []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32}
	for v := int64(-20000); v <= 20000; v++ {
		values = append(values, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, int64(r.Uint64())>>r.IntN(64))
	}
	for _, v := range values {
		enc := binary.AppendVarint(nil, v)
		if got, n := varint(enc); got != v || n != len(enc) {
			t.Fatalf("varint(%x) = %d, %d; want %d, %d", enc, got, n, v, len(enc))
		}
		if got, n := varint(enc[:len(enc)-1]); n > 0 {
			t.Fatalf("varint(%x), a truncated encoding, = %d, %d", enc[:len(enc)-1], got, n)
		}
	}
	for _, enc := range [][]byte{
		{0x80, 0x00}, {0xff, 0x00}, {0x81, 0x80, 0x00}, {}, {0x80},
		bytes.Repeat([]byte{0xff}, 11), append(bytes.Repeat([]byte{0xff}, 9), 0x02),
	} {
		wv, wn := binary.Varint(enc)
		if gv, gn := varint(enc); gv != wv || gn != wn {
			t.Errorf("varint(%x) = %d, %d; binary.Varint gives %d, %d", enc, gv, gn, wv, wn)
		}
	}
}
