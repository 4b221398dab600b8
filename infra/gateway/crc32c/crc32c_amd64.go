package crc32c

import "golang.org/x/sys/cpu"

// haveFold reports whether the CPU and OS support the instructions of
// crc32c_amd64.s: AVX-512F for the ZMM registers, VL for the EVEX forms on
// XMM and YMM, VPCLMULQDQ on ZMM registers, and SSE4.2's CRC32 for the final
// reduction. x/sys/cpu also checks that the OS saves the ZMM state.
func haveFold() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL &&
		cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42
}

// fold returns the CRC register (not inverted) after feeding p, whose length
// is a non-zero multiple of 64, to a register holding crc.
//
//go:noescape
func fold(crc uint32, p []byte, k *foldConsts) uint32
