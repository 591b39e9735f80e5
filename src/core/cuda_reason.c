/* Why no GPU can be used, in words (ctr__cuda_reason, core/internal.h): the
 * detail of the CUDA context's CTR_E_NO_DEVICE (docs/cuda.md, "Errors"). Its
 * own file: the CUDA backend's probe (src/gpu/device.cu) calls it, and the
 * context (context.c) calls the probe, so neither object file depends on the
 * other both ways. */
#include "core/internal.h"

#include <stdio.h>

/* The oldest Linux driver release of each CUDA major (NVIDIA's minor version
 * compatibility: a runtime of CUDA M.x runs on any driver of M.0 or newer). */
static const char *driver_release(int cuda_major) {
  switch (cuda_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
    default: return NULL;
  }
}

void ctr__cuda_reason(char *why, size_t n, int probe, int driver, int runtime,
                      const char *error) {
  const int rmaj = runtime / 1000, rmin = runtime % 1000 / 10;
  const int dmaj = driver / 1000, dmin = driver % 1000 / 10;
  const char *release = driver_release(rmaj);
  char need[96] = "";
  if (release)
    snprintf(need, sizeof need, ", Linux driver %s or newer", release);
  switch (probe) {
    case CTR__CUDA_PROBE_NONE: snprintf(why, n, "the NVIDIA driver lists no GPU"); break;
    case CTR__CUDA_PROBE_NO_DEVICE:
      snprintf(why, n, "the NVIDIA driver (CUDA %d.%d) sees no GPU (none installed, or "
               "CUDA_VISIBLE_DEVICES hides them)", dmaj, dmin);
      break;
    case CTR__CUDA_PROBE_OLD_DRIVER:
      if (driver <= 0)
        snprintf(why, n, "no NVIDIA driver was found (libcuda.so.1 could not be loaded; "
                 "this build needs one for CUDA %d.0 or newer%s)", rmaj, need);
      else
        snprintf(why, n, "the NVIDIA driver supports CUDA %d.%d, but this build's CUDA runtime "
                 "is %d.%d: it needs a driver for CUDA %d.0 or newer%s",
                 dmaj, dmin, rmaj, rmin, rmaj, need);
      break;
    default:
      snprintf(why, n, "cudaGetDeviceCount failed: %s", error ? error : "unknown error");
  }
}
