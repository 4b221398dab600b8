#include "go_asm.h"
#include "textflag.h"

// FOLD moves every 128-bit lane of acc on by the distance whose constant
// pair is broadcast in k, and adds next: acc = acc.lo·k.lo ^ acc.hi·k.hi ^ next.
#define FOLD(k, acc, next, tmp) \
	VPCLMULQDQ $0x00, k, acc, tmp \
	VPCLMULQDQ $0x11, k, acc, acc \
	VPTERNLOGD $0x96, next, tmp, acc

// FOLD4 folds the four accumulators onto the 256 bytes at ptr.
#define FOLD4(k, ptr) \
	FOLD(k, Z0, 0(ptr), Z6) \
	FOLD(k, Z1, 64(ptr), Z7) \
	FOLD(k, Z2, 128(ptr), Z8) \
	FOLD(k, Z3, 192(ptr), Z9)

// CRC3 feeds the word at off in each of the three streams from SI.
#define CRC3(off) \
	CRC32Q (off)(SI), R11 \
	CRC32Q (const_mixStream+off)(SI), R12 \
	CRC32Q (2*const_mixStream+off)(SI), R13

// CRCMIX feeds mixWords (6) words of each stream.
#define CRCMIX \
	CRC3(0) \
	CRC3(8) \
	CRC3(16) \
	CRC3(24) \
	CRC3(32) \
	CRC3(40)

// func fold(crc uint32, p []byte, k *foldConsts) uint32
TEXT ·fold(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	// Read z = -len mod 64 zero bytes before p, so that whole blocks of 64
	// end where p ends: the first load masks them off (and masked bytes
	// cannot fault), and crc, which belongs at p, moves z bytes back into
	// the first 64 bits of the padded message (unshift in constants.go).
	MOVQ       CX, R8
	NEGQ       R8
	ANDQ       $63, R8
	SUBQ       R8, SI
	ADDQ       R8, CX
	MOVQ       $-1, BX
	SHLXQ      R8, BX, BX
	KMOVQ      BX, K2
	VMOVD      AX, X5
	VMOVQ      foldConsts_unshift(DX)(R8*8), X6
	VPCLMULQDQ $0x00, X6, X5, X5
	VBROADCASTI32X4 foldConsts_by64(DX), Z17
	CMPQ            CX, $256
	JB              one

	// Four accumulators, each 64 bytes, stride 256 bytes. Eight were no
	// faster: VPCLMULQDQ on ZMM issues once per two cycles on Turin, and
	// four chains of multiply and VPTERNLOGD already keep it busy.
	VMOVDQU8.Z      0(SI), K2, Z0
	VMOVDQU64       64(SI), Z1
	VMOVDQU64       128(SI), Z2
	VMOVDQU64       192(SI), Z3
	VPXORQ          Z5, Z0, Z0
	ADDQ            $256, SI
	SUBQ            $256, CX
	VBROADCASTI32X4 foldConsts_by256(DX), Z16
	CMPQ            CX, $const_mixBlock
	JB              loop4

	// Mix blocks: the vector unit and the integer unit's CRC32 work side
	// by side, which here is about half as fast again as folding alone.
	VBROADCASTI32X4 foldConsts_jump(DX), Z20
	MOVL            $0x8000, AX
	KMOVW           AX, K1 // the accumulators' last dword

mix:
	XORL R11, R11
	XORL R12, R12
	XORL R13, R13
	LEAQ (3*const_mixStream)(SI), R9 // vector data
	MOVQ $(const_mixIters-1), R10
	FOLD4(Z20, R9)
	CRCMIX
	ADDQ $256, R9
	ADDQ $(8*const_mixWords), SI

mixloop:
	FOLD4(Z16, R9)
	CRCMIX
	ADDQ $256, R9
	ADDQ $(8*const_mixWords), SI
	DECQ R10
	JNZ  mixloop

	// The streams' registers, moved to the block's end, sum to the value
	// of the block's last 32 bits that stands for all three streams.
	VMOVQ        R11, X10
	VMOVQ        R12, X11
	VMOVQ        R13, X12
	VPCLMULQDQ   $0x00, (foldConsts_mix+0)(DX), X10, X10
	VPCLMULQDQ   $0x00, (foldConsts_mix+16)(DX), X11, X11
	VPCLMULQDQ   $0x00, (foldConsts_mix+32)(DX), X12, X12
	VPTERNLOGD   $0x96, X10, X11, X12
	VMOVQ        X12, AX
	XORL         BX, BX
	CRC32Q       AX, BX
	VPBROADCASTD BX, Z10
	VPXORD       Z10, Z3, K1, Z3
	MOVQ         R9, SI
	SUBQ         $const_mixBlock, CX
	CMPQ         CX, $const_mixBlock
	JAE          mix

loop4:
	CMPQ CX, $256
	JB   join
	FOLD4(Z16, SI)
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  loop4

join:
	// Z0, Z1 and Z2 move on by 192, 128 and 64 bytes onto Z3.
	VBROADCASTI32X4 foldConsts_by192(DX), Z18
	VBROADCASTI32X4 foldConsts_by128(DX), Z19
	VPCLMULQDQ      $0x00, Z18, Z0, Z6
	VPCLMULQDQ      $0x11, Z18, Z0, Z7
	VPCLMULQDQ      $0x00, Z19, Z1, Z8
	VPCLMULQDQ      $0x11, Z19, Z1, Z9
	VPCLMULQDQ      $0x00, Z17, Z2, Z10
	VPCLMULQDQ      $0x11, Z17, Z2, Z11
	VPTERNLOGD      $0x96, Z6, Z7, Z3
	VPTERNLOGD      $0x96, Z8, Z9, Z10
	VPTERNLOGD      $0x96, Z10, Z11, Z3
	VMOVDQA64       Z3, Z0
	JMP             loop1

one:
	VMOVDQU8.Z 0(SI), K2, Z0
	VPXORQ    Z5, Z0, Z0
	ADDQ      $64, SI
	SUBQ      $64, CX

loop1:
	CMPQ CX, $64
	JB   reduce
	FOLD(Z17, Z0, 0(SI), Z6)
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  loop1

reduce:
	// Lanes 0, 1 and 2 move on by 48, 32 and 16 bytes onto lane 3; the
	// fourth constant pair is zero, so lane 3 is added back as it was.
	VMOVDQU64     foldConsts_lanes(DX), Z18
	VEXTRACTI32X4 $3, Z0, X7 // zeroes the rest of Z7
	VPCLMULQDQ    $0x00, Z18, Z0, Z6
	VPCLMULQDQ    $0x11, Z18, Z0, Z0
	VPTERNLOGD    $0x96, Z6, Z7, Z0
	VEXTRACTI64X4 $1, Z0, Y6
	VPXORQ        Y6, Y0, Y0
	VEXTRACTI32X4 $1, Y0, X6
	VPXORQ        X6, X0, X0

	// The 128 bits left are congruent to the message; the CRC register is
	// their CRC from a zero register: message·x^32 mod P.
	VMOVQ   X0, AX
	VPEXTRQ $1, X0, BX
	XORL    CX, CX
	CRC32Q  AX, CX
	CRC32Q  BX, CX
	MOVL    CX, ret+40(FP)
	VZEROUPPER
	RET
