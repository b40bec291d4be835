// report_common.h: what the reports (`caption report`, `draw report`, `text classify report`,
// `text translate report`) share: reading a run folder's JSON and CSV files and its
// checkpoint's metadata, the run's record (cli/run_info.h) as a section, curves as PNGs,
// figures, the model's parameter count, and writing the page atomically.
//
// A report links only files under its run folder, by relative paths, and only files that
// exist when it is written; an input that is missing becomes a note naming the command
// that makes it.
#ifndef CLI_REPORT_COMMON_H
#define CLI_REPORT_COMMON_H

#include <cJSON.h>
#include <stdio.h>

#include "cli/args.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/safetensors.h"

// The command line of `caption report` / `draw report`: RUN may come first (not starting
// with '-') or as --run, which specs must hold (an ARG_STRING writing *run); both, naming
// two different folders, are refused ("RUN: two run folders, A and --run B: give one").
// Returns 1 when the command should return *code at once (--help: 0; a bad flag, no RUN
// or two: 2, the line on stderr, after "PREFIX: " when prefix is not NULL), 0 to go on.
int report_parse_args(int argc, char **argv, const ArgSpec *specs, int n, const char *synopsis,
                      const char *prefix, const char **run, int *code);

// RUN/NAME into buf (n bytes).
void report_path(char *buf, size_t n, const char *run, const char *name);

// Parses the JSON file at path: 0 with *doc set; 0 with *doc NULL when the file does not
// exist; -1 with "PATH: reason" when it exists but is not JSON (or is not an object).
int report_read_json(cJSON **doc, const char *path, Error *err);

// A number of a JSON object, NAN when absent or not a number.
double report_json_number(const cJSON *obj, const char *key);
// A string of a JSON object, NULL when absent or not a string.
const char *report_json_string(const cJSON *obj, const char *key);

// Columns of a CSV log (header row first): for each name in ycols, the rows whose cell in
// that column is not empty, as (x, y) with x the xcol column. The arrays of series i are
// x[i], y[i] (malloc'd), n[i] long. A missing column gives n[i] = 0. Fails with
// "PATH: reason" when the file cannot be read or has no xcol column.
typedef struct {
    int count;
    float *x[8], *y[8];
    int n[8];
} ReportColumns;
int report_read_columns(ReportColumns *c, const char *path, const char *xcol,
                        const char *const *ycols, int count, Error *err);
void report_columns_free(ReportColumns *c);

// Draws one curve (or two, with name2 set) with vision/plot.h into RUN/report_files/FILE
// (the folder is made). Fails with "PATH: reason".
typedef struct {
    const char *file;                  // e.g. "loss.png"
    const char *title, *xlabel, *ylabel;
    const char *name1, *name2;         // legend entries (name2 NULL: one series)
    const float *x1, *y1, *x2, *y2;
    int n1, n2;
    int log_y;
    int nonnegative;                   // a share or a score (vision/plot.h PlotOptions)
} ReportPlot;
int report_plot(const char *run, const ReportPlot *p, Error *err);

// A training run's curves (draw train's and draw classify train's loss.png): two columns
// of its log (CSV) against the step, each value times scale, drawn into png at the plot's
// default size. Fails with "PATH: reason".
typedef struct {
    const char *cols[2];   // the log's columns
    const char *names[2];  // their legend entries
    float scale;           // 100: a share as a percentage
    const char *title, *ylabel;
} ReportLogPlot;
int report_plot_log(const char *csv, const char *png, const ReportLogPlot *p, Error *err);

// The section "Run": one row per invocation of run.json (date, commit, status, steps,
// wall time, UNIT/s (the record's images_per_s: what a step counts, "images", "sentences"
// or "pairs"), threads of CPUs, CPU model) and its command line; doc may be NULL (a note
// says the run predates the record).
void report_section_run(FILE *fp, const cJSON *run_json, const char *program, const char *unit);

// The training throughput and wall time summed over run.json's finished invocations, for
// the page's header line; NAN when there is none.
double report_total_wall(const cJSON *run_json);
double report_last_images_per_s(const cJSON *run_json);

// The value of flag --name in the first invocation's argv, or NULL when absent.
const char *report_run_flag(const cJSON *run_json, const char *name);

// The page's header, opened: its title, WHAT and the run folder's last name ("DRAW run
// mnist"), and the paragraph of its headline figures, left open for them.
void report_page_header_begin(FILE *fp, const char *what, const char *run);
// The headline's sentence of the training's wall time and throughput (run.json), with
// `steps` (NULL: not said), after `lead`, the throughput in `unit` ("pairs": "at 120
// pairs/s"); nothing without a finished invocation.
void report_page_trained(FILE *fp, const cJSON *run_json, const char *steps, const char *lead,
                         const char *unit);

// A note that an input is missing: "WHAT is missing: make it with" and the command.
void report_missing(FILE *fp, const char *what, const char *command);

// report_missing with the command "PROGRAM --model RUN/model.safetensors TAIL RUN/NAME"
// (PROGRAM "bin/text classify eval", TAIL " --json > "; both paths as report_quoted_path
// writes them).
void report_missing_run(FILE *fp, const char *what, const char *program, const char *run,
                        const char *tail, const char *name);

// RUN/model.safetensors into model when its metadata's format is `format`, and RUN/run.json
// into *run_json (NULL when absent). Errors: "RUN: no model.safetensors here (TRAIN --out RUN
// writes one)", "PATH: not WHAT (format 'F')".
int report_load_model(SafetensorsFile *model, cJSON **run_json, const char *run,
                      const char *format, const char *train, const char *what, Error *err);

// Parameter count of a safetensors checkpoint: every tensor whose name has no '/'
// (optimiser moments and averages are "adam.m/NAME", "ema/NAME").
long report_parameter_count(const SafetensorsFile *f);

// A picture at relpath (class cls, may be NULL) with its caption: <figure><img>
// <figcaption>CAPTION</figcaption></figure>, every string escaped.
void report_figure(FILE *fp, const char *relpath, const char *alt, const char *cls, const char *caption);

// RUN/NAME as one shell word for the commands a missing-input note names: as it is, or in
// single quotes when either part holds a space or one of ' " \ $ `.
void report_quoted_path(char *buf, size_t n, const char *run, const char *name);

// A checkpoint's metadata value, "?" when absent; a float of it (written with 9 digits) as
// %g into buf ("0.00100000005" -> "0.001"), or the value as it is when it is not a number.
const char *report_meta(const SafetensorsFile *f, const char *key);
const char *report_meta_float(const SafetensorsFile *f, const char *key, char *buf, size_t n);

// Seconds as "42.0 s", "12 min 05 s", "2 h 03 min".
void report_format_seconds(char *buf, size_t n, double seconds);
// An integer with thousands separators: 100000 -> "100,000".
void report_format_count(char *buf, size_t n, long v);

// The page goes to RUN/report.html through an AtomicFile: open, write to af->fp, commit.
int report_open(AtomicFile *af, const char *run, const char *name, Error *err);

#endif
