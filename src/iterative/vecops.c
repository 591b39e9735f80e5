/* The algorithms' vectors: allocation and operations, dispatched to the
 * host (cpu/vecops_cpu.c) or the GPU (cuda/vecops_cuda.cu) by where each
 * vector lives. Operands of one operation live in one place. */
#include "iterative/iterative.h"

#include <string.h>

#if CTR_HAVE_CUDA
#define ON_DEVICE(v) ((v)->device)
#else
#define ON_DEVICE(v) 0
#endif

static int nt(const ctr_projector *p) { return ctr__num_threads(p->ctx); }

ctr_status ctr__vec_alloc(ctr_projector *p, int64_t n, int device, ctr__vec *out) {
  out->data = NULL;
  out->n = n;
  out->device = device;
  if (device) {
#if CTR_HAVE_CUDA
    return ctr__it_cuda_alloc(p, n, out);
#else
    CTR_FAIL(CTR_E_UNSUPPORTED, "this ctrecon was built without CUDA");
#endif
  }
  out->data = p->device == CTR_DEVICE_CUDA ? ctr_host_alloc(sizeof(float) * (size_t)n)
                                           : ctr__aligned_alloc(sizeof(float) * (size_t)n, "vector");
  if (!out->data) {
    char b[32];
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "a vector of %s of host memory",
             ctr__format_bytes(4.0 * (double)n, b, sizeof b));
  }
  ctr__hvec_fill(nt(p), out->data, n, 0.0f);
  return CTR_OK;
}

void ctr__vec_free(ctr_projector *p, ctr__vec *v) {
  if (!v || !v->data) return;
  if (v->device) {
#if CTR_HAVE_CUDA
    ctr__it_cuda_free(p, v);
#endif
  } else if (p->device == CTR_DEVICE_CUDA) {
    ctr_host_free(v->data);
  } else {
    ctr__aligned_free(v->data);
  }
  v->data = NULL;
}

ctr__vec ctr__vec_part(const ctr__vec *v, int64_t off, int64_t n) {
  ctr__vec r = {v->data + off, n, v->device};
  return r;
}

ctr_status ctr__vec_fill(ctr_projector *p, ctr__vec *y, float c) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(y)) return ctr__it_cuda_fill(p, y->data, y->n, c);
#endif
  ctr__hvec_fill(nt(p), y->data, y->n, c);
  return CTR_OK;
}

/* Host-to-host copies in parallel chunks. */
static void host_copy(const ctr_projector *p, float *dst, const float *src, int64_t n) {
  const int64_t nc = (n + CTR__VEC_CHUNK - 1) / CTR__VEC_CHUNK;
#pragma omp parallel for schedule(static) num_threads(nt(p))
  for (int64_t c = 0; c < nc; c++) {
    const int64_t i0 = c * CTR__VEC_CHUNK, m = i0 + CTR__VEC_CHUNK < n ? CTR__VEC_CHUNK : n - i0;
    memcpy(dst + i0, src + i0, sizeof(float) * (size_t)m);
  }
}

static ctr_status copy(ctr_projector *p, float *dst, int dd, const float *src, int sd, int64_t n) {
  if (!dd && !sd) {
    host_copy(p, dst, src, n);
    return CTR_OK;
  }
#if CTR_HAVE_CUDA
  return ctr__it_cuda_copy(p, dst, dd, src, sd, n);
#else
  CTR_FAIL(CTR_E_UNSUPPORTED, "this ctrecon was built without CUDA");
#endif
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
#if CTR_HAVE_CUDA
  if (ON_DEVICE(z)) return ctr__it_cuda_comb(p, z->data, z->n, a, x->data, b, yd);
#endif
  ctr__hvec_comb(nt(p), z->data, z->n, a, x->data, b, yd);
  return CTR_OK;
}

ctr_status ctr__vec_mul(ctr_projector *p, ctr__vec *z, const ctr__vec *x, const ctr__vec *y) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(z)) return ctr__it_cuda_mul(p, z->data, z->n, x->data, y->data);
#endif
  ctr__hvec_mul(nt(p), z->data, z->n, x->data, y->data);
  return CTR_OK;
}

ctr_status ctr__vec_recip(ctr_projector *p, ctr__vec *y, const ctr__vec *x, float threshold) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(y)) return ctr__it_cuda_recip(p, y->data, y->n, x->data, threshold);
#endif
  ctr__hvec_recip(nt(p), y->data, y->n, x->data, threshold);
  return CTR_OK;
}

ctr_status ctr__vec_clip(ctr_projector *p, ctr__vec *y, float lo, float hi) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(y)) return ctr__it_cuda_clip(p, y->data, y->n, lo, hi);
#endif
  ctr__hvec_clip(nt(p), y->data, y->n, lo, hi);
  return CTR_OK;
}

ctr_status ctr__vec_dot(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(x)) return ctr__it_cuda_dot(p, x->data, y->data, x->n, 0, out);
#endif
  *out = ctr__hvec_dot(nt(p), x->data, y->data, x->n);
  return CTR_OK;
}

ctr_status ctr__vec_dist2(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(x)) return ctr__it_cuda_dot(p, x->data, y->data, x->n, 1, out);
#endif
  *out = ctr__hvec_dist2(nt(p), x->data, y->data, x->n);
  return CTR_OK;
}

ctr_status ctr__vec_sanitize(ctr_projector *p, ctr__vec *v, int64_t *bad) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(v)) return ctr__it_cuda_sanitize(p, v->data, v->n, bad);
#endif
  *bad += ctr__values_sanitize(v->data, v->n);
  return CTR_OK;
}

ctr_status ctr__vec_tv_primal(ctr_projector *p, ctr__vec *z, const ctr__vec *g, const ctr__vec *P,
                              float mu, float lo, float hi) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(z)) return ctr__it_cuda_tv_primal(p, z->data, g->data, P->data, mu, lo, hi);
#endif
  ctr__hvec_tv_primal(nt(p), z->data, g->data, P->data, p->n, mu, lo, hi);
  return CTR_OK;
}

ctr_status ctr__vec_tv_dual(ctr_projector *p, ctr__vec *P, const ctr__vec *z, float tau) {
#if CTR_HAVE_CUDA
  if (ON_DEVICE(P)) return ctr__it_cuda_tv_dual(p, P->data, z->data, tau);
#endif
  ctr__hvec_tv_dual(nt(p), P->data, z->data, p->n, tau);
  return CTR_OK;
}
