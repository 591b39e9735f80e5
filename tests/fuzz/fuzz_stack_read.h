/* Shared by the image-stack targets: open as the CLI does (ctr_stack_open),
 * then read the first and the last image and one row block, as float32. */
#ifndef CTR_FUZZ_STACK_READ_H
#define CTR_FUZZ_STACK_READ_H

#include "fuzz_util.h"

#include <ctrecon.h>

static void fz_stack(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                     int64_t raw_offset) {
  ctr_stack_reader *r = NULL;
  if (ctr_stack_open(path, fmt, hint, raw_offset, &r) != CTR_OK) return;
  const ctr_stack_info *in = ctr_stack_reader_get_info(r);
  /* Images of up to 16 Mi pixels are read (the reader checked the file
   * holds them); a larger one would only test the harness's allocation. */
  if (in->width > 0 && in->height > 0 && in->count > 0 &&
      in->width <= (1 << 24) / in->height) {
    float *img = malloc((size_t)(in->width * in->height) * sizeof(float));
    if (img) {
      (void)ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img);
      (void)ctr_stack_read(r, in->count - 1, 1, CTR_DTYPE_FLOAT32, img);
      (void)ctr_stack_read_rows(r, 0, 1, in->height / 2, 1, CTR_DTYPE_FLOAT32, img);
      (void)ctr_stack_read_rows(r, in->count - 1, 1, 0, in->height, CTR_DTYPE_FLOAT32, img);
      free(img);
    }
  }
  ctr_stack_close(r);
}

#endif
