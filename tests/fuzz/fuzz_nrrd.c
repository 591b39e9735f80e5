/* NRRD (docs/file-formats.md): ctr_stack_open on an attached .nrrd, or, when
 * the input carries a second part, on a detached .nhdr with that part as
 * its data file "data.raw". */
#include "fuzz_stack_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_part p[2];
  const int n = fz_split(data, size, p, 2);
  const char *path = fz_path(0, n > 1 ? "vol.nhdr" : "vol.nrrd");
  fz_write_file(path, p[0].data, p[0].size);
  if (n > 1) fz_write_file(fz_path(1, "data.raw"), p[1].data, p[1].size);
  fz_stack(path, CTR_FORMAT_NRRD, NULL, 0);
  unlink(path);
  if (n > 1) unlink(fz_path(1, "data.raw"));
  return 0;
}
