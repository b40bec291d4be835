// test_core_progress.c: the progress reporter when stderr is not a terminal: quiet until
// ~5 s have passed, then one plain line with count, percentage, rate and time left; a final
// line at the end. With named units and items (training: steps and images), the count, both
// rates and the time left are right for a step budget, a time budget and both at once (a
// time budget once showed seconds counted as steps). Time is simulated by moving the start
// back instead of sleeping.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/progress.h"
#include "tests/support/test.h"

// Runs fn with stderr sent to a temporary file and returns what it wrote (malloc'd).
static char *capture_stderr(void (*fn)(void)) {
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    if (!tmp) return NULL;
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
    rewind(tmp);
    if (n > 0 && fread(text, 1, (size_t)n, tmp) != (size_t)n) text[0] = 0;
    fclose(tmp);
    return text;
}

static void run_count(void) {
    Progress p;
    progress_start(&p, "train", 1000, 0);
    progress_update(&p, 10, "loss 1.0");  // too soon: nothing
    p.start -= 10.0;                      // pretend 10 s have passed
    p.last_print -= 10.0;
    progress_update(&p, 250, "loss 0.5");
    progress_update(&p, 260, "loss 0.4");  // just printed: nothing
    progress_end(&p, 1000, "loss 0.1");
}

static void test_progress_plain_lines(void) {
    char *text = capture_stderr(run_count);
    EXPECT(text != NULL);
    if (!text) return;
    int lines = 0;
    for (char *c = text; *c; c++) lines += *c == '\n';
    EXPECT(lines == 2, "%d lines:\n%s", lines, text);
    EXPECT(strstr(text, "\r") == NULL, "carriage return in a log: %s", text);
    EXPECT(strstr(text, "loss 1.0") == NULL && strstr(text, "loss 0.4") == NULL, "%s", text);
    // 250 of 1000 after 10 s: 25 per second, 750 left, ETA 30 s.
    EXPECT(strstr(text, "train: 250/1000 (25.0%) 25/s, 0:30 left loss 0.5"), "%s", text);
    // The end line's rate counts the real time this test took too (seconds under valgrind):
    // 1000 in 10 s and a little more.
    const char *done = strstr(text, "train: 1000/1000 done in 0:1");
    double rate = 0;
    EXPECT(done && sscanf(strchr(done, '(') ? strchr(done, '(') : "", "(%lf/s) loss 0.1", &rate) == 1 &&
               rate > 80 && rate <= 100, "%s", text);
    free(text);
}

static void run_budget(void) {
    Progress p;
    progress_start(&p, "eval", 0, 60.0);
    p.start -= 15.0;
    p.last_print -= 15.0;
    progress_update(&p, 300, "");
    progress_end(&p, 1200, NULL);
}

static void test_progress_time_budget(void) {
    char *text = capture_stderr(run_budget);
    EXPECT(text != NULL);
    if (!text) return;
    // No total: the time left comes from the budget (60 s - 15 s).
    EXPECT(strstr(text, "eval: 300 (25.0%) 20/s, 0:45 left"), "%s", text);
    EXPECT(strstr(text, "eval: 1200 done in 0:15"), "%s", text);
    free(text);
}

// A 4-minute training budget, 200 s in: 3600 steps of 32 images.
static void run_steps_in_minutes(void) {
    Progress p;
    progress_start(&p, "train", 0, 240.0);
    progress_name(&p, "steps", "images");
    p.start -= 200.0;
    p.last_print -= 200.0;
    progress_items(&p, 3600.0 * 32);
    progress_update(&p, 3600, "loss 0.998");
    progress_items(&p, 4320.0 * 32);
    p.start -= 40.0;
    progress_end(&p, 4320, "loss 0.9");
}

static void test_progress_steps_in_a_time_budget(void) {
    char *text = capture_stderr(run_steps_in_minutes);
    EXPECT(text != NULL);
    if (!text) return;
    EXPECT(strstr(text, "train: 3600 steps (83.3%) 18 steps/s, 576 images/s, 0:40 left loss 0.998\n"),
           "%s", text);
    EXPECT(strstr(text, "train: 4320 steps done in 4:00 (18 steps/s, 576 images/s) loss 0.9\n"), "%s", text);
    free(text);
}

// A step total and a time budget: the one that ends sooner gives the fraction and the
// time left. 10 s in, 100 of 1000 steps (90 s left by count), 30 s budget (20 s left).
static void run_both(void) {
    Progress p;
    progress_start(&p, "train", 1000, 30.0);
    progress_name(&p, "steps", "images");
    p.start -= 10.0;
    p.last_print -= 10.0;
    progress_items(&p, 1600);
    progress_update(&p, 100, "");
}

static void run_both_count_first(void) {
    Progress p;
    progress_start(&p, "train", 200, 300.0);
    progress_name(&p, "steps", NULL);
    p.start -= 10.0;
    p.last_print -= 10.0;
    progress_update(&p, 100, "");
}

static void test_progress_sooner_end_wins(void) {
    char *text = capture_stderr(run_both);
    EXPECT(text && strstr(text, "train: 100/1000 steps (33.3%) 10 steps/s, 160 images/s, 0:20 left"),
           "%s", text ? text : "");
    free(text);
    text = capture_stderr(run_both_count_first);
    EXPECT(text && strstr(text, "train: 100/200 steps (50.0%) 10 steps/s, 0:10 left"), "%s",
           text ? text : "");
    free(text);
}

int main(void) {
    RUN(test_progress_plain_lines);
    RUN(test_progress_time_budget);
    RUN(test_progress_steps_in_a_time_budget);
    RUN(test_progress_sooner_end_wins);
    return test_summary();
}
