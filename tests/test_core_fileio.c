// test_core_fileio.c: file_read_all (caps, errors naming the file), file_open_regular
// (size, refusing folders and missing files; a FIFO and a device refused at once, never
// opened), atomic writes (no temporary left behind, the old file intact after a failed
// write, including a "full disk" simulated with RLIMIT_FSIZE, and said to be so only when
// there was one; the reason the failed write's own; the temporary made afresh, never
// through a link), the stale-temporary sweep (only this host's temporaries of dead
// processes), make_dirs, file_exists, and the CSV log. An alarm ends the program if a
// FIFO ever blocks it.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/csvlog.h"
#include "core/fileio.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char tmpdir[256];

static void host_tag(char *out, size_t cap);

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void path_in(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static void test_read_all_roundtrip_and_cap(void) {
    char path[512];
    path_in(path, sizeof path, "data.bin");
    unsigned char bytes[1000];
    for (int i = 0; i < 1000; i++) bytes[i] = (unsigned char)(i * 7);
    Error err = {{0}};
    EXPECT(file_write_atomic(path, bytes, sizeof bytes, &err) == 0, "%s", err.msg);
    unsigned char *data = NULL;
    size_t len = 0;
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0, "%s", err.msg);
    EXPECT(len == 1000 && data && memcmp(data, bytes, 1000) == 0 && data[1000] == 0);
    free(data);
    EXPECT(file_read_all(path, &data, &len, 1000, &err) == 0, "exactly at the cap: %s", err.msg);
    free(data);
    EXPECT(file_read_all(path, &data, &len, 999, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "too large"), "%s", err.msg);
    EXPECT(data == NULL);
    // Empty file.
    EXPECT(file_write_atomic(path, "", 0, &err) == 0, "%s", err.msg);
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0 && len == 0 && data && data[0] == 0);
    free(data);
}

static void test_read_all_errors_name_the_file(void) {
    char path[512];
    path_in(path, sizeof path, "no_such_file");
    unsigned char *data = NULL;
    size_t len = 0;
    Error err = {{0}};
    EXPECT(file_read_all(path, &data, &len, 0, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "No such file"), "%s", err.msg);
    EXPECT(file_read_all(tmpdir, &data, &len, 0, &err) == -1);
    EXPECT(strncmp(err.msg, tmpdir, strlen(tmpdir)) == 0, "%s", err.msg);
    EXPECT(strchr(err.msg, '\n') == NULL);
}

static void test_open_regular_size_and_refusals(void) {
    char path[512];
    path_in(path, sizeof path, "regular.bin");
    Error err = {{0}};
    EXPECT(file_write_atomic(path, "0123456789abc", 13, &err) == 0, "%s", err.msg);
    FILE *fp = NULL;
    size_t size = 0;
    EXPECT(file_open_regular(&fp, &size, path, &err) == 0, "%s", err.msg);
    EXPECT(fp != NULL && size == 13, "size %zu, expected 13", size);
    char head[4] = {0};
    EXPECT(fp && fread(head, 1, 3, fp) == 3 && memcmp(head, "012", 3) == 0, "read back");
    if (fp) fclose(fp);
    // A folder opens with fopen on Linux but is not a regular file.
    size = 7;
    EXPECT(file_open_regular(&fp, &size, tmpdir, &err) == -1);
    EXPECT(fp == NULL && size == 0, "outputs not cleared on failure");
    EXPECT(strncmp(err.msg, tmpdir, strlen(tmpdir)) == 0 && strstr(err.msg, "not a regular file"),
           "%s", err.msg);
    path_in(path, sizeof path, "no_such_file");
    EXPECT(file_open_regular(&fp, &size, path, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "cannot open"), "%s",
           err.msg);
}

static void test_atomic_write_replaces_and_leaves_no_temporary(void) {
    char dir[512], path[600];
    path_in(dir, sizeof dir, "atomic");
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/file.txt", dir);
    EXPECT(file_write_atomic(path, "first", 5, &err) == 0, "%s", err.msg);
    EXPECT(file_write_atomic(path, "second!", 7, &err) == 0, "%s", err.msg);
    unsigned char *data;
    size_t len;
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0 && len == 7 && !memcmp(data, "second!", 7));
    free(data);
    EXPECT(count_entries(dir) == 1, "%d entries in the folder", count_entries(dir));
    // atomic_abort: the temporary goes, the old file stays.
    AtomicFile f;
    EXPECT(atomic_open(&f, path, &err) == 0, "%s", err.msg);
    fputs("garbage", f.fp);
    EXPECT(count_entries(dir) == 2);
    atomic_abort(&f);
    EXPECT(count_entries(dir) == 1);
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0 && len == 7 && !memcmp(data, "second!", 7));
    free(data);
}

// A full disk: the file-size limit makes writes past 4 KiB fail (EFBIG) the way ENOSPC
// would. The failure must be reported and the previous file kept.
static void test_atomic_write_full_disk_keeps_old_file(void) {
    char dir[512], path[600];
    path_in(dir, sizeof dir, "full");
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/model.bin", dir);
    EXPECT(file_write_atomic(path, "old contents", 12, &err) == 0, "%s", err.msg);
    enum { BIG = 1 << 20 };
    char *big = calloc(BIG, 1);
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    int set = setrlimit(RLIMIT_FSIZE, &small);
    EXPECT(set == 0, "setrlimit failed");
    int r = file_write_atomic(path, big, BIG, &err);
    // The streaming form fails at commit (fflush / fclose), not at fwrite.
    AtomicFile f;
    int r2 = -1;
    Error err2 = {{0}};
    if (atomic_open(&f, path, &err2) == 0) {
        for (int i = 0; i < 8; i++) fwrite(big, 1, 1000, f.fp);  // buffered: may "succeed"
        r2 = atomic_commit(&f, &err2);
    }
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    free(big);
    EXPECT(r == -1, "a write past the size limit succeeded");
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "unchanged"), "%s", err.msg);
    EXPECT(r2 == -1, "a buffered write past the size limit succeeded");
    EXPECT(strncmp(err2.msg, path, strlen(path)) == 0, "%s", err2.msg);
    unsigned char *data;
    size_t len;
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0 && len == 12 && !memcmp(data, "old contents", 12));
    free(data);
    EXPECT(count_entries(dir) == 1, "temporary left behind: %d entries", count_entries(dir));
}

// rename onto a non-empty folder fails at commit: reported, temporary removed.
static void test_atomic_commit_rename_failure(void) {
    char dir[512], inner[600];
    path_in(dir, sizeof dir, "target_is_dir");
    snprintf(inner, sizeof inner, "%s/keep", dir);
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0);
    EXPECT(file_write_atomic(inner, "x", 1, &err) == 0);
    EXPECT(file_write_atomic(dir, "data", 4, &err) == -1);
    EXPECT(strncmp(err.msg, dir, strlen(dir)) == 0, "%s", err.msg);
    EXPECT(file_exists(inner), "the folder lost its contents");
    char tmpname[800], host[80];
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", dir, (long)getpid());
    EXPECT(!file_exists(tmpname), "temporary %s left behind", tmpname);
    host_tag(host, sizeof host);
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%s.%ld", dir, host, (long)getpid());
    EXPECT(!file_exists(tmpname), "temporary %s left behind", tmpname);
    char parent[512];
    path_in(parent, sizeof parent, "");
    DIR *d = opendir(parent);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        EXPECT(!strstr(e->d_name, "target_is_dir.tmp."), "temporary %s left behind", e->d_name);
    if (d) closedir(d);
}

static void test_write_into_missing_or_unwritable_folder(void) {
    char path[512];
    path_in(path, sizeof path, "no/such/folder/file.bin");
    Error err = {{0}};
    EXPECT(file_write_atomic(path, "x", 1, &err) == -1);
    EXPECT(strstr(err.msg, "no/such/folder/file.bin") != NULL, "%s", err.msg);
    if (geteuid() == 0) return;  // root writes through permissions; the rest is covered above
    char dir[512], file[600];
    path_in(dir, sizeof dir, "readonly");
    make_dirs(dir, &err);
    snprintf(file, sizeof file, "%s/f", dir);
    EXPECT(file_write_atomic(file, "old", 3, &err) == 0);
    chmod(dir, 0555);
    EXPECT(file_write_atomic(file, "new!", 4, &err) == -1);
    chmod(dir, 0700);
    unsigned char *data;
    size_t len;
    EXPECT(file_read_all(file, &data, &len, 0, &err) == 0 && len == 3 && !memcmp(data, "old", 3));
    free(data);
}

static void test_make_dirs_and_file_exists(void) {
    char path[512], file[600];
    path_in(path, sizeof path, "a/b//c/d/");
    Error err = {{0}};
    EXPECT(make_dirs(path, &err) == 0, "%s", err.msg);
    EXPECT(make_dirs(path, &err) == 0, "second time: %s", err.msg);
    path_in(path, sizeof path, "a/b/c/d");
    struct stat st;
    EXPECT(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    EXPECT(file_exists(path));
    snprintf(file, sizeof file, "%s/plain", path);
    EXPECT(!file_exists(file));
    EXPECT(file_write_atomic(file, "x", 1, &err) == 0);
    EXPECT(file_exists(file));
    // A path through a plain file cannot be made.
    char through[700];
    snprintf(through, sizeof through, "%s/sub", file);
    EXPECT(make_dirs(through, &err) == -1);
    EXPECT(strstr(err.msg, "plain") != NULL, "%s", err.msg);
    EXPECT(make_dirs("", &err) == -1);
}

static void test_csvlog_header_rows_and_append(void) {
    char path[512];
    path_in(path, sizeof path, "log.csv");
    CsvLog log;
    Error err = {{0}};
    EXPECT(csvlog_open(&log, path, "step,loss,acc", 0, &err) == 0, "%s", err.msg);
    EXPECT(log.n_cols == 3);
    csvlog_row(&log, (const double[]){1, 0.5, NAN}, 3);
    csvlog_close(&log);
    EXPECT(csvlog_open(&log, path, "step,loss,acc", 1, &err) == 0, "%s", err.msg);
    csvlog_row(&log, (const double[]){2, 0.25, 0.75}, 3);
    csvlog_close(&log);
    unsigned char *data;
    size_t len;
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0);
    EXPECT(strcmp((char *)data, "step,loss,acc\n1,0.5,\n2,0.25,0.75\n") == 0, "got:\n%s", data);
    free(data);
    // Not appending starts over.
    EXPECT(csvlog_open(&log, path, "a,b", 0, &err) == 0);
    csvlog_row(&log, (const double[]){1e-7, -3}, 2);
    csvlog_close(&log);
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0);
    EXPECT(strcmp((char *)data, "a,b\n1e-07,-3\n") == 0, "got:\n%s", data);
    free(data);
    char bad[512];
    path_in(bad, sizeof bad, "missing/log.csv");
    EXPECT(csvlog_open(&log, bad, "a", 0, &err) == -1);
    EXPECT(strncmp(err.msg, bad, strlen(bad)) == 0, "%s", err.msg);
}

static void expect_file(const char *path, const char *want) {
    unsigned char *data = NULL;
    size_t len;
    Error err = {{0}};
    EXPECT(file_read_all(path, &data, &len, 0, &err) == 0, "%s", err.msg);
    EXPECT(data && strcmp((char *)data, want) == 0, "got:\n%s\nwant:\n%s", data, want);
    free(data);
}

// Resuming a log begun under other columns: the old rows move under the new header by
// column name, new columns are empty in them, and a column the new header lacks refuses.
static void test_csvlog_resume_under_a_new_header(void) {
    char path[512];
    path_in(path, sizeof path, "old.csv");
    Error err = {{0}};
    const char *old = "step,loss,seconds\n10,0.5,1.5\n20,0.25,3\n";
    EXPECT(file_write_atomic(path, old, strlen(old), &err) == 0, "%s", err.msg);
    CsvLog log;
    EXPECT(csvlog_open(&log, path, "step,loss,grad_norm,seconds", 1, &err) == 0, "%s", err.msg);
    csvlog_row(&log, (const double[]){30, 0.125, 7, 4.5}, 4);
    csvlog_close(&log);
    expect_file(path, "step,loss,grad_norm,seconds\n10,0.5,,1.5\n20,0.25,,3\n30,0.125,7,4.5\n");
    // Reordered columns move by name; a short row (a killed writer) gets empty cells.
    const char *moved = "a,b,c\n1,2,3\n4,5\n";
    EXPECT(file_write_atomic(path, moved, strlen(moved), &err) == 0);
    EXPECT(csvlog_open(&log, path, "c,a,b", 1, &err) == 0, "%s", err.msg);
    csvlog_close(&log);
    expect_file(path, "c,a,b\n3,1,2\n,4,5\n");
    // The same header is left as it is, byte for byte.
    EXPECT(csvlog_open(&log, path, "c,a,b", 1, &err) == 0, "%s", err.msg);
    csvlog_close(&log);
    expect_file(path, "c,a,b\n3,1,2\n,4,5\n");
    // A column the new header lacks, or a row longer than its header: refused, file kept.
    EXPECT(csvlog_open(&log, path, "a,b", 1, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "'c'"), "%s", err.msg);
    EXPECT(log.fp == NULL);
    expect_file(path, "c,a,b\n3,1,2\n,4,5\n");
    const char *long_row = "a,b\n1,2\n1,2,3\n";
    EXPECT(file_write_atomic(path, long_row, strlen(long_row), &err) == 0);
    EXPECT(csvlog_open(&log, path, "a,b,c", 1, &err) == -1);
    EXPECT(strstr(err.msg, "line 3"), "%s", err.msg);
    expect_file(path, long_row);
    // An empty file gets the header.
    EXPECT(file_write_atomic(path, "", 0, &err) == 0);
    EXPECT(csvlog_open(&log, path, "a,b", 1, &err) == 0, "%s", err.msg);
    csvlog_close(&log);
    expect_file(path, "a,b\n");
}


// A FIFO (no writer: opening it for reading would block), a character device and a folder:
// every reader refuses each at once with "PATH: not a regular file".
static void test_fifo_device_and_folder_refused_at_once(void) {
    char fifo[512];
    path_in(fifo, sizeof fifo, "pipe");
    EXPECT(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
    const char *paths[] = {fifo, "/dev/null", tmpdir};
    for (int k = 0; k < 3; k++) {
        const char *p = paths[k];
        Error err = {{0}};
        unsigned char *data = NULL;
        size_t len = 7;
        EXPECT(file_read_all(p, &data, &len, 0, &err) == -1 && data == NULL && len == 0, "%s read", p);
        EXPECT(strncmp(err.msg, p, strlen(p)) == 0 && strstr(err.msg, ": not a regular file"),
               "file_read_all: %s", err.msg);
        FILE *fp = NULL;
        size_t size = 7;
        EXPECT(file_open_regular(&fp, &size, p, &err) == -1 && fp == NULL && size == 0, "%s open", p);
        EXPECT(strstr(err.msg, ": not a regular file"), "file_open_regular: %s", err.msg);
        int fd = 7;
        EXPECT(file_open_regular_fd(&fd, &size, p, O_RDONLY, &err) == -1 && fd == -1, "%s fd", p);
        EXPECT(strstr(err.msg, ": not a regular file"), "file_open_regular_fd: %s", err.msg);
    }
    unlink(fifo);
}

// This host's part of a temporary's name, as core/fileio.h describes it.
static void host_tag(char *out, size_t cap) {
    char h[256] = {0};
    if (gethostname(h, sizeof h - 1) != 0 || !h[0]) snprintf(h, sizeof h, "host");
    size_t k = 0;
    for (size_t i = 0; h[i] && k + 1 < cap && k < 64; i++) {
        unsigned char c = (unsigned char)h[i];
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_';
        out[k++] = keep ? (char)c : '_';
    }
    out[k] = 0;
}

// A process id that no process has now: a child's, once it has been reaped.
static long dead_pid(void) {
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

// Links planted where the temporary goes (under this scheme's name and the older
// PATH.tmp.PID) are not written through: the file they point at keeps its bytes.
static void test_temporary_never_follows_a_link(void) {
    char dir[512], victim[600], path[600], link1[800], link2[800], host[80];
    path_in(dir, sizeof dir, "links");
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(path, sizeof path, "%s/out.bin", dir);
    EXPECT(file_write_atomic(victim, "keep me", 7, &err) == 0, "%s", err.msg);
    host_tag(host, sizeof host);
    snprintf(link1, sizeof link1, "%s.tmp.%s.%ld", path, host, (long)getpid());
    snprintf(link2, sizeof link2, "%s.tmp.%ld", path, (long)getpid());
    EXPECT(symlink(victim, link1) == 0 && symlink(victim, link2) == 0, "symlink: %s", strerror(errno));
    int rc = file_write_atomic(path, "new data", 8, &err);
    unsigned char *data = NULL;
    size_t len = 0;
    EXPECT(file_read_all(victim, &data, &len, 0, &err) == 0 && len == 7 && !memcmp(data, "keep me", 7),
           "the link's target was written: %.*s", (int)len, data ? (char *)data : "");
    free(data);
    struct stat st;
    EXPECT(lstat(victim, &st) == 0 && S_ISREG(st.st_mode), "the victim is gone");
    if (rc == 0) {  // written beside the link, or refused; never through it
        EXPECT(file_read_all(path, &data, &len, 0, &err) == 0 && len == 8, "%s", err.msg);
        free(data);
    } else {
        EXPECT(strstr(err.msg, "out.bin") != NULL, "%s", err.msg);
    }
    unlink(link1);
    unlink(link2);
}

// The sweep removes regular files named PATH.tmp.THISHOST.PID whose PID is dead, and
// nothing else: another host's, a running process's, a user's file of the older pattern
// PATH.tmp.PID, a link, a folder.
static void test_stale_sweep_only_this_hosts_dead_temporaries(void) {
    char dir[512], host[80], p[1024];
    path_in(dir, sizeof dir, "sweep");
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    host_tag(host, sizeof host);
    long dead = dead_pid();
    snprintf(p, sizeof p, "%s/model.bin.tmp.%s.%ld", dir, host, dead);  // removed
    EXPECT(scratch_write_text(p, "x") == 0);
    snprintf(p, sizeof p, "%s/model.bin.tmp.%s.%ld", dir, host, (long)getpid());
    EXPECT(scratch_write_text(p, "mine") == 0);
    snprintf(p, sizeof p, "%s/model.bin.tmp.%sx.%ld", dir, host, dead);  // another host
    EXPECT(scratch_write_text(p, "other") == 0);
    snprintf(p, sizeof p, "%s/notes.tmp.%ld", dir, dead);  // a user's file
    EXPECT(scratch_write_text(p, "user") == 0);
    snprintf(p, sizeof p, "%s/link.tmp.%s.%ld", dir, host, dead);
    EXPECT(symlink("model.bin", p) == 0);
    snprintf(p, sizeof p, "%s/folder.tmp.%s.%ld", dir, host, dead);
    EXPECT(mkdir(p, 0755) == 0);
    EXPECT(count_entries(dir) == 6);
    atomic_remove_stale(dir);
    snprintf(p, sizeof p, "%s/model.bin.tmp.%s.%ld", dir, host, dead);
    EXPECT(!file_exists(p), "a dead process's temporary was kept");
    EXPECT(count_entries(dir) == 5, "%d entries left, expected 5", count_entries(dir));
    snprintf(p, sizeof p, "%s/notes.tmp.%ld", dir, dead);
    EXPECT(file_exists(p), "a file of the user's was removed");
    snprintf(p, sizeof p, "%s/model.bin.tmp.%sx.%ld", dir, host, dead);
    EXPECT(file_exists(p), "another host's temporary was removed");
}

// A write that fails where there was no file says nothing of a previous one; one that
// fails over a file says it is unchanged. The reason is the write's own, whatever errno
// held when commit was called.
static void test_failed_write_messages(void) {
    char dir[512], path[600];
    path_in(dir, sizeof dir, "msgs");
    Error err = {{0}}, err2 = {{0}}, err3 = {{0}};
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/new.bin", dir);
    enum { BIG = 1 << 16 };
    char *big = calloc(BIG, 1);
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    EXPECT(setrlimit(RLIMIT_FSIZE, &small) == 0, "setrlimit failed");
    int r = file_write_atomic(path, big, BIG, &err);
    AtomicFile f;
    int r2 = -1;
    if (atomic_open(&f, path, &err2) == 0) {
        for (int i = 0; i < 8; i++) fwrite(big, 1, 1000, f.fp);
        r2 = atomic_commit(&f, &err2);
    }
    // A stream that failed earlier, then an unrelated failure sets errno before commit.
    int r3 = -1;
    if (atomic_open(&f, path, &err3) == 0) {
        fwrite(big, 1, BIG, f.fp);
        errno = ENOENT;
        r3 = atomic_commit(&f, &err3);
    }
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    free(big);
    EXPECT(r == -1 && r2 == -1 && r3 == -1, "a write past the size limit succeeded");
    EXPECT(strstr(err.msg, "new.bin") && !strstr(err.msg, "previous"), "%s", err.msg);
    EXPECT(strstr(err2.msg, "new.bin") && !strstr(err2.msg, "previous"), "%s", err2.msg);
    EXPECT(strstr(err3.msg, "new.bin") && !strstr(err3.msg, strerror(ENOENT)), "stale reason: %s", err3.msg);
    EXPECT(!file_exists(path) && count_entries(dir) == 0, "something was left behind");
}

int main(void) {
    if (scratch_make(tmpdir, sizeof tmpdir, "attend_fileio")) return 1;
    alarm(60);  // a FIFO that blocks a reader fails the program instead of hanging it
    RUN(test_read_all_roundtrip_and_cap);
    RUN(test_read_all_errors_name_the_file);
    RUN(test_open_regular_size_and_refusals);
    RUN(test_atomic_write_replaces_and_leaves_no_temporary);
    RUN(test_atomic_write_full_disk_keeps_old_file);
    RUN(test_atomic_commit_rename_failure);
    RUN(test_write_into_missing_or_unwritable_folder);
    RUN(test_make_dirs_and_file_exists);
    RUN(test_csvlog_header_rows_and_append);
    RUN(test_csvlog_resume_under_a_new_header);
    RUN(test_fifo_device_and_folder_refused_at_once);
    RUN(test_temporary_never_follows_a_link);
    RUN(test_stale_sweep_only_this_hosts_dead_temporaries);
    RUN(test_failed_write_messages);
    scratch_remove(tmpdir);
    return test_summary();
}
