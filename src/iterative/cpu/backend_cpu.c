/* The CPU backend's entry in the backend table (iterative/backend.h): the
 * Joseph projector slab by slab (project_cpu.c) and the host vector
 * operations (vecops_cpu.c) on OpenMP threads. */
#include "iterative/backend.h"

static int nt(const ctr_projector *p) { return ctr__num_threads(p->ctx); }

/* Slab by slab over slices [za, zb): the forward projection adds each
 * slab's part to y. */
static ctr_status cpu_project(ctr_projector *p, int forward, const ctr__vec *x, ctr__vec *y,
                              int64_t w0, int64_t w1, int64_t za, int64_t zb) {
  ctr_status st = CTR_OK;
  const int64_t plane = p->n[0] * p->n[1], zs = p->slab_slices;
  for (int64_t z0 = za; z0 < zb && st == CTR_OK; z0 += zs) {
    const int64_t z1 = z0 + zs < zb ? z0 + zs : zb;
    st = forward ? ctr__it_cpu_forward(p, x->data + z0 * plane, z0, z1, y->data, w0, w1, z0 > 0)
                 : ctr__it_cpu_adjoint(p, y->data, w0, w1, x->data + z0 * plane, z0, z1, 0);
  }
  return st;
}

static ctr_status cpu_forward(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0,
                              int64_t w1) {
  return cpu_project(p, 1, x, y, w0, w1, 0, p->n[2]);
}

static ctr_status cpu_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                              int64_t w1, int64_t z0, int64_t z1) {
  return cpu_project(p, 0, x, (ctr__vec *)y, w0, w1, z0, z1);
}

static ctr_status cpu_copy(ctr_projector *p, float *dst, int dst_device, const float *src,
                           int src_device, int64_t n) {
  if (dst_device || src_device)
    CTR_FAIL(CTR_E_INTERNAL, "the CPU backend copies host vectors only");
  ctr__hvec_copy(nt(p), dst, src, n);
  return CTR_OK;
}

static ctr_status cpu_fill(ctr_projector *p, float *y, int64_t n, float c) {
  ctr__hvec_fill(nt(p), y, n, c);
  return CTR_OK;
}

static ctr_status cpu_comb(ctr_projector *p, float *z, int64_t n, float a, const float *x,
                           float b, const float *y) {
  ctr__hvec_comb(nt(p), z, n, a, x, b, y);
  return CTR_OK;
}

static ctr_status cpu_mul(ctr_projector *p, float *z, int64_t n, const float *x, const float *y) {
  ctr__hvec_mul(nt(p), z, n, x, y);
  return CTR_OK;
}

static ctr_status cpu_recip(ctr_projector *p, float *y, int64_t n, const float *x,
                            float threshold) {
  ctr__hvec_recip(nt(p), y, n, x, threshold);
  return CTR_OK;
}

static ctr_status cpu_clip(ctr_projector *p, float *y, int64_t n, float lo, float hi) {
  ctr__hvec_clip(nt(p), y, n, lo, hi);
  return CTR_OK;
}

static ctr_status cpu_dot(ctr_projector *p, const float *x, const float *y, int64_t n, int dist,
                          double *out) {
  *out = dist ? ctr__hvec_dist2(nt(p), x, y, n) : ctr__hvec_dot(nt(p), x, y, n);
  return CTR_OK;
}

static ctr_status cpu_sanitize(ctr_projector *p, float *v, int64_t n, int64_t *bad) {
  (void)p;
  *bad += ctr__values_sanitize(v, n);
  return CTR_OK;
}

static ctr_status cpu_tv_primal(ctr_projector *p, float *z, const float *g, const float *P,
                                float mu, float lo, float hi) {
  ctr__hvec_tv_primal(nt(p), z, g, P, p->n, mu, lo, hi);
  return CTR_OK;
}

static ctr_status cpu_tv_dual(ctr_projector *p, float *P, const float *z, float tau) {
  ctr__hvec_tv_dual(nt(p), P, z, p->n, tau);
  return CTR_OK;
}

static ctr_status cpu_penalty(ctr_projector *p, float *out, const float *x, const float *v,
                              float delta, int64_t z0, int64_t z1) {
  ctr__hvec_penalty(nt(p), out, x, v, p->n, delta, z0, z1);
  return CTR_OK;
}

static ctr_status cpu_count_weights(ctr_projector *p, float *y, int64_t n, const float *x,
                                    double i0) {
  ctr__hvec_count_weights(nt(p), y, n, x, i0);
  return CTR_OK;
}

const ctr__it_backend ctr__it_backend_cpu = {
    .head = {"cpu", CTR_DEVICE_CPU, 1},
    .forward = cpu_forward,
    .adjoint = cpu_adjoint,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .comb = cpu_comb,
    .mul = cpu_mul,
    .recip = cpu_recip,
    .clip = cpu_clip,
    .dot = cpu_dot,
    .sanitize = cpu_sanitize,
    .tv_primal = cpu_tv_primal,
    .tv_dual = cpu_tv_dual,
    .penalty = cpu_penalty,
    .count_weights = cpu_count_weights,
};
