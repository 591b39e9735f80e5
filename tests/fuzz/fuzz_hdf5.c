/* HDF5 / DXchange (docs/file-formats.md): ctr_stack_open on
 * "scan.h5:/exchange/data" and ctr_hdf5_read_vector of /exchange/theta, as
 * `ctrecon fbp` reads a DXchange file. */
#define FZ_THIRD_PARTY_HDF5
#include "fuzz_stack_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *file = fz_path(0, "scan.h5");
  fz_write_file(file, data, size);
  fz_stack(fz_path(1, "scan.h5:/exchange/data"), CTR_FORMAT_HDF5, NULL, 0);
  double *theta = NULL;
  int64_t n = 0;
  if (ctr_hdf5_read_vector(file, "/exchange/theta", &theta, &n) == CTR_OK) free(theta);
  fz_hdf5_all_closed();
  return 0;
}
