/* Raw stacks (docs/file-formats.md): ctr_stack_open with the description
 * the CLI passes (width, height, count, dtype from the geometry and
 * --raw-dtype, --raw-offset), taken here from the input's first 33 bytes;
 * the rest is the file. Any 64-bit values reach the size checks. */
#include "fuzz_stack_read.h"

static int64_t get_i64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v |= (uint64_t)p[k] << (8 * k);
  return (int64_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 33) return 0;
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint.width = get_i64(data);
  hint.height = get_i64(data + 8);
  hint.count = get_i64(data + 16);
  hint.dtype = (ctr_dtype)(data[24] % 4);
  const int64_t offset = get_i64(data + 25);
  const char *path = fz_path(0, "proj.raw");
  fz_write_file(path, data + 33, size - 33);
  fz_stack(path, CTR_FORMAT_RAW, &hint, offset);
  return 0;
}
