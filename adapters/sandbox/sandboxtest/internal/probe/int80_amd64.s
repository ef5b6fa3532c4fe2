#include "textflag.h"

// func int80(nr, a1, a2, a3 uint32) int32
// The i386 entry zeroes r8-r15 on return; Go keeps g in R14, so they are saved around it.
TEXT ·int80(SB), NOSPLIT, $32-20
	MOVQ R12, 0(SP)
	MOVQ R13, 8(SP)
	MOVQ R14, 16(SP)
	MOVQ R15, 24(SP)
	MOVL nr+0(FP), AX
	MOVL a1+4(FP), BX
	MOVL a2+8(FP), CX
	MOVL a3+12(FP), DX
	INT $0x80
	MOVL AX, ret+16(FP)
	MOVQ 0(SP), R12
	MOVQ 8(SP), R13
	MOVQ 16(SP), R14
	MOVQ 24(SP), R15
	RET
