/* TIFF stacks (docs/file-formats.md): ctr_stack_open on the pattern
 * "img_%02d.tif"; the input's parts (split at FZ_SPLIT) are the files
 * img_00.tif, img_01.tif, ... */
#include "fuzz_stack_read.h"

#define FZ_PAGES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_part p[FZ_PAGES];
  const int n = fz_split(data, size, p, FZ_PAGES);
  char name[32];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "img_%02d.tif", i);
    fz_write_file(fz_path(i, name), p[i].data, p[i].size);
  }
  fz_stack(fz_path(7, "img_%02d.tif"), CTR_FORMAT_TIFF_STACK, NULL, 0);
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "img_%02d.tif", i);
    unlink(fz_path(i, name));
  }
  return 0;
}
