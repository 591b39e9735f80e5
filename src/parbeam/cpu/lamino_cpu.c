/* Laminographic backprojection on the CPU (a tilted rotation axis,
 * docs/geometry.md "Laminography"): the float backprojector of ctr_fbp and
 * ctr_fbp_backproject and its double-precision reference.
 *
 * Both add, for voxel (i, j, k), the terms of parbeam/lamino_math.h over
 * the views in order (the GPU's, src/parbeam/cuda/lamino_cuda.cu, the same
 * terms in the same order: the same bits). The float backprojector
 * accumulates each voxel over the views in float, the reference in double;
 * nothing else differs. Voxels are independent: OpenMP over rows of voxels. */
#include "parbeam/parbeam.h"

#include <math.h>
#include <stdlib.h>

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
      const double s = ctr__lamino_term(w, sino, nb, na, nr, a, i, j, k, interp == CTR_FBP_NEAREST);
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
