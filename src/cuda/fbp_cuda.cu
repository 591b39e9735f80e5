/* Parallel-beam backprojection on the GPU (seed 004). Kernels, selectable by
 * name (docs/parallel-beam.md):
 *   tex      Alg. 1: one thread per pixel, hardware interpolation from a
 *            2D texture of the sinogram (8-bit interpolation weights)
 *   tex2     Alg. 1 on two slices at once from a float2 texture
 *   alu      Alg. 6 with the advanced caching mode (Alg. 9): a block of 256
 *            threads reconstructs 32 x 32 pixels; the bins a block needs for
 *            16 projections are cached in shared memory as (value, next -
 *            value) pairs, interpolation in fp32 (exact: the default)
 * Every kernel sums pre-weighted sinograms (each row times its angle's
 * weight), so the kernels only add. Positions: t = off + dx c + dy s with
 * off the bin of the block's (or pixel's) origin computed in double on the
 * host side of each kernel's maths, so float rounding does not grow with
 * the bin index. */
#include "cuda/cuda_util.h"
#include "cuda/fbp_cuda.cuh"
#include "parbeam/fbp_tune.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ALU_AREA 64    /* pixels per block side */
#define ALU_ROWS 4     /* thread rows: each thread does ALU_AREA / ALU_ROWS pixels of a column */
#define ALU_PROJ 16    /* projections cached per pass */
#define ALU_LANES 16   /* threads caching one projection row (Alg. 9) */
#define ROUND_MAGIC 12582912.0f      /* 1.5 x 2^23 */
#define ROUND_MAGIC_BITS 0x4B400000  /* its bits */

/* Per angle: c, s (per pixel step), t0 (bin of pixel (0, 0)), unused. */
__constant__ float4 c_angle[MAX_CONST_ANGLES];
/* Per angle, double: t0 for the ALU kernel's block origins. */
__constant__ double c_t0d[MAX_CONST_ANGLES];

/* ---- Texture kernels (Alg. 1) --------------------------------------------- */

/* PAIR: a float2 texture holding two slices; the second slice's output is
 * `plane` floats after the first's. */
/* Z-order (Morton) position of thread t of a 16 x 8 block (seed 004 Alg. 2):
 * a warp covers an 8 x 4 patch instead of a 16 x 2 strip, so its texture
 * footprint per projection is smaller. */
__device__ __forceinline__ void morton16(int t, int *x, int *y) {
  /* bits: t0 -> x0, t1 -> y0, t2 -> x1, t3 -> y1, t4 -> x2, t5 -> y2, t6 -> x3 */
  *x = (t & 1) | ((t >> 1) & 2) | ((t >> 2) & 4) | ((t >> 3) & 8);
  *y = ((t >> 1) & 1) | ((t >> 2) & 2) | ((t >> 3) & 4);
}

/* Each thread owns two pixels, (i, j) and (i, j + 8) of a 16 x 16 tile
 * (Z-order over the tile's upper half): two independent fetches per
 * projection keep more texture requests in flight (the kernel waits on
 * texture latency, not on the texture units). */
template <int PAIR, int NEAREST>
__global__ void __launch_bounds__(128) bp_tex(cudaTextureObject_t tex, int na, int nx, int ny,
                                               float *__restrict__ out, long long plane) {
  int mx, my;
  morton16(threadIdx.y * 16 + threadIdx.x, &mx, &my);
  const int i = blockIdx.x * 16 + mx;
  const int j = blockIdx.y * 16 + my;
  float acc0 = 0.0f, acc1 = 0.0f, bcc0 = 0.0f, bcc1 = 0.0f;
  const float fi = (float)i, fj = (float)j;
  /* One layer per projection: a 1D bilinear fetch reads 2 texels, not the
   * 2 x 2 of a 2D texture with a zero-weight second row. */
#pragma unroll 8
  for (int a = 0; a < na; a++) {
    const float4 k = c_angle[a];
    float t = k.z + fi * k.x + fj * k.y;
    float u = fmaf(8.0f, k.y, t);
    if (NEAREST) {
      t = floorf(t + 0.5f);
      u = floorf(u + 0.5f);
    }
    if (PAIR) {
      const float2 v = tex1DLayered<float2>(tex, t + 0.5f, a);
      const float2 w = tex1DLayered<float2>(tex, u + 0.5f, a);
      acc0 += v.x;
      acc1 += v.y;
      bcc0 += w.x;
      bcc1 += w.y;
    } else {
      acc0 += tex1DLayered<float>(tex, t + 0.5f, a);
      bcc0 += tex1DLayered<float>(tex, u + 0.5f, a);
    }
  }
  if (i < nx && j < ny) {
    const long long o = (long long)j * nx + i;
    out[o] += acc0;
    if (PAIR) out[plane + o] += acc1;
  }
  if (i < nx && j + 8 < ny) {
    const long long o = (long long)(j + 8) * nx + i;
    out[o] += bcc0;
    if (PAIR) out[plane + o] += bcc1;
  }
}

/* ---- ALU kernel (Alg. 6 + Alg. 9) ---------------------------------------- */

/* Per projection a of a block with origin (bx, by): (c, s, the origin's
 * bin relative to hm, hm) with hm one below the smallest bin the block
 * touches; the origin's position in double. */
__device__ __forceinline__ float4 block_konst(int a, int bx, int by) {
  const float4 k = c_angle[a];
  const double t0 = c_t0d[a] + (double)bx * k.x + (double)by * k.y;
  const float span = (float)(ALU_AREA - 1);
  const float lo = fminf(0.0f, span * k.x) + fminf(0.0f, span * k.y);
  const double hm = floor(t0 + (double)lo) - 1.0;
  return make_float4(k.x, k.y, (float)(t0 - hm), (float)hm);
}

/* S slices at once (1 or 2): cache entries are float2 (m, s) or float4
 * (m_a, s_a, m_b, s_b) so that one shared load serves every slice. */
template <int S> struct alu_entry;
template <> struct alu_entry<1> { typedef float2 T; };
template <> struct alu_entry<2> { typedef float4 T; };

__device__ __forceinline__ void put(float2 *e, const float *m, const float *sl) { *e = make_float2(m[0], sl[0]); }
__device__ __forceinline__ void put(float4 *e, const float *m, const float *sl) {
  *e = make_float4(m[0], sl[0], m[1], sl[1]);
}
__device__ __forceinline__ void accumulate(const float2 v, float f, float *acc) {
  acc[0] += fmaf(f, v.y, v.x);
}
__device__ __forceinline__ void accumulate(const float4 v, float f, float *acc) {
  acc[0] += fmaf(f, v.y, v.x);
  acc[1] += fmaf(f, v.w, v.z);
}

/* The cache holds, per projection, `width` = ALU_LANES * per entries
 * starting at bin hm (Alg. 9: each of ALU_LANES threads reads `per`
 * consecutive bins once and takes the bin after them from its neighbour by
 * a shuffle). Linear: an entry holds the midpoint m = (d_e + d_e+1) / 2 and
 * the slope d_e+1 - d_e (linear interpolation only: nearest runs
 * bp_alu_os with one sample per bin). Dynamic shared memory:
 * ALU_PROJ * width entries and ALU_PROJ float4 of constants. Thread (tx, ty)
 * owns column bx + tx and rows by + ty + ALU_ROWS q of each slice; slice k's
 * sinogram is sino + k * sino_stride, its output out + k * plane. */
template <int S>
__global__ void __launch_bounds__(ALU_AREA * ALU_ROWS)
bp_alu(const float *__restrict__ sino, long long sino_stride, int nbins, int na, int nx, int ny,
       int per, float *__restrict__ out, long long plane) {
  typedef typename alu_entry<S>::T entry;
  extern __shared__ float4 shm_raw[];
  entry *cache = (entry *)shm_raw;
  const int width = ALU_LANES * per;
  float4 *konst = (float4 *)(cache + ALU_PROJ * width);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * ALU_AREA + tx;
  const int bx = blockIdx.x * ALU_AREA, by = blockIdx.y * ALU_AREA;
  constexpr int nq = ALU_AREA / ALU_ROWS;
  float acc[nq][S];
#pragma unroll
  for (int q = 0; q < nq; q++)
#pragma unroll
    for (int k = 0; k < S; k++) acc[q][k] = 0.0f;
  const int cp = tid / ALU_LANES, cl = tid % ALU_LANES; /* caching: projection, lane */
  for (int a0 = 0; a0 < na; a0 += ALU_PROJ) {
    const int np = na - a0 < ALU_PROJ ? na - a0 : ALU_PROJ;
    __syncthreads();
    if (tid < np) konst[tid] = block_konst(a0 + tid, bx, by);
    __syncthreads();
    {
      /* Every lane takes part in the shuffle; lanes of a missing projection
       * (the last pass) load and store nothing. */
      const int valid = cp < np;
      const float *row = sino + (long long)(a0 + (valid ? cp : 0)) * nbins;
      const int b0 = valid ? (int)konst[cp].w + cl * per : 0;
      entry *dst = cache + cp * width + cl * per;
      float d[S], first[S], m[S], sl[S], dn[S];
#pragma unroll
      for (int k = 0; k < S; k++) {
        d[k] = (valid && b0 >= 0 && b0 < nbins) ? __ldg(row + k * sino_stride + b0) : 0.0f;
        first[k] = d[k];
      }
      for (int i = 0; valid && i < per - 1; i++) {
        const int b = b0 + i + 1;
#pragma unroll
        for (int k = 0; k < S; k++) {
          dn[k] = (b >= 0 && b < nbins) ? __ldg(row + k * sino_stride + b) : 0.0f;
          m[k] = 0.5f * (d[k] + dn[k]);
          sl[k] = dn[k] - d[k];
          d[k] = dn[k];
        }
        put(dst + i, m, sl);
      }
      /* The next lane's first bin; the last lane reads it itself. */
#pragma unroll
      for (int k = 0; k < S; k++) dn[k] = __shfl_down_sync(0xffffffffu, first[k], 1, ALU_LANES);
      if (valid) {
        const int b = b0 + per;
#pragma unroll
        for (int k = 0; k < S; k++) {
          if (cl == ALU_LANES - 1) dn[k] = (b >= 0 && b < nbins) ? __ldg(row + k * sino_stride + b) : 0.0f;
          m[k] = 0.5f * (d[k] + dn[k]);
          sl[k] = dn[k] - d[k];
        }
        put(dst + per - 1, m, sl);
      }
    }
    __syncthreads();
    for (int p = 0; p < np; p++) {
      const float4 k = konst[p];
      const entry *row = cache + p * width;
      /* Seed 004 Sect. 6.6: adding 1.5 x 2^23 rounds to an integer in the
       * mantissa, no conversion instructions. Linear: with g = h - 0.5
       * rounded to e the value is m_e + (g - e) s_e, the same on both sides
       * of a tie. */
      const float h0 = k.z - 0.5f + (float)tx * k.x + (float)ty * k.y;
      const float step = (float)ALU_ROWS * k.y;
#pragma unroll
      for (int q = 0; q < nq; q++) {
        const float g = fmaf((float)q, step, h0);
        const float r = g + ROUND_MAGIC;
        const int e = __float_as_int(r) - ROUND_MAGIC_BITS;
        accumulate(row[e], g - (r - ROUND_MAGIC), acc[q]);
      }
    }
  }
  const int i = bx + tx;
#pragma unroll
  for (int q = 0; q < nq; q++) {
    const int j = by + ty + q * ALU_ROWS;
    if (i < nx && j < ny)
#pragma unroll
      for (int k = 0; k < S; k++) out[k * plane + (long long)j * nx + i] += acc[q][k];
  }
}


/* Sample caches: the cache holds OS samples per bin (linearly interpolated
 * between bins) and each update takes the nearest sample, no interpolation
 * arithmetic. OS = 4: oversampling (seed 004 Sect. 7.2), positions
 * quantised to 1/4 bin, approximate linear interpolation. OS = 1: nearest
 * interpolation with value-only entries (4 or 8 bytes per update, not the
 * pair caches' 8 or 16). Entries are float (one slice) or float2 (two). */
#define OVERSAMPLE 4
template <int S> struct os_entry;
template <> struct os_entry<1> { typedef float T; };
template <> struct os_entry<2> { typedef float2 T; };
__device__ __forceinline__ void os_put(float *e, const float *v) { *e = v[0]; }
__device__ __forceinline__ void os_put(float2 *e, const float *v) { *e = make_float2(v[0], v[1]); }
__device__ __forceinline__ void os_add(float v, float *acc) { acc[0] += v; }
__device__ __forceinline__ void os_add(float2 v, float *acc) {
  acc[0] += v.x;
  acc[1] += v.y;
}

template <int S, int OS>
__global__ void __launch_bounds__(ALU_AREA * ALU_ROWS)
bp_alu_os(const float *__restrict__ sino, long long sino_stride, int nbins, int na, int nx,
          int ny, int per, float *__restrict__ out, long long plane) {
  typedef typename os_entry<S>::T entry;
  extern __shared__ float4 shm_raw[];
  entry *cache = (entry *)shm_raw;
  const int width = ALU_LANES * per * OS;
  float4 *konst = (float4 *)(cache + ALU_PROJ * width);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * ALU_AREA + tx;
  const int bx = blockIdx.x * ALU_AREA, by = blockIdx.y * ALU_AREA;
  constexpr int nq = ALU_AREA / ALU_ROWS;
  float acc[nq][S];
#pragma unroll
  for (int q = 0; q < nq; q++)
#pragma unroll
    for (int k = 0; k < S; k++) acc[q][k] = 0.0f;
  const int cp = tid / ALU_LANES, cl = tid % ALU_LANES;
  for (int a0 = 0; a0 < na; a0 += ALU_PROJ) {
    const int np = na - a0 < ALU_PROJ ? na - a0 : ALU_PROJ;
    __syncthreads();
    if (tid < np) konst[tid] = block_konst(a0 + tid, bx, by);
    __syncthreads();
    {
      const int valid = cp < np;
      const float *row = sino + (long long)(a0 + (valid ? cp : 0)) * nbins;
      const int b0 = valid ? (int)konst[cp].w + cl * per : 0;
      entry *dst = cache + cp * width + cl * per * OS;
      float d[S], first[S], dn[S], v[S];
#pragma unroll
      for (int k = 0; k < S; k++) {
        d[k] = (valid && b0 >= 0 && b0 < nbins) ? __ldg(row + k * sino_stride + b0) : 0.0f;
        first[k] = d[k];
      }
      for (int i = 0; i < per; i++) {
        const int b = b0 + i + 1;
        if (i == per - 1) {
          /* The next lane's first bin; the last lane reads it itself. */
#pragma unroll
          for (int k = 0; k < S; k++) {
            dn[k] = __shfl_down_sync(0xffffffffu, first[k], 1, ALU_LANES);
            if (cl == ALU_LANES - 1) dn[k] = (valid && b >= 0 && b < nbins) ? __ldg(row + k * sino_stride + b) : 0.0f;
          }
        } else {
#pragma unroll
          for (int k = 0; k < S; k++) dn[k] = (valid && b >= 0 && b < nbins) ? __ldg(row + k * sino_stride + b) : 0.0f;
        }
        if (valid)
#pragma unroll
          for (int j = 0; j < OS; j++) {
#pragma unroll
            for (int k = 0; k < S; k++) v[k] = fmaf((float)j * (1.0f / OS), dn[k] - d[k], d[k]);
            os_put(dst + i * OS + j, v);
          }
#pragma unroll
        for (int k = 0; k < S; k++) d[k] = dn[k];
      }
    }
    __syncthreads();
    for (int p = 0; p < np; p++) {
      const float4 k = konst[p];
      const entry *row = cache + p * width;
      const float h0 = OS * (k.z + (float)tx * k.x + (float)ty * k.y);
      const float step = (float)(OS * ALU_ROWS) * k.y;
#pragma unroll
      for (int q = 0; q < nq; q++) {
        const float r = fmaf((float)q, step, h0) + ROUND_MAGIC;
        os_add(row[__float_as_int(r) - ROUND_MAGIC_BITS], acc[q]);
      }
    }
  }
  const int i = bx + tx;
#pragma unroll
  for (int q = 0; q < nq; q++) {
    const int j = by + ty + q * ALU_ROWS;
    if (i < nx && j < ny)
#pragma unroll
      for (int k = 0; k < S; k++) out[k * plane + (long long)j * nx + i] += acc[q][k];
  }
}

/* Each sinogram row times its angle's weight. */
__global__ void weight_rows(float *sino, int nbins, int na, int nslices, const float *w) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = blockIdx.y + (long long)gridDim.y * blockIdx.z;
  if (b >= nbins || r >= (long long)na * nslices) return;
  sino[r * nbins + b] *= w[r % na];
}

/* ---- Host side ------------------------------------------------------------ */

/* auto: the fastest exact kernel measured on the H100 (bench/NOTES.md):
 * alu2 for linear interpolation (a lone last slice runs alu), alu for
 * nearest (whose two-slice entries would carry each value twice). */
ctr_status ctr__fbp_parse_kernel(const char *name, int nearest, fbp_kernel *k) {
  if (!name || !*name || !strcmp(name, "auto")) {
    *k = nearest ? K_ALU : K_ALU2;
    return CTR_OK;
  }
  for (int i = 0; i < K_COUNT; i++)
    if (!strcmp(name, kernel_names[i])) {
      *k = (fbp_kernel)i;
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "backprojection kernel '%s': expected auto, tex, tex2, alu, alu2 (exact), alu-os or "
           "alu2-os (approximate: 4x oversampled bins, nearest sample)", name);
}

/* Uploads per-angle constants for angles [a0, a0 + n). */
static ctr_status upload_angles(const ctr_parallel_geometry *g, int64_t a0, int64_t n) {
  ctr_status st = CTR_OK;
  ctr__par_angle *pa = (ctr__par_angle *)malloc(sizeof *pa * (size_t)n);
  float4 *k = (float4 *)malloc(sizeof *k * (size_t)n);
  double *t0 = (double *)malloc(sizeof *t0 * (size_t)n);
  if (!pa || !k || !t0) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "angle constants");
    goto cleanup;
  }
  ctr__par_angles(g, a0, n, pa);
  for (int64_t i = 0; i < n; i++) {
    k[i] = make_float4((float)pa[i].c, (float)pa[i].s, (float)pa[i].t0, 0.0f);
    t0[i] = pa[i].t0;
  }
  CU(cudaMemcpyToSymbol(c_angle, k, sizeof *k * (size_t)n));
  CU(cudaMemcpyToSymbol(c_t0d, t0, sizeof *t0 * (size_t)n));
cleanup:
  free(pa);
  free(k);
  free(t0);
  return st;
}


/* The texture of angles [a0, a0 + na) of slice s0 (and s0 + 1 as float2
 * when pair) of the device sinograms. */
static ctr_status make_texture(fbp_gpu *f, int pair, int64_t s0, int64_t a0, int64_t na,
                               cudaStream_t stream) {
  ctr_status st = CTR_OK;
  const int64_t nb = f->g->p.nbins, nat = f->g->p.nangles;
  const float *src = f->d_sino + s0 * nb * nat + a0 * nb;
  cudaChannelFormatDesc desc = pair ? cudaCreateChannelDesc<float2>() : cudaCreateChannelDesc<float>();
  const size_t layers = (size_t)MAX_CONST_ANGLES < (size_t)nat ? (size_t)MAX_CONST_ANGLES : (size_t)nat;
  if (f->tex) {
    CU(cudaStreamSynchronize(stream)); /* the previous launch may still read it */
    cudaDestroyTextureObject(f->tex);
  }
  f->tex = 0;
  if (f->arr && f->arr_pair != pair) {
    cudaFreeArray(f->arr);
    f->arr = NULL;
  }
  if (!f->arr) CU(cudaMalloc3DArray(&f->arr, &desc, make_cudaExtent((size_t)nb, 0, layers), cudaArrayLayered));
  f->arr_pair = pair;
  if (pair) {
    /* Interleave the two slices' values into float2 through a device buffer. */
    if (!f->d_pair) CU(cudaMalloc(&f->d_pair, sizeof(float2) * (size_t)(nb * (nat < MAX_CONST_ANGLES ? nat : MAX_CONST_ANGLES))));
    CU(cudaMemcpy2DAsync(f->d_pair, sizeof(float2), src, sizeof(float), sizeof(float),
                         (size_t)(nb * na), cudaMemcpyDeviceToDevice, stream));
    CU(cudaMemcpy2DAsync((char *)f->d_pair + sizeof(float), sizeof(float2), src + nb * nat,
                         sizeof(float), sizeof(float), (size_t)(nb * na), cudaMemcpyDeviceToDevice, stream));
  }
  {
    cudaMemcpy3DParms m;
    memset(&m, 0, sizeof m);
    const size_t esz = pair ? sizeof(float2) : sizeof(float);
    m.srcPtr = make_cudaPitchedPtr(pair ? (void *)f->d_pair : (void *)src, (size_t)nb * esz, (size_t)nb, 1);
    m.dstArray = f->arr;
    m.extent = make_cudaExtent((size_t)nb, 1, (size_t)na);
    m.kind = cudaMemcpyDeviceToDevice;
    CU(cudaMemcpy3DAsync(&m, stream));
  }
  {
    cudaResourceDesc rd;
    memset(&rd, 0, sizeof rd);
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = f->arr;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = cudaAddressModeBorder; /* 0 outside the detector */
    td.filterMode = f->nearest ? cudaFilterModePoint : cudaFilterModeLinear;
    td.readMode = cudaReadModeElementType;
    CU(cudaCreateTextureObject(&f->tex, &rd, &td, NULL));
  }
cleanup:
  return st;
}

/* Backprojects slice s0 (and s0 + 1 when pair) of the device sinograms
 * into the device slices. */
ctr_status ctr__fbp_run_kernel(fbp_gpu *f, int64_t s0, int pair, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &f->g->p;
  const int64_t nb = p->nbins, na = p->nangles, plane = p->nx * p->ny;
  const float *sino = f->d_sino + s0 * nb * na;
  float *out = f->d_out + s0 * plane;
  for (int64_t a0 = 0; a0 < na; a0 += MAX_CONST_ANGLES) {
    const int64_t n = na - a0 < MAX_CONST_ANGLES ? na - a0 : MAX_CONST_ANGLES;
    if (f->angles_loaded != a0) {
      CTR_CHECK(upload_angles(f->g, a0, n));
      f->angles_loaded = a0;
    }
    if (f->kernel == K_ALU || f->kernel == K_ALU2 || f->kernel == K_ALU_OS || f->kernel == K_ALU2_OS) {
      /* Bins one block spans: (ALU_AREA - 1) pixels x (|c| + |s|) <= that x sqrt 2
       * voxel, plus the floor, the interpolation neighbour and a margin. */
      const int width = (int)ceil((double)(ALU_AREA - 1) * p->voxel * 1.41422) + 4;
      const int per = (width + ALU_LANES - 1) / ALU_LANES;
      const int os = f->kernel == K_ALU_OS || f->kernel == K_ALU2_OS;
      /* Nearest runs the sample cache with one sample per bin. */
      const int samples = os ? OVERSAMPLE : f->nearest ? 1 : 0;
      const size_t entry = samples ? (pair ? sizeof(float2) : sizeof(float)) * (size_t)samples
                              : (pair ? sizeof(float4) : sizeof(float2));
      const size_t shm = entry * ALU_PROJ * (size_t)(per * ALU_LANES) + sizeof(float4) * ALU_PROJ;
      if (shm > 200 * 1024)
        CTR_FAIL(CTR_E_UNSUPPORTED, "the alu kernel caches %zu bytes per block for a pixel of %g "
                 "bins; use --bp-kernel tex (or a pixel of fewer bins)", shm, p->voxel);
      const dim3 grid((unsigned)((p->nx + ALU_AREA - 1) / ALU_AREA), (unsigned)((p->ny + ALU_AREA - 1) / ALU_AREA));
      const dim3 block(ALU_AREA, ALU_ROWS);
      const long long stride = (long long)(nb * na);
#define CTR__ALU_LAUNCH(S)                                                                        \
  do {                                                                                           \
    if (shm > 48 * 1024)                                                                         \
      CU(cudaFuncSetAttribute(bp_alu<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm)); \
    bp_alu<S><<<grid, block, shm, s>>>(sino + a0 * nb, stride, (int)nb, (int)n, (int)p->nx,       \
                                       (int)p->ny, per, out, plane);                             \
  } while (0)
#define CTR__OS_LAUNCH(S, N)                                                                      \
  do {                                                                                           \
    if (shm > 48 * 1024)                                                                         \
      CU(cudaFuncSetAttribute(bp_alu_os<S, N>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm)); \
    bp_alu_os<S, N><<<grid, block, shm, s>>>(sino + a0 * nb, stride, (int)nb, (int)n, (int)p->nx, \
                                             (int)p->ny, per, out, plane);                       \
  } while (0)
      if (os && pair) CTR__OS_LAUNCH(2, OVERSAMPLE);
      else if (os) CTR__OS_LAUNCH(1, OVERSAMPLE);
      else if (f->nearest && pair) CTR__OS_LAUNCH(2, 1);
      else if (f->nearest) CTR__OS_LAUNCH(1, 1);
      else if (pair) CTR__ALU_LAUNCH(2);
      else CTR__ALU_LAUNCH(1);
#undef CTR__ALU_LAUNCH
#undef CTR__OS_LAUNCH
      CU_LAUNCHED("bp_alu");
    } else {
      CTR_CHECK(make_texture(f, pair, s0, a0, n, s));
      const dim3 block(16, 8), grid((unsigned)((p->nx + 15) / 16), (unsigned)((p->ny + 15) / 16));
      if (pair && f->nearest) bp_tex<1, 1><<<grid, block, 0, s>>>(f->tex, (int)n, (int)p->nx, (int)p->ny, out, plane);
      else if (pair) bp_tex<1, 0><<<grid, block, 0, s>>>(f->tex, (int)n, (int)p->nx, (int)p->ny, out, plane);
      else if (f->nearest) bp_tex<0, 1><<<grid, block, 0, s>>>(f->tex, (int)n, (int)p->nx, (int)p->ny, out, plane);
      else bp_tex<0, 0><<<grid, block, 0, s>>>(f->tex, (int)n, (int)p->nx, (int)p->ny, out, plane);
      CU_LAUNCHED("bp_tex");
    }
  }
cleanup:
  return st;
}

/* Median of three timed runs of f's kernel on slice 0 (and 1), per slice. */
static ctr_status time_kernel(fbp_gpu *f, int pair, cudaStream_t s, double *ms_per_slice) {
  ctr_status st = CTR_OK;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float t[3];
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  CTR_CHECK_GOTO(st, ctr__fbp_run_kernel(f, 0, pair, s)); /* warm-up */
  for (int r = 0; r < 3; r++) {
    CU(cudaEventRecord(e0, s));
    CTR_CHECK_GOTO(st, ctr__fbp_run_kernel(f, 0, pair, s));
    CU(cudaEventRecord(e1, s));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&t[r], e0, e1));
  }
  {
    const float a = fminf(t[0], t[1]), b = fmaxf(t[0], t[1]);
    const float med = t[2] < a ? a : t[2] > b ? b : t[2];
    *ms_per_slice = med / (pair ? 2.0 : 1.0);
  }
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  return st;
}

ctr_status ctr__fbp_autotune(fbp_gpu *f, int64_t nslices, cudaStream_t s) {
  if (!f->auto_kernel || !ctr__fbp_tune_enabled()) return CTR_OK;
  f->auto_kernel = 0;
  const ctr_parallel_params *p = &f->g->p;
  ctr__fbp_tune_key key;
  memset(&key, 0, sizeof key);
  {
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
      return CTR_OK; /* no name to key on: keep the static default */
    snprintf(key.gpu, sizeof key.gpu, "%s", prop.name);
  }
  key.nbins = p->nbins;
  key.nangles = p->nangles;
  key.nx = p->nx;
  key.ny = p->ny;
  key.interp = f->nearest;
  key.multi = nslices > 1;
  {
    char name[32];
    fbp_kernel k;
    if (ctr__fbp_tune_lookup(&key, name, sizeof name) &&
        ctr__fbp_parse_kernel(name, f->nearest, &k) == CTR_OK) {
      f->kernel = k;
      return CTR_OK;
    }
    ctr_error_clear();
  }
  /* The exact candidates: software interpolation, and point-sampled
   * textures for nearest (hardware linear weights are 8-bit: not exact). */
  const fbp_kernel lin[2] = {K_ALU, K_ALU2}, near[4] = {K_ALU, K_ALU2, K_TEX, K_TEX2};
  const fbp_kernel *cand = f->nearest ? near : lin;
  const int ncand = f->nearest ? 4 : 2;
  fbp_kernel best = f->kernel;
  double best_ms = 1e300;
  for (int i = 0; i < ncand; i++) {
    const int pair = cand[i] == K_ALU2 || cand[i] == K_TEX2;
    if (pair && nslices < 2) continue;
    double ms = 0;
    f->kernel = cand[i];
    CTR_CHECK(time_kernel(f, pair, s, &ms));
    if (ms < best_ms) {
      best_ms = ms;
      best = cand[i];
    }
  }
  f->kernel = best;
  /* A cache that cannot be written costs a re-tune next time, nothing more. */
  const double gups = (double)p->nangles * (double)(p->nx * p->ny) / (best_ms * 1e-3) / 1e9;
  if (ctr__fbp_tune_store(&key, kernel_names[best], gups) != CTR_OK) ctr_error_clear();
  return CTR_OK;
}

void ctr__fbp_gpu_free(fbp_gpu *f) {
  if (f->tex) cudaDestroyTextureObject(f->tex);
  if (f->arr) cudaFreeArray(f->arr);
  cudaFree(f->d_sino);
  cudaFree(f->d_out);
  cudaFree(f->d_w);
  cudaFree(f->d_pair);
  memset(f, 0, sizeof *f);
}

/* Device-resident run: sinograms (filtered, unweighted) already in d_sino;
 * weights them, clears d_out and backprojects every slice with `repeats`
 * timed passes (the median into *ms) when ms is given. */
static ctr_status fbp_gpu_run(fbp_gpu *f, int64_t nslices, int repeats, double *ms) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &f->g->p;
  const int64_t nb = p->nbins, na = p->nangles, plane = p->nx * p->ny;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double times[33];
  if (repeats < 1) repeats = 1;
  if (repeats > 33) repeats = 33;
  CTR_CHECK_GOTO(st, ctr__fbp_autotune(f, nslices, 0));
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  for (int r = 0; r < repeats; r++) {
    CU(cudaMemset(f->d_out, 0, sizeof(float) * (size_t)(plane * nslices)));
    CU(cudaEventRecord(e0, 0));
    for (int64_t s0 = 0; s0 < nslices;) {
      const int pair = (f->kernel == K_TEX2 || f->kernel == K_ALU2 || f->kernel == K_ALU2_OS) &&
                       s0 + 1 < nslices;
      CTR_CHECK_GOTO(st, ctr__fbp_run_kernel(f, s0, pair, 0));
      s0 += pair ? 2 : 1;
    }
    CU(cudaEventRecord(e1, 0));
    CU(cudaEventSynchronize(e1));
    float t;
    CU(cudaEventElapsedTime(&t, e0, e1));
    times[r] = t;
  }
  if (ms) {
    for (int i = 1; i < repeats; i++)
      for (int j = i; j > 0 && times[j - 1] > times[j]; j--) {
        const double x = times[j];
        times[j] = times[j - 1];
        times[j - 1] = x;
      }
    *ms = times[repeats / 2];
  }
  (void)nb;
  (void)na;
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  return st;
}

static ctr_status fbp_gpu_setup(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                const ctr_fbp_options *o, int64_t nslices, const float *sino,
                                fbp_gpu *f) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &g->p;
  const int64_t nb = p->nbins, na = p->nangles, plane = p->nx * p->ny;
  float *w = NULL;
  memset(f, 0, sizeof *f);
  f->g = g;
  f->angles_loaded = -1;
  f->nearest = o && o->interp == CTR_FBP_NEAREST;
  CTR_CHECK(ctr__fbp_parse_kernel(o ? o->kernel : NULL, f->nearest, &f->kernel));
  f->auto_kernel = !o || !o->kernel || !*o->kernel || !strcmp(o->kernel, "auto");
  const int dev = ctx && ctx->opts.device_index >= 0 ? ctx->opts.device_index : 0;
  CU(cudaSetDevice(dev));
  CU(cudaMalloc(&f->d_sino, sizeof(float) * (size_t)(nb * na * nslices)));
  CU(cudaMalloc(&f->d_out, sizeof(float) * (size_t)(plane * nslices)));
  CU(cudaMalloc(&f->d_w, sizeof(float) * (size_t)na));
  CU(cudaMemcpy(f->d_sino, sino, sizeof(float) * (size_t)(nb * na * nslices), cudaMemcpyHostToDevice));
  w = (float *)malloc(sizeof(float) * (size_t)na);
  if (!w) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "angle weights");
  for (int64_t a = 0; a < na; a++) w[a] = (float)g->weight[a];
  CU(cudaMemcpy(f->d_w, w, sizeof(float) * (size_t)na, cudaMemcpyHostToDevice));
  {
    const dim3 grid((unsigned)((nb + 255) / 256), (unsigned)na, (unsigned)nslices);
    weight_rows<<<grid, 256>>>(f->d_sino, (int)nb, (int)na, (int)nslices, f->d_w);
    CU_LAUNCHED("weight_rows");
  }
cleanup:
  free(w);
  if (st != CTR_OK) ctr__fbp_gpu_free(f);
  return st;
}

extern "C" ctr_status ctr__fbp_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                       const ctr_fbp_options *o, int64_t nslices,
                                       const float *sino, float *slices) {
  fbp_gpu f;
  CTR_CHECK(fbp_gpu_setup(ctx, g, o, nslices, sino, &f));
  ctr_status st = fbp_gpu_run(&f, nslices, 1, NULL);
  if (st == CTR_OK) {
    const size_t bytes = sizeof(float) * (size_t)(g->p.nx * g->p.ny * nslices);
    if (cudaMemcpy(slices, f.d_out, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
      st = ctr__error_set(CTR_E_DEVICE, "copying the slices to the host: %s",
                          cudaGetErrorString(cudaGetLastError()));
  }
  ctr__fbp_gpu_free(&f);
  return st;
}

extern "C" ctr_status ctr__fbp_bench_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                          const ctr_fbp_options *o, int64_t nslices,
                                          const float *sino, float *slices, int repeats,
                                          double *median_ms) {
  fbp_gpu f;
  CTR_CHECK(fbp_gpu_setup(ctx, g, o, nslices, sino, &f));
  ctr_status st = fbp_gpu_run(&f, nslices, 1, NULL); /* warm-up */
  if (st == CTR_OK) st = fbp_gpu_run(&f, nslices, repeats, median_ms);
  if (st == CTR_OK && slices &&
      cudaMemcpy(slices, f.d_out, sizeof(float) * (size_t)(g->p.nx * g->p.ny * nslices),
                 cudaMemcpyDeviceToHost) != cudaSuccess)
    st = ctr__error_set(CTR_E_DEVICE, "copying the slices to the host");
  ctr__fbp_gpu_free(&f);
  return st;
}
