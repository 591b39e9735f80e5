/* Double-precision reference backprojector: the test oracle for every fast
 * path (CPU and GPU). Deliberately plain. */
#include "conebeam/cpu/backproject.h"

#include "core/projmath.h"
#include "filter/helix_weight_math.h"

#include <stdlib.h>

void ctr__bp_reference_views(const ctr_geometry *g, int64_t n, const int64_t *idx,
                             const float *const *images, const double *weights, double *vol,
                             int64_t z0, int64_t nzs) {
  const ctr_volume_geometry *vg = &g->vol;
  const int64_t nx = vg->nx, ny = vg->ny, nu = g->nu, nv = g->nv;
  ctr__helix_fdk hx;
  const int helix = ctr__geometry_helix(g, &hx); /* window weights, rows clamped */
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t z = 0; z < nzs; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++) {
        const double p[3] = {ctr__voxel_coord(x, nx, vg->voxel_x, vg->offset_x),
                             ctr__voxel_coord(y, ny, vg->voxel_y, vg->offset_y),
                             ctr__voxel_coord(z0 + z, vg->nz, vg->voxel_z, vg->offset_z)};
        double sum = 0.0;
        for (int64_t k = 0; k < n; k++) {
          const double *P = g->views[idx[k]].P;
          double c = P[8] * p[0] + P[9] * p[1] + P[10] * p[2] + P[11], u, v, dw;
          ctr__cyl_view cv;
          if (ctr__geometry_cyl_view(g, idx[k], &cv)) { /* cylindrical: (d / r)^2 */
            ctr__cyl_project(&cv, p[0], p[1], p[2], &u, &v, &dw);
          } else {
            u = (P[0] * p[0] + P[1] * p[1] + P[2] * p[2] + P[3]) / c;
            v = (P[4] * p[0] + P[5] * p[1] + P[6] * p[2] + P[7]) / c;
            dw = 1.0 / (c * c);
          }
          double w = weights ? weights[k] : 1.0;
          if (helix) {
            w *= ctr__helix_window(ctr__helix_arg(g->views[idx[k]].src[2], p[2], hx.kz), hx.s);
            v = fmin(fmax(v, 0.0), (double)(nv - 1));
          }
          sum += w * ctr__bilinear_zero_f64(images[k], nu, nv, u, v) * dw;
        }
        vol[(z * ny + y) * nx + x] += sum;
      }
}

void ctr__bp_reference(const ctr_geometry *g, int64_t v0, int64_t n, const float *filtered,
                       double *vol, int64_t z0, int64_t nzs) {
  int64_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
  const float **img = malloc((size_t)(n > 0 ? n : 1) * sizeof *img);
  if (idx && img) {
    for (int64_t k = 0; k < n; k++) {
      idx[k] = v0 + k;
      img[k] = filtered + k * g->nu * g->nv;
    }
    ctr__bp_reference_views(g, n, idx, img, NULL, vol, z0, nzs);
  }
  free(idx);
  free(img);
}
