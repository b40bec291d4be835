// vector_width.h: the width in bytes of the widest vector registers the build targets
// (-march): 64 with AVX-512, else 32 (AVX2, and builds without -march such as the
// sanitizer and valgrind ones). Loops written with GCC's vector extension hold a group of
// values as several vectors of this width (vision/filterbank.c, vision/filterbank_sparse.c):
// a vector wider than the registers is split by GCC through the stack.
#ifndef CORE_VECTOR_WIDTH_H
#define CORE_VECTOR_WIDTH_H

#ifdef __AVX512F__
#define VECTOR_BYTES 64
#else
#define VECTOR_BYTES 32
#endif

#endif
