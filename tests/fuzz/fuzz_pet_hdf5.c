/* PET histo-images in HDF5 (docs/pet.md): ctr_pet_histo_load on a .h5. */
#define FZ_THIRD_PARTY_HDF5
#include "fuzz_util.h"

#include <ctrecon.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "histo.h5");
  fz_write_file(path, data, size);
  ctr_pet_histo *h = NULL;
  if (ctr_pet_histo_load(path, &h) == CTR_OK) ctr_pet_histo_free(h);
  fz_hdf5_all_closed();
  return 0;
}
