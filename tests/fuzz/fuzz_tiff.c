/* Multi-page TIFF (docs/file-formats.md): ctr_stack_open on a .tif. */
#include "fuzz_stack_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "proj.tif");
  fz_write_file(path, data, size);
  fz_stack(path, CTR_FORMAT_TIFF, NULL, 0);
  return 0;
}
