/* RabbitCT views as a canonical geometry. RabbitCT stores each 3x4 matrix
 * column-major (A[c*3 + r]) and weights a voxel by 1 / w^2 with w the raw
 * third row; the canonical form scales the matrix so that P[2][3] = 1, so
 * RabbitCT's weight is the canonical one times 1 / A[2][3]^2. */
#include "geometry/geometry_internal.h"

#include <math.h>

double ctr_rabbitct_weight(const double A[12]) { return 1.0 / (A[11] * A[11]); }

ctr_status ctr_geometry_create_rabbitct(int64_t width, int64_t height, int64_t nviews,
                                      const double *const *matrices, int64_t L, double R_L,
                                      double O_L, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_create_rabbitct: out is NULL");
  *out = NULL;
  if (!matrices) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "RabbitCT matrices are NULL");
  if (nviews < 1 || nviews > (1 << 24))
    CTR_FAIL(CTR_E_GEOMETRY, "RabbitCT views = %lld: expected 1 .. 16777216", (long long)nviews);
  if (L < 1 || L > (1 << 16)) CTR_FAIL(CTR_E_GEOMETRY, "RabbitCT L = %lld: expected 1 .. 65536", (long long)L);
  if (!(isfinite(R_L) && R_L > 0)) CTR_FAIL(CTR_E_GEOMETRY, "RabbitCT R_L = %g: expected a voxel size > 0 (mm)", R_L);
  if (!isfinite(O_L)) CTR_FAIL(CTR_E_GEOMETRY, "RabbitCT O_L = %g: expected a finite coordinate (mm)", O_L);
  double *rows = ctr__malloc((size_t)nviews * 12 * sizeof(double), "RabbitCT matrices");
  if (!rows) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < nviews; i++) {
    if (!matrices[i]) {
      free(rows);
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "RabbitCT matrix of view %lld is NULL", (long long)i);
    }
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 4; c++) rows[12 * i + 4 * r + c] = matrices[i][c * 3 + r];
  }
  /* Voxel i at O_L + i R_L: the grid is centred on O_L + (L - 1) / 2 R_L. */
  const double centre = O_L + 0.5 * (double)(L - 1) * R_L;
  const ctr_volume_geometry vol = {L, L, L, R_L, R_L, R_L, centre, centre, centre};
  ctr_status st = ctr_geometry_create_matrices(width, height, 0, 0, nviews, rows, &vol, out);
  free(rows);
  return st;
}
