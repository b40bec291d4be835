// fixture.h: reading the PyTorch parity fixtures (bench/reference/make_fixtures.py, `make
// fixtures`) and comparing the C model's tensors against them, for tests/test_parity_*.c.
//
// A fixture is a safetensors file in $ATTEND_FIXTURES (default tests/fixtures) holding a
// model's weights (param/NAME, the Block's names), its inputs, the reference outputs,
// every parameter's gradient (grad/NAME), the loss before each of a few Adam steps
// (train/loss) and settings in the metadata. Every function here that finds something
// missing or out of tolerance records a test failure (tests/support/test.h) naming it,
// then returns its "no" value so the caller can stop.
//
// Tolerance, element by element: |got - want| <= atol + rtol |want|. PARITY_VERBOSE=1
// prints each tensor's largest error and worst error / tolerance.
#ifndef TESTS_SUPPORT_FIXTURE_H
#define TESTS_SUPPORT_FIXTURE_H

#include <stddef.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/safetensors.h"

// Adam settings and step count of the reference's short training run (metadata adam.lr,
// adam.beta1, adam.beta2, adam.eps, clip, steps).
typedef struct {
    double lr, beta1, beta2, eps, clip;
    int steps;
} FixtureTraining;

// The path of fixture file name (it may name a subfolder: "encoders/vgg19.safetensors") in
// the fixture folder, into path (cap bytes).
void fixture_path(char *path, size_t cap, const char *name);

// Loads fixture name from the fixture folder; path (cap bytes) gets its path. Returns 0,
// or -1 after a failure saying how to regenerate the fixtures.
int fixture_load(SafetensorsFile *f, char *path, size_t cap, const char *name);

// The tensor called name, checked to hold n floats (n); NULL after a failure otherwise.
const float *fixture_tensor(const SafetensorsFile *f, const char *name, size_t n);

// The tensor called name, n whole numbers stored as floats (ids, lengths, labels), as a new
// int array (the caller frees it); NULL after a failure as fixture_tensor's.
int *fixture_int_tensor(const SafetensorsFile *f, const char *name, size_t n);

// Metadata values; 0, or -1 after a failure naming the missing key.
int fixture_meta_int(const SafetensorsFile *f, const char *key, int *out);
int fixture_meta_double(const SafetensorsFile *f, const char *key, double *out);
int fixture_training(const SafetensorsFile *f, FixtureTraining *out);
// Adam's settings of that run (its lr as the base rate).
AdamConfig fixture_adam(const FixtureTraining *t);

// Fills params from the fixture's param/ tensors and checks the fixture has no others.
// Returns 1 when they were read (a failure otherwise; the count check fails on its own).
int fixture_read_params(Block *params, const SafetensorsFile *f, const char *path);

// Compares got (n) with want (n). Returns 1 when within tolerance; otherwise, if report,
// fails naming what, name, the worst element (largest excess over its tolerance) and both
// values, and prints that as an indented "mismatch:" line. report 0 only answers.
int fixture_compare_report(const char *what, const char *name, const float *got,
                           const float *want, size_t n, double atol, double rtol, int report);
int fixture_compare(const char *what, const char *name, const float *got, const float *want,
                    size_t n, double atol, double rtol);

// Compares every tensor of grads with the fixture's grad/NAME, at rtol and an atol of
// atol_rel * max |reference| of that tensor (elements far below a tensor's scale carry
// absolute, not relative, float32 error).
void fixture_compare_grads(const Block *grads, const SafetensorsFile *f, double atol_rel,
                           double rtol);

// The same with one atol for the whole model: atol_rel * the largest |reference gradient|
// of any tensor (for models whose small tensors carry the larger tensors' float32 error).
// A missing grad/NAME fails. Returns 1 when all match; report as fixture_compare_report's.
int fixture_compare_grads_model(const char *what, const Block *grads, const SafetensorsFile *f,
                                double atol_rel, double rtol, int report);

// Compares the C loss curve got (steps) with the reference's want (steps) at rtol, and
// checks the reference curve falls (else the comparison proves little).
void fixture_compare_curve(const float *got, const float *want, int steps, double rtol,
                           const char *path);

// The reference's short training run again in C: tr->steps times, loss_and_grads(ctx) (a
// forward and a backward pass, its gradients into grads from zero) gives the loss, grads
// are clipped to a global norm of tr->clip and Adam (fixture_adam; its moments start at
// zero) steps params; then the curve is compared with the fixture's train/loss as
// fixture_compare_curve does. want is that train/loss (tr->steps floats).
void fixture_train_curve(Block *params, Block *grads, const FixtureTraining *tr,
                         double (*loss_and_grads)(void *ctx), void *ctx, const float *want,
                         double rtol, const char *path);

// Row row of a greedy decoding: the words got (got_len of them) against the reference's
// want (want_len, stored as floats). Returns 1 when they are the same; otherwise, if report,
// prints both as an indented "mismatch:" line and fails naming path and the row.
int fixture_compare_words(const char *path, int row, const int *got, int got_len,
                          const float *want, int want_len, int report);

// A translator fixture's batch (tests/test_parity_translate*.c): sources (B, S) and their
// lengths (B), teacher-forced targets (B, max_len) and their lengths (B), and the greedy
// decoding's own sources and lengths (input/src, src_len, words, lens, decode_src,
// decode_src_len).
typedef struct {
    int *src, *src_len, *words, *lens, *dsrc, *dsrc_len;
} FixturePairs;

// Reads them; 0, or -1 after a failure (fixture_pairs_free frees what was read either way).
int fixture_pairs_read(FixturePairs *p, const SafetensorsFile *f, int B, int S, int max_len);
void fixture_pairs_free(FixturePairs *p);

// One parity test program's fixture, for the two runners below. load fills the state x
// (size bytes) from fixture name: 0, or -1 after a failure; release frees what load made,
// also after a failed load. params: the weights a perturbation moves. compare checks
// everything against the reference (report 0 only answers; 1 when all are within
// tolerance). compare_moved (NULL: compare) is what must fail once a weight moved; when
// also_moved is not NULL it runs after that check, with the tensor moved, to move and check
// more (a translator's decoding weights).
typedef struct {
    const char *fixture, *tensor;
    size_t index;
} FixturePerturbation;

typedef struct {
    size_t size;
    int (*load)(void *x, const char *name);
    void (*release)(void *x);
    Block *(*params)(void *x);
    int (*compare)(void *x, int report);
    int (*compare_moved)(void *x, int report);
    void (*also_moved)(void *x, const FixturePerturbation *p, const BlockTensor *t);
} FixtureSuite;

// Loads fixture name and fails ("NAME differs from PyTorch", with every mismatch reported)
// unless compare holds.
void fixture_check(const FixtureSuite *s, const char *name);

// The comparison must be able to fail: for each of the n perturbations, its fixture must
// match as read, and no longer once tensor[index] of params moved by 1e-3.
void fixture_check_perturbed(const FixtureSuite *s, const FixturePerturbation *p, size_t n);

#endif
