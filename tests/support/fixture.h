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

#endif
