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

int file_open_regular(FILE **fp, size_t *size, const char *path, Error *err) {
    *fp = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return error_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return error_set(err, "%s: not a regular file", path);
    }
    *fp = f;
    *size = (size_t)st.st_size;
    return 0;
}

int file_read_all(const char *path, unsigned char **data, size_t *len, size_t max_bytes,
                  Error *err) {
    *data = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return error_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0) {
        int e = errno;
        fclose(fp);
        return error_set(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(fp);
        return error_set(err, "%s: is a folder, not a file", path);
    }
    // Regular files: read the size we saw (and check nothing more follows). Others (pipes,
    // /dev/stdin): grow as we go. Either way the cap is enforced on what is actually read.
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
    if (max_bytes && S_ISREG(st.st_mode) && (size_t)st.st_size > max_bytes) {
        fclose(fp);
        return error_set(err, "%s: too large: %lld bytes, the limit is %zu", path,
                         (long long)st.st_size, max_bytes);
    }
    unsigned char *buf = xmalloc(cap + 1);
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (max_bytes && n > max_bytes) {
            free(buf);
            fclose(fp);
            return error_set(err, "%s: too large: more than %zu bytes", path, max_bytes);
        }
        if (got == 0) break;
    }
    if (ferror(fp)) {
        int e = errno;
        free(buf);
        fclose(fp);
        return error_set(err, "%s: read error: %s", path, strerror(e));
    }
    fclose(fp);
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

int atomic_open(AtomicFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path) return error_set(err, "%s: path too long", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, (long)getpid());
    f->fp = fopen(f->tmp, "wb");
    if (!f->fp) return error_set(err, "%s: cannot write: %s", f->tmp, strerror(errno));
    return 0;
}

void atomic_abort(AtomicFile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    if (f->tmp[0]) unlink(f->tmp);
    f->tmp[0] = 0;
}

// fsync the folder holding path, so the rename itself survives a crash.
static int sync_parent(const char *path, Error *err) {
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

int atomic_commit(AtomicFile *f, Error *err) {
    CHECK(f->fp, "atomic_commit without an open file");
    FILE *fp = f->fp;
    f->fp = NULL;
    // Every step's status matters: a full disk often shows up only at fflush or fclose.
    int bad = ferror(fp);
    int e = bad ? (errno ? errno : EIO) : 0;
    if (!bad && fflush(fp) != 0) bad = 1, e = errno;
    if (!bad && fsync(fileno(fp)) != 0 && errno != EINVAL) bad = 1, e = errno;
    if (fclose(fp) != 0 && !bad) bad = 1, e = errno;
    if (bad) {
        unlink(f->tmp);
        return error_set(err, "%s: write failed: %s (the previous file is unchanged)", f->path,
                         strerror(e));
    }
    if (rename(f->tmp, f->path) != 0) {
        e = errno;
        unlink(f->tmp);
        return error_set(err, "%s: cannot rename %s into place: %s", f->path, f->tmp, strerror(e));
    }
    f->tmp[0] = 0;
    return sync_parent(f->path, err);
}

int file_write_atomic(const char *path, const void *data, size_t len, Error *err) {
    AtomicFile f;
    if (atomic_open(&f, path, err)) return -1;
    if (len && fwrite(data, 1, len, f.fp) != len) {
        int e = errno;
        atomic_abort(&f);
        return error_set(err, "%s: write failed: %s (the previous file is unchanged)", path,
                         strerror(e ? e : EIO));
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

void atomic_remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t) continue;
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (end == t + 5 || *end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // still running (or unknown)
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}
