// `text translate translate` (cli/text_translate.h): each line of a file or standard input
// translated, greedily or by beam search (--beam), one output line each.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/text_translate.h"
#include "cli/text_translate_state.h"
#include "cli/threads.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "cli/text_translate_decode.h"

int text_translate_translate_main(int argc, char **argv) {
    const char *model = NULL, *input = NULL;
    int threads = 1, beam = 1;
    float length_alpha = 0.7f;
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "a checkpoint of text translate train", .metavar = "FILE", .required = true},
        {"input", ARG_STRING, &input, "sentences, one a line (default: standard input)", .metavar = "FILE"},
        {"beam", ARG_INT, &beam, "beam width (1: greedy)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"length-alpha", ARG_FLOAT, &length_alpha, "beam search: hypotheses scored by log p / length^X", .has_min = true, .min = 0, .has_max = true, .max = 4},
        {"threads", ARG_INT, &threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "text translate translate --model FILE [--input FILE]", "text translate", &code))
        return code;
    gemm_set_threads(threads);
    Error err;
    TranslateModel tm;
    if (translate_model_load(&tm, model, 1, &err)) {
        fprintf(stderr, "text translate translate: %s\n", err.msg);
        return 1;
    }
    const char *name = input ? input : "standard input";
    FILE *in = input ? fopen(input, "rb") : stdin;
    int rc = 0;
    if (!in) {
        fprintf(stderr, "text translate translate: %s: cannot open\n", input);
        rc = 1;
    }
    const TranslatorConfig *c = &tm.state.cfg;
    int *ids = xmalloc((size_t)c->S * sizeof(int)), *out = xmalloc((size_t)c->max_len * sizeof(int));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long lineno = 0;
    while (rc == 0 && (got = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        int len, n;
        if ((size_t)got != strlen(line)) {
            fprintf(stderr, "text translate translate: %s: line %ld: a NUL byte\n", name, lineno);
            rc = 1;
            break;
        }
        if (strspn(line, " \t") == (size_t)got) {  // a blank line: a blank line out
            printf("\n");
            continue;
        }
        if (translate_encode_source(&tm.state, line, ids, &len, &err)) {
            text_write_linef(stderr, "text translate translate: %s: line %ld: %s", name, lineno, err.msg);
            rc = 1;
            break;
        }
        translate_model_decode(&tm, ids, &len, 1, beam, length_alpha, out, &n, NULL);
        char *text = translate_target_text(&tm.state, out, n);
        printf("%s\n", text);
        fflush(stdout);
        free(text);
    }
    free(line), free(ids), free(out);
    if (in && in != stdin) fclose(in);
    translate_model_free(&tm);
    return rc;
}
