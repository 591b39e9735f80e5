/* PET histo-image descriptions (docs/pet.md): ctr_pet_histo_load on a .json.
 * The input's first part is the description; its further parts (split at
 * FZ_SPLIT) are the files c.raw and f.raw it may name. */
#include "fuzz_util.h"

#include <ctrecon.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_part p[3];
  const int n = fz_split(data, size, p, 3);
  static const char *const names[3] = {"histo.json", "c.raw", "f.raw"};
  for (int i = 0; i < n; i++) fz_write_file(fz_path(i, names[i]), p[i].data, p[i].size);
  ctr_pet_histo *h = NULL;
  if (ctr_pet_histo_load(fz_path(0, names[0]), &h) == CTR_OK) ctr_pet_histo_free(h);
  for (int i = 1; i < n; i++) unlink(fz_path(i, names[i]));
  return 0;
}
