#include "textflag.h"

// VPSHUFB mask reversing the 16 bytes of each 128-bit lane.
DATA bswapMask<>+0(SB)/8, $0x08090a0b0c0d0e0f
DATA bswapMask<>+8(SB)/8, $0x0001020304050607
GLOBL bswapMask<>(SB), RODATA|NOPTR, $16

// GHASH's reduction constant in the byte-reversed representation:
// x^127 + x^126 + x^121 + 1 with bit 127 standing for x^0.
DATA ghashPoly<>+0(SB)/8, $0x0000000000000001
DATA ghashPoly<>+8(SB)/8, $0xc200000000000000
GLOBL ghashPoly<>(SB), RODATA|NOPTR, $16

// Added to the byte-reversed counter block broadcast to four lanes: lane i
// gets counter+i in its low dword, which is GCM's 32-bit counter.
DATA ctrLanes<>+0(SB)/8, $0
DATA ctrLanes<>+8(SB)/8, $0
DATA ctrLanes<>+16(SB)/8, $1
DATA ctrLanes<>+24(SB)/8, $0
DATA ctrLanes<>+32(SB)/8, $2
DATA ctrLanes<>+40(SB)/8, $0
DATA ctrLanes<>+48(SB)/8, $3
DATA ctrLanes<>+56(SB)/8, $0
GLOBL ctrLanes<>(SB), RODATA|NOPTR, $64

DATA ctrStep4<>+0(SB)/8, $4
DATA ctrStep4<>+8(SB)/8, $0
GLOBL ctrStep4<>(SB), RODATA|NOPTR, $16

// func aesEncBlock(ks *[240]byte, rounds int, dst, src *[16]byte)
TEXT ·aesEncBlock(SB), NOSPLIT, $0-32
	MOVQ ks+0(FP), AX
	MOVQ rounds+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ src+24(FP), SI
	VMOVDQU (SI), X0
	VPXOR   (AX), X0, X0
	ADDQ    $16, AX
	DECQ    CX

encRound:
	VAESENC (AX), X0, X0
	ADDQ    $16, AX
	DECQ    CX
	JNZ     encRound
	VAESENCLAST (AX), X0, X0
	VMOVDQU     X0, (DI)
	RET

// Round keys live in Z16..Z30: Z16 whitening, Z17..Z25 rounds 1-9,
// Z26..Z29 rounds 10-13 (AES-256 only), Z30 the last round's key.
#define ENC4(k) \
	VAESENC k, Z4, Z4; \
	VAESENC k, Z5, Z5; \
	VAESENC k, Z6, Z6; \
	VAESENC k, Z7, Z7

#define ENC4_1_9 \
	ENC4(Z17); ENC4(Z18); ENC4(Z19); ENC4(Z20); ENC4(Z21); \
	ENC4(Z22); ENC4(Z23); ENC4(Z24); ENC4(Z25)

#define ENC4_10_13 \
	ENC4(Z26); ENC4(Z27); ENC4(Z28); ENC4(Z29)

#define ENC1_1_9(s) \
	VAESENC Z17, s, s; VAESENC Z18, s, s; VAESENC Z19, s, s; \
	VAESENC Z20, s, s; VAESENC Z21, s, s; VAESENC Z22, s, s; \
	VAESENC Z23, s, s; VAESENC Z24, s, s; VAESENC Z25, s, s

#define ENC1_10_13(s) \
	VAESENC Z26, s, s; VAESENC Z27, s, s; VAESENC Z28, s, s; VAESENC Z29, s, s

// LOADKEYS broadcasts the round keys at AX into Z16..Z30 for BX rounds;
// l128 and ldone are labels unique to each use.
#define LOADKEYS(l128, ldone) \
	VBROADCASTI32X4 0(AX), Z16; \
	VBROADCASTI32X4 16(AX), Z17; \
	VBROADCASTI32X4 32(AX), Z18; \
	VBROADCASTI32X4 48(AX), Z19; \
	VBROADCASTI32X4 64(AX), Z20; \
	VBROADCASTI32X4 80(AX), Z21; \
	VBROADCASTI32X4 96(AX), Z22; \
	VBROADCASTI32X4 112(AX), Z23; \
	VBROADCASTI32X4 128(AX), Z24; \
	VBROADCASTI32X4 144(AX), Z25; \
	CMPQ            BX, $10; \
	JE              l128; \
	VBROADCASTI32X4 160(AX), Z26; \
	VBROADCASTI32X4 176(AX), Z27; \
	VBROADCASTI32X4 192(AX), Z28; \
	VBROADCASTI32X4 208(AX), Z29; \
	VBROADCASTI32X4 224(AX), Z30; \
	JMP             ldone; \
l128: \
	VBROADCASTI32X4 160(AX), Z30; \
ldone:

// func ctrXor(ks *[240]byte, rounds int, ctr *[16]byte, dst, src *byte, n int)
//
// Z0 holds the next four counter blocks byte-reversed, so VPADDD on the
// low dword of each lane is GCM's inc32 (wrapping mod 2^32). The data is
// XORed into the last round key, so VAESENCLAST yields the output.
TEXT ·ctrXor(SB), NOSPLIT, $0-48
	MOVQ ks+0(FP), AX
	MOVQ rounds+8(FP), BX
	MOVQ ctr+16(FP), DX
	MOVQ dst+24(FP), DI
	MOVQ src+32(FP), SI
	MOVQ n+40(FP), CX

	VBROADCASTI32X4 bswapMask<>(SB), Z31
	VBROADCASTI32X4 ctrStep4<>(SB), Z15
	VBROADCASTI32X4 (DX), Z0
	VPSHUFB         Z31, Z0, Z0
	VPADDD          ctrLanes<>(SB), Z0, Z0

	LOADKEYS(ctrKeys128, ctrKeysDone)

ctrLoop16:
	CMPQ    CX, $256
	JB      ctrTail
	VPSHUFB Z31, Z0, Z4
	VPADDD  Z15, Z0, Z0
	VPSHUFB Z31, Z0, Z5
	VPADDD  Z15, Z0, Z0
	VPSHUFB Z31, Z0, Z6
	VPADDD  Z15, Z0, Z0
	VPSHUFB Z31, Z0, Z7
	VPADDD  Z15, Z0, Z0
	VPXORQ  Z16, Z4, Z4
	VPXORQ  Z16, Z5, Z5
	VPXORQ  Z16, Z6, Z6
	VPXORQ  Z16, Z7, Z7
	ENC4_1_9
	CMPQ    BX, $10
	JE      ctrLast16
	ENC4_10_13

ctrLast16:
	VPXORQ      0(SI), Z30, Z8
	VPXORQ      64(SI), Z30, Z9
	VPXORQ      128(SI), Z30, Z10
	VPXORQ      192(SI), Z30, Z11
	VAESENCLAST Z8, Z4, Z4
	VAESENCLAST Z9, Z5, Z5
	VAESENCLAST Z10, Z6, Z6
	VAESENCLAST Z11, Z7, Z7
	VMOVDQU64   Z4, 0(DI)
	VMOVDQU64   Z5, 64(DI)
	VMOVDQU64   Z6, 128(DI)
	VMOVDQU64   Z7, 192(DI)
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $256, CX
	JMP         ctrLoop16

// The last 1..255 bytes: up to 64 in one register, else four registers
// in parallel (AES latency, not issue, bounds a tail), each with a byte
// mask of its share. Masked-off bytes are neither read nor written (and
// cannot fault).
ctrTail:
	TESTQ CX, CX
	JZ    ctrDone
	MOVQ  $-1, R11
	CMPQ  CX, $64
	JBE   ctrTail1

	XORQ       R12, R12
	MOVQ       CX, R10
	BZHIQ      R10, R11, R13
	KMOVQ      R13, K1
	SUBQ       $64, R10
	BZHIQ      R10, R11, R13
	KMOVQ      R13, K2
	SUBQ       $64, R10
	CMOVQLT    R12, R10
	BZHIQ      R10, R11, R13
	KMOVQ      R13, K3
	SUBQ       $64, R10
	CMOVQLT    R12, R10
	BZHIQ      R10, R11, R13
	KMOVQ      R13, K4
	VMOVDQU8.Z 0(SI), K1, Z8
	VMOVDQU8.Z 64(SI), K2, Z9
	VMOVDQU8.Z 128(SI), K3, Z10
	VMOVDQU8.Z 192(SI), K4, Z11
	VPSHUFB    Z31, Z0, Z4
	VPADDD     Z15, Z0, Z0
	VPSHUFB    Z31, Z0, Z5
	VPADDD     Z15, Z0, Z0
	VPSHUFB    Z31, Z0, Z6
	VPADDD     Z15, Z0, Z0
	VPSHUFB    Z31, Z0, Z7
	VPXORQ     Z16, Z4, Z4
	VPXORQ     Z16, Z5, Z5
	VPXORQ     Z16, Z6, Z6
	VPXORQ     Z16, Z7, Z7
	ENC4(Z17); ENC4(Z18); ENC4(Z19); ENC4(Z20); ENC4(Z21)
	ENC4(Z22); ENC4(Z23); ENC4(Z24); ENC4(Z25)
	CMPQ       BX, $10
	JE         ctrLastTail4
	ENC4(Z26); ENC4(Z27); ENC4(Z28); ENC4(Z29)

ctrLastTail4:
	VPXORQ      Z8, Z30, Z8
	VPXORQ      Z9, Z30, Z9
	VPXORQ      Z10, Z30, Z10
	VPXORQ      Z11, Z30, Z11
	VAESENCLAST Z8, Z4, Z4
	VAESENCLAST Z9, Z5, Z5
	VAESENCLAST Z10, Z6, Z6
	VAESENCLAST Z11, Z7, Z7
	VMOVDQU8    Z4, K1, 0(DI)
	VMOVDQU8    Z5, K2, 64(DI)
	VMOVDQU8    Z6, K3, 128(DI)
	VMOVDQU8    Z7, K4, 192(DI)
	JMP         ctrDone

ctrTail1:
	BZHIQ      CX, R11, R8
	KMOVQ      R8, K1
	VMOVDQU8.Z (SI), K1, Z8
	VPSHUFB    Z31, Z0, Z4
	VPXORQ     Z16, Z4, Z4
	ENC1_1_9(Z4)
	CMPQ       BX, $10
	JE         ctrLastTail
	ENC1_10_13(Z4)

ctrLastTail:
	VPXORQ      Z8, Z30, Z8
	VAESENCLAST Z8, Z4, Z4
	VMOVDQU8    Z4, K1, (DI)

ctrDone:
	VZEROUPPER
	RET

// ghashUpdate's multiplies work on four 128-bit lanes per instruction: D
// is four byte-reversed data blocks, H the matching four powers of H. The
// 256-bit products are summed unreduced: Z10 low halves, Z11 high halves,
// Z12 the middle (cross) terms. It serves additional data, tails and short
// messages, so it keeps to schoolbook products and a 16-block table; the
// stitched loops below use Karatsuba and 32 blocks.
#define GHMUL_FIRST(D, H) \
	VPCLMULQDQ $0x00, H, D, Z10; \
	VPCLMULQDQ $0x11, H, D, Z11; \
	VPCLMULQDQ $0x01, H, D, Z12; \
	VPCLMULQDQ $0x10, H, D, Z13; \
	VPXORQ     Z13, Z12, Z12

#define GHMUL_NEXT(D, H) \
	VPCLMULQDQ $0x00, H, D, Z14; \
	VPCLMULQDQ $0x11, H, D, Z15; \
	VPCLMULQDQ $0x01, H, D, Z16; \
	VPCLMULQDQ $0x10, H, D, Z17; \
	VPXORQ     Z14, Z10, Z10; \
	VPXORQ     Z15, Z11, Z11; \
	VPTERNLOGD $0x96, Z17, Z16, Z12

// GHREDUCE folds the middle terms in, adds the four lanes together and
// reduces the 256-bit sum modulo GHASH's polynomial (two folds by the
// constant in X30) into X0, clearing the upper lanes of Z0.
#define GHREDUCE \
	VPSLLDQ        $8, Z12, Z13; \
	VPSRLDQ        $8, Z12, Z12; \
	VPXORQ         Z13, Z10, Z10; \
	VPXORQ         Z12, Z11, Z11; \
	VEXTRACTI64X4  $1, Z10, Y13; \
	VPXORQ         Y13, Y10, Y10; \
	VEXTRACTI32X4  $1, Y10, X13; \
	VPXORQ         X13, X10, X10; \
	VEXTRACTI64X4  $1, Z11, Y13; \
	VPXORQ         Y13, Y11, Y11; \
	VEXTRACTI32X4  $1, Y11, X13; \
	VPXORQ         X13, X11, X11; \
	VPCLMULQDQ     $0x01, X10, X30, X13; \
	VPSHUFD        $78, X10, X10; \
	VPXORQ         X13, X10, X10; \
	VPCLMULQDQ     $0x01, X10, X30, X13; \
	VPSHUFD        $78, X10, X10; \
	VPTERNLOGD     $0x96, X13, X11, X10; \
	VMOVDQA64      X10, X0

// func ghashUpdate(htable *byte, x *[16]byte, data *byte, n int)
//
// htable points at H^16..H^1 followed by four zero entries. Sixteen
// blocks are hashed per reduction: (X + C1)·H^16 + C2·H^15 + ... +
// C16·H^1. The last 1..16
// blocks use the table from H^k on, k their count, so the same formula
// holds; a partial last block is read zero-padded through a byte mask.
TEXT ·ghashUpdate(SB), NOSPLIT, $0-32
	MOVQ htable+0(FP), DI
	MOVQ x+8(FP), DX
	MOVQ data+16(FP), SI
	MOVQ n+24(FP), CX

	VBROADCASTI32X4 bswapMask<>(SB), Z31
	VMOVDQU64       ghashPoly<>(SB), X30
	VMOVDQU         (DX), X0
	CMPQ            CX, $256
	JB              ghTail
	VMOVDQU64       0(DI), Z5
	VMOVDQU64       64(DI), Z6
	VMOVDQU64       128(DI), Z7
	VMOVDQU64       192(DI), Z8

ghLoop16:
	VMOVDQU64 0(SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VPSHUFB   Z31, Z1, Z1
	VPSHUFB   Z31, Z2, Z2
	VPSHUFB   Z31, Z3, Z3
	VPSHUFB   Z31, Z4, Z4
	VPXORQ    Z0, Z1, Z1
	GHMUL_FIRST(Z1, Z5)
	GHMUL_NEXT(Z2, Z6)
	GHMUL_NEXT(Z3, Z7)
	GHMUL_NEXT(Z4, Z8)
	GHREDUCE
	ADDQ      $256, SI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JAE       ghLoop16

ghTail:
	TESTQ CX, CX
	JZ    ghDone

	// R8 = &htable[16-k], k = ceil(n/16) blocks left.
	LEAQ   15(CX), R8
	SHRQ   $4, R8
	NEGQ   R8
	ADDQ   $16, R8
	SHLQ   $4, R8
	ADDQ   DI, R8
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12

ghTailLoop:
	MOVQ       $-1, R9
	CMPQ       CX, $64
	JAE        ghFullMask
	SHLQ       CX, R9
	NOTQ       R9

ghFullMask:
	KMOVQ      R9, K1
	VMOVDQU8.Z (SI), K1, Z1
	VPSHUFB    Z31, Z1, Z1
	VPXORQ     Z0, Z1, Z1
	VPXORQ     Z0, Z0, Z0
	VMOVDQU64  (R8), Z5
	GHMUL_NEXT(Z1, Z5)
	ADDQ       $64, SI
	ADDQ       $64, R8
	SUBQ       $64, CX
	JA         ghTailLoop
	GHREDUCE

ghDone:
	VMOVDQU X0, (DX)
	VZEROUPPER
	RET

// The stitched loops encrypt sixteen blocks at a time in Z3..Z6 and hash
// ciphertext four blocks to a register in Z7..Z10 (and Z0 for the group
// that carries the GHASH state), 32 blocks per reduction. On this CPU
// class VPCLMULQDQ issues once per two cycles at any width while VAESENC
// zmm issues twice per cycle, so the carry-less multiplies set the pace:
// Karatsuba (three per four blocks) and one reduction per 32 blocks keep
// them few, and the AES rounds run beside them.
#define ENCS(k) \
	VAESENC k, Z3, Z3; \
	VAESENC k, Z4, Z4; \
	VAESENC k, Z5, Z5; \
	VAESENC k, Z6, Z6

// CTR16 starts Z3..Z6 on the next sixteen counter blocks (Z1, step Z2)
// and runs all rounds but the last, branching on BX to label l.
#define CTR16(l) \
	VPSHUFB Z31, Z1, Z3; \
	VPADDD  Z2, Z1, Z1; \
	VPSHUFB Z31, Z1, Z4; \
	VPADDD  Z2, Z1, Z1; \
	VPSHUFB Z31, Z1, Z5; \
	VPADDD  Z2, Z1, Z1; \
	VPSHUFB Z31, Z1, Z6; \
	VPADDD  Z2, Z1, Z1; \
	VPXORQ  Z16, Z3, Z3; \
	VPXORQ  Z16, Z4, Z4; \
	VPXORQ  Z16, Z5, Z5; \
	VPXORQ  Z16, Z6, Z6; \
	ENCS(Z17); ENCS(Z18); ENCS(Z19); ENCS(Z20); ENCS(Z21); \
	ENCS(Z22); ENCS(Z23); ENCS(Z24); ENCS(Z25); \
	CMPQ    BX, $10; \
	JE      l; \
	ENCS(Z26); ENCS(Z27); ENCS(Z28); ENCS(Z29); \
l:

// LAST16 finishes Z3..Z6 with the last round key XORed with the sixteen
// input blocks at SI and stores them at R9.
#define LAST16 \
	VPXORQ      0(SI), Z30, Z11; \
	VAESENCLAST Z11, Z3, Z3; \
	VPXORQ      64(SI), Z30, Z11; \
	VAESENCLAST Z11, Z4, Z4; \
	VPXORQ      128(SI), Z30, Z11; \
	VAESENCLAST Z11, Z5, Z5; \
	VPXORQ      192(SI), Z30, Z11; \
	VAESENCLAST Z11, Z6, Z6; \
	VMOVDQU64   Z3, 0(R9); \
	VMOVDQU64   Z4, 64(R9); \
	VMOVDQU64   Z5, 128(R9); \
	VMOVDQU64   Z6, 192(R9)

// GHK_INIT and GHK_ACC multiply four byte-reversed blocks D by four powers
// of H (H in memory; K the same powers with their halves XORed), starting
// or adding to Z12 (low products), Z13 (high) and Z14 (Karatsuba middle,
// still to be corrected by low and high in GHFINISH).
#define GHK_INIT(D, H, K) \
	VPCLMULQDQ $0x00, H, D, Z12; \
	VPCLMULQDQ $0x11, H, D, Z13; \
	VPSHUFD    $78, D, Z15; \
	VPXORQ     D, Z15, Z15; \
	VPCLMULQDQ $0x00, K, Z15, Z14

#define GHK_ACC(D, H, K) \
	VPCLMULQDQ $0x00, H, D, Z15; \
	VPXORQ     Z15, Z12, Z12; \
	VPCLMULQDQ $0x11, H, D, Z15; \
	VPXORQ     Z15, Z13, Z13; \
	VPSHUFD    $78, D, Z15; \
	VPXORQ     D, Z15, Z15; \
	VPCLMULQDQ $0x00, K, Z15, Z15; \
	VPXORQ     Z15, Z14, Z14

// GHFINISH completes the Karatsuba middle term, folds it in, adds the
// four lanes and reduces modulo GHASH's polynomial into X0 (clearing the
// upper lanes of Z0).
#define GHFINISH \
	VPTERNLOGD    $0x96, Z13, Z12, Z14; \
	VPSLLDQ       $8, Z14, Z15; \
	VPSRLDQ       $8, Z14, Z14; \
	VPXORQ        Z15, Z12, Z12; \
	VPXORQ        Z14, Z13, Z13; \
	VEXTRACTI64X4 $1, Z12, Y15; \
	VPXORQ        Y15, Y12, Y12; \
	VEXTRACTI32X4 $1, Y12, X15; \
	VPXORQ        X15, X12, X12; \
	VEXTRACTI64X4 $1, Z13, Y15; \
	VPXORQ        Y15, Y13, Y13; \
	VEXTRACTI32X4 $1, Y13, X15; \
	VPXORQ        X15, X13, X13; \
	VPCLMULQDQ    $0x10, ghashPoly<>(SB), X12, X15; \
	VPSHUFD       $78, X12, X12; \
	VPXORQ        X15, X12, X12; \
	VPCLMULQDQ    $0x10, ghashPoly<>(SB), X12, X15; \
	VPSHUFD       $78, X12, X12; \
	VPXORQ        X13, X12, X12; \
	VPXORQ        X15, X12, X0

// Offsets into the GHASH table (see makeGHASHTable): group g of a 32-block
// chunk, blocks 4g..4g+3, multiplies the powers at 64*g and their
// Karatsuba halves at 576+64*g.

// BULK_ENTRY sets up the constants, counter and state shared by
// sealBulk and openBulk.
#define BULK_ENTRY \
	VBROADCASTI32X4 bswapMask<>(SB), Z31; \
	VBROADCASTI32X4 ctrStep4<>(SB), Z2; \
	VBROADCASTI32X4 (DX), Z1; \
	VPSHUFB         Z31, Z1, Z1; \
	VPADDD          ctrLanes<>(SB), Z1, Z1; \
	VMOVDQU         (R8), X0

// LOAD_IN loads and byte-reverses sixteen ciphertext blocks, the four
// groups at o0..o3 from base, into Z7..Z10.
#define LOAD_IN(o0, o1, o2, o3, base) \
	VMOVDQU64 o0(base), Z7; \
	VMOVDQU64 o1(base), Z8; \
	VMOVDQU64 o2(base), Z9; \
	VMOVDQU64 o3(base), Z10; \
	VPSHUFB   Z31, Z7, Z7; \
	VPSHUFB   Z31, Z8, Z8; \
	VPSHUFB   Z31, Z9, Z9; \
	VPSHUFB   Z31, Z10, Z10

// GH32A hashes the first sixteen of 32 ciphertext blocks at base, adding
// the state X0 to the first group; GH32B the second sixteen at base+256,
// then reduces into X0.
#define GH32A(base) \
	LOAD_IN(0, 64, 128, 192, base); \
	VPXORQ Z7, Z0, Z0; \
	GHK_INIT(Z8, 64(DI), 640(DI)); \
	GHK_ACC(Z9, 128(DI), 704(DI)); \
	GHK_ACC(Z10, 192(DI), 768(DI))

#define GH32B(base) \
	LOAD_IN(256, 320, 384, 448, base); \
	GHK_ACC(Z7, 256(DI), 832(DI)); \
	GHK_ACC(Z8, 320(DI), 896(DI)); \
	GHK_ACC(Z9, 384(DI), 960(DI)); \
	GHK_ACC(Z10, 448(DI), 1024(DI)); \
	GHK_ACC(Z0, 0(DI), 576(DI)); \
	GHFINISH

// GH16 hashes the sixteen blocks at base into X0.
#define GH16(base) \
	LOAD_IN(0, 64, 128, 192, base); \
	VPXORQ Z7, Z0, Z0; \
	GHK_INIT(Z8, 320(DI), 896(DI)); \
	GHK_ACC(Z9, 384(DI), 960(DI)); \
	GHK_ACC(Z10, 448(DI), 1024(DI)); \
	GHK_ACC(Z0, 256(DI), 832(DI)); \
	GHFINISH

// func sealBulk(ks *[240]byte, rounds int, gtab *[1088]byte, ctr, x *[16]byte, dst, src *byte, n int)
//
// n is a positive multiple of 256. Encrypts src into dst from counter
// block ctr and absorbs the ciphertext into the GHASH state x. The
// ciphertext is hashed one 32-block chunk behind the encryption (R10
// trails R9), so each iteration's GHASH does not wait for its AES.
TEXT ·sealBulk(SB), NOSPLIT, $0-64
	MOVQ ks+0(FP), AX
	MOVQ rounds+8(FP), BX
	MOVQ gtab+16(FP), DI
	MOVQ ctr+24(FP), DX
	MOVQ x+32(FP), R8
	MOVQ dst+40(FP), R9
	MOVQ src+48(FP), SI
	MOVQ n+56(FP), CX
	BULK_ENTRY
	LOADKEYS(sealKeys128, sealKeysDone)
	MOVQ R9, R10
	CMPQ CX, $512
	JB   seal16

	CTR16(sealLastF1)
	LAST16
	ADDQ $256, SI
	ADDQ $256, R9
	CTR16(sealLastF2)
	LAST16
	ADDQ $256, SI
	ADDQ $256, R9
	SUBQ $512, CX

sealLoop32:
	CMPQ CX, $512
	JB   sealDrain
	GH32A(R10)
	CTR16(sealLastA)
	LAST16
	ADDQ $256, SI
	ADDQ $256, R9
	GH32B(R10)
	CTR16(sealLastB)
	LAST16
	ADDQ $256, SI
	ADDQ $256, R9
	ADDQ $512, R10
	SUBQ $512, CX
	JMP  sealLoop32

sealDrain:
	GH32A(R10)
	GH32B(R10)
	ADDQ $512, R10

seal16:
	TESTQ CX, CX
	JZ    sealDone
	CTR16(sealLast16)
	LAST16
	GH16(R10)

sealDone:
	VMOVDQU X0, (R8)
	VZEROUPPER
	RET

// func openBulk(ks *[240]byte, rounds int, gtab *[1088]byte, ctr, x *[16]byte, dst, src *byte, n int)
//
// n is a positive multiple of 256. Absorbs the ciphertext src into the
// GHASH state x and decrypts it into dst from counter block ctr. Each
// sixteen blocks are loaded for GHASH before they are decrypted, so dst
// may equal src.
TEXT ·openBulk(SB), NOSPLIT, $0-64
	MOVQ ks+0(FP), AX
	MOVQ rounds+8(FP), BX
	MOVQ gtab+16(FP), DI
	MOVQ ctr+24(FP), DX
	MOVQ x+32(FP), R8
	MOVQ dst+40(FP), R9
	MOVQ src+48(FP), SI
	MOVQ n+56(FP), CX
	BULK_ENTRY
	LOADKEYS(openKeys128, openKeysDone)

openLoop32:
	CMPQ CX, $512
	JB   open16
	GH32A(SI)
	CTR16(openLastA)
	LAST16
	GH32B(SI)
	ADDQ $256, SI
	ADDQ $256, R9
	CTR16(openLastB)
	LAST16
	ADDQ $256, SI
	ADDQ $256, R9
	SUBQ $512, CX
	JMP  openLoop32

open16:
	TESTQ CX, CX
	JZ    openDone
	GH16(SI)
	CTR16(openLast16)
	LAST16

openDone:
	VMOVDQU X0, (R8)
	VZEROUPPER
	RET

// func gfMul(x, y *[16]byte)
TEXT ·gfMul(SB), NOSPLIT, $0-16
	MOVQ       x+0(FP), DI
	MOVQ       y+8(FP), SI
	VMOVDQU    (DI), X0
	VMOVDQU    (SI), X1
	VPCLMULQDQ $0x00, X1, X0, X2
	VPCLMULQDQ $0x11, X1, X0, X3
	VPCLMULQDQ $0x01, X1, X0, X4
	VPCLMULQDQ $0x10, X1, X0, X5
	VPXOR      X5, X4, X4
	VPSLLDQ    $8, X4, X5
	VPSRLDQ    $8, X4, X4
	VPXOR      X5, X2, X2
	VPXOR      X4, X3, X3
	VPCLMULQDQ $0x10, ghashPoly<>(SB), X2, X5
	VPSHUFD    $78, X2, X2
	VPXOR      X5, X2, X2
	VPCLMULQDQ $0x10, ghashPoly<>(SB), X2, X5
	VPSHUFD    $78, X2, X2
	VPXOR      X5, X2, X2
	VPXOR      X3, X2, X2
	VMOVDQU    X2, (DI)
	RET

// func subWord(w uint32) uint32
TEXT ·subWord(SB), NOSPLIT, $0-12
	MOVL   w+0(FP), AX
	MOVL   AX, X0
	PSHUFD $0, X0, X0
	PXOR   X1, X1
	AESENCLAST X1, X0
	MOVL   X0, AX
	MOVL   AX, ret+8(FP)
	RET
