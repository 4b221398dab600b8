package planner

// rng is SplitMix64: small, fast and fully specified, so a campaign's order
// depends only on its seed, never on the Go release.
type rng struct{ s uint64 }

// newRNG returns the stream of one block: SplitMix64 seeded by mixing the
// campaign seed, the infrastructure group index and the block.
func newRNG(seed int64, group, block uint64) *rng {
	r := &rng{s: uint64(seed)}
	r.s = r.next() ^ group
	r.s = r.next() ^ block
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a uniform integer in [0, n), n > 0, by rejection.
func (r *rng) intn(n uint64) uint64 {
	limit := ^uint64(0) - (^uint64(0)%n+1)%n // largest multiple of n, minus 1
	for {
		v := r.next()
		if v <= limit {
			return v % n
		}
	}
}

// shuffle is the Fisher-Yates shuffle of n elements.
func (r *rng) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, int(r.intn(uint64(i+1))))
	}
}
