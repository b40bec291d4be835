#include "core/fileio.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"

// stat before opening, so that a FIFO is never opened (that would block until a writer
// came) and a device never sees an open; then open without blocking and fstat the file that
// was opened, in case the name was replaced in between.
int file_open_regular_fd(int *fd, size_t *size, const char *path, int flags, Error *err) {
    *fd = -1;
    *size = 0;
    struct stat st;
    if (stat(path, &st) != 0) return error_set(err, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return error_set(err, "%s: not a regular file", path);
    int f = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) return error_set(err, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return error_set(err, "%s: not a regular file", path);
    }
    int fl = fcntl(f, F_GETFL);
    if (fl != -1) fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    *size = (size_t)st.st_size;
    return 0;
}

int file_open_regular(FILE **fp, size_t *size, const char *path, Error *err) {
    *fp = NULL;
    int fd;
    if (file_open_regular_fd(&fd, size, path, O_RDONLY, err)) return -1;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        *size = 0;
        return error_set(err, "%s: cannot open: %s", path, strerror(e));
    }
    *fp = f;
    return 0;
}

int file_read_all(const char *path, unsigned char **data, size_t *len, size_t max_bytes,
                  Error *err) {
    *data = NULL;
    *len = 0;
    FILE *fp;
    size_t size;
    if (file_open_regular(&fp, &size, path, err)) return -1;
    if (max_bytes && size > max_bytes) {
        fclose(fp);
        return error_set(err, "%s: too large: %zu bytes, the limit is %zu", path, size, max_bytes);
    }
    // Read the size we saw, and check nothing more follows (a file that grows, or one of
    // /proc that says 0); the cap is enforced on what is actually read.
    size_t cap = size + 1;
    unsigned char *buf = xmalloc(cap + 1);
    size_t n = 0;
    int e = 0;
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        errno = 0;  // so that the reason of a failed read is this read's
        size_t got = fread(buf + n, 1, cap - n, fp);
        if (got < cap - n) e = errno;
        n += got;
        if (max_bytes && n > max_bytes) {
            free(buf);
            fclose(fp);
            return error_set(err, "%s: too large: more than %zu bytes", path, max_bytes);
        }
        if (got == 0) break;
    }
    if (ferror(fp)) {
        free(buf);
        fclose(fp);
        return error_set(err, "%s: read error: %s", path, strerror(e ? e : EIO));
    }
    fclose(fp);
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

// This host's name as it goes into a temporary's name: letters, digits, '-' and '_' kept,
// anything else (a '.', a '/') made '_', at most 64 bytes; "host" when it has none.
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

int atomic_open(AtomicFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path) return error_set(err, "%s: path too long", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    char host[80];
    host_tag(host, sizeof host);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%s.%ld", path, host, (long)getpid());
    // O_EXCL with O_NOFOLLOW: never write through a link or into a file someone else made.
    // The name is this process's own on this host: one already there was left by a dead
    // process that had this id, so it goes, once.
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(f->tmp, flags, 0666);
    if (fd < 0 && errno == EEXIST && unlink(f->tmp) == 0) fd = open(f->tmp, flags, 0666);
    if (fd < 0) {
        int e = errno;
        f->tmp[0] = 0;
        return error_set(err, "%s: cannot write: %s", path, strerror(e));
    }
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        unlink(f->tmp);
        f->tmp[0] = 0;
        return error_set(err, "%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

void atomic_abort(AtomicFile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    if (f->tmp[0]) unlink(f->tmp);
    f->tmp[0] = 0;
}

// fsync the folder holding path, so the rename itself survives a crash.
int file_sync_parent(const char *path, Error *err) {
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return error_set(err, "%s: cannot open folder to sync: %s", dir, strerror(errno));
    // Some file systems refuse fsync on folders (EINVAL): the rename is still done.
    int r = fsync(fd);
    int e = errno;
    close(fd);
    if (r != 0 && e != EINVAL && e != ENOTSUP)
        return error_set(err, "%s: cannot sync folder: %s", dir, strerror(e));
    return 0;
}

// " (the previous file is unchanged)" when path names a file, else "": what a failed
// write says about the old file, said only when there is one.
static const char *previous_note(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? " (the previous file is unchanged)" : "";
}

int atomic_commit(AtomicFile *f, Error *err) {
    CHECK(f->fp, "atomic_commit without an open file");
    FILE *fp = f->fp;
    f->fp = NULL;
    // Every step's status matters: a full disk often shows up only at fflush or fclose.
    // After an earlier write failed, errno says nothing about it any more: the flush below
    // writes again and fails afresh, with this write's reason.
    int bad = ferror(fp), e = 0;
    errno = 0;
    if (fflush(fp) != 0 || bad) bad = 1, e = errno ? errno : EIO;
    errno = 0;
    if (!bad && fsync(fileno(fp)) != 0 && errno != EINVAL) bad = 1, e = errno;
    errno = 0;
    if (fclose(fp) != 0 && !bad) bad = 1, e = errno ? errno : EIO;
    if (bad) {
        unlink(f->tmp);
        f->tmp[0] = 0;
        return error_set(err, "%s: write failed: %s%s", f->path, strerror(e),
                         previous_note(f->path));
    }
    if (rename(f->tmp, f->path) != 0) {
        e = errno;
        unlink(f->tmp);
        error_set(err, "%s: cannot rename %s into place: %s", f->path, f->tmp, strerror(e));
        f->tmp[0] = 0;
        return -1;
    }
    f->tmp[0] = 0;
    return file_sync_parent(f->path, err);
}

int file_write_atomic(const char *path, const void *data, size_t len, Error *err) {
    AtomicFile f;
    if (atomic_open(&f, path, err)) return -1;
    errno = 0;
    if (len && fwrite(data, 1, len, f.fp) != len) {
        int e = errno;
        atomic_abort(&f);
        return error_set(err, "%s: write failed: %s%s", path, strerror(e ? e : EIO),
                         previous_note(path));
    }
    return atomic_commit(&f, err);
}

int make_dirs(const char *path, Error *err) {
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0) return error_set(err, "empty folder name");
    if (n >= sizeof buf) return error_set(err, "%s: path too long", path);
    memcpy(buf, path, n + 1);
    // Create each prefix ending before a '/', then the whole path.
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        if (buf[i - 1] == '/') continue;  // "a//b"
        char saved = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return error_set(err, "%s: cannot create folder: %s", buf, strerror(errno));
        struct stat st;
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
            return error_set(err, "%s: exists and is not a folder", buf);
        buf[i] = saved;
    }
    return 0;
}

int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// NAME's process id when it is a temporary atomic_open made on this host (host, ending
// ".tmp.HOST.PID", with something before it), else -1.
static long own_temporary_pid(const char *name, const char *host) {
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1]) return -1;
    long pid = 0;
    for (const char *p = dot + 1; *p; p++) {
        if (*p < '0' || *p > '9' || pid > 100000000) return -1;
        pid = pid * 10 + (*p - '0');
    }
    size_t hl = strlen(host), before = (size_t)(dot - name);
    if (before < hl + 6 || memcmp(dot - hl, host, hl) != 0 || memcmp(dot - hl - 5, ".tmp.", 5) != 0)
        return -1;
    return pid > 0 ? pid : -1;
}

void atomic_remove_stale(const char *dir) {
    char host[80];
    host_tag(host, sizeof host);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = own_temporary_pid(e->d_name, host);
        if (pid < 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // still running (or unknown)
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) unlink(path);  // never a link or folder
    }
    closedir(d);
}
