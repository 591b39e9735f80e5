/* The double-precision reference of the Joseph forward projection (the
 * oracle of the tests): the rays of itmath.h in double, bilinear samples of
 * the unpadded volume with bounds checks, sums in double. It also returns
 * the terms of the summation-order bound of slab-wise projection. */
#include "iterative/iterative.h"

/* Sample of in-plane position (p, q) of plane i along axis f: the weighted
 * sum of the (up to) four neighbours inside the grid; *mag gets the sum of
 * their magnitudes, weights ignored. */
static double sample(const ctr_projector *p, const float *x, int f, int64_t i, double pp,
                     double qq, double *mag) {
  const int pa = ctr__it_paxis(f), qa = ctr__it_qaxis(f);
  const int64_t ip = (int64_t)floor(pp), iq = (int64_t)floor(qq);
  const double fp = pp - (double)ip, fq = qq - (double)iq;
  double s = 0.0, m = 0.0;
  for (int c = 0; c < 4; c++) {
    int64_t X[3];
    X[f] = i;
    X[pa] = ip + (c & 1);
    X[qa] = iq + (c >> 1);
    if (X[pa] < 0 || X[pa] >= p->n[pa] || X[qa] < 0 || X[qa] >= p->n[qa]) continue;
    const double v = x[(X[2] * p->n[1] + X[1]) * p->n[0] + X[0]];
    const double w = ((c & 1) ? fp : 1.0 - fp) * ((c >> 1) ? fq : 1.0 - fq);
    s += w * v;
    m += fabs(v);
  }
  *mag += m;
  return s;
}

ctr_status ctr__it_reference_forward(const ctr_projector *p, const float *x, double *out,
                                     double *mag, int64_t *planes) {
  if (!p || !x || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "reference projection: NULL argument");
  const int64_t nu = p->nu, nv = p->nv;
  int64_t b0[3], b1[3];
  ctr__proj_box(p, 0, p->n[2], b0, b1);
#pragma omp parallel for collapse(2) schedule(dynamic, 4) num_threads(ctr__num_threads(p->ctx))
  for (int64_t w = 0; w < p->nviews; w++)
    for (int64_t v = 0; v < nv; v++) {
      const ctr__it_view *view = &p->views[p->order[w]];
      for (int64_t u = 0; u < nu; u++) {
        const int64_t r = (w * nv + v) * nu + u;
        double A[2], B[2], len = 0.0, sum = 0.0, m = 0.0;
        int f;
        ctr__it_ray fr;
        ctr__it_ray_setup(view, p->vox, b0, b1, (double)u, (double)v, &fr);
        if (ctr__it_ray_f64(view, p->vox, (double)u, (double)v, A, B, &len, &f)) {
          for (int64_t i = 0; i < p->n[f]; i++) {
            double dummy = 0.0;
            const double pp = A[0] + (double)i * B[0], qq = A[1] + (double)i * B[1];
            sum += sample(p, x, f, i, pp, qq, i >= fr.lo && i <= fr.hi ? &m : &dummy);
          }
        }
        out[r] = len * sum;
        if (mag) mag[r] = len * m;
        if (planes) planes[r] = fr.hi >= fr.lo ? fr.hi - fr.lo + 1 : 0;
      }
    }
  return CTR_OK;
}
