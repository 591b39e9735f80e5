/* Fast CPU backprojection. The volume is walked row by row (x fastest); for
 * each row and view, c, u and v are linear in x before the division, so the
 * inner loop is straight-line arithmetic plus four loads, which the compiler
 * vectorises (gathers on AVX2/AVX-512, picked at run time). */
#include "backproject.h"

#include "common/projmath.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CTR__CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CTR__CLONES
#endif

/* acc[i] += w(i) * Q(u(i), v(i)) along one volume row; a, b, c are the three
 * rows of the matrix evaluated at i = 0 with per-voxel increments. */
CTR__CLONES
static void bp_row(float *restrict acc, int nx, const float *restrict img, int pitch, int nu,
                   int nv, float a0, float da, float b0, float db, float c0, float dc) {
  for (int i = 0; i < nx; i++) {
    const float fi = (float)i;
    const float r = 1.0f / (c0 + fi * dc);
    const float u = (a0 + fi * da) * r;
    const float v = (b0 + fi * db) * r;
    acc[i] += r * r * ctr__bilinear_padded(img, pitch, nu, nv, u, v);
  }
}

void ctr__bp_cpu(const ctr_context *ctx, const ctr_geometry *g, int64_t v0, int64_t n,
                 const ctr__padded_views *views, float *vol, int64_t z0, int64_t nzs) {
  const ctr_volume_geometry *vg = &g->vol;
  const int64_t nx = vg->nx, ny = vg->ny;
  const double x0 = ctr__voxel_coord(0, nx, vg->voxel_x, vg->offset_x);
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctr__num_threads(ctx))
  for (int64_t z = 0; z < nzs; z++) {
    for (int64_t y = 0; y < ny; y++) {
      const double wz = ctr__voxel_coord(z0 + z, vg->nz, vg->voxel_z, vg->offset_z);
      const double wy = ctr__voxel_coord(y, ny, vg->voxel_y, vg->offset_y);
      float *row = vol + (z * ny + y) * nx;
      for (int64_t k = 0; k < n; k++) {
        const double *P = g->views[v0 + k].P;
        const float a0 = (float)(P[0] * x0 + P[1] * wy + P[2] * wz + P[3]);
        const float b0 = (float)(P[4] * x0 + P[5] * wy + P[6] * wz + P[7]);
        const float c0 = (float)(P[8] * x0 + P[9] * wy + P[10] * wz + P[11]);
        bp_row(row, (int)nx, views->base + k * views->view_stride, views->pitch, (int)g->nu,
               (int)g->nv, a0, (float)(P[0] * vg->voxel_x), b0, (float)(P[4] * vg->voxel_x), c0,
               (float)(P[8] * vg->voxel_x));
      }
    }
  }
}
