// test_captions.c: caption dataset readers (TSV, Flickr8k, COCO, Karpathy) on small files
// written here, with broken records (missing image, empty caption, invalid UTF-8, wrong
// JSON types) and their skip counts; the data spec parser; the limits (huge caption line,
// deep JSON, file cap); image folder listing; the image cache and its bound; the scenes
// folder writer read back through the TSV reader; small sets without splits still hold a
// validation and a test image out.
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/captions.h"
#include "datasets/captions_json.h"
#include "datasets/captions_text.h"
#include "datasets/imagecache.h"
#include "datasets/imagefolder.h"
#include "datasets/scenes.h"
#include "datasets/scenes_folder.h"
#include "tests/support/test.h"
#include "vision/image.h"
#include "vision/png.h"

static char g_root[512];  // a fresh temporary folder for this run

// ---------------------------------------------------------------------------------------
// helpers

static const char *tmp_path(char *buf, size_t cap, const char *rel) {
    snprintf(buf, cap, "%s/%s", g_root, rel);
    return buf;
}

static void write_bytes(const char *rel, const void *data, size_t len) {
    char p[1024];
    Error err;
    CHECK(file_write_atomic(tmp_path(p, sizeof p, rel), data, len, &err) == 0, "%s", err.msg);
}

static void write_text(const char *rel, const char *text) {
    write_bytes(rel, text, strlen(text));
}

static void make_dir(const char *rel) {
    char p[1024];
    Error err;
    CHECK(make_dirs(tmp_path(p, sizeof p, rel), &err) == 0, "%s", err.msg);
}

// A solid-colour w x h PNG (channels 1 or 3).
static void write_image(const char *rel, int w, int h, int channels, unsigned char r,
                        unsigned char g, unsigned char b) {
    unsigned char *pix = xmalloc((size_t)w * h * channels);
    for (int i = 0; i < w * h; i++) {
        if (channels == 1) {
            pix[i] = r;
        } else {
            pix[3 * i] = r, pix[3 * i + 1] = g, pix[3 * i + 2] = b;
        }
    }
    char p[1024];
    Error err;
    CHECK(write_png_u8(tmp_path(p, sizeof p, rel), pix, h, w, channels, &err) == 0, "%s", err.msg);
    free(pix);
}

// 1 when some warning of set contains every given piece.
static int has_warning(const CaptionSet *set, const char *a, const char *b) {
    for (int i = 0; i < set->n_warnings; i++)
        if (strstr(set->warnings[i], a) && (!b || strstr(set->warnings[i], b))) return 1;
    return 0;
}

static int find_image(const CaptionSet *set, const char *id) {
    for (int i = 0; i < set->n_images; i++)
        if (!strcmp(set->images[i].id, id)) return i;
    return -1;
}

// A caption reader: caption_read_tsv, caption_read_coco, caption_read_karpathy.
typedef int (*CaptionRead)(CaptionSet *set, const char *path, const char *images_dir,
                           const CaptionOptions *opts, Error *err);

// Reads the caption file rel of this run's folder, its images in images_rel, with read.
// 0, or -1 after a failure naming the reader's error.
static int read_set(CaptionSet *set, CaptionRead read, const char *rel, const char *images_rel) {
    char path[1024], img[1024];
    tmp_path(path, sizeof path, rel);
    tmp_path(img, sizeof img, images_rel);
    Error err;
    const int rc = read(set, path, img, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    return rc;
}

// Every {where, what} of want (n) is a warning of set (has_warning).
static void expect_warnings(const CaptionSet *set, const char *const (*want)[2], size_t n) {
    for (size_t i = 0; i < n; i++)
        EXPECT(has_warning(set, want[i][0], want[i][1]), "no warning \"%s ... %s\"", want[i][0],
               want[i][1] ? want[i][1] : "");
}

static void print_warnings(const CaptionSet *set) {
    for (int i = 0; i < set->n_warnings; i++) printf("  warning: %s\n", set->warnings[i]);
}

// ---------------------------------------------------------------------------------------
// spec and UTF-8

static void test_spec_parse_valid(void) {
    CaptionSpec s;
    Error err;
    EXPECT(caption_spec_parse(&s, "scenes", &err) == 0 && s.kind == CAPTION_SOURCE_SCENES);
    EXPECT(caption_spec_parse(&s, "flickr8k:data/f8k", &err) == 0);
    EXPECT(s.kind == CAPTION_SOURCE_FLICKR8K && !strcmp(s.file, "data/f8k") && !s.images[0]);
    EXPECT(caption_spec_parse(&s, "coco:ann/captions.json:img/val2014", &err) == 0);
    EXPECT(s.kind == CAPTION_SOURCE_COCO && !strcmp(s.file, "ann/captions.json") &&
           !strcmp(s.images, "img/val2014"));
    EXPECT(caption_spec_parse(&s, "karpathy:dataset_coco.json:a:b", &err) == 0);
    EXPECT(s.kind == CAPTION_SOURCE_KARPATHY && !strcmp(s.file, "dataset_coco.json") &&
               !strcmp(s.images, "a:b"),
           "images = '%s'", s.images);
    EXPECT(caption_spec_parse(&s, "tsv:c.tsv:imgs", &err) == 0 && s.kind == CAPTION_SOURCE_TSV);
    EXPECT(!strcmp(caption_source_name(s.kind), "tsv"));
}

static void test_spec_parse_errors(void) {
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"", "empty"},
        {"flickr9k:x", "unknown data kind 'flickr9k'"},
        {"flickr8k", "missing folder"},
        {"flickr8k:", "empty folder"},
        {"coco:only.json", "expected coco:JSON:IMAGES"},
        {"coco::imgs", "empty JSON"},
        {"karpathy:d.json:", "empty IMAGES"},
        {"tsv", "expected tsv:FILE:IMAGES"},
        {"scenes:x", "scenes takes no path"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CaptionSpec s;
        Error err = {{0}};
        int rc = caption_spec_parse(&s, bad[i].spec, &err);
        EXPECT(rc == -1, "'%s' accepted", bad[i].spec);
        EXPECT(strstr(err.msg, bad[i].needle) && !strchr(err.msg, '\n'), "'%s': %s", bad[i].spec,
               err.msg);
    }
    char longspec[CAPTION_PATH_MAX + 32] = "tsv:";
    memset(longspec + 4, 'x', CAPTION_PATH_MAX + 8);
    longspec[CAPTION_PATH_MAX + 12] = 0;
    longspec[10] = ':';
    CaptionSpec s;
    Error err;
    EXPECT(caption_spec_parse(&s, longspec, &err) == -1 && strstr(err.msg, "longer than"), "%s",
           err.msg);
}

static void test_utf8_valid(void) {
    size_t at = 99;
    EXPECT(caption_utf8_valid("a dog", 5, NULL));
    {
        const char *ok = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\xB6";
        EXPECT(caption_utf8_valid(ok, strlen(ok), NULL) && strlen(ok) == 14);
    }
    EXPECT(!caption_utf8_valid("ab\xC3", 3, &at) && at == 2, "truncated: at %zu", at);
    EXPECT(!caption_utf8_valid("\xC0\xAF", 2, &at) && at == 0, "overlong 2-byte");
    EXPECT(!caption_utf8_valid("x\xE0\x80\xAF", 4, &at) && at == 1, "overlong 3-byte");
    EXPECT(!caption_utf8_valid("\xED\xA0\x80", 3, NULL), "surrogate");
    EXPECT(!caption_utf8_valid("\xF4\x90\x80\x80", 4, NULL), "past U+10FFFF");
    EXPECT(!caption_utf8_valid("\x80", 1, NULL), "lone continuation");
    EXPECT(!caption_utf8_valid("\xFF", 1, NULL));
    EXPECT(caption_utf8_valid("\xF4\x8F\xBF\xBF", 4, NULL), "U+10FFFF is valid");
}

static void test_heldout_split_is_deterministic(void) {
    int counts[SPLIT_COUNT] = {0};
    char id[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof id, "%d", i);
        Split a = caption_heldout_split(id, 0.05, 0.05);
        EXPECT(a == caption_heldout_split(id, 0.05, 0.05));
        counts[a]++;
    }
    // 5 % each of 20000 = 1000, binomial sd ~31: 6 sd bounds.
    EXPECT(counts[SPLIT_VALID] > 810 && counts[SPLIT_VALID] < 1190, "valid %d",
           counts[SPLIT_VALID]);
    EXPECT(counts[SPLIT_TEST] > 810 && counts[SPLIT_TEST] < 1190, "test %d", counts[SPLIT_TEST]);
    EXPECT(caption_heldout_split("123", 0, 0) == SPLIT_TRAIN);
    EXPECT(caption_heldout_split("123", 1, 0) == SPLIT_VALID);
    EXPECT(caption_heldout_split("123", 0, 1) == SPLIT_TEST);
}

// ---------------------------------------------------------------------------------------
// TSV

static void test_tsv_reads_and_skips(void) {
    make_dir("tsv/img");
    write_image("tsv/img/a.png", 8, 8, 3, 255, 0, 0);
    write_image("tsv/img/b.png", 8, 8, 1, 10, 0, 0);
    write_image("tsv/img/c.png", 8, 8, 3, 0, 0, 255);
    write_image("tsv/img/d.png", 8, 8, 3, 0, 9, 0);
    write_text("tsv/c.tsv",
               "file\tcaption\tsplit\r\n"           // 1 header
               "a.png\tA red square.\ttrain\r\n"    // 2
               "a.png\t  a red thing  \ttrain\n"    // 3 (trimmed)
               "b.png\tgrey\tval\n"                 // 4
               "missing.png\tnothing here\n"        // 5 missing image
               "missing.png\tstill nothing\n"       // 6 same image: no second warning
               "c.png\t   \ttest\n"                 // 7 empty caption
               "c.png\tbad \xC3\x28 bytes\ttest\n"  // 8 invalid UTF-8
               "\n"                                 // 9 blank: ignored
               "c.png\tno split given\n"            // 10 -> (first split stays test)
               "d.png\tunknown split\tholdout\n"    // 11 bad split
               "d.png\ttoo\tmany\tfields\n"         // 12
               "d.png no tab at all\n"              // 13
               "d.png\ta green square");            // 14 (no final newline), hash split
    CaptionSet set;
    if (read_set(&set, caption_read_tsv, "tsv/c.tsv", "tsv/img")) return;
    EXPECT(set.n_images == 4, "images %d", set.n_images);
    EXPECT(set.n_captions == 5, "captions %d", set.n_captions);
    int a = find_image(&set, "a.png"), b = find_image(&set, "b.png"), c = find_image(&set, "c.png"),
        d = find_image(&set, "d.png");
    EXPECT(a == 0 && b == 1 && c == 2 && d == 3, "order %d %d %d %d", a, b, c, d);
    if (a != 0 || d != 3) return;
    EXPECT(set.images[a].n_captions == 2 && set.images[a].split == SPLIT_TRAIN);
    EXPECT(!strcmp(caption_set_caption(&set, a, 0), "A red square."));
    EXPECT(!strcmp(caption_set_caption(&set, a, 1), "a red thing"), "'%s'",
           caption_set_caption(&set, a, 1));
    EXPECT(set.images[b].split == SPLIT_VALID && set.images[c].split == SPLIT_TEST);
    EXPECT(!strcmp(caption_set_caption(&set, c, 0), "no split given"));
    EXPECT(set.images[d].split == caption_heldout_split("d.png", 0.05, 0.05));
    EXPECT(!strcmp(caption_set_caption(&set, d, 0), "a green square"));
    EXPECT(strstr(set.images[a].path, "tsv/img/a.png") != NULL, "%s", set.images[a].path);
    EXPECT(set.images[a].numeric_id == -1);
    // Skips: missing.png (2 captions), line 7, 8, 11, 12, 13.
    EXPECT(set.images_skipped == 1, "images skipped %d", set.images_skipped);
    EXPECT(set.captions_skipped == 7, "captions skipped %d", set.captions_skipped);
    EXPECT(has_warning(&set, "c.tsv:5:", "missing.png not found"));
    EXPECT(!has_warning(&set, "c.tsv:6:", NULL));
    EXPECT(has_warning(&set, "c.tsv:7:", "empty caption"));
    EXPECT(has_warning(&set, "c.tsv:8:", "invalid UTF-8"));
    EXPECT(has_warning(&set, "c.tsv:11:", "unknown split 'holdout'"));
    EXPECT(has_warning(&set, "c.tsv:12:", "fields"));
    EXPECT(has_warning(&set, "c.tsv:13:", "no tab"));
    EXPECT(set.n_warnings == 6, "%d warnings", set.n_warnings);
    if (set.n_warnings != 6) print_warnings(&set);
    int nc;
    EXPECT(caption_set_count(&set, SPLIT_TRAIN, &nc) == 1 + (set.images[d].split == SPLIT_TRAIN) &&
           nc >= 2);
    int *idx;
    int n = caption_set_split_indices(&set, SPLIT_VALID, &idx);
    EXPECT(n >= 1 && idx[0] == b);
    free(idx);

    // Filtering keeps captions with their images.
    unsigned char keep[4] = {1, 0, 1, 1};
    caption_set_filter(&set, keep);
    EXPECT(set.n_images == 3 && set.n_captions == 4 && set.images_skipped == 2 &&
           set.captions_skipped == 8);
    EXPECT(!strcmp(set.images[1].id, "c.png") &&
           !strcmp(caption_set_caption(&set, 1, 0), "no split given"));
    EXPECT(!strcmp(caption_set_caption(&set, 2, 0), "a green square"));
    caption_set_free(&set);
    EXPECT(set.n_images == 0 && set.images == NULL);
}

static void test_nothing_usable_is_an_error(void) {
    make_dir("empty/img");
    write_text("empty/c.tsv", "gone.png\ta caption\nalso.png\t\n");
    char tsv[1024], img[1024];
    tmp_path(tsv, sizeof tsv, "empty/c.tsv");
    tmp_path(img, sizeof img, "empty/img");
    CaptionSet set;
    Error err = {{0}};
    EXPECT(caption_read_tsv(&set, tsv, img, NULL, &err) == -1);
    EXPECT(strstr(err.msg, tsv) && strstr(err.msg, "nothing usable") && strstr(err.msg, "gone.png"),
           "%s", err.msg);
    EXPECT(set.n_images == 0 && set.warnings == NULL);
    caption_set_free(&set);
    // An empty file, a missing file and a missing image folder.
    write_text("empty/zero.tsv", "");
    tmp_path(tsv, sizeof tsv, "empty/zero.tsv");
    EXPECT(caption_read_tsv(&set, tsv, img, NULL, &err) == -1 && strstr(err.msg, "zero.tsv"), "%s",
           err.msg);
    tmp_path(tsv, sizeof tsv, "empty/absent.tsv");
    EXPECT(caption_read_tsv(&set, tsv, img, NULL, &err) == -1 && strstr(err.msg, "absent.tsv"),
           "%s", err.msg);
    tmp_path(tsv, sizeof tsv, "empty/c.tsv");
    tmp_path(img, sizeof img, "empty/noimg");
    EXPECT(caption_read_tsv(&set, tsv, img, NULL, &err) == -1 && strstr(err.msg, "noimg"), "%s",
           err.msg);
}

static void test_limits(void) {
    make_dir("lim/img");
    write_image("lim/img/a.png", 4, 4, 3, 1, 2, 3);
    // A caption line of 3 MB is skipped with a warning; the next line is still read.
    size_t big = 3u << 20;
    char *text = xmalloc(big + 64);
    size_t n = (size_t)sprintf(text, "a.png\t");
    memset(text + n, 'w', big);
    n += big;
    n += (size_t)sprintf(text + n, "\na.png\tshort one\n");
    write_bytes("lim/c.tsv", text, n);
    free(text);
    char tsv[1024], img[1024], json[1024];
    tmp_path(tsv, sizeof tsv, "lim/c.tsv");
    tmp_path(img, sizeof img, "lim/img");
    CaptionSet set;
    Error err;
    int rc = caption_read_tsv(&set, tsv, img, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc == 0) {
        EXPECT(set.n_captions == 1 && set.captions_skipped == 1);
        EXPECT(has_warning(&set, "c.tsv:1:", "longer than the limit"));
        caption_set_free(&set);
    }
    // The file cap: refused before reading, naming the file.
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.max_file_bytes = 1000;
    EXPECT(caption_read_tsv(&set, tsv, img, &opts, &err) == -1 && strstr(err.msg, "c.tsv") &&
               strstr(err.msg, "too large"),
           "%s", err.msg);
    // JSON nested 5000 deep: a clear error, not a crash.
    int depth = 5000;
    char *deep = xmalloc(2 * (size_t)depth + 32);
    n = (size_t)sprintf(deep, "{\"images\":");
    for (int i = 0; i < depth; i++) deep[n++] = '[';
    for (int i = 0; i < depth; i++) deep[n++] = ']';
    deep[n++] = '}';
    write_bytes("lim/deep.json", deep, n);
    free(deep);
    tmp_path(json, sizeof json, "lim/deep.json");
    EXPECT(caption_read_karpathy(&set, json, img, NULL, &err) == -1 &&
               strstr(err.msg, "deep.json") && strstr(err.msg, "nested deeper"),
           "%s", err.msg);
    EXPECT(caption_read_coco(&set, json, img, NULL, &err) == -1 && strstr(err.msg, "nested"));
    // Broken JSON names the line.
    write_text("lim/broken.json", "{\n\"images\": [\n{\"id\": 1,,}\n]}");
    tmp_path(json, sizeof json, "lim/broken.json");
    EXPECT(caption_read_coco(&set, json, img, NULL, &err) == -1 && strstr(err.msg, "broken.json") &&
               strstr(err.msg, "line 3"),
           "%s", err.msg);
    // Wrong top-level types.
    write_text("lim/arr.json", "[1, 2]");
    tmp_path(json, sizeof json, "lim/arr.json");
    EXPECT(caption_read_coco(&set, json, img, NULL, &err) == -1 && strstr(err.msg, "not an object"),
           "%s", err.msg);
    write_text("lim/noann.json", "{\"images\": [], \"annotations\": 3}");
    tmp_path(json, sizeof json, "lim/noann.json");
    EXPECT(
        caption_read_coco(&set, json, img, NULL, &err) == -1 && strstr(err.msg, "\"annotations\""),
        "%s", err.msg);
}

// ---------------------------------------------------------------------------------------
// Flickr8k

static void write_flickr_text(const char *dir) {
    char rel[256];
    snprintf(rel, sizeof rel, "%s/Flickr8k.token.txt", dir);
    write_text(rel,
               "1000_aa.jpg#0\tA child in a pink dress .\n"  // 1
               "1000_aa.jpg#1\tA girl going into a building .\n"
               "2000_bb.jpg#0\tA black dog and a spotted dog .\n"
               "2000_bb.jpg#1\t\n"                            // 4 empty
               "3000_cc.jpg#0\tA little girl .\n"             // 5 test
               "4000_dd.jpg#0\tNot in any list .\n"           // 6
               "5000_ee.jpg#0\tListed but missing .\n"        // 7 missing image
               "5000_ee.jpg#1\tListed but missing again .\n"  // 8
               "1000_aa.jpg#2\tA girl with \xFF bytes .\n");  // 9 invalid UTF-8
    snprintf(rel, sizeof rel, "%s/Flickr_8k.trainImages.txt", dir);
    write_text(rel, "1000_aa.jpg\n5000_ee.jpg\n");
    snprintf(rel, sizeof rel, "%s/Flickr_8k.devImages.txt", dir);
    write_text(rel, "2000_bb.jpg\r\n");
    snprintf(rel, sizeof rel, "%s/Flickr_8k.testImages.txt", dir);
    write_text(rel, "3000_cc.jpg\n");
}

static void check_flickr(const char *dir, const char *image_sub) {
    char d[1024];
    tmp_path(d, sizeof d, dir);
    CaptionSet set;
    Error err;
    int rc = caption_read_flickr8k(&set, d, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc) return;
    EXPECT(set.n_images == 3 && set.n_captions == 4, "%d images, %d captions", set.n_images,
           set.n_captions);
    int a = find_image(&set, "1000_aa.jpg"), b = find_image(&set, "2000_bb.jpg"),
        c = find_image(&set, "3000_cc.jpg");
    EXPECT(a >= 0 && b >= 0 && c >= 0);
    if (a < 0 || b < 0 || c < 0) return;
    EXPECT(set.images[a].split == SPLIT_TRAIN && set.images[b].split == SPLIT_VALID &&
           set.images[c].split == SPLIT_TEST);
    EXPECT(set.images[a].n_captions == 2 &&
           !strcmp(caption_set_caption(&set, a, 1), "A girl going into a building ."));
    char want[1100];
    snprintf(want, sizeof want, "%s%s/1000_aa.jpg", dir, image_sub);
    EXPECT(strstr(set.images[a].path, want) != NULL, "%s (want %s)", set.images[a].path, want);
    // Skipped: 4000 (no list), 5000 (missing) -> 2 images; captions 4, 6, 7, 8, 9.
    EXPECT(set.images_skipped == 2, "images skipped %d", set.images_skipped);
    EXPECT(set.captions_skipped == 5, "captions skipped %d", set.captions_skipped);
    static const char *const warned[][2] = {{"Flickr8k.token.txt:4:", "empty caption"},
                                            {"Flickr8k.token.txt:6:", "none of the split lists"},
                                            {"Flickr8k.token.txt:7:", "5000_ee.jpg not found"},
                                            {"Flickr8k.token.txt:9:", "invalid UTF-8"}};
    expect_warnings(&set, warned, sizeof warned / sizeof *warned);
    if (set.n_warnings != 4) print_warnings(&set);
    EXPECT(set.n_warnings == 4, "%d warnings", set.n_warnings);
    caption_set_free(&set);
}

// The Flickr8k text files in dir and the images of four of its five (PNG bytes, .jpg
// names) in dir + image_sub, then check_flickr.
static void flickr_layout(const char *dir, const char *image_sub) {
    char rel[512];
    snprintf(rel, sizeof rel, "%s%s", dir, image_sub);
    make_dir(rel);
    write_flickr_text(dir);
    static const char *const names[] = {"1000_aa", "2000_bb", "3000_cc", "4000_dd"};
    for (int i = 0; i < 4; i++) {
        snprintf(rel, sizeof rel, "%s%s/%s.jpg", dir, image_sub, names[i]);
        write_image(rel, 6, 5, 3, 1, 1, 1);
    }
    check_flickr(dir, image_sub);
}

static void test_flickr8k_subfolder_layout(void) { flickr_layout("f8k", "/Flicker8k_Dataset"); }

static void test_flickr8k_flat_layout(void) { flickr_layout("f8flat", ""); }

static void test_flickr8k_lists(void) {
    // No lists at all: hash split plus a warning.
    make_dir("f8nolist");
    write_text("f8nolist/Flickr8k.token.txt", "1.jpg#0\tone\n2.jpg#0\ttwo\n");
    write_image("f8nolist/1.jpg", 3, 3, 1, 0, 0, 0);
    write_image("f8nolist/2.jpg", 3, 3, 1, 0, 0, 0);
    char d[1024];
    tmp_path(d, sizeof d, "f8nolist");
    CaptionSet set;
    Error err;
    int rc = caption_read_flickr8k(&set, d, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc == 0) {
        EXPECT(set.n_images == 2 && has_warning(&set, "no split lists", NULL));
        EXPECT(set.images[0].split == caption_heldout_split("1.jpg", 0.05, 0.05));
        caption_set_free(&set);
    }
    // Some lists: an error naming the missing one.
    write_text("f8nolist/Flickr_8k.trainImages.txt", "1.jpg\n");
    EXPECT(caption_read_flickr8k(&set, d, NULL, &err) == -1 &&
               strstr(err.msg, "Flickr_8k.devImages.txt"),
           "%s", err.msg);
    // No token file.
    make_dir("f8none");
    tmp_path(d, sizeof d, "f8none");
    EXPECT(
        caption_read_flickr8k(&set, d, NULL, &err) == -1 && strstr(err.msg, "Flickr8k.token.txt"),
        "%s", err.msg);
    tmp_path(d, sizeof d, "f8absent");
    EXPECT(caption_read_flickr8k(&set, d, NULL, &err) == -1 && strstr(err.msg, "f8absent"));
}

// ---------------------------------------------------------------------------------------
// COCO and Karpathy JSON

static void test_coco(void) {
    make_dir("coco/val2014");
    write_image("coco/val2014/COCO_val2014_000000000042.jpg", 7, 9, 3, 5, 5, 5);
    write_image("coco/val2014/COCO_val2014_000000000073.jpg", 9, 7, 1, 5, 5, 5);
    write_image("coco/val2014/COCO_val2014_000000000074.jpg", 9, 7, 1, 5, 5, 5);
    write_text("coco/captions.json",
               "{\"info\": {}, \"images\": ["
               "{\"id\": 42, \"file_name\": \"COCO_val2014_000000000042.jpg\", \"width\": 7},"
               "{\"id\": 73, \"file_name\": \"COCO_val2014_000000000073.jpg\"},"
               "{\"id\": \"74\", \"file_name\": \"COCO_val2014_000000000074.jpg\"},"  // [2] type
               "{\"id\": 99, \"file_name\": \"COCO_val2014_000000000099.jpg\"},"      // [3] missing
               "{\"id\": 100, \"file_name\": 5},"                                     // [4] type
               "{\"id\": 42, \"file_name\": \"dup.jpg\"}"                             // [5] dup
               "], \"annotations\": ["
               "{\"image_id\": 42, \"id\": 1, \"caption\": \"A man riding a wave.\\n\"},"
               "{\"image_id\": 73, \"id\": 2, \"caption\": \"Two cats on a bed\"},"
               "{\"image_id\": 42, \"id\": 3, \"caption\": 12},"                     // [2] type
               "{\"image_id\": 5, \"id\": 4, \"caption\": \"no such image\"},"       // [3]
               "{\"image_id\": 73, \"id\": 5, \"caption\": \"   \"},"                // [4] empty
               "{\"image_id\": 42, \"id\": 6, \"caption\": \"bad \xC3\x28 half\"},"  // [5] UTF-8
               "{\"image_id\": 99, \"id\": 7, \"caption\": \"image missing\"},"      // [6]
               "{\"image_id\": 42.5, \"id\": 8, \"caption\": \"fraction\"},"         // [7] type
               "{\"image_id\": 73, \"id\": 9, \"caption\": \"A cat\\u00e9 nap\"}"
               "]}");
    char json[1024], img[1024];
    tmp_path(json, sizeof json, "coco/captions.json");
    tmp_path(img, sizeof img, "coco/val2014");
    CaptionSpec spec;
    char text[2100];
    snprintf(text, sizeof text, "coco:%s:%s", json, img);
    CaptionSet set;
    Error err;
    EXPECT(caption_spec_parse(&spec, text, &err) == 0, "%s", err.msg);
    int rc = caption_set_read(&set, &spec, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc) return;
    EXPECT(set.n_images == 2 && set.n_captions == 3, "%d images, %d captions", set.n_images,
           set.n_captions);
    int a = find_image(&set, "42"), b = find_image(&set, "73");
    EXPECT(a == 0 && b == 1);
    if (a != 0 || b != 1) return;
    EXPECT(set.images[a].numeric_id == 42 && set.images[b].numeric_id == 73);
    EXPECT(!strcmp(caption_set_caption(&set, a, 0), "A man riding a wave."));
    EXPECT(!strcmp(caption_set_caption(&set, b, 1), "A cat\xC3\xA9 nap"), "%s",
           caption_set_caption(&set, b, 1));
    EXPECT(set.images[a].split == caption_heldout_split("42", 0.05, 0.05));
    EXPECT(strstr(set.images[b].path, "val2014/COCO_val2014_000000000073.jpg") != NULL);
    // images: [2], [4], [5] warned and skipped, [3] missing -> 4 skipped.
    EXPECT(set.images_skipped == 4, "images skipped %d", set.images_skipped);
    // annotations [2] [3] [4] [5] [6] [7] -> 6 skipped.
    EXPECT(set.captions_skipped == 6, "captions skipped %d", set.captions_skipped);
    static const char *const warned[][2] = {
        {"captions.json: images[2]:", "\"id\""},
        {"captions.json: images[3]:", "not found"},
        {"captions.json: images[4]:", "file_name"},
        {"captions.json: images[5]:", "duplicate id 42"},
        {"captions.json: annotations[2]:", "\"caption\" is not a string"},
        {"captions.json: annotations[3]:", "image_id 5"},
        {"captions.json: annotations[4]:", "empty caption"},
        {"captions.json: annotations[5]:", "invalid UTF-8"},
        {"captions.json: annotations[7]:", "image_id"}};
    expect_warnings(&set, warned, sizeof warned / sizeof *warned);
    EXPECT(!has_warning(&set, "annotations[6]", NULL));
    caption_set_free(&set);

    // The held-out shares: everything valid.
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.valid_share = 1.0;
    opts.test_share = 0.0;
    rc = caption_set_read(&set, &spec, &opts, &err);
    EXPECT(rc == 0 && set.images[0].split == SPLIT_VALID && set.images[1].split == SPLIT_VALID);
    if (rc == 0) caption_set_free(&set);
    opts.test_share = 0.5;
    EXPECT(caption_set_read(&set, &spec, &opts, &err) == -1 && strstr(err.msg, "shares"));
}

static void test_karpathy(void) {
    make_dir("kp/img/train2014");
    make_dir("kp/img/val2014");
    write_image("kp/img/train2014/t1.jpg", 5, 5, 3, 9, 9, 9);
    write_image("kp/img/val2014/v1.jpg", 5, 5, 3, 9, 9, 9);
    write_image("kp/img/r1.jpg", 5, 5, 3, 9, 9, 9);
    write_image("kp/img/x1.jpg", 5, 5, 3, 9, 9, 9);
    write_text("kp/dataset_test.json",
               "{\"dataset\": \"coco\", \"images\": ["
               // [0] filepath + cocoid, train
               "{\"filepath\": \"train2014\", \"filename\": \"t1.jpg\", \"cocoid\": 7, "
               "\"split\": \"train\", \"sentences\": [{\"raw\": \"A dog runs.\", \"tokens\": "
               "[\"a\", \"dog\", \"runs\"]}, {\"tokens\": [\"a\", \"brown\", \"dog\"]},"
               " {\"raw\": 3}, {\"tokens\": [\"x\", 1]}]},"
               // [1] val with filepath
               "{\"filepath\": \"val2014\", \"filename\": \"v1.jpg\", \"split\": \"val\","
               " \"sentences\": [{\"raw\": \"A cat.\"}]},"
               // [2] restval, no filepath, no cocoid
               "{\"filename\": \"r1.jpg\", \"split\": \"restval\", \"sentences\": [{\"raw\": "
               "\"Red.\"}]},"
               // [3] unknown split
               "{\"filename\": \"x1.jpg\", \"split\": \"holdout\", \"sentences\": [{\"raw\": "
               "\"a\"}]},"
               // [4] missing image
               "{\"filename\": \"gone.jpg\", \"split\": \"test\", \"sentences\": [{\"raw\": "
               "\"a\"}, {\"raw\": \"b\"}]},"
               // [5] sentences of the wrong type
               "{\"filename\": \"x1.jpg\", \"split\": \"test\", \"sentences\": {}},"
               // [6] filename wrong type
               "{\"filename\": [], \"split\": \"test\", \"sentences\": []}"
               "]}");
    CaptionSet set;
    if (read_set(&set, caption_read_karpathy, "kp/dataset_test.json", "kp/img")) return;
    EXPECT(set.n_images == 3 && set.n_captions == 4, "%d images, %d captions", set.n_images,
           set.n_captions);
    if (set.n_images != 3) return;
    CaptionImage *t = &set.images[0], *v = &set.images[1], *r = &set.images[2];
    EXPECT(!strcmp(t->id, "7") && t->numeric_id == 7 && t->split == SPLIT_TRAIN);
    EXPECT(strstr(t->path, "kp/img/train2014/t1.jpg") != NULL, "%s", t->path);
    EXPECT(t->n_captions == 2 && !strcmp(caption_set_caption(&set, 0, 0), "A dog runs.") &&
           !strcmp(caption_set_caption(&set, 0, 1), "a brown dog"));
    EXPECT(v->split == SPLIT_VALID && strstr(v->path, "img/val2014/v1.jpg") != NULL);
    EXPECT(r->split == SPLIT_TRAIN && !strcmp(r->id, "r1.jpg") && r->numeric_id == -1);
    EXPECT(strstr(r->path, "kp/img/r1.jpg") != NULL);
    EXPECT(set.images_skipped == 4, "images skipped %d", set.images_skipped);
    // [0] 2 bad sentences, [3] 1, [4] 2.
    EXPECT(set.captions_skipped == 5, "captions skipped %d", set.captions_skipped);
    static const char *const warned[][2] = {{"images[0].sentences[2]:", "\"raw\" is not a string"},
                                            {"images[0].sentences[3]:", "tokens"},
                                            {"images[3]:", "split"},
                                            {"images[4]:", "gone.jpg not found"},
                                            {"images[5]:", "sentences"},
                                            {"images[6]:", "filename"}};
    expect_warnings(&set, warned, sizeof warned / sizeof *warned);
    caption_set_free(&set);
}

// ---------------------------------------------------------------------------------------
// image folder, cache, scenes folder

static void test_image_folder_order(void) {
    make_dir("folder/sub.png");  // a folder with an image-like name: skipped with the reason
    make_dir("folder/sub");      // a folder: ignored
    write_image("folder/b.png", 4, 4, 3, 1, 2, 3);
    write_image("folder/A.PNG", 4, 4, 1, 1, 2, 3);
    write_image("folder/noext", 4, 4, 3, 1, 2, 3);         // an image by its header
    write_text("folder/broken.jpg", "not a jpeg at all");  // listed: decoding names it later
    write_text("folder/captions.tsv", "b.png\tx\n");       // ignored
    write_text("folder/.hidden.png", "x");                 // ignored
    write_image("folder/a10.png", 4, 4, 3, 1, 2, 3);
    write_image("folder/a2.png", 4, 4, 3, 1, 2, 3);
    char d[1024];
    tmp_path(d, sizeof d, "folder");
    ImageFolder f;
    Error err;
    int rc = image_folder_list(&f, d, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc) return;
    static const char *want[] = {"A.PNG", "a10.png", "a2.png", "b.png", "broken.jpg", "noext"};
    EXPECT(f.n == 6, "n = %d", f.n);
    for (int i = 0; i < f.n && i < 6; i++) {
        EXPECT(!strcmp(f.names[i], want[i]), "[%d] %s, want %s", i, f.names[i], want[i]);
        EXPECT(strstr(f.paths[i], "folder/") && strstr(f.paths[i], want[i]));
    }
    EXPECT(f.n_ignored == 2, "ignored %d", f.n_ignored);  // sub/, captions.tsv
    EXPECT(f.n_skipped == 1 && !strcmp(f.skipped[0].name, "sub.png") &&
               strstr(f.skipped[0].reason, "folder"),
           "skipped %d", f.n_skipped);
    // The broken file is listed but does not decode, with its name in the message.
    Image img;
    EXPECT(image_load(f.paths[4], &img, 3, &err) == -1 && strstr(err.msg, "broken.jpg"));
    image_folder_free(&f);
    EXPECT(f.n == 0 && f.paths == NULL);
    // Empty or absent folders are errors naming them.
    make_dir("folder_empty");
    write_text("folder_empty/readme.txt", "hi");
    tmp_path(d, sizeof d, "folder_empty");
    EXPECT(image_folder_list(&f, d, &err) == -1 && strstr(err.msg, "folder_empty") &&
               strstr(err.msg, "no image"),
           "%s", err.msg);
    tmp_path(d, sizeof d, "folder_absent");
    EXPECT(image_folder_list(&f, d, &err) == -1 && strstr(err.msg, "folder_absent"));
    EXPECT(image_name_has_image_ext("x.JPeG") && !image_name_has_image_ext("jpg") &&
           !image_name_has_image_ext("x.jpgx"));
}

// Links and special files (issue 23): a link to an image is listed under its own name; a
// broken link (whatever its name), a loop, and a FIFO named like an image are skipped with
// their reasons, in name order; a FIFO without an image name is ignored; nothing blocks.
static void test_image_folder_links_and_special_files(void) {
    make_dir("links");
    write_image("links/real.png", 4, 4, 3, 1, 2, 3);
    char d[1024], p[1100];
    tmp_path(d, sizeof d, "links");
    snprintf(p, sizeof p, "%s/good-link.jpg", d);
    EXPECT(symlink("real.png", p) == 0);
    snprintf(p, sizeof p, "%s/dangling", d);
    EXPECT(symlink("nowhere", p) == 0);
    snprintf(p, sizeof p, "%s/self.png", d);
    EXPECT(symlink("self.png", p) == 0);
    snprintf(p, sizeof p, "%s/pipe.png", d);
    EXPECT(mkfifo(p, 0644) == 0);
    snprintf(p, sizeof p, "%s/pipe", d);
    EXPECT(mkfifo(p, 0644) == 0);
    ImageFolder f;
    Error err;
    EXPECT(image_folder_list(&f, d, &err) == 0, "%s", err.msg);
    EXPECT(f.n == 2 && !strcmp(f.names[0], "good-link.jpg") && !strcmp(f.names[1], "real.png"),
           "n = %d", f.n);
    static const char *const names[] = {"dangling", "pipe.png", "self.png"};
    static const char *const reasons[] = {"broken symbolic link", "FIFO", "symbolic link loop"};
    EXPECT(f.n_skipped == 3, "skipped %d", f.n_skipped);
    for (int i = 0; i < f.n_skipped && i < 3; i++)
        EXPECT(!strcmp(f.skipped[i].name, names[i]) && strstr(f.skipped[i].reason, reasons[i]),
               "[%d] %s: %s", i, f.skipped[i].name, f.skipped[i].reason);
    EXPECT(f.n_ignored == 1, "ignored %d", f.n_ignored);  // the FIFO named "pipe"
    Image img;
    EXPECT(f.n == 2 && image_load(f.paths[0], &img, 3, &err) == 0, "the linked image: %s", err.msg);
    if (f.n == 2) image_free(&img);
    image_folder_free(&f);
    EXPECT(f.n_skipped == 0 && f.skipped == NULL);
}

static void test_image_cache(void) {
    make_dir("cache/img");
    // 20 x 10 grey image: 0 for x < 11, else 200 -> centre square 10 x 10 from x = 5.
    unsigned char pix[200];
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 20; x++) pix[y * 20 + x] = x < 11 ? 0 : 200;
    char p[1024];
    Error err;
    CHECK(write_png_u8(tmp_path(p, sizeof p, "cache/img/half.png"), pix, 10, 20, 1, &err) == 0);
    write_image("cache/img/red.png", 6, 6, 3, 250, 0, 0);
    write_text("cache/img/bad.png", "\x89PNG\r\n\x1a\n truncated");
    write_text("cache/c.tsv", "half.png\thalf\nbad.png\tbroken image\nred.png\tred\n");
    char tsv[1024], img[1024];
    tmp_path(tsv, sizeof tsv, "cache/c.tsv");
    tmp_path(img, sizeof img, "cache/img");

    // The bound: 3 images of 64 x 64 need 36867 bytes.
    ImageCache c;
    EXPECT(image_cache_init(&c, 3, 64, 36866, &err) == -1 && strstr(err.msg, "limit"), "%s",
           err.msg);
    EXPECT(c.pix == NULL);
    EXPECT(image_cache_init(&c, 3, 64, 36867, &err) == 0, "%s", err.msg);
    EXPECT(c.bytes == 36867);
    image_cache_free(&c);
    EXPECT(image_cache_init(&c, 200000, 224, 0, &err) == -1 && strstr(err.msg, "MiB"), "%s",
           err.msg);

    CaptionSet set;
    int rc = caption_read_tsv(&set, tsv, img, NULL, &err);
    EXPECT(rc == 0 && set.n_images == 3, "%s", err.msg);
    if (rc) return;
    EXPECT(caption_set_cache_images(&set, &c, 4, 30, NULL, NULL, &err) == -1 &&
               strstr(err.msg, "limit"),
           "%s", err.msg);
    rc = caption_set_cache_images(&set, &c, 4, 0, NULL, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc == 0) {
        EXPECT(
            set.n_images == 2 && c.n == 2 && set.images_skipped == 1 && set.captions_skipped == 1,
            "%d images, cache %d", set.n_images, c.n);
        EXPECT(has_warning(&set, "bad.png", NULL));
        EXPECT(!strcmp(set.images[1].id, "red.png") &&
               !strcmp(caption_set_caption(&set, 1, 0), "red"));
        // half.png: centre crop x 5..14 (6 zeros, 4 x 200) -> 4 px of 2.5 input columns each:
        // 0, 0, (1 * 0 + 1.5 * 200) / 2.5 = 120, 200.
        const unsigned char *h = image_cache_pixels(&c, 0);
        EXPECT(h[0] == 0 && h[1] == 0 && h[2] == 0, "grey expanded to RGB: %d %d %d", h[0], h[1],
               h[2]);
        EXPECT(h[3 * 3] == 200 && h[3 * 3 + 1] == 200, "right column %d", h[9]);
        EXPECT(h[3 * 1] == 0 && h[3 * 2] == 120, "middle columns %d %d", h[3], h[6]);
        float chw[3 * 16];
        image_cache_get(chw, &c, 1);
        EXPECT_NEAR(chw[0], 250 / 255.0, 1e-6, 0);
        EXPECT_NEAR(chw[16], 0.0, 1e-6, 0);
        // The same pixels as loading directly.
        float direct[3 * 16];
        EXPECT(image_load_square_float(direct, set.images[1].path, 4, &err) == 0);
        EXPECT(memcmp(direct, chw, sizeof chw) == 0);
        image_cache_free(&c);
    }
    // Lazy use: a failed slot fails again, naming the file.
    EXPECT(image_cache_init(&c, 2, 4, 0, &err) == 0);
    char bad[1024];
    tmp_path(bad, sizeof bad, "cache/img/bad.png");
    EXPECT(image_cache_load(&c, 0, bad, &err) == -1 && strstr(err.msg, "bad.png"));
    EXPECT(c.state[0] == IMAGE_CACHE_FAILED);
    EXPECT(image_cache_load(&c, 0, bad, &err) == -1 && strstr(err.msg, "earlier"));
    image_cache_free(&c);
    caption_set_free(&set);
}

static void test_scenes_folder_round_trip(void) {
    ScenesConfig cfg;
    scenes_config_default(&cfg);
    cfg.seed = 7;
    Scenes s;
    Error err;
    int rc = scenes_open(&s, &cfg, &err);
    EXPECT(rc == 0, "needs `make data`: %s", err.msg);
    if (rc) return;
    int counts[SPLIT_COUNT];
    scenes_folder_counts(25, counts);
    EXPECT(counts[SPLIT_TRAIN] == 21 && counts[SPLIT_VALID] == 2 && counts[SPLIT_TEST] == 2);
    counts[SPLIT_TRAIN] = 3, counts[SPLIT_VALID] = 1, counts[SPLIT_TEST] = 2;
    char dir[1024], tsv[1024];
    tmp_path(dir, sizeof dir, "scenes/out");
    rc = scenes_write_folder(&s, dir, counts, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc) {
        scenes_close(&s);
        return;
    }
    tmp_path(tsv, sizeof tsv, "scenes/out/" SCENES_FOLDER_TSV);
    CaptionSpec spec;
    char text[2200];
    snprintf(text, sizeof text, "tsv:%s:%s", tsv, dir);
    CaptionSet set;
    EXPECT(caption_spec_parse(&spec, text, &err) == 0);
    rc = caption_set_read(&set, &spec, NULL, &err);
    EXPECT(rc == 0, "%s", err.msg);
    if (rc == 0) {
        EXPECT(set.n_images == 6 && set.n_captions == 6 * SCENES_CAPTIONS && set.n_warnings == 0 &&
               set.images_skipped == 0 && set.captions_skipped == 0);
        int side = cfg.size;
        float *chw = xmalloc((size_t)3 * side * side * sizeof *chw);
        unsigned char *want = xmalloc((size_t)3 * side * side);
        int k = 0;
        for (int sp = 0; sp < SPLIT_COUNT; sp++)
            for (int i = 0; i < counts[sp] && k < set.n_images; i++, k++) {
                CaptionImage *im = &set.images[k];
                EXPECT(im->split == (Split)sp, "image %d split %d", k, im->split);
                SceneInfo info;
                scenes_render(chw, &info, &s, (Split)sp, i);
                for (int c = 0; c < SCENES_CAPTIONS; c++)
                    EXPECT(!strcmp(caption_set_caption(&set, k, c), info.captions[c]), "%s vs %s",
                           caption_set_caption(&set, k, c), info.captions[c]);
                Image rendered = {3, side, side, chw};
                image_to_u8(want, &rendered);
                Image back;
                EXPECT(image_load(im->path, &back, 3, &err) == 0, "%s", err.msg);
                if (!back.data) continue;
                EXPECT(back.h == side && back.w == side);
                unsigned char *got = xmalloc((size_t)3 * side * side);
                image_to_u8(got, &back);
                EXPECT(memcmp(got, want, (size_t)3 * side * side) == 0, "pixels of %s", im->path);
                free(got);
                image_free(&back);
            }
        free(chw);
        free(want);
        caption_set_free(&set);
    }
    // Asking for more scenes than a split has is an error naming the folder.
    counts[SPLIT_TEST] = scenes_count(&s, SPLIT_TEST) + 1;
    EXPECT(scenes_write_folder(&s, dir, counts, &err) == -1 && strstr(err.msg, "out"));
    scenes_close(&s);
}


// A COCO file of n images (ids first .. first + n - 1, in the order given by step) with one
// caption each, written to rel; images under heldout/img.
static void write_small_coco(const char *rel, int n, int first, int step) {
    char json[4096] = "{\"images\": [";
    size_t k = strlen(json);
    for (int i = 0; i < n; i++) {
        int id = step > 0 ? first + i : first + n - 1 - i;
        k += (size_t)snprintf(json + k, sizeof json - k, "%s{\"id\": %d, \"file_name\": \"%d.png\"}",
                              i ? ", " : "", id, id);
    }
    k += (size_t)snprintf(json + k, sizeof json - k, "], \"annotations\": [");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(json + k, sizeof json - k, "%s{\"image_id\": %d, \"caption\": \"a thing\"}",
                              i ? ", " : "", first + i);
    snprintf(json + k, sizeof json - k, "]}");
    write_text(rel, json);
}

static int split_count(const CaptionSet *set, Split s) { return caption_set_count(set, s, NULL); }

// Six COCO images at the default 5% shares: the hash alone holds none out (so training
// was refused); caption_set_read gives one to validation and one to test, the same ones
// whatever the file order, and never moves an image whose split the file gives.
static void test_small_sets_hold_images_out(void) {
    make_dir("heldout/img");
    char name[64];
    for (int id = 1; id <= 6; id++) {
        snprintf(name, sizeof name, "heldout/img/%d.png", id);
        write_image(name, 2, 2, 1, 0, 0, 0);
    }
    write_small_coco("heldout/six.json", 6, 1, 1);
    write_small_coco("heldout/six_reversed.json", 6, 1, -1);
    char json[1024], rev[1024], img[1024];
    tmp_path(json, sizeof json, "heldout/six.json");
    tmp_path(rev, sizeof rev, "heldout/six_reversed.json");
    tmp_path(img, sizeof img, "heldout/img");
    CaptionSet raw, set, other;
    Error err;
    CaptionSpec spec, spec_rev;
    spec = (CaptionSpec){.kind = CAPTION_SOURCE_COCO};
    snprintf(spec.file, sizeof spec.file, "%s", json);
    snprintf(spec.images, sizeof spec.images, "%s", img);
    spec_rev = spec;
    snprintf(spec_rev.file, sizeof spec_rev.file, "%s", rev);
    EXPECT(caption_read_coco(&raw, json, img, NULL, &err) == 0, "%s", err.msg);
    // The premise: the hash alone gives these six ids no held-out image.
    EXPECT(raw.n_images == 6 && split_count(&raw, SPLIT_VALID) == 0 && split_count(&raw, SPLIT_TEST) == 0,
           "hash split of ids 1..6: %d valid, %d test", split_count(&raw, SPLIT_VALID),
           split_count(&raw, SPLIT_TEST));
    EXPECT(caption_set_read(&set, &spec, NULL, &err) == 0, "%s", err.msg);
    EXPECT(split_count(&set, SPLIT_VALID) == 1 && split_count(&set, SPLIT_TEST) == 1 &&
               split_count(&set, SPLIT_TRAIN) == 4,
           "%d train, %d valid, %d test", split_count(&set, SPLIT_TRAIN),
           split_count(&set, SPLIT_VALID), split_count(&set, SPLIT_TEST));
    EXPECT(caption_set_read(&other, &spec_rev, NULL, &err) == 0, "%s", err.msg);
    for (int i = 0; i < set.n_images; i++) {
        int j = find_image(&other, set.images[i].id);
        EXPECT(j >= 0 && other.images[j].split == set.images[i].split, "image %s: split %d vs %d",
               set.images[i].id, set.images[i].split, j >= 0 ? (int)other.images[j].split : -1);
    }
    // Calling it again moves nothing.
    EXPECT(caption_set_ensure_heldout(&set) == 0);
    caption_set_free(&other);
    caption_set_free(&set);
    caption_set_free(&raw);
    // A larger share (--held-out 0.3) on the same ids holds more out by the hash itself.
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.valid_share = opts.test_share = 0.3;
    EXPECT(caption_read_coco(&raw, json, img, &opts, &err) == 0, "%s", err.msg);
    int held = split_count(&raw, SPLIT_VALID) + split_count(&raw, SPLIT_TEST);
    EXPECT(held >= 2, "0.3 each held out %d of 6", held);
    caption_set_free(&raw);
    // Two images: nothing can be given to every split, nothing moves.
    write_small_coco("heldout/two.json", 2, 1, 1);
    snprintf(spec.file, sizeof spec.file, "%s", tmp_path(json, sizeof json, "heldout/two.json"));
    EXPECT(caption_set_read(&set, &spec, NULL, &err) == 0, "%s", err.msg);
    EXPECT(split_count(&set, SPLIT_TRAIN) == 2, "two images: %d train", split_count(&set, SPLIT_TRAIN));
    caption_set_free(&set);
    // Splits the file gives stay as given, even when none is validation.
    write_text("heldout/img/given.tsv", "1.png\ta\ttrain\n2.png\tb\ttrain\n3.png\tc\ttrain\n4.png\td\ttest\n");
    CaptionSpec tsv = {.kind = CAPTION_SOURCE_TSV};
    tmp_path(tsv.file, sizeof tsv.file, "heldout/img/given.tsv");
    snprintf(tsv.images, sizeof tsv.images, "%s", img);
    EXPECT(caption_set_read(&set, &tsv, NULL, &err) == 0, "%s", err.msg);
    EXPECT(split_count(&set, SPLIT_VALID) == 0 && split_count(&set, SPLIT_TRAIN) == 3,
           "given splits moved: %d train, %d valid", split_count(&set, SPLIT_TRAIN),
           split_count(&set, SPLIT_VALID));
    caption_set_free(&set);
}

// ---------------------------------------------------------------------------------------

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}


// Two "images" entries with one id: the annotations of the id go to the first; the
// warning of the second says so, or, when the first's image is missing, that both and the
// annotations are skipped (not "this one" alone, as if the other were used).
static void test_coco_duplicate_id_says_what_happens(void) {
    make_dir("dup/img");
    write_image("dup/img/a.jpg", 5, 5, 3, 9, 9, 9);
    write_image("dup/img/b.jpg", 5, 5, 3, 9, 9, 9);
    write_text("dup/captions.json",
               "{\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\"}, {\"id\": 1, \"file_name\": \"b.jpg\"},"
               "              {\"id\": 2, \"file_name\": \"gone.jpg\"}, {\"id\": 2, \"file_name\": \"b.jpg\"},"
               "              {\"id\": 3, \"file_name\": \"b.jpg\"}],"
               " \"annotations\": [{\"image_id\": 1, \"caption\": \"one\"}, {\"image_id\": 2, \"caption\": \"two\"},"
               "                   {\"image_id\": 3, \"caption\": \"three\"}]}");
    CaptionSet set;
    if (read_set(&set, caption_read_coco, "dup/captions.json", "dup/img")) return;
    EXPECT(set.n_images == 2 && find_image(&set, "1") >= 0 && find_image(&set, "3") >= 0 &&
               find_image(&set, "2") < 0,
           "%d images", set.n_images);
    int a = find_image(&set, "1");
    EXPECT(a >= 0 && strstr(set.images[a].path, "a.jpg"), "image 1 is not the first entry's");
    EXPECT(has_warning(&set, "images[1]:", "annotations of id 1 go to images[0]"));
    EXPECT(!has_warning(&set, "images[1]:", "this one skipped"));
    EXPECT(has_warning(&set, "images[2]:", "not found"));
    EXPECT(has_warning(&set, "images[3]:", "both entries and the annotations of id 2 skipped"),
           "the warning of images[3] does not say the id's annotations are lost");
    EXPECT(set.images_skipped == 3 && set.captions_skipped == 1, "skipped: %d images, %d captions",
           set.images_skipped, set.captions_skipped);
    caption_set_free(&set);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/test_captions_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(g_root) != NULL, "cannot create a temporary folder under %s", g_root);
    RUN(test_spec_parse_valid);
    RUN(test_spec_parse_errors);
    RUN(test_utf8_valid);
    RUN(test_heldout_split_is_deterministic);
    RUN(test_small_sets_hold_images_out);
    RUN(test_tsv_reads_and_skips);
    RUN(test_nothing_usable_is_an_error);
    RUN(test_limits);
    RUN(test_flickr8k_subfolder_layout);
    RUN(test_flickr8k_flat_layout);
    RUN(test_flickr8k_lists);
    RUN(test_coco);
    RUN(test_coco_duplicate_id_says_what_happens);
    RUN(test_karpathy);
    RUN(test_image_folder_order);
    RUN(test_image_folder_links_and_special_files);
    RUN(test_image_cache);
    RUN(test_scenes_folder_round_trip);
    nftw(g_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return test_summary();
}
