// End-to-end tests of `text translate` (bin/text in $ATTEND_BIN): train a tiny translator
// on the date task a few steps (log.csv, loss.png, run.json, --json), resume bit for bit on
// dates and on a pair file written here (its BPE model kept in the checkpoint as text),
// refuse model flags that differ on --resume (a forward-only encoder and the embeddings in
// the annotations too), evaluate with --json (exact match and
// alignment accuracy for dates, BLEU and chrF for pairs), translate lines from standard
// input and a file, and refuse in one line a
// checkpoint of another program (a sentence classifier's) or of another format.
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/safetensors.h"
#include "tests/support/checkpoint.h"
#include "tests/support/cli_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;
static const char *tmpdir;

#define TINY "--train-size 64 --batch 16 --embed 4 --hidden 6 --dec-embed 4 --attn-size 5 --log-every 1"
#define PAIRS_TINY "--bpe-merges 30 --max-src 12 --max-len 12 --batch 8 --embed 4 --hidden 6 --dec-embed 4 --attn-size 5 --log-every 1"
#define run_text(...) scratch_run(&sc, __VA_ARGS__)

static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

// 120 English-Spanish pairs of a small word-for-word language.
static void write_pairs(void) {
    static const char *en[] = {"the", "cat", "dog", "sees", "a", "house", "big", "runs"};
    static const char *es[] = {"el", "gato", "perro", "ve", "una", "casa", "grande", "corre"};
    char path[1024];
    snprintf(path, sizeof path, "%s/p.tsv", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 120; i++) {
        const int n = 2 + i % 4;
        for (int side = 0; side < 2; side++)
            for (int k = 0; k < n; k++)
                fprintf(f, "%s%s", k ? " " : (side ? "\t" : ""), (side ? es : en)[(i * 7 + k * 3) % 8]);
        fputc('\n', f);
    }
    fclose(f);
}

static void test_train_writes_outputs(void) {
    int rc = run_text("translate train " TINY " --steps 4 --out %s/run --json", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "dates, 64 training and 500 validation pairs, vocabularies 42 and 15") &&
               strstr(err, "bahdanau attention") && strstr(err, "text translate train: 4 steps in "),
           "header and summary: %s", err ? err : "");
    free(err);
    EXPECT(scratch_exists(&sc, "run/model.safetensors") && scratch_exists(&sc, "run/loss.png") &&
               scratch_exists(&sc, "run/run.json"),
           "missing outputs");
    char *log = read_text("run/log.csv");
    EXPECT(log && strncmp(log, "step,train_loss,valid_loss,grad_norm,grad_norm_max,seconds\n", 59) == 0,
           "log.csv header: %s", log ? log : "");
    EXPECT(scratch_count_lines(log) == 5, "log.csv has %d lines, expected 1 + 4", scratch_count_lines(log));
    free(log);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "no JSON: %s", out ? out : "");
    const char *keys[] = {"steps", "final_loss", "valid_loss", "valid_pairs", "pairs_per_s", "seconds"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        EXPECT(cJSON_IsNumber(cJSON_GetObjectItem(j, keys[k])), "JSON lacks %s: %s", keys[k], out ? out : "");
    EXPECT(cJSON_IsString(cJSON_GetObjectItem(j, "model")), "JSON lacks model");
    const cJSON *vl = cJSON_GetObjectItem(j, "valid_loss");
    // 11 steps of cross-entropy over 15 symbols: near 11 ln 15 = 29.8 at the start.
    EXPECT(cJSON_IsNumber(vl) && vl->valuedouble > 5 && vl->valuedouble < 40, "valid_loss %g",
           cJSON_IsNumber(vl) ? vl->valuedouble : -1);
    cJSON_Delete(j);
    free(out);
    rc = run_text("translate train " TINY " --steps 2 --out %s/run", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "already holds a run");
}

// Runs NAME/whole for 6 steps and NAME/part for 3, then 3 more with --resume; expects the
// same checkpoint (and key's metadata).
static void resume_case(const char *name, const char *flags, const char *key) {
    int rc = run_text("translate train %s --steps 6 --out %s/%s_whole", flags, tmpdir, name);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "%s: whole run exited %d: %s", name, rc, err ? err : "");
    free(err);
    rc = run_text("translate train %s --steps 3 --out %s/%s_part", flags, tmpdir, name);
    EXPECT(rc == 0, "%s: first part exited %d", name, rc);
    rc = run_text("translate train --steps 6 --resume --log-every 1 --out %s/%s_part", tmpdir, name);
    err = read_text("stderr.txt");
    EXPECT(rc == 0, "%s: resumed run exited %d: %s", name, rc, err ? err : "");
    free(err);
    char a[1024], b[1024], why[256];
    snprintf(a, sizeof a, "%s/%s_whole/model.safetensors", tmpdir, name);
    snprintf(b, sizeof b, "%s/%s_part/model.safetensors", tmpdir, name);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "%s: resume differs: %s", name, why);
    if (key) EXPECT(checkpoints_identical(a, b, key, why, sizeof why), "%s: %s differs: %s", name, key, why);
    char log[64];
    snprintf(log, sizeof log, "%s_part/log.csv", name);
    char *text = read_text(log);
    EXPECT(scratch_count_lines(text) == 7, "%s: resumed log.csv has %d lines", name, scratch_count_lines(text));
    free(text);
}

static void test_resume_bit_identical(void) {
    resume_case("dates", TINY, "translate.attention");
    char flags[512];
    snprintf(flags, sizeof flags, PAIRS_TINY " --attention luong-general --data pairs:%s/p.tsv", tmpdir);
    resume_case("pairs", flags, "translate.bpe");
    // The source embeddings in the annotations (forward-only, with dropout): kept by the
    // checkpoint (the resumed part trains without the flag) and resumed bit for bit.
    resume_case("annot", TINY " --attention luong-concat --forward-only --annot-embed --dropout 0.2",
                "translate.annot_embed");
    // The learning rate's decay per epoch (4 steps of 16 pairs: an epoch of 64): stored,
    // resumed bit for bit, and applied (3 steps of it are not 3 steps at the constant rate).
    resume_case("decay", TINY " --lr-decay 0.25", "train.lr_decay");
    int rc0 = run_text("translate train " TINY " --steps 3 --out %s/nodecay", tmpdir);
    EXPECT(rc0 == 0, "a run without --lr-decay exited %d", rc0);
    char nd[1024], dp[1024], why0[256];
    snprintf(nd, sizeof nd, "%s/nodecay/model.safetensors", tmpdir);
    rc0 = run_text("translate train " TINY " --lr-decay 0.25 --steps 3 --out %s/decay3", tmpdir);
    EXPECT(rc0 == 0, "a 3-step run with --lr-decay exited %d", rc0);
    snprintf(dp, sizeof dp, "%s/decay3/model.safetensors", tmpdir);
    EXPECT(!checkpoints_identical(nd, dp, NULL, why0, sizeof why0),
           "--lr-decay 0.25 left the weights of 3 steps as the constant rate's");
    SafetensorsFile df;
    Error derr;
    EXPECT(safetensors_load(&df, dp, &derr) == 0, "%s", derr.msg);
    const char *dv = safetensors_meta(&df, "train.lr_decay");
    EXPECT(dv && strcmp(dv, "0.25") == 0, "train.lr_decay: %s", dv ? dv : "missing");
    safetensors_free(&df);
    // A checkpoint from before the key: read as a constant rate (resumed, no error).
    char ok[1024];
    snprintf(ok, sizeof ok, "%s/nodecay/model.safetensors", tmpdir);
    if (checkpoint_rewrite_meta(ok, ok, "train.lr_decay", NULL) == 0) {
        rc0 = run_text("translate train --resume --steps 4 --out %s/nodecay", tmpdir);
        EXPECT(rc0 == 0, "a checkpoint without train.lr_decay: resume exited %d", rc0);
    }
    // The BPE model rides in the checkpoint as seq/bpe.h's text.
    char path[1024];
    snprintf(path, sizeof path, "%s/pairs_whole/model.safetensors", tmpdir);
    SafetensorsFile f;
    Error err;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    const char *bpe = safetensors_meta(&f, "translate.bpe");
    EXPECT(bpe && strncmp(bpe, "#attend-bpe 1\nalphabet ", 23) == 0, "translate.bpe: %s", bpe ? bpe : "missing");
    safetensors_free(&f);
    // Model flags differing on --resume are named with both values; so is another task.
    int rc = run_text("translate train --resume --steps 8 --attention none --out %s/dates_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--attention none (checkpoint: bahdanau)");
    rc = run_text("translate train --resume --steps 8 --data pairs:%s/p.tsv --out %s/dates_part", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "(checkpoint: dates)");
}

// The training options (input feeding, dropout, label smoothing) ride in the checkpoint:
// a resumed run draws the same dropout masks (bit for bit), and options that differ on
// --resume are refused; input feeding needs an attention that queries the current state.
static void test_training_options(void) {
    resume_case("options", TINY " --attention luong-general --input-feeding --dropout 0.2 --label-smoothing 0.1",
                "translate.dropout");
    char *err = read_text("stderr.txt");
    EXPECT(err && strstr(err, "luong-general attention, input feeding, dropout 0.2, label smoothing 0.1"),
           "header: %s", err ? err : "");
    free(err);
    int rc = run_text("translate train --resume --steps 8 --dropout 0.5 --out %s/options_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--dropout 0.5 (checkpoint: 0.2)");
    rc = run_text("translate train --resume --steps 8 --label-smoothing 0 --out %s/options_part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--label-smoothing 0 (checkpoint: 0.1)");
    rc = run_text("translate train --resume --steps 8 --out %s/dates_part --input-feeding", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--input-feeding");
    rc = run_text("translate train " TINY " --steps 1 --input-feeding --out %s/feed_bahdanau", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--input-feeding: --attention bahdanau queries the previous state");
    // A forward-only encoder: kept by the checkpoint (resumed and evaluated without the flag),
    // refused on a bidirectional run's --resume and with luong-dot.
    rc = run_text("translate train " TINY " --steps 2 --forward-only --attention luong-concat --out %s/fwd", tmpdir);
    EXPECT(rc == 0, "forward-only train exited %d", rc);
    rc = run_text("translate train --resume --steps 3 --out %s/fwd --json", tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"steps\": 3"), "forward-only resume: %s", out ? out : "");
    free(out);
    rc = run_text("translate eval --model %s/fwd/model.safetensors --limit 8", tmpdir);
    EXPECT(rc == 0, "forward-only eval exited %d", rc);
    rc = run_text("translate train --resume --steps 9 --forward-only --out %s/run", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "forward-only");
    rc = run_text("translate train " TINY " --steps 1 --forward-only --attention luong-dot --out %s/fwd_dot", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--forward-only: luong-dot");
    // The embeddings in the annotations: evaluated from the checkpoint alone, refused on
    // the --resume of a run without them, and with luong-dot or no attention.
    rc = run_text("translate eval --model %s/annot_part/model.safetensors --limit 8 --json", tmpdir);
    out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"alignment_accuracy\": "), "annot-embed eval: %s",
           out ? out : "");
    free(out);
    rc = run_text("translate train --resume --steps 9 --annot-embed --out %s/fwd", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "annot-embed");
    rc = run_text("translate train " TINY " --steps 1 --annot-embed --attention luong-dot --out %s/ae_dot", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--annot-embed: luong-dot");
    rc = run_text("translate train " TINY " --steps 1 --annot-embed --attention none --out %s/ae_none", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--annot-embed: attention none");
    // A reverse-only encoder: kept by the checkpoint (resumed without the flag), refused on
    // a forward-only run's --resume, beside --forward-only and with luong-dot.
    rc = run_text("translate train " TINY " --steps 2 --reverse-only --annot-embed --attention luong-concat --out %s/rev", tmpdir);
    EXPECT(rc == 0, "reverse-only train exited %d", rc);
    rc = run_text("translate train --resume --steps 3 --out %s/rev --json", tmpdir);
    out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"steps\": 3"), "reverse-only resume: %s", out ? out : "");
    free(out);
    rc = run_text("translate eval --model %s/rev/model.safetensors --limit 8", tmpdir);
    EXPECT(rc == 0, "reverse-only eval exited %d", rc);
    rc = run_text("translate train --resume --steps 9 --reverse-only --out %s/fwd", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "reverse-only");
    rc = run_text("translate train " TINY " --steps 1 --reverse-only --forward-only --out %s/rev_fwd", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--reverse-only: the encoder reads one way");
    rc = run_text("translate train " TINY " --steps 1 --reverse-only --attention luong-dot --out %s/rev_dot", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--reverse-only: luong-dot");
}

// eval --misses of the tiny date run (whose alignment accuracy on the same 40 examples is
// align): one line for each of the 8 x 40 digits whose peak misses, each peak outside its
// span with the offset the span's edge gives; an uncreatable file is a one-line error.
static void test_eval_misses(double align) {
    int rc = run_text("translate eval --model %s/run/model.safetensors --split test --limit 40 --batch 16 --misses %s/misses.tsv", tmpdir, tmpdir);
    EXPECT(rc == 0, "eval --misses exited %d", rc);
    char *tsv = read_text("misses.tsv");
    EXPECT(tsv && strncmp(tsv, "example\tformat\tsource\ttarget\tchar\tdigit\tfield\tspan_start\tspan_end\tpeak\tpeak_char\toffset\texact\n", 94) == 0,
           "misses header: %.120s", tsv ? tsv : "");
    int lines = 0, bad = 0;
    for (char *line = tsv ? strchr(tsv, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        lines++;
        const char *f = line + 1;
        for (int k = 0; k < 7 && f; k++) f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
        int s = 0, x = 0, p = 0, off = 0;
        // offset follows the peak and its character (maybe a space: no scanf across it)
        const char *o = f;
        for (int k = 0; k < 4 && o; k++) o = strchr(o, '\t') ? strchr(o, '\t') + 1 : NULL;
        if (!f || !o || sscanf(f, "%d\t%d\t%d", &s, &x, &p) != 3 || sscanf(o, "%d", &off) != 1) bad++;
        else if ((p >= s && p < x) || off != (p < s ? p - s : p - x + 1) || off == 0) bad++;
    }
    const int expected = (int)(320 * (1 - align) + 0.5);
    EXPECT(align >= 0 && lines == expected, "%d lines of misses, %d expected", lines, expected);
    EXPECT(bad == 0, "%d malformed or inside their span", bad);
    free(tsv);
    rc = run_text("translate eval --model %s/run/model.safetensors --limit 4 --misses %s/no/such/m.tsv", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "m.tsv: cannot create");
}

// eval of the tiny date run: sane figures, the JSON's keys; then of a pair run: BLEU and
// chrF in 0..100, no alignment.
// --dates-examples: the test split extended past its 1,000 examples, whose first ones are
// the split's own (the same exact match on the first 40 as eval without it); refused in one
// line for a model of sentence pairs, and above a million examples (the split's pairs are
// held in memory: a million took 440 MiB).
static void test_eval_dates_examples(double em_40) {
    int rc = run_text("translate eval --model %s/run/model.safetensors --dates-examples 1200 --batch 100 --json", tmpdir);
    char *err = read_text("stderr.txt"), *out = read_text("stdout.txt");
    EXPECT(rc == 0 && err && strstr(err, "test split, 1200 pairs"), "eval --dates-examples 1200: %s", err ? err : "");
    cJSON *j = cJSON_Parse(out ? out : "");
    const cJSON *n = cJSON_GetObjectItem(j, "pairs");
    EXPECT(cJSON_IsNumber(n) && n->valuedouble == 1200, "pairs: %s", out ? out : "");
    cJSON_Delete(j);
    free(err), free(out);
    rc = run_text("translate eval --model %s/run/model.safetensors --dates-examples 1200 --limit 40 --batch 16 --json", tmpdir);
    out = read_text("stdout.txt");
    j = cJSON_Parse(out ? out : "");
    const cJSON *em = cJSON_GetObjectItem(j, "exact_match");
    EXPECT(rc == 0 && cJSON_IsNumber(em) && em->valuedouble == em_40,
           "the extended split's first 40: %s (the split's own: %g)", out ? out : "", em_40);
    cJSON_Delete(j);
    free(out);
    rc = run_text("translate eval --model %s/pairs_whole/model.safetensors --dates-examples 10", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not the date task");
    rc = run_text("translate eval --model %s/run/model.safetensors --dates-examples 1000001", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--dates-examples: must be <= 1000000");
}

static void test_eval_json(void) {
    int rc = run_text("translate eval --model %s/run/model.safetensors --split test --limit 40 --batch 16 --json", tmpdir);
    char *err = read_text("stderr.txt"), *out = read_text("stdout.txt");
    EXPECT(rc == 0, "eval exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "text translate eval: test split, 40 pairs: exact match ") &&
               strstr(err, "alignment accuracy"),
           "eval's line: %s", err ? err : "");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "no JSON: %s", out ? out : "");
    const cJSON *em = cJSON_GetObjectItem(j, "exact_match"), *al = cJSON_GetObjectItem(j, "alignment_accuracy");
    EXPECT(cJSON_IsNumber(em) && em->valuedouble >= 0 && em->valuedouble <= 1, "exact_match: %s", out ? out : "");
    EXPECT(cJSON_IsNumber(al) && al->valuedouble >= 0 && al->valuedouble <= 1, "alignment_accuracy: %s", out ? out : "");
    EXPECT(cJSON_IsNull(cJSON_GetObjectItem(j, "bleu")) && cJSON_IsNull(cJSON_GetObjectItem(j, "chrf")),
           "dates have no BLEU: %s", out ? out : "");
    const cJSON *n = cJSON_GetObjectItem(j, "pairs");
    EXPECT(cJSON_IsNumber(n) && n->valuedouble == 40, "pairs");
    EXPECT(cJSON_IsString(cJSON_GetObjectItem(j, "split")) && cJSON_IsString(cJSON_GetObjectItem(j, "model")),
           "split, model");
    // Exact match by source length: buckets of 10 tokens whose pairs add up to all.
    const cJSON *buckets = cJSON_GetObjectItem(j, "by_source_length"), *bk;
    int total = 0;
    EXPECT(cJSON_IsArray(buckets) && cJSON_GetArraySize(buckets) >= 1, "by_source_length: %s", out ? out : "");
    cJSON_ArrayForEach(bk, buckets) {
        const cJSON *from = cJSON_GetObjectItem(bk, "from"), *np = cJSON_GetObjectItem(bk, "pairs");
        EXPECT(cJSON_IsNumber(from) && ((int)from->valuedouble - 1) % 10 == 0 && cJSON_IsNumber(np) &&
                   cJSON_IsNumber(cJSON_GetObjectItem(bk, "exact_match")),
               "a bucket: %s", out ? out : "");
        total += cJSON_IsNumber(np) ? (int)np->valuedouble : 0;
    }
    EXPECT(total == 40, "the buckets hold %d pairs", total);
    EXPECT(err && strstr(err, "exact match by source length (tokens): "), "bucket line: %s", err ? err : "");
    EXPECT(cJSON_GetObjectItem(j, "beam") && cJSON_GetObjectItem(j, "beam")->valuedouble == 1, "beam");
    const double align = cJSON_IsNumber(al) ? al->valuedouble : -1;
    const double em_40 = cJSON_IsNumber(em) ? em->valuedouble : -1;
    cJSON_Delete(j);
    free(err), free(out);
    test_eval_misses(align);
    // Beam search: its own line and JSON; beam 1 is greedy's figures exactly.
    rc = run_text("translate eval --model %s/run/model.safetensors --limit 40 --batch 16 --beam 3 --length-alpha 0.5 --json", tmpdir);
    err = read_text("stderr.txt"), out = read_text("stdout.txt");
    EXPECT(rc == 0 && err && strstr(err, "(bahdanau attention, beam 3, length alpha 0.5)"), "beam eval: %s", err ? err : "");
    j = cJSON_Parse(out ? out : "");
    EXPECT(j && cJSON_GetObjectItem(j, "beam")->valuedouble == 3, "beam JSON: %s", out ? out : "");
    cJSON_Delete(j);
    free(err), free(out);
    rc = run_text("translate eval --model %s/pairs_whole/model.safetensors --split valid --json", tmpdir);
    out = read_text("stdout.txt");
    EXPECT(rc == 0, "pairs eval exited %d", rc);
    j = cJSON_Parse(out ? out : "");
    const cJSON *bleu = cJSON_GetObjectItem(j, "bleu"), *chrf = cJSON_GetObjectItem(j, "chrf");
    EXPECT(cJSON_IsNumber(bleu) && bleu->valuedouble >= 0 && bleu->valuedouble <= 100 &&
               cJSON_IsNumber(chrf) && chrf->valuedouble >= 0 && chrf->valuedouble <= 100,
           "BLEU, chrF: %s", out ? out : "");
    EXPECT(cJSON_IsNull(cJSON_GetObjectItem(j, "alignment_accuracy")), "pairs have no alignment: %s", out ? out : "");
    cJSON_Delete(j);
    free(out);
    test_eval_dates_examples(em_40);
    // A file that is not a translator's checkpoint: one line.
    rc = run_text("translate eval --model %s/run/log.csv", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "log.csv");
}

// translate: one output line per input line, each a short string of the target alphabet
// (a blank line for a blank one), from standard input (greedy) and from --input (beam 3);
// a bad line stops
// with one line naming it, the lines before it printed.
static void test_translate_lines(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/in.txt", tmpdir);
    CHECK(scratch_write_text(path, "3 march 1987\n\nTuesday, March 3, 1987\r\n03.03.87\n") == 0);
    for (int from_file = 0; from_file < 2; from_file++) {
        int rc = from_file ? run_text("translate translate --model %s/run/model.safetensors --beam 3 --input %s", tmpdir, path)
                           : run_text("translate translate --model %s/run/model.safetensors < %s", tmpdir, path);
        char *out = read_text("stdout.txt");
        EXPECT(rc == 0, "translate exited %d", rc);
        EXPECT(scratch_count_lines(out) == 4, "translate printed %d lines: %s", scratch_count_lines(out), out ? out : "");
        int line = 0;
        for (const char *p = out; p && *p; line++) {
            const size_t n = strcspn(p, "\n");
            EXPECT(n <= 10 && strspn(p, "-0123456789") == n, "line %d: '%.*s'", line + 1, (int)n, p);
            if (line == 1) EXPECT(n == 0, "a blank line gave '%.*s'", (int)n, p);
            p += n + (p[n] == '\n');
        }
        free(out);
    }
    snprintf(path, sizeof path, "%s/bad.txt", tmpdir);
    CHECK(scratch_write_text(path, "1 jan 2000\n2 feb 2001\n3 m\xc3\xa4r 2002\nlater\n") == 0);
    int rc = run_text("translate translate --model %s/run/model.safetensors --input %s", tmpdir, path);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "bad.txt: line 3: byte 4");
    char *out = read_text("stdout.txt");
    EXPECT(scratch_count_lines(out) == 2, "printed %d lines before the bad one", scratch_count_lines(out));
    free(out);
}

static void test_other_checkpoints_refused(void) {
    // A sentence classifier's checkpoint in the run folder.
    char path[1024];
    snprintf(path, sizeof path, "%s/s.tsv", tmpdir);
    CHECK(scratch_write_text(path, "1\tgood\n0\tbad\n1\tgreat\n0\tawful\n1\tnice\n0\tpoor\n") == 0);
    int rc = run_text("classify train --T 4 --embed 4 --hidden 4 --batch 2 --valid-share 0.34 "
                      "--data %s/s.tsv --steps 1 --out %s/cls", tmpdir, tmpdir);
    EXPECT(rc == 0, "classify train exited %d", rc);
    rc = run_text("translate train --resume --steps 2 --out %s/cls", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text translate checkpoint (format 'attend-text-classify-1'");
    // A translator's checkpoint with another format.
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/run/model.safetensors", tmpdir);
    snprintf(dst, sizeof dst, "%s/other/model.safetensors", tmpdir);
    snprintf(path, sizeof path, "%s/other", tmpdir);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    CHECK(system(cmd) == 0);
    if (checkpoint_rewrite_meta(src, dst, "format", "attend-draw-9") == 0) {
        rc = run_text("translate train --resume --steps 8 --out %s/other", tmpdir);
        EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text translate checkpoint (format 'attend-draw-9'");
    }
    // Metadata whose vocabularies are not the date task's.
    snprintf(dst, sizeof dst, "%s/other/vocab.safetensors", tmpdir);
    if (checkpoint_rewrite_meta(src, dst, "translate.tgt_vocab", "14") == 0) {
        rc = run_text("translate eval --model %s", dst);
        EXPECT_ONE_LINE_ERROR(&sc, rc, "vocabularies of 42 and 14 for the date task");
    }
    rc = run_text("translate eval --model %s/cls/model.safetensors", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text translate checkpoint");
    // ... and the classifier refuses the translator's.
    rc = run_text("classify eval --model %s/run/model.safetensors", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text classifier checkpoint");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_translate", "text")) return 1;
    tmpdir = sc.dir;
    write_pairs();
    RUN(test_train_writes_outputs);
    RUN(test_resume_bit_identical);
    RUN(test_training_options);
    RUN(test_eval_json);
    RUN(test_translate_lines);
    RUN(test_other_checkpoints_refused);
    scratch_remove(sc.dir);
    return test_summary();
}
