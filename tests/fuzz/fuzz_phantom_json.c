/* Phantom JSON (docs/phantoms.md): ctr_phantom_load_json, through a file. */
#include "fuzz_util.h"

#include <ctrecon.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "phantom.json");
  fz_write_file(path, data, size);
  ctr_phantom *p = NULL;
  if (ctr_phantom_load_json(path, &p) == CTR_OK) ctr_phantom_free(p);
  return 0;
}
