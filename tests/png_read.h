/* Reading a PNG back in the tests (libpng's simplified API): the pixels in
 * `format` (PNG_FORMAT_GRAY, PNG_FORMAT_RGB), malloc'd, rows top first;
 * NULL when it cannot be read. Include after harness.h. */
#ifndef CTR_TEST_PNG_READ_H
#define CTR_TEST_PNG_READ_H

#include <png.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *png_read_as(const char *path, png_uint_32 format, unsigned *w,
                                  unsigned *h) {
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&im, path)) return NULL;
  im.format = format;
  unsigned char *buf = malloc(PNG_IMAGE_SIZE(im));
  if (!buf || !png_image_finish_read(&im, NULL, buf, 0, NULL)) {
    free(buf);
    png_image_free(&im);
    return NULL;
  }
  *w = im.width;
  *h = im.height;
  return buf;
}

#endif
