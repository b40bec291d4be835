// imagefolder.c: see imagefolder.h.
#include "datasets/imagefolder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// Debian's libstb ships the implementation; only the declarations are wanted here.
#include <stb_image.h>

#include "core/check.h"

int image_name_has_image_ext(const char *name) {
    static const char *const exts[] = {"png", "jpg", "jpeg", "bmp", "gif", "tga",
                                       "psd", "pnm", "ppm",  "pgm", "pic", "hdr"};
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        const char *e = exts[i];
        size_t n = strlen(e);
        if (strlen(dot + 1) != n) continue;
        size_t k = 0;
        while (k < n && tolower((unsigned char)dot[1 + k]) == e[k]) k++;
        if (k == n) return 1;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_skips(const void *a, const void *b) {
    return strcmp(((const ImageFolderSkip *)a)->name, ((const ImageFolderSkip *)b)->name);
}

// What the entry at path is: 1 an image to list, 0 an entry to ignore, -1 an entry to skip
// with *reason. Only a regular file is opened (stbi_info, for names without an image
// extension).
static int classify(const char *path, const char *name, const char **reason) {
    struct stat lst, st;
    if (lstat(path, &lst) != 0) {
        *reason = "cannot be read (it vanished while the folder was listed?)";
        return -1;
    }
    if (stat(path, &st) != 0) {
        int e = errno;
        if (!S_ISLNK(lst.st_mode)) *reason = "cannot be read";
        else if (e == ELOOP) *reason = "symbolic link loop";
        else if (e == ENOENT || e == ENOTDIR) *reason = "broken symbolic link (its target does not exist)";
        else if (e == EACCES) *reason = "symbolic link whose target cannot be reached (permission denied)";
        else *reason = "symbolic link that cannot be followed";
        return -1;
    }
    const int image_name = image_name_has_image_ext(name);
    if (S_ISREG(st.st_mode)) {
        int w, h, comp;
        return image_name || stbi_info(path, &w, &h, &comp) != 0;
    }
    if (!image_name) return 0;  // a sub-folder, a pipe, ... not meant as an image
    if (S_ISDIR(st.st_mode)) *reason = "a folder, not an image file";
    else if (S_ISFIFO(st.st_mode)) *reason = "a FIFO (named pipe), not an image file; not opened";
    else if (S_ISSOCK(st.st_mode)) *reason = "a socket, not an image file";
    else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) *reason = "a device, not an image file; not opened";
    else *reason = "not a regular file";
    return -1;
}

void image_folder_free(ImageFolder *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        free(f->paths[i]);
        free(f->names[i]);
    }
    for (int i = 0; i < f->n_skipped; i++) free(f->skipped[i].name);
    free(f->paths);
    free(f->names);
    free(f->skipped);
    memset(f, 0, sizeof *f);
}

int image_folder_list(ImageFolder *f, const char *dir, Error *err) {
    memset(f, 0, sizeof *f);
    DIR *d = opendir(dir);
    if (!d) return error_set(err, "%s: cannot open folder: %s", dir, strerror(errno));
    size_t dlen = strlen(dir);
    const char *sep = (dlen > 0 && dir[dlen - 1] == '/') ? "" : "/";
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;  // hidden files, "." and ".."
        size_t plen = dlen + strlen(sep) + strlen(e->d_name) + 1;
        char *path = xmalloc(plen);
        snprintf(path, plen, "%s%s%s", dir, sep, e->d_name);
        const char *reason = NULL;
        int kind = classify(path, e->d_name, &reason);
        free(path);
        if (kind < 0) {
            f->skipped = xrealloc(f->skipped, (size_t)(f->n_skipped + 1) * sizeof *f->skipped);
            f->skipped[f->n_skipped++] = (ImageFolderSkip){xstrdup(e->d_name), reason};
            continue;
        }
        if (kind == 0) {
            f->n_ignored++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = xrealloc(names, (size_t)cap * sizeof *names);
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n == 0 && f->n_skipped == 0) {
        int ignored = f->n_ignored;
        free(names);
        return error_set(err, "%s: no image files in the folder (%d other entr%s)", dir, ignored,
                         ignored == 1 ? "y" : "ies");
    }
    if (f->n_skipped > 1) qsort(f->skipped, (size_t)f->n_skipped, sizeof *f->skipped, cmp_skips);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_names);
    f->names = names;
    f->paths = xmalloc((size_t)(n ? n : 1) * sizeof *f->paths);
    for (int i = 0; i < n; i++) {
        size_t plen = dlen + strlen(sep) + strlen(names[i]) + 1;
        f->paths[i] = xmalloc(plen);
        snprintf(f->paths[i], plen, "%s%s%s", dir, sep, names[i]);
    }
    f->n = n;
    return 0;
}
