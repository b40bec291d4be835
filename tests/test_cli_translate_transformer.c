// End-to-end tests of `text translate train --model transformer` (bin/text in $ATTEND_BIN):
// train a tiny Transformer on the date task (its header, --json), resume it bit for bit
// (with dropout and label smoothing, whose masks a resumed run draws alike, and --warmup),
// evaluate with --json (exact match and the cross-attention's alignment accuracy), translate
// standard input, show (one PNG per sentence), score and report; refuse in one line, with no
// folder made, heads that do not divide d_model, an odd d_model, a position table shorter
// than the source, and flags of the other model kind (new runs and --resume, both ways);
// and read a checkpoint from before translate.model as an LSTM's.
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "tests/support/checkpoint.h"
#include "tests/support/cli_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;
static const char *tmpdir;

#define TINY "--model transformer --train-size 64 --batch 16 --d-model 8 --heads 2 --d-ff 12 --layers 1 --log-every 1"
#define LSTM_TINY "--train-size 64 --batch 16 --embed 4 --hidden 6 --dec-embed 4 --attn-size 5 --log-every 1"
#define run_text(...) scratch_run(&sc, __VA_ARGS__)

static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

static void test_train_writes_outputs(void) {
    int rc = run_text("translate train " TINY " --steps 4 --out %s/run --json", tmpdir);
    char *err = read_text("stderr.txt"), *out = read_text("stdout.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "vocabularies 42 and 15; Transformer d 8, 2 heads, d_ff 12, 1 + 1 layers, pre-LN"),
           "header: %s", err ? err : "");
    cJSON *j = cJSON_Parse(out ? out : "");
    const cJSON *vl = cJSON_GetObjectItem(j, "valid_loss");
    EXPECT(cJSON_IsNumber(vl) && vl->valuedouble > 5 && vl->valuedouble < 40, "valid_loss: %s", out ? out : "");
    cJSON_Delete(j);
    free(err), free(out);
    EXPECT(scratch_exists(&sc, "run/model.safetensors") && scratch_exists(&sc, "run/loss.png"), "outputs");
}

// NAME/whole 6 steps; NAME/part 3, then 3 more with --resume: the same checkpoint.
static void resume_case(const char *name, const char *flags) {
    int rc = run_text("translate train %s --steps 6 --out %s/%s_whole", flags, tmpdir, name);
    EXPECT(rc == 0, "%s: whole run exited %d", name, rc);
    rc = run_text("translate train %s --steps 3 --out %s/%s_part", flags, tmpdir, name);
    EXPECT(rc == 0, "%s: first part exited %d", name, rc);
    rc = run_text("translate train --steps 6 --resume --log-every 1 --out %s/%s_part", tmpdir, name);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "%s: resumed run exited %d: %s", name, rc, err ? err : "");
    free(err);
    char a[1024], b[1024], why[256];
    snprintf(a, sizeof a, "%s/%s_whole/model.safetensors", tmpdir, name);
    snprintf(b, sizeof b, "%s/%s_part/model.safetensors", tmpdir, name);
    EXPECT(checkpoints_identical(a, b, "translate.model", why, sizeof why), "%s: resume differs: %s", name, why);
}

static void test_resume_bit_identical(void) {
    resume_case("tf", TINY " --post-ln --dropout 0.2 --label-smoothing 0.1 --warmup 4");
    int rc = run_text("translate train --resume --steps 8 --heads 4 --out %s/tf_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--heads 4 (checkpoint: 2)");
    rc = run_text("translate train --resume --steps 8 --attention luong-dot --out %s/tf_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "holds --model transformer, and --attention is a flag of the other model");
    rc = run_text("translate train --resume --steps 8 --model lstm --out %s/tf_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--model lstm (checkpoint: transformer)");
    // An LSTM's run refuses the Transformer's flags on --resume.
    rc = run_text("translate train " LSTM_TINY " --steps 1 --out %s/lstm", tmpdir);
    EXPECT(rc == 0, "lstm train exited %d", rc);
    rc = run_text("translate train --resume --steps 2 --d-model 16 --out %s/lstm", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "holds --model lstm, and --d-model is a flag of the other model");
    rc = run_text("translate train --resume --steps 2 --model transformer --out %s/lstm", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--model transformer (checkpoint: lstm)");
}

// A checkpoint without translate.model (before the Transformer) is an LSTM's.
static void test_old_checkpoint_is_lstm(void) {
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/lstm/model.safetensors", tmpdir);
    snprintf(dst, sizeof dst, "%s/old.safetensors", tmpdir);
    if (checkpoint_rewrite_meta(src, dst, "translate.model", NULL)) return;
    int rc = run_text("translate eval --model %s --limit 8 --json", dst);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"attention\": \"bahdanau\""), "old checkpoint: %d %s", rc, out ? out : "");
    free(out);
}

static void test_bad_configurations_refused(void) {
    static const struct {
        const char *flags, *message;
    } cases[] = {{"--d-model 10 --heads 4", "4 heads do not divide the model size 10"},
                 {"--d-model 9 --heads 3", "sinusoidal positions need an even model size"},
                 {"--positions 20", "the source: a sequence of 40 positions is longer than the 20"},
                 {"--attention luong-dot", "--attention: not a flag of --model transformer"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rc = run_text("translate train " TINY " %s --steps 1 --out %s/bad", cases[k].flags, tmpdir);
        EXPECT_ONE_LINE_ERROR(&sc, rc, cases[k].message);
        EXPECT(!scratch_exists(&sc, "bad"), "%s: a folder was made", cases[k].flags);
    }
    int rc = run_text("translate train " LSTM_TINY " --heads 2 --steps 1 --out %s/bad", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--heads: not a flag of --model lstm");
    EXPECT(!scratch_exists(&sc, "bad"), "a folder was made");
}

static void test_eval_translate_show(void) {
    int rc = run_text("translate eval --model %s/run/model.safetensors --limit 20 --batch 8 --json", tmpdir);
    char *err = read_text("stderr.txt"), *out = read_text("stdout.txt");
    EXPECT(rc == 0 && err && strstr(err, "alignment accuracy") && strstr(err, "(transformer attention, greedy)"),
           "eval: %d %s", rc, err ? err : "");
    cJSON *j = cJSON_Parse(out ? out : "");
    const cJSON *em = cJSON_GetObjectItem(j, "exact_match"), *al = cJSON_GetObjectItem(j, "alignment_accuracy");
    EXPECT(cJSON_IsNumber(em) && em->valuedouble >= 0 && em->valuedouble <= 1 && cJSON_IsNumber(al) &&
               al->valuedouble >= 0 && al->valuedouble <= 1,
           "eval JSON: %s", out ? out : "");
    cJSON_Delete(j);
    free(err), free(out);
    rc = run_text("translate eval --model %s/run/model.safetensors --limit 8 --beam 3", tmpdir);
    EXPECT(rc == 0, "beam eval exited %d", rc);
    char path[1024];
    snprintf(path, sizeof path, "%s/in.txt", tmpdir);
    CHECK(scratch_write_text(path, "3 march 1987\n\n03.03.87\n") == 0);
    rc = run_text("translate translate --model %s/run/model.safetensors < %s", tmpdir, path);
    out = read_text("stdout.txt");
    EXPECT(rc == 0 && scratch_count_lines(out) == 3, "translate: %d, %s", rc, out ? out : "");
    for (const char *p = out; p && *p;) {
        const size_t n = strcspn(p, "\n");
        EXPECT(n <= 10 && strspn(p, "-0123456789") == n, "a line: '%.*s'", (int)n, p);
        p += n + (p[n] == '\n');
    }
    free(out);
    rc = run_text("translate show --model %s/run --count 3 --out %s/run/show", tmpdir, tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0, "show exited %d: %s", rc, err ? err : "");
    free(err);
    for (int k = 1; k <= 3; k++) EXPECT(scratch_exists(&sc, "run/show/align_%03d.png", k), "no align_%03d.png", k);
    rc = run_text("translate score --model %s/run --samples 20 --json", tmpdir);
    EXPECT(rc == 0, "score exited %d", rc);
    rc = run_text("translate report --model %s/run", tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0 && scratch_exists(&sc, "run/report.html"), "report: %d %s", rc, err ? err : "");
    free(err);
    char *html = read_text("run/report.html");
    EXPECT(html && strstr(html, "Transformer, d_model 8, 2 heads, d_ff 12") && strstr(html, "Attention transformer"),
           "the report's model facts");
    free(html);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_translate_transformer", "text")) return 1;
    tmpdir = sc.dir;
    RUN(test_train_writes_outputs);
    RUN(test_resume_bit_identical);
    RUN(test_old_checkpoint_is_lstm);
    RUN(test_bad_configurations_refused);
    RUN(test_eval_translate_show);
    scratch_remove(sc.dir);
    return test_summary();
}
