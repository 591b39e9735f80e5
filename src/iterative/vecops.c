/* The algorithms' vectors: allocation and operations, dispatched to the
 * backend that holds each vector (backend.h): the projector's for vectors
 * in its memory, the CPU's for host vectors. Operands of one operation live
 * in one place. */
#include "iterative/backend.h"

/* Device vectors come from the projector's backend only (ctr__vec_alloc). */
static const ctr__it_backend *of(const ctr_projector *p, const ctr__vec *v) {
  return v->device ? p->be : &ctr__it_backend_cpu;
}

ctr_status ctr__vec_alloc(ctr_projector *p, int64_t n, int device, ctr__vec *out) {
  out->data = NULL;
  out->n = n;
  out->device = device;
  if (device) {
    if (!p->be->alloc)
      CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend keeps no vectors in device memory",
               p->be->head.name);
    return p->be->alloc(p, n, out);
  }
  out->data = p->device == CTR_DEVICE_CUDA ? ctr_host_alloc(sizeof(float) * (size_t)n)
                                           : ctr__aligned_alloc(sizeof(float) * (size_t)n, "vector");
  if (!out->data) {
    char b[32];
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "a vector of %s of host memory",
             ctr__format_bytes(4.0 * (double)n, b, sizeof b));
  }
  ctr__hvec_fill(ctr__num_threads(p->ctx), out->data, n, 0.0f);
  return CTR_OK;
}

void ctr__vec_free(ctr_projector *p, ctr__vec *v) {
  if (!v || !v->data) return;
  if (v->device)
    p->be->free(p, v);
  else if (p->device == CTR_DEVICE_CUDA)
    ctr_host_free(v->data);
  else
    ctr__aligned_free(v->data);
  v->data = NULL;
}

ctr__vec ctr__vec_part(const ctr__vec *v, int64_t off, int64_t n) {
  ctr__vec r = {v->data + off, n, v->device};
  return r;
}

ctr_status ctr__vec_fill(ctr_projector *p, ctr__vec *y, float c) {
  return of(p, y)->fill(p, y->data, y->n, c);
}

/* Host to host on the CPU; any other on the projector's backend. */
static ctr_status copy(ctr_projector *p, float *dst, int dd, const float *src, int sd, int64_t n) {
  const ctr__it_backend *be = dd || sd ? p->be : &ctr__it_backend_cpu;
  return be->copy(p, dst, dd, src, sd, n);
}

ctr_status ctr__vec_copy(ctr_projector *p, ctr__vec *dst, const ctr__vec *src) {
  if (dst->n != src->n) CTR_FAIL(CTR_E_INTERNAL, "vector copy: %lld vs %lld elements",
                                 (long long)dst->n, (long long)src->n);
  return copy(p, dst->data, dst->device, src->data, src->device, dst->n);
}

ctr_status ctr__vec_upload(ctr_projector *p, ctr__vec *dst, const float *src) {
  return copy(p, dst->data, dst->device, src, 0, dst->n);
}

ctr_status ctr__vec_download(ctr_projector *p, float *dst, const ctr__vec *src) {
  return copy(p, dst, 0, src->data, src->device, src->n);
}

ctr_status ctr__vec_comb(ctr_projector *p, ctr__vec *z, float a, const ctr__vec *x, float b,
                         const ctr__vec *y) {
  const float *yd = y && b != 0.0f ? y->data : NULL;
  return of(p, z)->comb(p, z->data, z->n, a, x->data, b, yd);
}

ctr_status ctr__vec_mul(ctr_projector *p, ctr__vec *z, const ctr__vec *x, const ctr__vec *y) {
  return of(p, z)->mul(p, z->data, z->n, x->data, y->data);
}

ctr_status ctr__vec_recip(ctr_projector *p, ctr__vec *y, const ctr__vec *x, float threshold) {
  return of(p, y)->recip(p, y->data, y->n, x->data, threshold);
}

ctr_status ctr__vec_clip(ctr_projector *p, ctr__vec *y, float lo, float hi) {
  return of(p, y)->clip(p, y->data, y->n, lo, hi);
}

ctr_status ctr__vec_dot(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out) {
  return of(p, x)->dot(p, x->data, y->data, x->n, 0, out);
}

ctr_status ctr__vec_dist2(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out) {
  return of(p, x)->dot(p, x->data, y->data, x->n, 1, out);
}

ctr_status ctr__vec_sanitize(ctr_projector *p, ctr__vec *v, int64_t *bad) {
  return of(p, v)->sanitize(p, v->data, v->n, bad);
}

ctr_status ctr__vec_tv_primal(ctr_projector *p, ctr__vec *z, const ctr__vec *g, const ctr__vec *P,
                              float mu, float lo, float hi) {
  return of(p, z)->tv_primal(p, z->data, g->data, P->data, mu, lo, hi);
}

ctr_status ctr__vec_tv_dual(ctr_projector *p, ctr__vec *P, const ctr__vec *z, float tau) {
  return of(p, P)->tv_dual(p, P->data, z->data, tau);
}

ctr_status ctr__vec_penalty(ctr_projector *p, ctr__vec *out, const ctr__vec *x, const ctr__vec *v,
                            float delta) {
  return of(p, out)->penalty(p, out->data, x ? x->data : NULL, v ? v->data : NULL, delta, 0,
                             p->n[2]);
}

ctr_status ctr__vec_count_weights(ctr_projector *p, ctr__vec *y, const ctr__vec *x, double i0) {
  return of(p, y)->count_weights(p, y->data, y->n, x->data, i0);
}
