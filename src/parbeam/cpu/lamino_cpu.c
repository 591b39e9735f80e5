/* Laminographic backprojection on the CPU (a tilted rotation axis,
 * docs/geometry.md "Laminography"): the float backprojector of ctr_fbp and
 * ctr_fbp_backproject and its double-precision reference.
 *
 * Both evaluate, for voxel (i, j, k) and view a with the constants of
 * ctr__lamino_views, the bin and the row
 *   t = u3 + j u1 + i u0,   r = v3 + k v2 + j v1 + i v0     (double, this order)
 * and add w_a times the filtered views at (t, r): linear, the bilinear blend
 * of the four neighbours (each 0 off the detector); nearest, the value at
 * (floor(t + 0.5), floor(r + 0.5)). The float backprojector accumulates
 * each voxel over the views in float, the reference in double; nothing
 * else differs. Voxels are independent: OpenMP over rows of voxels. */
#include "parbeam/parbeam.h"

#include <math.h>
#include <stdlib.h>

/* The filtered views' value at (t, r) of view a (0 off the detector). */
static double sample(const float *sino, int64_t nb, int64_t na, int64_t nr, int64_t a, double t,
                     double r, ctr_fbp_interp interp) {
  if (interp == CTR_FBP_NEAREST) {
    const double bt = floor(t + 0.5), br = floor(r + 0.5);
    if (bt < 0.0 || bt >= (double)nb || br < 0.0 || br >= (double)nr) return 0.0;
    return sino[((int64_t)br * na + a) * nb + (int64_t)bt];
  }
  const double t0 = floor(t), r0 = floor(r), ft = t - t0, fr = r - r0;
  if (t0 < -1.0 || t0 >= (double)nb || r0 < -1.0 || r0 >= (double)nr) return 0.0;
  const int64_t it = (int64_t)t0, ir = (int64_t)r0;
  double v = 0.0;
  for (int dr = 0; dr < 2; dr++) {
    const int64_t row = ir + dr;
    if (row < 0 || row >= nr) continue;
    const float *q = sino + (row * na + a) * nb;
    const double wr = dr ? fr : 1.0 - fr;
    if (it >= 0) v += wr * (1.0 - ft) * q[it];
    if (it + 1 < nb) v += wr * ft * q[it + 1];
  }
  return v;
}

static ctr__lamino_view *views_of(const ctr_parallel_geometry *g, int64_t nz) {
  ctr__lamino_view *w = ctr__malloc(sizeof *w * (size_t)g->p.nangles, "laminography views");
  if (w) ctr__lamino_views(g, nz, 0, g->p.nangles, w);
  return w;
}

/* One row (j, k) of voxels: out[i] = the sum over the views (float or
 * double accumulation, by `dbl`). */
static void bp_row(const ctr_parallel_geometry *g, const ctr__lamino_view *views,
                   ctr_fbp_interp interp, const float *sino, int64_t j, int64_t k, float *outf,
                   double *outd) {
  const int64_t nb = g->p.nbins, na = g->p.nangles, nr = g->p.nrows, nx = g->p.nx;
  for (int64_t i = 0; i < nx; i++) {
    float accf = 0.0f;
    double accd = 0.0;
    for (int64_t a = 0; a < na; a++) {
      const ctr__lamino_view *w = &views[a];
      const double t = w->u[3] + (double)j * w->u[1] + (double)i * w->u[0];
      const double r = w->v[3] + (double)k * w->v[2] + (double)j * w->v[1] + (double)i * w->v[0];
      const double s = w->w * sample(sino, nb, na, nr, a, t, r, interp);
      if (outf)
        accf += (float)s;
      else
        accd += s;
    }
    if (outf)
      outf[i] = accf;
    else
      outd[i] = accd;
  }
}

/* Every row of nz slices, into floats (outf) or doubles (outd). */
static ctr_status bp_all(const ctr_context *ctx, const ctr_parallel_geometry *g,
                         ctr_fbp_interp interp, int64_t nz, const float *sino, float *outf,
                         double *outd) {
  const int64_t nx = g->p.nx, ny = g->p.ny;
  ctr__lamino_view *views = views_of(g, nz);
  if (!views) return CTR_E_OUT_OF_MEMORY;
#pragma omp parallel for collapse(2) schedule(dynamic, 4) num_threads(ctr__num_threads(ctx))
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++) {
      const int64_t row = (k * ny + j) * nx;
      bp_row(g, views, interp, sino, j, k, outf ? outf + row : NULL, outd ? outd + row : NULL);
    }
  free(views);
  return CTR_OK;
}

ctr_status ctr__lamino_bp_cpu(const ctr_context *ctx, const ctr_parallel_geometry *g,
                              ctr_fbp_interp interp, int64_t nz, const float *sino,
                              float *slices) {
  return bp_all(ctx, g, interp, nz, sino, slices, NULL);
}

ctr_status ctr__lamino_bp_reference(const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                                    int64_t nz, const float *sino, double *slices) {
  return bp_all(NULL, g, interp, nz, sino, NULL, slices);
}
