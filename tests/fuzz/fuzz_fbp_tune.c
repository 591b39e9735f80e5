/* The parallel-beam kernel selector's cache (src/parbeam/fbp_tune.c):
 * ctr__fbp_tune_lookup reads fbp-kernels.json in the cache directory, and
 * ctr__fbp_tune_store replaces a corrupt or stale one (for one input in 16),
 * both pointed at the private directory. */
#include "fuzz_util.h"

#include "parbeam/fbp_tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fz_dir();
  fz_write_file(fz_path(0, "fbp-kernels.json"), data, size);
  ctr__fbp_tune_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "NVIDIA H100 80GB HBM3");
  k.nbins = 2048;
  k.nangles = 1500;
  k.nx = k.ny = 2048;
  k.interp = 1;
  k.multi = 0;
  char kernel[64];
  /* A miss is followed by a store, which syncs the file: one input in 16
   * (by its size, so that a replay does the same) to keep the rate up. */
  if (!ctr__fbp_tune_lookup(dir, &k, kernel, sizeof kernel) && size % 16 == 0) {
    k.multi = 1;
    (void)ctr__fbp_tune_store(dir, &k, "alu", 12.5);
  }
  return 0;
}
