// imagefolder.h: the image files of one folder, sorted by name, for `caption predict`.
//
// Lists the regular, non-hidden files directly in DIR (no recursion) that look like
// images: a name ending (case-insensitively) in .png .jpg .jpeg .bmp .gif .tga .psd
// .pnm .ppm .pgm .pic .hdr is listed without opening it (so a broken photo is listed
// and its decoder names the problem later); any other file is listed only when
// stb_image recognises its header (stbi_info), otherwise it is ignored and counted.
// Order: byte-wise strcmp of the names (not locale), so the list is reproducible on
// every machine. Nothing is decoded here. Memory: the names, a few hundred bytes each.
//
// Links are followed (stat): a link to an image file is listed under the link's name.
// Entries that cannot be images but were meant to be are listed in `skipped` with the
// reason, for the caller to report and count as failures: a symbolic link whose target
// does not exist, a link loop, a link that cannot be followed, and anything named like an
// image (the extensions above) that is not a regular file: a folder, a FIFO, a socket, a
// device. Nothing but a regular file is ever opened, so a FIFO never blocks the listing.
// Names may hold any bytes (core/text_escape.h says how outputs write them).
//
//     ImageFolder f; Error err;
//     if (image_folder_list(&f, "photos", &err)) { fprintf(stderr, "%s\n", err.msg); ... }
//     for (int i = 0; i < f.n; i++) ... image_load(f.paths[i], ...) ... f.names[i] ...
//     image_folder_free(&f);
#ifndef DATASETS_IMAGEFOLDER_H
#define DATASETS_IMAGEFOLDER_H

#include "core/error.h"

typedef struct {
    char *name;          // NAME, owned
    const char *reason;  // static text, e.g. "symbolic link loop"
} ImageFolderSkip;

typedef struct {
    char **paths;  // (n) "DIR/NAME", owned
    char **names;  // (n) "NAME", owned
    int n;
    int n_ignored;  // other entries: sub-folders, files that are not images by name or
                    // header (e.g. captions.tsv); hidden (dot) files are not counted
    ImageFolderSkip *skipped;  // (n_skipped) sorted by name
    int n_skipped;
} ImageFolder;

// Fails naming DIR when it cannot be opened or holds neither an image file nor a skipped
// entry.
int image_folder_list(ImageFolder *f, const char *dir, Error *err);
void image_folder_free(ImageFolder *f);  // safe on a zeroed struct

// 1 when name ends in one of the image extensions above.
int image_name_has_image_ext(const char *name);

#endif
