/* Fast CPU backprojection. The volume is walked row by row (x fastest); for
 * each row and view, c, u and v are linear in x before the division, so the
 * inner loop is straight-line arithmetic plus four loads, which the compiler
 * vectorises (AVX-512 / AVX2 / SSE clones picked at run time). On circular
 * orbits c and u do not depend on z, so two slices share them. */
#include "conebeam/cpu/backproject.h"

#include "core/cylmath.h"
#include "core/projmath.h"
#include "filter/helix_weight_math.h"

#include <stdlib.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CTR__CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CTR__CLONES
#endif

/* acc[i] += w(i) * Q(u(i), v(i)) along one volume row; a, b, c are the three
 * rows of the matrix evaluated at i = 0 with per-voxel increments. */
CTR__CLONES
static void bp_row(float *restrict acc, int nx, const float *restrict img, int pitch, int nu,
                   int row0, int nv, float a0, float da, float b0, float db, float c0, float dc) {
  for (int i = 0; i < nx; i++) {
    const float fi = (float)i;
    const float r = 1.0f / (c0 + fi * dc);
    const float u = (a0 + fi * da) * r;
    const float v = (b0 + fi * db) * r;
    acc[i] += r * r * ctr__bilinear_padded_rows(img, pitch, nu, row0, nv, u, v);
  }
}

/* bp_row for a helical orbit (docs/geometry.md, "Helical orbits"): the row's
 * window weight wh, and v clamped to the detector's edge rows [row0, row0 +
 * nv - 1] (a voxel the window weights may project beyond them). */
CTR__CLONES
static void bp_row_helix(float *restrict acc, int nx, const float *restrict img, int pitch,
                         int nu, int row0, int nv, float a0, float da, float b0, float db,
                         float c0, float dc, float wh) {
  const float lo = (float)row0, hi = (float)(row0 + nv - 1);
  for (int i = 0; i < nx; i++) {
    const float fi = (float)i;
    const float r = 1.0f / (c0 + fi * dc);
    const float u = (a0 + fi * da) * r;
    float v = (b0 + fi * db) * r;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    acc[i] += wh * r * r * ctr__bilinear_padded_rows(img, pitch, nu, row0, nv, u, v);
  }
}

/* ROWS rows (slices z .. z+ROWS-1 at the same y) of a circular orbit: c and
 * u are the same, v differs. Each row's v comes from its own b0, so the sums
 * are bit-identical to bp_row's, whatever the grouping. */
#define CTR__ROWS 4
CTR__CLONES
static void bp_rows(float *restrict acc, int64_t stride, int nx, const float *restrict img,
                    int pitch, int nu, int row0, int nv, float a0, float da, const float *b0,
                    float db, float c0, float dc) {
  for (int i = 0; i < nx; i++) {
    const float fi = (float)i;
    const float r = 1.0f / (c0 + fi * dc);
    const float u = (a0 + fi * da) * r, w = r * r;
    for (int m = 0; m < CTR__ROWS; m++)
      acc[m * stride + i] +=
          w * ctr__bilinear_padded_rows(img, pitch, nu, row0, nv, u, (b0[m] + fi * db) * r);
  }
}

/* A cylindrical detector's column maps along one volume row (core/cylmath.h):
 * u, the z scale of v (fv / r) and the weight (d / r)^2 / alpha^2 of each
 * voxel column, constant along z on a circular orbit. */
CTR__CLONES
static void cyl_columns(int nx, float x0, float dx, float y, float ct, float st, float d,
                        float u0, float fu, float fv, float wscale, float *restrict u,
                        float *restrict vz, float *restrict w) {
  for (int i = 0; i < nx; i++) {
    ctr__cyl_column_f(ct, st, d, u0, fu, fv, x0 + (float)i * dx, y, &u[i], &vz[i], &w[i]);
    w[i] *= wscale;
  }
}

/* acc[i] += w[i] * Q(u[i], v0 + vz[i] z) along one volume row. */
CTR__CLONES
static void cyl_row(float *restrict acc, int nx, const float *restrict img, int pitch, int nu,
                    int row0, int nv, const float *restrict u, const float *restrict vz,
                    const float *restrict w, float v0, float z) {
  for (int i = 0; i < nx; i++)
    acc[i] += w[i] * ctr__bilinear_padded_rows(img, pitch, nu, row0, nv, u[i], v0 + vz[i] * z);
}

/* cyl_row on a helix (docs/geometry.md, "Helical orbits"): the source at
 * height zs, the row's window weight wh, v clamped to the detector's edge
 * rows [row0, row0 + nv - 1] as bp_row_helix's. */
CTR__CLONES
static void cyl_row_helix(float *restrict acc, int nx, const float *restrict img, int pitch,
                          int nu, int row0, int nv, const float *restrict u,
                          const float *restrict vz, const float *restrict w, float v0, float z,
                          float wh) {
  const float lo = (float)row0, hi = (float)(row0 + nv - 1);
  for (int i = 0; i < nx; i++) {
    float v = v0 + vz[i] * z;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    acc[i] += wh * w[i] * ctr__bilinear_padded_rows(img, pitch, nu, row0, nv, u[i], v);
  }
}

/* Slices per task of the cylindrical backprojection: the column maps (one
 * atan2 a voxel column and view) are shared by this many slices. */
#define CTR__CYL_ROWS 16

/* ctr__bp_cpu for a cylindrical detector: the same batches, weights and
 * alpha, the pixel position from ctr__cyl_column_f instead of the matrix; on
 * a helix, heights from the view's source and the window's weight per slice
 * (slices of weight 0 skipped). */
static void bp_cpu_cyl(const ctr_context *ctx, const ctr_geometry *g, int64_t v0, int64_t n,
                       const int64_t *idx, const double *alpha, const ctr__padded_views *views,
                       float *vol, int64_t z0, int64_t nzs) {
  const ctr_volume_geometry *vg = &g->vol;
  const int64_t nx = vg->nx, ny = vg->ny, nsteps = (nzs + CTR__CYL_ROWS - 1) / CTR__CYL_ROWS;
  const float x0 = (float)ctr__voxel_coord(0, nx, vg->voxel_x, vg->offset_x);
  ctr__helix_fdk hx;
  const int helix = ctr__geometry_helix(g, &hx);
#pragma omp parallel num_threads(ctr__num_threads(ctx))
  {
    float *buf = malloc((size_t)(3 * nx) * sizeof(float));
#pragma omp for collapse(2) schedule(static)
    for (int64_t zs = 0; zs < nsteps; zs++) {
      for (int64_t y = 0; y < ny; y++) {
        if (!buf) continue; /* a thread without memory leaves its rows (not expected) */
        float *u = buf, *vz = buf + nx, *w = buf + 2 * nx;
        const int64_t z = zs * CTR__CYL_ROWS;
        const int64_t rows = nzs - z < CTR__CYL_ROWS ? nzs - z : CTR__CYL_ROWS;
        const float wy = (float)ctr__voxel_coord(y, ny, vg->voxel_y, vg->offset_y);
        for (int64_t k = 0; k < n; k++) {
          const int64_t view = idx ? idx[k] : v0 + k;
          ctr__cyl_view c;
          ctr__geometry_cyl_view(g, view, &c);
          const double a = alpha ? alpha[k] : 1.0;
          cyl_columns((int)nx, x0, (float)vg->voxel_x, wy, (float)c.ct, (float)c.st, (float)c.d,
                      (float)c.u0, (float)c.fu, (float)c.fv, (float)(1.0 / (a * a)), u, vz, w);
          const float *img = views->base + k * views->view_stride;
          for (int64_t m = 0; m < rows; m++) {
            const double dz = ctr__voxel_coord(z0 + z + m, vg->nz, vg->voxel_z, vg->offset_z);
            float *row = vol + ((z + m) * ny + y) * nx;
            if (helix) {
              const double wh =
                  ctr__helix_window(ctr__helix_arg(g->views[view].src[2], dz, hx.kz), hx.s);
              if (wh > 0.0)
                cyl_row_helix(row, (int)nx, img, views->pitch, (int)g->nu, (int)g->row0,
                              (int)g->nv, u, vz, w, (float)c.v0, (float)(dz - c.zs), (float)wh);
            } else {
              cyl_row(row, (int)nx, img, views->pitch, (int)g->nu, (int)g->row0, (int)g->nv, u,
                      vz, w, (float)c.v0, (float)dz);
            }
          }
        }
      }
    }
    free(buf);
  }
}

void ctr__bp_cpu(const ctr_context *ctx, const ctr_geometry *g, int64_t v0, int64_t n,
                 const int64_t *idx, const double *alpha, const ctr__padded_views *views,
                 float *vol, int64_t z0, int64_t nzs) {
  if (ctr__geometry_cyl_view(g, 0, NULL)) {
    bp_cpu_cyl(ctx, g, v0, n, idx, alpha, views, vol, z0, nzs);
    return;
  }
  const ctr_volume_geometry *vg = &g->vol;
  const int64_t nx = vg->nx, ny = vg->ny;
  const double x0 = ctr__voxel_coord(0, nx, vg->voxel_x, vg->offset_x);
  ctr__helix_fdk hx;
  const int helix = ctr__geometry_helix(g, &hx);
  /* a helix's per-view matrices have u and c constant along z too, but each
   * slice has its own window weight: one row at a time */
  const int circular = !helix && ctr_geometry_is_circular(g);
  const int64_t step = circular ? CTR__ROWS : 1, nsteps = (nzs + step - 1) / step;
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctr__num_threads(ctx))
  for (int64_t zs = 0; zs < nsteps; zs++) {
    for (int64_t y = 0; y < ny; y++) {
      const int64_t z = zs * step;
      const int group = circular && z + CTR__ROWS <= nzs;
      const double wy = ctr__voxel_coord(y, ny, vg->voxel_y, vg->offset_y);
      const int64_t rows = circular ? (nzs - z < CTR__ROWS ? nzs - z : CTR__ROWS) : 1;
      for (int64_t k = 0; k < n; k++) {
        double P[12];
        const double s = alpha ? alpha[k] : 1.0;
        for (int q = 0; q < 12; q++) P[q] = s * g->views[idx ? idx[k] : v0 + k].P[q];
        const float *img = views->base + k * views->view_stride;
        const float da = (float)(P[0] * vg->voxel_x), db = (float)(P[4] * vg->voxel_x);
        const float dc = (float)(P[8] * vg->voxel_x);
        float b0[CTR__ROWS];
        for (int64_t m = 0; m < rows; m++) {
          const double wz = ctr__voxel_coord(z0 + z + m, vg->nz, vg->voxel_z, vg->offset_z);
          b0[m] = (float)(P[4] * x0 + P[5] * wy + P[6] * wz + P[7]);
        }
        const double wz = ctr__voxel_coord(z0 + z, vg->nz, vg->voxel_z, vg->offset_z);
        const float a0 = (float)(P[0] * x0 + P[1] * wy + P[2] * wz + P[3]);
        const float c0 = (float)(P[8] * x0 + P[9] * wy + P[10] * wz + P[11]);
        float *row = vol + (z * ny + y) * nx;
        if (helix) {
          const int64_t view = idx ? idx[k] : v0 + k;
          const double wh =
              ctr__helix_window(ctr__helix_arg(g->views[view].src[2], wz, hx.kz), hx.s);
          if (wh > 0.0)
            bp_row_helix(row, (int)nx, img, views->pitch, (int)g->nu, (int)g->row0, (int)g->nv,
                         a0, da, b0[0], db, c0, dc, (float)wh);
        } else if (group) {
          bp_rows(row, ny * nx, (int)nx, img, views->pitch, (int)g->nu, (int)g->row0, (int)g->nv,
                  a0, da, b0, db, c0, dc);
        } else {
          for (int64_t m = 0; m < rows; m++)
            bp_row(row + m * ny * nx, (int)nx, img, views->pitch, (int)g->nu, (int)g->row0,
                   (int)g->nv, a0, da, b0[m], db, c0, dc);
        }
      }
    }
  }
}
