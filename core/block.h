// block.h: one contiguous float allocation holding many named tensors.
//
// A model describes its tensors once (name and shape) into a Block, then
// block_alloc() makes one allocation and points every registered view at its
// slice. The same layout function called on a second Block gives the gradients,
// a third and fourth the Adam moments: zeroing, the optimiser and checkpointing
// are single loops over block->data. Example:
//
//     Block params = {0};
//     block_add(&params, &p->w_mu, "enc.w_mu", 2, Z, H);
//     block_add(&params, &p->b_mu, "enc.b_mu", 1, Z);
//     block_alloc(&params);          // p->w_mu, p->b_mu now point into params.data
#ifndef CORE_BLOCK_H
#define CORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#define BLOCK_MAX_DIMS 4
#define BLOCK_NAME_LEN 64

typedef struct {
    char name[BLOCK_NAME_LEN];
    int ndim;
    int64_t shape[BLOCK_MAX_DIMS];
    size_t offset;  // in floats, from data
    size_t numel;
    float **view;   // where to store the pointer once allocated (may be NULL)
} BlockTensor;

typedef struct {
    BlockTensor *tensors;
    int count, cap;
    size_t numel;  // total floats
    float *data;   // NULL until block_alloc
    size_t mapped; // bytes of an anonymous mapping (block_alloc of BLOCK_MAP_BYTES or more), or 0
} Block;

// From this size on block_alloc maps zero pages instead of allocating and clearing: the
// memory of a part never written (activations a run does not use, such as a data-parallel
// model's own while its workers train) is never resident.
#define BLOCK_MAP_BYTES ((size_t)1 << 20)

// Registers a tensor of ndim dimensions (the dims follow as ints). Names are unique.
void block_add(Block *b, float **view, const char *name, int ndim, ...);
// Allocates (zeroed, 64-byte aligned; page-aligned zero pages from BLOCK_MAP_BYTES on) and
// sets all views.
void block_alloc(Block *b);
void block_free(Block *b);
void block_zero(Block *b);
// dst (empty) gets src's tensors, the same names and shapes (without views), unallocated.
void block_layout_like(Block *dst, const Block *src);
// dst (empty) becomes a copy of src: the same tensors (without views) and the same data.
void block_clone(Block *dst, const Block *src);
// The tensor of that name, or NULL.
const BlockTensor *block_find(const Block *b, const char *name);
// The name of the first tensor holding a NaN or an infinity, or NULL when all are finite
// (training checks its gradients with it every step: one pass without early exit per
// tensor, which vectorises).
const char *block_first_nonfinite(const Block *b);

#endif
