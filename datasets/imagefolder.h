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
//     ImageFolder f; Error err;
//     if (image_folder_list(&f, "photos", &err)) { fprintf(stderr, "%s\n", err.msg); ... }
//     for (int i = 0; i < f.n; i++) ... image_load(f.paths[i], ...) ... f.names[i] ...
//     image_folder_free(&f);
#ifndef DATASETS_IMAGEFOLDER_H
#define DATASETS_IMAGEFOLDER_H

#include "core/error.h"

typedef struct {
    char **paths;  // (n) "DIR/NAME", owned
    char **names;  // (n) "NAME", owned
    int n;
    int n_ignored;  // other entries: sub-folders, files that are not images by name or
                    // header (e.g. captions.tsv); hidden (dot) files are not counted
} ImageFolder;

// Fails naming DIR when it cannot be opened or holds no image file.
int image_folder_list(ImageFolder *f, const char *dir, Error *err);
void image_folder_free(ImageFolder *f);  // safe on a zeroed struct

// 1 when name ends in one of the image extensions above.
int image_name_has_image_ext(const char *name);

#endif
