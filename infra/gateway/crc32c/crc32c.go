// Package crc32c computes CRC-32C (Castagnoli, reflected polynomial
// 0x82F63B78), the checksum of Kafka record batches (KIP-98, magic v2).
//
// On amd64 machines with AVX-512 and VPCLMULQDQ, inputs of at least
// foldThreshold bytes are folded 64 bytes per register with carry-less
// multiplies, about twice as fast as hash/crc32's three-way CRC32
// instruction from 1 KiB up; everything else, and every other machine, goes
// through hash/crc32. Results are hash/crc32's, bit for bit.
package crc32c

import "hash/crc32"

// castagnoli is hash/crc32's table; with SSE4.2 it selects the CRC32
// instruction path, which stays the fastest for short inputs and tails.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// foldThreshold is the shortest input the folding path takes. Below it the
// fixed cost of loading constants and reducing 512 bits to 32, plus the tail
// through hash/crc32, outweighs the faster loop: on the gateway's machine
// (BenchmarkThreshold) the two break even between 128 and 191 bytes, and at
// 192 the kernel takes 17 ns to hash/crc32's 25.
const foldThreshold = 192

// useFold selects the folding path; tests clear it to check the fallback.
var useFold = haveFold()

// Update returns the CRC-32C of p appended to data whose CRC-32C is crc,
// exactly as hash/crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), p).
func Update(crc uint32, p []byte) uint32 {
	if useFold && len(p) >= foldThreshold {
		return updateFold(crc, p)
	}
	return crc32.Update(crc, castagnoli, p)
}

// updateFold is Update through the folding kernel, for len(p) >= 64; the
// tail after the last whole 64 bytes goes to hash/crc32.
func updateFold(crc uint32, p []byte) uint32 {
	n := len(p) &^ 63
	// The kernel works on the CRC register itself; hash/crc32 inverts it on
	// entry and exit, so ^crc is the register and ^state hands it back.
	state := fold(^crc, p[:n], &foldK)
	return crc32.Update(^state, castagnoli, p[n:])
}

// Checksum is Update(0, p).
func Checksum(p []byte) uint32 { return Update(0, p) }

// Accelerated reports whether the AVX-512 path is in use on this machine.
func Accelerated() bool { return useFold }
