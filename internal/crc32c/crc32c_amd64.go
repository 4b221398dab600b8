package crc32c

import "golang.org/x/sys/cpu"

// haveFold reports whether the CPU and OS support the instructions of
// crc32c_amd64.s: AVX-512F for the ZMM registers, VL for the EVEX forms on
// XMM and YMM, BW for the byte-masked first load, VPCLMULQDQ on ZMM
// registers, SSE4.2's CRC32 and BMI2's SHLX. x/sys/cpu also checks that the
// OS saves the ZMM state.
func haveFold() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasBMI2 &&
		cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42
}

// fold returns the CRC register (not inverted) after feeding p, which is
// not empty, to a register holding crc.
//
//go:noescape
func fold(crc uint32, p []byte, k *foldConsts) uint32
