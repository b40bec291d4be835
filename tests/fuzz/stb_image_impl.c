// stb_image_impl.c: the implementation of Debian's stb_image.h, compiled into the fuzz
// targets only (with coverage and sanitizers) in place of the uninstrumented libstb, so
// the fuzzer explores and checks the decoder the image loader relies on.
// Sides over 1024 are refused here (fuzz build only): legal huge pictures decode slowly
// under the sanitizers and cover nothing small ones do not.
#define STBI_MAX_DIMENSIONS 1024
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
