/* GPU FDK filtering: one thread per padded sample for the pre-weights, cuFFT
 * for the transforms (batched over every row of a batch of views). */
#include "conebeam/cuda/filter_cuda.cuh"

#include "conebeam/cuda/bp_general.cuh"
#include "gpu/gpu_buffers.h"

#include <cuda_fp16.h>
#include <string.h>

/* Pre-weights into zero-padded rows; with `out_max`, also the batch's largest
 * |weighted value x post-filter scale| (float bits: non-negative floats
 * order like their bit patterns). */
template <typename T>
__global__ void weight_rows(const T *__restrict__ raw, float *__restrict__ rows,
                            const ctr__fdk_view_params *__restrict__ params, int v0, int nu,
                            int pad_lo, int nv, int padded, unsigned int *out_max, float in_scale,
                            unsigned long long *nonfinite) {
  /* grid: x over the padded row, y over rows, z over the batch's views; raw
   * rows of nu columns go to padded columns pad_lo .. pad_lo + nu - 1 (an
   * offset detector's extension: zeros before and after) */
  const int up = blockIdx.x * blockDim.x + threadIdx.x, u = up - pad_lo;
  const int v = blockIdx.y, view = blockIdx.z;
  const long long r = (long long)view * nv + v;
  float val = 0.0f, mag = 0.0f;
  if (u >= 0 && u < nu) {
    const ctr__fdk_view_params p = params[v0 + view];
    const float w = (float)ctr__fdk_pixel_weight(&p, (double)u, (double)v);
    float x = (float)raw[r * nu + u] * in_scale;
    if (!ctr__value_ok(x)) { /* the data policy: NaN / Inf / huge would spread over the row */
      x = 0.0f;
      if (nonfinite) atomicAdd(nonfinite, 1ull);
    }
    val = x * w;
    mag = fabsf(val * p.scale);
  }
  if (up < padded) rows[r * padded + up] = val;
  if (out_max) {
    for (int o = 16; o > 0; o >>= 1) mag = fmaxf(mag, __shfl_xor_sync(0xffffffffu, mag, o));
    if ((threadIdx.x & 31) == 0 && mag > 0.0f) atomicMax(out_max, __float_as_uint(mag));
  }
}

__global__ void multiply_kernel(cufftComplex *__restrict__ spec, const float *__restrict__ kern,
                                int nf, int nv) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = (long long)blockIdx.z * nv + blockIdx.y;
  if (k >= nf) return;
  cufftComplex c = spec[(long long)r * nf + k];
  const float h = kern[k];
  c.x *= h;
  c.y *= h;
  spec[(long long)r * nf + k] = c;
}

/* Largest |value| of the batch (u < nu), as float bits (non-negative floats
 * order like their bit patterns). */
__global__ void abs_max_rows(const float *__restrict__ rows, long long row_stride,
                             const ctr__fdk_view_params *__restrict__ params, int v0, int nu,
                             int nv, unsigned int *out) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = (long long)blockIdx.z * nv + blockIdx.y;
  float m = 0.0f;
  if (u < nu) {
    const float scale = params ? params[v0 + blockIdx.z].scale : 1.0f;
    m = fabsf(rows[r * row_stride + u] * scale);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0 && m > 0.0f) atomicMax(out, __float_as_uint(m));
}

/* Row r (= view * nv + v) of `rows` (row_stride apart) -> dst, times the
 * view's post-filter scale when params is given. */
__global__ void store_rows(const float *__restrict__ rows, long long row_stride,
                           const ctr__fdk_view_params *__restrict__ params, ctr__gpu_store dst,
                           int v0, int nu, int nv) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = blockIdx.y, view = blockIdx.z;
  const long long r = (long long)view * nv + v;
  if (u >= nu) return;
  const float scale = params ? params[v0 + view].scale : 1.0f;
  float q = rows[r * row_stride + u] * scale, qm = 0.0f;
  if (dst.pair) {
    const int vm = dst.mirror - v;
    if (vm >= 0 && vm < nv) qm = rows[((long long)view * nv + vm) * row_stride + u] * scale;
  }
  if (dst.kind == CTR__STORE_QUAD) {
    float *e = (float *)((float4 *)dst.base + (long long)view * dst.view_stride +
                         (long long)v * dst.pitch + u);
    const long long row = 4LL * dst.pitch;
    e[0] = q;            /* (u, v).x */
    e[-4 + 1] = q;       /* (u-1, v).y */
    e[-row + 2] = q;     /* (u, v-1).z */
    e[-row - 4 + 3] = q; /* (u-1, v-1).w */
    return;
  }
  if (dst.kind == CTR__STORE_LINEAR) {
    const long long at = (long long)view * dst.view_stride + (long long)v * dst.pitch + u;
    if (dst.pair) ((float2 *)dst.base)[at] = make_float2(q, qm);
    else ((float *)dst.base)[at] = q;
    return;
  }
  const int layer = dst.layer0 + view;
  if (dst.half) {
    /* 2^e with the batch maximum in [2^13, 2^14): no overflow, full precision. */
    const float mx = __uint_as_float(*dst.d_max) * dst.gain;
    const int e = mx > 0.0f ? ilogbf(mx) - 13 : 0;
    if (u == 0 && v == 0) dst.wscale[view] = ldexpf(1.0f, e);
    const __half2 h = __floats2half2_rn(ldexpf(q, -e), ldexpf(qm, -e));
    surf2DLayeredwrite(*reinterpret_cast<const unsigned int *>(&h), dst.surf,
                       u * (int)sizeof(__half2), v, layer);
  } else if (dst.pair) {
    surf2DLayeredwrite(make_float2(q, qm), dst.surf, u * (int)sizeof(float2), v, layer);
  } else {
    surf2DLayeredwrite(q, dst.surf, u * (int)sizeof(float), v, layer);
  }
}

/* One thread per cell (g, h) of the padded COEF image (bp_general.cuh), from
 * g = -2 across the whole pitch and h = -2 to nv: the bilinear polynomial
 * of pixels (g..g+1, h..h+1) of `rows`, zero outside the detector. */
__global__ void store_coef(const float *__restrict__ rows, long long row_stride,
                           const ctr__fdk_view_params *__restrict__ params, ctr__gpu_store dst,
                           int v0, int nu, int nv) {
  const int g = (int)(blockIdx.x * blockDim.x + threadIdx.x) - CTR__BPG_LO;
  const int h = (int)blockIdx.y - CTR__BPG_LO, view = blockIdx.z;
  if (g + CTR__BPG_LO >= dst.pitch) return;
  const float scale = params ? params[v0 + view].scale : 1.0f;
  const float *img = rows + (long long)view * nv * row_stride;
  float q[4];
  for (int e = 0; e < 4; e++) {
    const int x = g + (e & 1), y = h + (e >> 1);
    q[e] = x >= 0 && x < nu && y >= 0 && y < nv ? img[(long long)y * row_stride + x] * scale : 0.0f;
  }
  ((float4 *)dst.base)[(long long)view * dst.view_stride + (long long)h * dst.pitch + g] =
      ctr__bpg_cell(q[0], q[1], q[2], q[3]);
}

/* With half storage, dst->d_max must hold the batch maximum already (see
 * ctr__gpu_store.gain). */
static ctr_status store(const float *rows, long long row_stride,
                        const ctr__fdk_view_params *params, const ctr__gpu_store *dst, int64_t v0,
                        int64_t nu, int64_t nv, int64_t n, cudaStream_t s) {
  ctr_status st = CTR_OK;
  if (dst->kind == CTR__STORE_COEF) {
    const dim3 grid((unsigned)((dst->pitch + 255) / 256), (unsigned)CTR__BPG_ROWS(nv), (unsigned)n);
    store_coef<<<grid, 256, 0, s>>>(rows, row_stride, params, *dst, (int)v0, (int)nu, (int)nv);
  } else {
    const dim3 grid((unsigned)((nu + 255) / 256), (unsigned)nv, (unsigned)n);
    store_rows<<<grid, 256, 0, s>>>(rows, row_stride, params, *dst, (int)v0, (int)nu, (int)nv);
  }
  CU_LAUNCHED("store kernel");
cleanup:
  return st;
}

ctr_status ctr__gpu_store_views(const float *d_src, int64_t nu, int64_t nv, int64_t n,
                                const ctr__gpu_store *dst, cudaStream_t s) {
  ctr_status st = CTR_OK;
  ctr__gpu_store d = *dst;
  if (d.half) { /* the data's own maximum: gain 1 */
    const dim3 grid((unsigned)((nu + 255) / 256), (unsigned)nv, (unsigned)n);
    CU(cudaMemsetAsync(d.d_max, 0, sizeof(unsigned int), s));
    abs_max_rows<<<grid, 256, 0, s>>>(d_src, nu, NULL, 0, (int)nu, (int)nv, d.d_max);
    CU_LAUNCHED("abs_max_rows");
    d.gain = 1.0f;
  }
  CTR_CHECK_GOTO(st, store(d_src, nu, NULL, &d, 0, nu, nv, n, s));
cleanup:
  return st;
}

size_t ctr__gpu_filter_bytes(int64_t nu, int64_t nv, int64_t nviews, int64_t batch) {
  const int64_t padded = ctr__ramp_padded_length(nu);
  const size_t rows = (size_t)(batch * nv);
  return rows * (size_t)padded * sizeof(float) + rows * (size_t)(padded / 2 + 1) * sizeof(cufftComplex) +
         (size_t)nviews * sizeof(ctr__fdk_view_params) + (size_t)padded * sizeof(float);
}

void ctr__gpu_filter_free(ctr__gpu_filter *gf) {
  if (!gf) return;
  if (gf->have_fwd) cufftDestroy(gf->fwd);
  if (gf->have_inv) cufftDestroy(gf->inv);
  ctr__gpu_buffer_put(gf->ctx, gf->device, gf->d_rows, gf->rows_bytes);
  ctr__gpu_buffer_put(gf->ctx, gf->device, gf->d_spec, gf->spec_bytes);
  ctr__gpu_buffer_put(gf->ctx, gf->device, gf->d_kernel, gf->kernel_bytes);
  ctr__gpu_buffer_put(gf->ctx, gf->device, gf->d_params, gf->params_bytes);
  memset(gf, 0, sizeof *gf);
}

ctr_status ctr__gpu_filter_create(const ctr_context *ctx, const ctr__fdk_filter *f, int64_t batch,
                                  cudaStream_t s, ctr__gpu_filter *gf) {
  memset(gf, 0, sizeof *gf);
  gf->in_scale = 1.0f;
  gf->ctx = ctx;
  ctr_status st = CTR_OK;
  const ctr_geometry *g = f->g;
  float *kern = NULL;
  ctr__fdk_view_params *params = NULL;
  gf->nu = f->nu_ext; /* the filtered rows: an offset detector's extended ones */
  gf->nu_raw = g->nu;
  gf->pad_lo = f->pad_lo;
  gf->nv = g->nv;
  gf->padded = ctr__ramp_padded(f->ramp);
  gf->l1 = (float)(ctr__ramp_kernel_l1(f->ramp) * 1.0001); /* float rounding margin */
  gf->batch = batch;
  const int64_t nf = gf->padded / 2 + 1, rows = batch * g->nv;
  int n = (int)gf->padded;
  CU(cudaGetDevice(&gf->device));
  gf->rows_bytes = (size_t)(rows * gf->padded) * sizeof(float);
  gf->spec_bytes = (size_t)(rows * nf) * sizeof(cufftComplex);
  gf->kernel_bytes = (size_t)nf * sizeof(float);
  gf->params_bytes = (size_t)g->nviews * sizeof(ctr__fdk_view_params);
  GPU_GET(ctx, gf->d_rows, gf->rows_bytes, "FDK filter rows");
  GPU_GET(ctx, gf->d_spec, gf->spec_bytes, "FDK filter spectra");
  GPU_GET(ctx, gf->d_kernel, gf->kernel_bytes, "FDK filter kernel");
  GPU_GET(ctx, gf->d_params, gf->params_bytes, "FDK view weights");
  /* The CPU filter's own kernel values (window, cut-off and 1/padded). */
  kern = (float *)ctr__malloc((size_t)nf * sizeof(float), "filter kernel");
  params = (ctr__fdk_view_params *)ctr__malloc((size_t)g->nviews * sizeof *params, "view params");
  if (!kern || !params) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  ctr__ramp_copy_kernel(f->ramp, kern);
  for (int64_t i = 0; i < g->nviews; i++) params[i] = ctr__fdk_view_params_of(f, i);
  CU(cudaMemcpyAsync(gf->d_kernel, kern, (size_t)nf * sizeof(float), cudaMemcpyHostToDevice, s));
  CU(cudaMemcpyAsync(gf->d_params, params, (size_t)g->nviews * sizeof *params,
                     cudaMemcpyHostToDevice, s));
  CU(cudaStreamSynchronize(s)); /* the host buffers are freed below */
  CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
    return cufftPlanMany(&gf->fwd, 1, &n, NULL, 1, n, NULL, 1, (int)nf, CUFFT_R2C, (int)rows);
  }));
  gf->have_fwd = 1;
  CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
    return cufftPlanMany(&gf->inv, 1, &n, NULL, 1, (int)nf, NULL, 1, n, CUFFT_C2R, (int)rows);
  }));
  gf->have_inv = 1;
  CUFFT(cufftSetStream(gf->fwd, s));
  CUFFT(cufftSetStream(gf->inv, s));
cleanup:
  free(kern);
  free(params);
  if (st != CTR_OK) {
    cudaStreamSynchronize(s); /* the uploads into the buffers have finished */
    ctr__gpu_filter_free(gf);
  }
  return st;
}

ctr_status ctr__gpu_filter_run(ctr__gpu_filter *gf, const void *d_raw, ctr_dtype dtype,
                               int64_t v0, int64_t n, const ctr__gpu_store *dst, cudaStream_t s) {
  ctr_status st = CTR_OK;
  if (n > gf->batch) CTR_FAIL(CTR_E_INTERNAL, "filter batch of %lld views > %lld", (long long)n, (long long)gf->batch);
  const int nf = (int)(gf->padded / 2 + 1);
  const int L = (int)gf->padded, nu = (int)gf->nu, nv = (int)gf->nv, nu_raw = (int)gf->nu_raw;
  const dim3 block(256);
  const dim3 grid_pad((unsigned)((L + 255) / 256), (unsigned)nv, (unsigned)n);
  ctr__gpu_store d = *dst;
  unsigned int *mx = NULL;
  if (d.half) { /* bound the filtered values by the input maximum x the kernel's gain */
    mx = d.d_max;
    d.gain = gf->l1;
    CU(cudaMemsetAsync(mx, 0, sizeof(unsigned int), s));
  }
  if (dtype == CTR_DTYPE_UINT16)
    weight_rows<uint16_t><<<grid_pad, block, 0, s>>>((const uint16_t *)d_raw, gf->d_rows,
                                                     gf->d_params, (int)v0, nu_raw, (int)gf->pad_lo, nv, L, mx,
                                                     gf->in_scale, gf->d_nonfinite);
  else
    weight_rows<float><<<grid_pad, block, 0, s>>>((const float *)d_raw, gf->d_rows, gf->d_params,
                                                  (int)v0, nu_raw, (int)gf->pad_lo, nv, L, mx,
                                                  gf->in_scale, gf->d_nonfinite);
  CU_LAUNCHED("weight_rows");
  /* Plans cover the whole batch; rows past `rows` hold stale data whose
   * results are never stored. */
  CUFFT(cufftExecR2C(gf->fwd, gf->d_rows, gf->d_spec));
  multiply_kernel<<<dim3((unsigned)((nf + 255) / 256), (unsigned)nv, (unsigned)n), block, 0, s>>>(
      gf->d_spec, gf->d_kernel, nf, nv);
  CU_LAUNCHED("multiply_kernel");
  CUFFT(cufftExecC2R(gf->inv, gf->d_spec, gf->d_rows));
  CTR_CHECK_GOTO(st, store(gf->d_rows, L, gf->d_params, &d, v0, nu, nv, n, s));
cleanup:
  return st;
}
