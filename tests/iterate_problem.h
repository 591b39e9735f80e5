/* The iterative tests' problem (test_iterate.c, test_pwls.c): a phantom's
 * exact cone-beam projections (the phantom module's line integrals) on a
 * circular orbit, its voxelised truth and a projector. */
#ifndef CTR_TEST_ITERATE_PROBLEM_H
#define CTR_TEST_ITERATE_PROBLEM_H

#include "harness.h"

typedef struct problem {
  ctr_geometry *g;
  ctr_projector *p;
  float *proj, *truth;
  int64_t nvol, nproj, n;
} problem;

/* An n^3 volume 64 mm across seen by nviews exact projections of phantom ph
 * on det x det pixels of `pitch` mm (source 200 mm from the centre, 300 mm
 * from the detector: 1.5x magnification), the truth voxelised (2^3
 * samples a voxel), the projector on ctx with options po (NULL: the
 * defaults). */
static void problem_make(problem *q, ctr_context *ctx, const ctr_phantom *ph, int64_t n,
                         int64_t nviews, int64_t det, double pitch,
                         const ctr_projector_options *po) {
  memset(q, 0, sizeof *q);
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 200;
  cp.sdd = 300;
  cp.nu = cp.nv = det;
  cp.du = cp.dv = pitch;
  cp.nviews = nviews;
  const double h = 64.0 / (double)n;
  ctr_volume_geometry vol = {n, n, n, h, h, h, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &q->g));
  if (!q->g || !ph) return;
  q->n = n;
  q->nvol = n * n * n;
  q->nproj = cp.nu * cp.nv * nviews;
  q->proj = malloc(sizeof(float) * (size_t)q->nproj);
  q->truth = malloc(sizeof(float) * (size_t)q->nvol);
  int64_t vd[3] = {n, n, n}, pd[3] = {cp.nu, cp.nv, nviews};
  ctr_array pa = ctr_array_make(q->proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ta = ctr_array_make(q->truth, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(NULL, ph, q->g, 1, &pa));
  CHECK_OK(ctr_phantom_voxelize(NULL, ph, &vol, 2, 0, &ta));
  CHECK_OK(ctr_projector_create_cone(ctx, q->g, po, &q->p));
}

static void problem_free(problem *q) {
  ctr_projector_free(q->p);
  ctr_geometry_free(q->g);
  free(q->proj);
  free(q->truth);
}

#endif
