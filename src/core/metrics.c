/* Reconstruction error metrics shared by the demo, the tests and benchmarks. */
#include "core/internal.h"

#include <math.h>

ctr_status ctr_volume_compare(const float *rec, const float *truth, int64_t nx, int64_t ny,
                              int64_t nz, int64_t margin, ctr_volume_error *out) {
  if (!rec || !truth || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_volume_compare: NULL argument");
  if (nx < 1 || ny < 1 || nz < 1 || margin < 0 || 2 * margin >= nz)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_volume_compare: %lld x %lld x %lld with margin %lld: expected positive sizes "
             "and 2 * margin < nz",
             (long long)nx, (long long)ny, (long long)nz, (long long)margin);
  CTR_CHECK(ctr__struct_check(&ctr__struct_volume_error, out));
  double s_obj = 0.0, s_flat = 0.0, worst = 0.0;
  int64_t n_obj = 0, n_flat = 0;
#pragma omp parallel for reduction(+ : s_obj, s_flat, n_obj, n_flat) reduction(max : worst)
  for (int64_t z = margin; z < nz - margin; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++) {
        const int64_t i = (z * ny + y) * nx + x;
        if (truth[i] == 0.0f) continue;
        const double e = (double)rec[i] - (double)truth[i];
        s_obj += e * e;
        n_obj++;
        worst = fmax(worst, fabs(e));
        if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) continue;
        int flat = 1;
        for (int dz = -1; dz <= 1 && flat; dz++)
          for (int dy = -1; dy <= 1 && flat; dy++)
            for (int dx = -1; dx <= 1 && flat; dx++)
              flat = truth[i + (dz * ny + dy) * nx + dx] == truth[i];
        if (!flat) continue;
        s_flat += e * e;
        n_flat++;
      }
  const ctr_volume_error e = {CTR_VOLUME_ERROR_VERSION, n_obj ? sqrt(s_obj / (double)n_obj) : 0.0,
                              n_flat ? sqrt(s_flat / (double)n_flat) : 0.0, worst, n_obj,
                              n_flat};
  return ctr__struct_store(&ctr__struct_volume_error, out, &e);
}
