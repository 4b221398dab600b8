package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPCGStreamIsRandsStream: the tabled bootstrap's direct draws are
// the ones a rand.Rand over the same PCG gives, interleaved as it makes
// them (an IntN, then a Float64), for bounds that are powers of two, small,
// and large enough that Lemire's rejection comes into play.
func TestPCGStreamIsRandsStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{
		{"one", 1}, {"two", 2}, {"three", 3}, {"cells", 576}, {"power of two", 1 << 20},
		{"half range plus one", 1<<62 + 1}, {"largest", math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := rand.New(rand.NewPCG(7, 11))
			got := pcgStream{rand.NewPCG(7, 11)}
			for i := range 100_000 {
				if w, g := want.IntN(tc.n), got.IntN(tc.n); w != g {
					t.Fatalf("draw %d: IntN(%d) = %d, rand.Rand gives %d", i, tc.n, g, w)
				}
				if w, g := want.Float64(), got.Float64(); w != g {
					t.Fatalf("draw %d: Float64 = %v, rand.Rand gives %v", i, g, w)
				}
			}
		})
	}
}
