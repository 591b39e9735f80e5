/* Parallel-beam backprojection on the GPU (Chilingaryan et al. 2020). Kernels, selectable by
 * name (docs/parallel-beam.md):
 *   tex      Alg. 1 + 2: hardware interpolation from a 1D layered texture of
 *            the sinogram (8-bit interpolation weights), Z-order threads,
 *            two pixels per thread
 *   tex2     the same on two slices at once from a float2 texture
 *   tex-mp   Alg. 3/4: four projection groups per block, four pixels per
 *            thread, partial sums combined by a shared-memory reduction
 *   tex4h    tex on four slices at once from a half4 texture (approximate:
 *            half-precision data)
 *   alu      Alg. 6 with the advanced caching mode (Alg. 9): a block of 256
 *            threads reconstructs 64 x 64 pixels; the bins a block needs for
 *            16 projections are cached in shared memory as (midpoint,
 *            slope) pairs, interpolation in fp32 (exact: the default)
 *   alu2     alu on two slices per shared load
 *   alu2-h   alu2 with the cache in half precision (6.7; approximate)
 *   alu-os, alu2-os  oversampling (7.2; approximate)
 *   hybrid   7.1: texture and ALU blocks side by side on every SM (alu2
 *            with tex2 tiles; the texture part has 8-bit weights)
 * Every kernel sums pre-weighted sinograms (each row times its angle's
 * weight), so the kernels only add. Positions: t = off + dx c + dy s with
 * off the bin of the block's (or pixel's) origin computed in double on the
 * host side of each kernel's maths, so float rounding does not grow with
 * the bin index. */
#include "gpu/cuda_util.h"
#include "parbeam/cuda/fbp_cuda.cuh"
#include "parbeam/fbp_tune.h"

#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALU_AREA 64    /* pixels per block side */
#define ALU_ROWS 4     /* thread rows: each thread does ALU_AREA / ALU_ROWS pixels of a column */
#define ALU_PROJ 16    /* projections cached per pass */
#define ALU_LANES 16   /* threads caching one projection row (Alg. 9) */
#define ROUND_MAGIC 12582912.0f      /* 1.5 x 2^23 */
#define ROUND_MAGIC_BITS 0x4B400000  /* its bits */

/* Per-angle constants live in device memory owned by each fbp_gpu
 * (fbp_gpu.d_ang: c, s (per pixel step), t0 (bin of pixel (0, 0)), unused;
 * fbp_gpu.d_t0d: t0 in double for the ALU kernel's block origins), passed to
 * every kernel as a pointer to the launch's first angle. They once sat in a
 * __constant__ bank of 2048 angles shared by every context of the process and
 * rewritten between launches without waiting for the kernels still reading it:
 * more than 2048 angles, or two runs at once, backprojected with another
 * chunk's angles. A warp reads one angle at a time (a uniform address): one
 * L1 transaction, broadcast. The texture kernels, whose every two fetches
 * read an angle's constants, get them as a kernel parameter instead
 * (tex_angles: the constant bank of the launch, fixed when it starts): the
 * loads from global memory shared the texture pipe and cost the texture
 * kernels measurably (bench/NOTES.md, issue 41). */
#define TEX_PARAM_ANGLES 1024 /* 16 KiB of float4: kernel parameters hold up to 32764 bytes */
struct tex_angles {
  float4 k[TEX_PARAM_ANGLES];
};

/* ---- Half-precision data (tex4h, alu2-h) ---------------------------------- */

/* Half has 11 significant bits but only 5 exponent bits (largest 65504,
 * normal down to 6.1e-5): weighted, filtered sinograms are often ~1e-3 and
 * can be anything with other units. Each launch therefore scales its data by
 * a power of two, chosen on the device from the launch's largest |value|,
 * that puts that value in [2^13, 2^14): midpoints and slopes (|d1 - d0| <=
 * 2 max) stay below 2^15, everything down to 2^-27 of the maximum stays a
 * normal number (relative rounding <= 2^-12), and the sum is multiplied by
 * the exact inverse at the end. amax holds the bits of the largest |value|
 * (non-negative floats order as unsigned integers); zero or non-finite data
 * get scale 1. */
__device__ __forceinline__ void half_scale(unsigned amax, float *scale, float *inv) {
  int k = 13 - ((int)(amax >> 23) - 127); /* 13 - floor(log2 max) */
  if (amax == 0u || amax >= 0x7f800000u) k = 0;
  k = k < -126 ? -126 : k > 126 ? 126 : k;
  *scale = __int_as_float((127 + k) << 23);
  *inv = __int_as_float((127 - k) << 23);
}

/* Largest |value| of `count` arrays of n floats, `stride` apart, into *amax
 * (as bits; *amax is cleared by the caller). */
__global__ void abs_max(const float *__restrict__ src, long long stride, int count, long long n,
                        unsigned *amax) {
  unsigned m = 0u;
  for (int k = 0; k < count; k++)
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
      m = max(m, __float_as_uint(fabsf(src[k * stride + i])));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax, m);
}

/* tex4h: slices [0, count) of the n values each (stride apart) scaled and
 * rounded to half, interleaved as the four channels of one texel (missing
 * slices 0). */
__global__ void pack_half4(const float *__restrict__ src, long long stride, int count, long long n,
                           const unsigned *__restrict__ amax, ushort4 *__restrict__ dst) {
  float sc, inv;
  half_scale(*amax, &sc, &inv);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned short h[4];
#pragma unroll
    for (int k = 0; k < 4; k++) h[k] = __half_as_ushort(__float2half_rn(k < count ? src[k * stride + i] * sc : 0.0f));
    dst[i] = make_ushort4(h[0], h[1], h[2], h[3]);
  }
}

/* ---- Texture kernels (Alg. 1, 2) ------------------------------------------ */

/* Z-order (Morton) position of thread t of a 16 x 8 block (Chilingaryan et al. 2020, Alg. 2):
 * a warp covers an 8 x 4 patch instead of a 16 x 2 strip, so its texture
 * footprint per projection is smaller. */
__device__ __forceinline__ void morton16(int t, int *x, int *y) {
  /* bits: t0 -> x0, t1 -> y0, t2 -> x1, t3 -> y1, t4 -> x2, t5 -> y2, t6 -> x3 */
  *x = (t & 1) | ((t >> 1) & 2) | ((t >> 2) & 4) | ((t >> 3) & 8);
  *y = ((t >> 1) & 1) | ((t >> 2) & 2) | ((t >> 3) & 4);
}

/* One fetch of NS slices (float, float2, or a half4 texture read as float4)
 * added to acc. */
__device__ __forceinline__ void tex_add1(cudaTextureObject_t tex, float x, int a, float *acc) {
  acc[0] += tex1DLayered<float>(tex, x, a);
}
__device__ __forceinline__ void tex_add2(cudaTextureObject_t tex, float x, int a, float *acc) {
  const float2 v = tex1DLayered<float2>(tex, x, a);
  acc[0] += v.x;
  acc[1] += v.y;
}
__device__ __forceinline__ void tex_add4(cudaTextureObject_t tex, float x, int a, float *acc) {
  const float4 v = tex1DLayered<float4>(tex, x, a);
  acc[0] += v.x;
  acc[1] += v.y;
  acc[2] += v.z;
  acc[3] += v.w;
}
template <int NS>
__device__ __forceinline__ void tex_add(cudaTextureObject_t tex, float x, int a, float *acc) {
  if (NS == 1) tex_add1(tex, x, a, acc);
  else if (NS == 2) tex_add2(tex, x, a, acc);
  else tex_add4(tex, x, a, acc);
}

/* Pixels (i, j) and (i, j + DJ) of NS slices over na projections: two
 * independent fetches per projection keep more texture requests in flight
 * (the kernel waits on texture latency, not on the texture units). Slice k
 * (k < nsl) goes to out + k * plane, times inv (1, or tex4h's 1 / scale).
 * One layer per projection: a 1D bilinear fetch reads 2 texels, not the
 * 2 x 2 of a 2D texture with a zero-weight second row. Layers [ab, na) of
 * the texture, ang[a - ab] the constants of layer a: the launcher walks the
 * angles in L2-sized chunks (tex_chunk). */
template <int NS, int NEAREST, int DJ>
__device__ __forceinline__ void tex_pixels(cudaTextureObject_t tex, const float4 *__restrict__ ang,
                                           int ab, int na, int i, int j, int nx, int ny,
                                           float *__restrict__ out, long long plane, int nsl,
                                           float inv) {
  float acc[NS], bcc[NS];
#pragma unroll
  for (int k = 0; k < NS; k++) acc[k] = bcc[k] = 0.0f;
  const float fi = (float)i, fj = (float)j;
#pragma unroll 8
  for (int a = ab; a < na; a++) {
    const float4 k = ang[a - ab];
    float t = k.z + fi * k.x + fj * k.y;
    float u = fmaf((float)DJ, k.y, t);
    if (NEAREST) {
      t = floorf(t + 0.5f);
      u = floorf(u + 0.5f);
    }
    tex_add<NS>(tex, t + 0.5f, a, acc);
    tex_add<NS>(tex, u + 0.5f, a, bcc);
  }
  if (i < nx && j < ny) {
    const long long o = (long long)j * nx + i;
#pragma unroll
    for (int k = 0; k < NS; k++)
      if (NS < 4 || k < nsl) out[k * plane + o] += NS == 4 ? acc[k] * inv : acc[k];
  }
  if (i < nx && j + DJ < ny) {
    const long long o = (long long)(j + DJ) * nx + i;
#pragma unroll
    for (int k = 0; k < NS; k++)
      if (NS < 4 || k < nsl) out[k * plane + o] += NS == 4 ? bcc[k] * inv : bcc[k];
  }
}

/* tex (NS 1), tex2 (NS 2: a float2 texture holding two slices) and tex4h
 * (NS 4: a half4 texture holding four slices, nsl of them real, scaled as
 * half_scale says for the bits in *amax). Each thread owns two pixels,
 * (i, j) and (i, j + 8) of a 16 x 16 tile (Z-order over the tile's upper
 * half). tex4h is Chilingaryan et al. 2020's four-slice mode (Sect. 5.2/5.3): 4 slices per
 * fetch at the half4 fetch rate (950 G/s, docs/design.md), so up to 4x tex's
 * updates per fetch, for the price of half-precision data. */
template <int NS, int NEAREST>
__global__ void __launch_bounds__(128) bp_tex(cudaTextureObject_t tex, const __grid_constant__ tex_angles ang,
                                               int ab, int na, int nx, int ny,
                                               float *__restrict__ out, long long plane, int nsl,
                                               const unsigned *__restrict__ amax) {
  int mx, my;
  morton16(threadIdx.y * 16 + threadIdx.x, &mx, &my);
  float inv = 1.0f;
  if (NS == 4) {
    float sc;
    half_scale(*amax, &sc, &inv);
  }
  tex_pixels<NS, NEAREST, 8>(tex, ang.k, ab, na, blockIdx.x * 16 + mx, blockIdx.y * 16 + my, nx, ny, out,
                             plane, nsl, inv);
}

/* ---- tex-mp: several projections per thread, shared reduction (Alg. 3/4) --- */

#define MP_GROUPS 4  /* projection groups per block: thread group g sums projections g, g + 4, ... */
#define MP_PIX 4     /* pixels per thread: rows y, y + 4, y + 8, y + 12 of the 16 x 16 tile */
static_assert(MP_GROUPS * 64 == 256 && MP_PIX * 4 == 16, "bp_tex_mp's thread mapping");

/* A block of 256 threads reconstructs 16 x 16 pixels. Chilingaryan et al. 2020, Alg. 3: the
 * low 4 bits of the thread index walk a 4 x 4 square in Z-order (Alg. 2),
 * the next 2 pick one of 4 squares along x (a warp: 8 x 4 pixels, as in
 * tex), the top 2 the projection group, so every warp reads one angle's
 * constants (a constant-memory broadcast, never serialised). Each thread
 * does 4 pixels of a column per projection: one constant load and one
 * position per 4 fetches, and 4 independent fetches in flight. The 4 groups'
 * partial sums of a pixel meet in shared memory (Alg. 3's reduction; the
 * shuffle of Alg. 4 is not needed because each pixel's 4 partials are one
 * column of red[][], summed by one thread in a fixed order), and the block
 * writes its tile row by row (coalesced). Single slice; nearest or hardware
 * linear (8-bit weights) as tex. */
template <int NEAREST>
__global__ void __launch_bounds__(256) bp_tex_mp(cudaTextureObject_t tex,
                                                  const __grid_constant__ tex_angles ang, int ab, int na,
                                                  int nx, int ny, float *__restrict__ out) {
  __shared__ float red[MP_GROUPS][256];
  const int t = threadIdx.x, g = t >> 6, l = t & 63;
  const int px = (l & 1) | ((l >> 1) & 2) | ((l >> 2) & 12); /* Z-order x, then the square */
  const int py = ((l >> 1) & 1) | ((l >> 2) & 2);
  const int bx = blockIdx.x * 16, by = blockIdx.y * 16;
  const float fi = (float)(bx + px), fj = (float)(by + py);
  float acc[MP_PIX];
#pragma unroll
  for (int q = 0; q < MP_PIX; q++) acc[q] = 0.0f;
#pragma unroll 4
  for (int a = ab + g; a < na; a += MP_GROUPS) {
    const float4 k = ang.k[a - ab];
    const float t0 = k.z + fi * k.x + fj * k.y;
    const float step = 4.0f * k.y;
#pragma unroll
    for (int q = 0; q < MP_PIX; q++) {
      float h = fmaf((float)q, step, t0);
      if (NEAREST) h = floorf(h + 0.5f);
      acc[q] += tex1DLayered<float>(tex, h + 0.5f, a);
    }
  }
#pragma unroll
  for (int q = 0; q < MP_PIX; q++) red[g][(py + 4 * q) * 16 + px] = acc[q];
  __syncthreads();
  const int ox = bx + (t & 15), oy = by + (t >> 4);
  const float v = ((red[0][t] + red[1][t]) + red[2][t]) + red[3][t];
  if (ox < nx && oy < ny) out[(long long)oy * nx + ox] += v;
}

/* ---- ALU kernels (Alg. 6 + Alg. 9) ---------------------------------------- */

/* Per projection a of a block with origin (bx, by): (c, s, the origin's
 * bin relative to hm, hm) with hm one below the smallest bin the block
 * touches; the origin's position in double. */
__device__ __forceinline__ float4 block_konst(const float4 *__restrict__ ang,
                                              const double *__restrict__ t0d, int a, int bx, int by) {
  const float4 k = __ldg(ang + a);
  const double t0 = __ldg(t0d + a) + (double)bx * k.x + (double)by * k.y;
  const float span = (float)(ALU_AREA - 1);
  const float lo = fminf(0.0f, span * k.x) + fminf(0.0f, span * k.y);
  const double hm = floor(t0 + (double)lo) - 1.0;
  return make_float4(k.x, k.y, (float)(t0 - hm), (float)hm);
}

/* The ALU kernels cache, per projection, the bins a block needs in shared
 * memory and look each pixel's value up there; a cache policy C says what an
 * entry holds and how a position reads it, for C::S slices at once (1 or
 * 2: one shared load serves every slice) and C::HALF:
 *   pair_cache<S, HALF>        linear interpolation (alu, alu2, alu2-h):
 *                              per bin a (midpoint, slope) pair
 *   sample_cache<S, OS, HALF>  nearest (OS = 1) or oversampling (OS = 4:
 *                              alu-os, alu2-os): per bin OS samples
 * Each policy has: entry, the cache's element; per_bin, entries per bin;
 * store(dst, d, dn), the entries of a bin from its value d and the next
 * bin's dn (both scaled under HALF); origin(k, tx, ty) and step(k), thread
 * (tx, ty)'s first position in the cache, in entries, and the step between
 * its rows, for the constants k of a projection (block_konst); add(row, g,
 * acc), the value at position g of a cached row added to the S sums acc.
 * Positions are rounded by adding 1.5 x 2^23 (Chilingaryan et al. 2020, Sect. 6.6: the
 * integer lands in the mantissa, no conversion instructions). */

/* Pair cache: entries are float2 (m, s) or float4 (m_a, s_a, m_b, s_b).
 * HALF (alu2-h, Chilingaryan et al. 2020, Sect. 6.7): the same in half precision, half2
 * (m, s) or (m_a, m_b), (s_a, s_b): 4 bytes per update instead of 8, which
 * halves alu2's limiting shared-memory traffic. The interpolation runs in
 * half arithmetic (one HFMA2 for both slices, the fraction rounded to half)
 * and is added to fp32 sums: converting m and s to float first would cost
 * 4 conversions per entry instead of 2 (~14 instead of ~12 issue slots per
 * two updates) for ~1.4x less error (CPU emulation, relative RMS vs the
 * exact linear result on a ram-lak-filtered 1024^2 Shepp-Logan: 4.4e-5 vs
 * 6.2e-5; the texture's 8-bit weights give 2.3e-4). */
struct __align__(8) half2x2 {
  __half2 m, s;
};
template <int S, int HALF> struct pair_entry;
template <> struct pair_entry<1, 0> { typedef float2 T; };
template <> struct pair_entry<2, 0> { typedef float4 T; };
template <> struct pair_entry<1, 1> { typedef __half2 T; };
template <> struct pair_entry<2, 1> { typedef half2x2 T; };

__device__ __forceinline__ void put(float2 *e, const float *m, const float *sl) { *e = make_float2(m[0], sl[0]); }
__device__ __forceinline__ void put(float4 *e, const float *m, const float *sl) {
  *e = make_float4(m[0], sl[0], m[1], sl[1]);
}
__device__ __forceinline__ void put(__half2 *e, const float *m, const float *sl) {
  *e = __floats2half2_rn(m[0], sl[0]);
}
__device__ __forceinline__ void put(half2x2 *e, const float *m, const float *sl) {
  half2x2 v;
  v.m = __floats2half2_rn(m[0], m[1]);
  v.s = __floats2half2_rn(sl[0], sl[1]);
  *e = v;
}
__device__ __forceinline__ void accumulate(const float2 v, float f, float *acc) {
  acc[0] += fmaf(f, v.y, v.x);
}
__device__ __forceinline__ void accumulate(const float4 v, float f, float *acc) {
  acc[0] += fmaf(f, v.y, v.x);
  acc[1] += fmaf(f, v.w, v.z);
}
__device__ __forceinline__ void accumulate(const __half2 v, float f, float *acc) {
  acc[0] += __half2float(__hfma(__float2half_rn(f), __high2half(v), __low2half(v)));
}
__device__ __forceinline__ void accumulate(const half2x2 v, float f, float *acc) {
  const float2 r = __half22float2(__hfma2(__float2half2_rn(f), v.s, v.m));
  acc[0] += r.x;
  acc[1] += r.y;
}

/* An entry holds the midpoint m = (d_e + d_e+1) / 2 and the slope d_e+1 -
 * d_e. Linear: with g = h - 0.5 rounded to e the value is m_e + (g - e) s_e,
 * the same on both sides of a tie. */
template <int S_, int HALF_> struct pair_cache {
  static constexpr int S = S_, HALF = HALF_, per_bin = 1;
  typedef typename pair_entry<S, HALF>::T entry;
  __device__ static __forceinline__ void store(entry *dst, const float *d, const float *dn) {
    float m[S], sl[S];
#pragma unroll
    for (int k = 0; k < S; k++) {
      m[k] = 0.5f * (d[k] + dn[k]);
      sl[k] = dn[k] - d[k];
    }
    put(dst, m, sl);
  }
  __device__ static __forceinline__ float origin(const float4 k, int tx, int ty) {
    return k.z - 0.5f + (float)tx * k.x + (float)ty * k.y;
  }
  __device__ static __forceinline__ float step(const float4 k) { return (float)ALU_ROWS * k.y; }
  __device__ static __forceinline__ void add(const entry *row, float g, float *acc) {
    const float r = g + ROUND_MAGIC;
    const int e = __float_as_int(r) - ROUND_MAGIC_BITS;
    accumulate(row[e], g - (r - ROUND_MAGIC), acc);
  }
};

/* Sample caches: the cache holds OS samples per bin (linearly interpolated
 * between bins) and each update takes the nearest sample, no interpolation
 * arithmetic. OS = 4: oversampling (Chilingaryan et al. 2020, Sect. 7.2), positions
 * quantised to 1/4 bin, approximate linear interpolation. OS = 1: nearest
 * interpolation with value-only entries (4 or 8 bytes per update, not the
 * pair caches' 8 or 16). Entries are float (one slice) or float2 (two);
 * HALF (alu2-h nearest, OS = 1 only): __half or __half2, 2 or 4 bytes. */
#define OVERSAMPLE 4
template <int S, int HALF> struct sample_entry;
template <> struct sample_entry<1, 0> { typedef float T; };
template <> struct sample_entry<2, 0> { typedef float2 T; };
template <> struct sample_entry<1, 1> { typedef __half T; };
template <> struct sample_entry<2, 1> { typedef __half2 T; };
__device__ __forceinline__ void os_put(float *e, const float *v) { *e = v[0]; }
__device__ __forceinline__ void os_put(float2 *e, const float *v) { *e = make_float2(v[0], v[1]); }
__device__ __forceinline__ void os_put(__half *e, const float *v) { *e = __float2half_rn(v[0]); }
__device__ __forceinline__ void os_put(__half2 *e, const float *v) { *e = __floats2half2_rn(v[0], v[1]); }
__device__ __forceinline__ void os_add(float v, float *acc) { acc[0] += v; }
__device__ __forceinline__ void os_add(float2 v, float *acc) {
  acc[0] += v.x;
  acc[1] += v.y;
}
__device__ __forceinline__ void os_add(__half v, float *acc) { acc[0] += __half2float(v); }
__device__ __forceinline__ void os_add(__half2 v, float *acc) {
  const float2 f = __half22float2(v);
  acc[0] += f.x;
  acc[1] += f.y;
}

template <int S_, int OS, int HALF_> struct sample_cache {
  static constexpr int S = S_, HALF = HALF_, per_bin = OS;
  typedef typename sample_entry<S, HALF>::T entry;
  __device__ static __forceinline__ void store(entry *dst, const float *d, const float *dn) {
    float v[S];
#pragma unroll
    for (int j = 0; j < OS; j++) {
#pragma unroll
      for (int k = 0; k < S; k++) v[k] = fmaf((float)j * (1.0f / OS), dn[k] - d[k], d[k]);
      os_put(dst + j, v);
    }
  }
  __device__ static __forceinline__ float origin(const float4 k, int tx, int ty) {
    return OS * (k.z + (float)tx * k.x + (float)ty * k.y);
  }
  __device__ static __forceinline__ float step(const float4 k) { return (float)(OS * ALU_ROWS) * k.y; }
  __device__ static __forceinline__ void add(const entry *row, float g, float *acc) {
    const float r = g + ROUND_MAGIC;
    os_add(row[__float_as_int(r) - ROUND_MAGIC_BITS], acc);
  }
};

/* Dynamic shared memory of an ALU block with cache C, `per` bins per
 * caching lane: ALU_PROJ * width entries and ALU_PROJ float4 of constants. */
template <class C> static size_t alu_shm(int per) {
  return sizeof(typename C::entry) * C::per_bin * ALU_PROJ * (size_t)(per * ALU_LANES) +
         sizeof(float4) * ALU_PROJ;
}

/* Where an ALU block keeps the constants of its ALU_PROJ projections of a
 * pass (block_konst: c, s, the origin's offset in the cache, hm) while its
 * threads use them; ctr_tuning.fbp_angle_cache, the analogue of
 * Chilingaryan et al. 2020, Table 18's h_m and c_s caches:
 *   KONST_SHARED  all in shared memory, computed once per block: one 128-bit
 *                 shared load per projection and thread (the default)
 *   KONST_OFFSET  only the offset (the paper's h_m) in shared memory; c and s
 *                 from the angle table in global memory (a uniform address:
 *                 one L1 broadcast per warp), as the paper's Table 18 for two
 *                 and four slices on Kepler and later
 *   KONST_REGS    nothing in shared memory: lane l < ALU_PROJ of every warp
 *                 computes projection l's constants, the warp takes them by
 *                 shuffles (three per projection): "the caching of h_m can be
 *                 disabled altogether on the systems with fast ALUs, but slow
 *                 shared memory" (6.8)
 * The same values and the same arithmetic: the same bits for every choice. */
enum { KONST_SHARED = 0, KONST_OFFSET = 1, KONST_REGS = 2 };

/* One 64 x 64 tile with origin (bx, by) (bp_alu, and the hybrid's ALU
 * tiles). The cache holds, per projection, `width` = ALU_LANES * per *
 * C::per_bin entries for the ALU_LANES * per bins from hm (Alg. 9: each of
 * ALU_LANES threads reads `per` consecutive bins once and takes the bin
 * after them from its neighbour by a shuffle). Dynamic shared memory:
 * alu_shm<C>. Thread (tx, ty) owns column bx + tx and rows by + ty +
 * ALU_ROWS q of each slice; slice k's sinogram is sino + k * sino_stride,
 * its output out + k * plane; ang and t0d the constants of its first
 * projection. HALF: values scaled by half_scale(*amax)
 * before rounding, sums unscaled. CONT (the live FBP's continued sum,
 * fbp_pipeline.cu; not with HALF): each pixel's accumulators start from
 * its value in out and end there (out = acc), so that launches over
 * consecutive ranges of a launch group's angles make the one launch's sums
 * bit for bit; otherwise they start at 0 and are added to out. KONST:
 * where the projections' constants are kept (below). */
template <class C, int CONT = 0, int KONST = KONST_SHARED>
__device__ __forceinline__ void alu_tile(const float4 *__restrict__ ang,
                                         const double *__restrict__ t0d,
                                         const float *__restrict__ sino, long long sino_stride,
                                         int nbins, int na, int nx, int ny, int per,
                                         float *__restrict__ out, long long plane, int bx, int by,
                                         const unsigned *__restrict__ amax) {
  constexpr int S = C::S, HALF = C::HALF;
  typedef typename C::entry entry;
  extern __shared__ float4 shm_raw[];
  entry *cache = (entry *)shm_raw;
  const int width = ALU_LANES * per * C::per_bin;
  float4 *konst = (float4 *)(cache + ALU_PROJ * width);
  const int row_bytes = width * (int)sizeof(entry);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * ALU_AREA + tx;
  float sc = 1.0f, inv = 1.0f;
  if (HALF) half_scale(*amax, &sc, &inv);
  constexpr int nq = ALU_AREA / ALU_ROWS;
  static_assert(!(CONT && HALF), "a continued sum has no launch-wide scale");
  float acc[nq][S];
#pragma unroll
  for (int q = 0; q < nq; q++) {
    const int j = by + ty + q * ALU_ROWS, i = bx + tx;
#pragma unroll
    for (int k = 0; k < S; k++)
      acc[q][k] = CONT && i < nx && j < ny ? out[k * plane + (long long)j * nx + i] : 0.0f;
  }
  const int cp = tid / ALU_LANES, cl = tid % ALU_LANES; /* caching: projection, lane */
  const int lane = tid & 31;
  for (int a0 = 0; a0 < na; a0 += ALU_PROJ) {
    const int np = na - a0 < ALU_PROJ ? na - a0 : ALU_PROJ;
    __syncthreads();
    float4 kr = make_float4(0.0f, 0.0f, 0.0f, 0.0f); /* KONST_REGS: projection `lane`'s */
    if (KONST == KONST_REGS) {
      if (lane < np) kr = block_konst(ang, t0d, a0 + lane, bx, by);
    } else {
      if (tid < np) konst[tid] = block_konst(ang, t0d, a0 + tid, bx, by);
      __syncthreads();
    }
    {
      /* Every lane takes part in the shuffles; lanes of a missing projection
       * (the last pass) load and store nothing. A warp caches projections
       * 2w and 2w + 1 (cp < ALU_PROJ <= 32: a lane of its own warp). */
      const int valid = cp < np;
      const float hm = KONST == KONST_REGS ? __shfl_sync(0xffffffffu, kr.w, cp) : 0.0f;
      const float *row = sino + (long long)(a0 + (valid ? cp : 0)) * nbins;
      const int b0 = valid ? (int)(KONST == KONST_REGS ? hm : konst[cp].w) + cl * per : 0;
      entry *dst = cache + cp * width + cl * per * C::per_bin;
      float d[S], first[S], dn[S];
#pragma unroll
      for (int k = 0; k < S; k++) {
        d[k] = (valid && b0 >= 0 && b0 < nbins) ? __ldg(row + k * sino_stride + b0) : 0.0f;
        if (HALF) d[k] *= sc;
        first[k] = d[k];
      }
      for (int i = 0; i < per; i++) {
        const int b = b0 + i + 1;
        const int last = i == per - 1;
#pragma unroll
        for (int k = 0; k < S; k++) {
          /* The bin after a lane's run is the next lane's first bin; the
           * last lane reads it itself. */
          const float next = last ? __shfl_down_sync(0xffffffffu, first[k], 1, ALU_LANES) : 0.0f;
          if (last && cl < ALU_LANES - 1) dn[k] = next;
          else {
            dn[k] = (valid && b >= 0 && b < nbins) ? __ldg(row + k * sino_stride + b) : 0.0f;
            if (HALF) dn[k] *= sc;
          }
        }
        if (valid) C::store(dst + i * C::per_bin, d, dn);
#pragma unroll
        for (int k = 0; k < S; k++) d[k] = dn[k];
      }
    }
    __syncthreads();
    for (int p = 0; p < np; p++) {
      float4 k;
      if (KONST == KONST_SHARED) k = konst[p];
      else if (KONST == KONST_OFFSET) {
        const float4 g = __ldg(ang + a0 + p);
        k = make_float4(g.x, g.y, konst[p].z, 0.0f);
      } else {
        k = make_float4(__shfl_sync(0xffffffffu, kr.x, p), __shfl_sync(0xffffffffu, kr.y, p),
                        __shfl_sync(0xffffffffu, kr.z, p), 0.0f);
      }
      /* Addressed in bytes: from cache + p * width, nvcc 13.0 folds p *
       * width into every update's index in some instantiations (two more
       * integer instructions per update, docs/parallel-beam.md). */
      const entry *row = (const entry *)((const char *)cache + p * row_bytes);
      const float h0 = C::origin(k, tx, ty);
      const float step = C::step(k);
#pragma unroll
      for (int q = 0; q < nq; q++) C::add(row, fmaf((float)q, step, h0), acc[q]);
    }
  }
  const int i = bx + tx;
#pragma unroll
  for (int q = 0; q < nq; q++) {
    const int j = by + ty + q * ALU_ROWS;
    if (i < nx && j < ny)
#pragma unroll
      for (int k = 0; k < S; k++) {
        float *o = out + k * plane + (long long)j * nx + i;
        if (CONT) *o = acc[q][k];
        else *o += HALF ? acc[q][k] * inv : acc[q][k];
      }
  }
}

/* alu, alu2, alu2-h (pair_cache), nearest and oversampling (sample_cache);
 * CONT: the continued sum (alu_tile); MINB: the minimum of resident blocks
 * per SM the compiler must allow (its register budget: 0 = none, the
 * compiler's choice; ctr_tuning.fbp_occupancy); KONST: alu_tile's. */
template <class C, int CONT, int MINB = 0, int KONST = KONST_SHARED>
__global__ void __launch_bounds__(ALU_AREA * ALU_ROWS, MINB)
bp_alu(const float4 *__restrict__ ang, const double *__restrict__ t0d,
       const float *__restrict__ sino, long long sino_stride, int nbins, int na, int nx, int ny,
       int per, float *__restrict__ out, long long plane, const unsigned *__restrict__ amax) {
  alu_tile<C, CONT, KONST>(ang, t0d, sino, sino_stride, nbins, na, nx, ny, per, out, plane, blockIdx.x * ALU_AREA,
              blockIdx.y * ALU_AREA, amax);
}

/* ---- hybrid: texture and ALU blocks on the same SM (Chilingaryan et al. 2020, 7.1) --- */

#define HYB_UNITS 8          /* texture units (16 x 32 pixels) per 64 x 64 tile */
#define HYB_SM_SLOTS 1024    /* per-SM block counters (%smid < %nsmid <= this on current GPUs) */
#define HYB_ANG_TILE (ALU_AREA * ALU_ROWS) /* angles a texture unit stages at a time (one a thread) */

/* The ALU tiles' cache: alu2's pairs (linear) or one sample per bin
 * (nearest), as bp_alu's for the same interpolation. */
template <int S, int NEAREST> struct hybrid_cache { typedef pair_cache<S, 0> T; };
template <int S> struct hybrid_cache<S, 1> { typedef sample_cache<S, 1, 0> T; };

/* The work queue of one launch: 64-bit state, high word f = tiles claimed
 * from the front (whole 64 x 64 tiles, ALU path), low word b = texture units
 * claimed from the back; a tile goes to the ALU only while all its units
 * are free, a unit to the texture path while it is free, so every unit is
 * done exactly once whoever asks first. Returns the tile (tile != 0) or
 * unit index, -1 when nothing is left for that kind of claim. */
__device__ int hyb_claim(unsigned long long *q, int ntiles, int tile) {
  const unsigned long long total = (unsigned long long)ntiles * HYB_UNITS;
  unsigned long long old = *(volatile unsigned long long *)q, assumed;
  do {
    assumed = old;
    const unsigned long long f = assumed >> 32, b = assumed & 0xffffffffull;
    if (tile ? (f + 1) * HYB_UNITS + b > total : f * HYB_UNITS + b + 1 > total) return -1;
    old = atomicCAS(q, assumed, assumed + (tile ? (1ull << 32) : 1ull));
  } while (old != assumed);
  return tile ? (int)(assumed >> 32) : (int)(total - 1 - (assumed & 0xffffffffull));
}

/* Chilingaryan et al. 2020, 7.1: alu2 is limited by shared memory (and issue), the texture
 * kernels by the texture units, so blocks of both kinds on one SM could use
 * both. A block asks the SM it runs on (%smid) and a per-SM counter which
 * one it is; the first tex_per_sm of every blocks_per_sm blocks on an SM are
 * texture blocks, the rest ALU blocks (the paper's get_smid() + atomicAdd
 * scheme with a tunable ratio). Unlike the paper's, the grid is persistent (as
 * many blocks as fit at once) and blocks take work from a queue: on an H100
 * a 2048^2 slice is only 1024 tiles, ~2 waves of 528 block slots, and a
 * texture block needs several times an ALU block's time for a 64 x 64 tile,
 * so a fixed tile per block would leave every SM waiting for its slowest
 * texture tiles. ALU blocks take whole tiles from the front (alu2's maths:
 * alu_tile with hybrid_cache), texture blocks 16 x 32 units from the back
 * (tex2's maths, 2 pixels per thread, Z-order), and an ALU block that finds
 * no whole tile left helps with units, so the two meet without a tail longer
 * than one unit. Linear: the texture units carry tex2's 8-bit weights, the
 * rest is exact; nearest: exact. */
template <int S, int NEAREST>
__global__ void __launch_bounds__(ALU_AREA * ALU_ROWS)
bp_hybrid(cudaTextureObject_t tex, const float4 *__restrict__ ang, const double *__restrict__ t0d,
          const float *__restrict__ sino, long long sino_stride, int nbins,
          int na, int nx, int ny, int per, float *__restrict__ out, long long plane,
          unsigned long long *queue, unsigned *sm_count, int blocks_per_sm, int tex_per_sm,
          int tiles_x, int ntiles) {
  __shared__ int s_kind, s_idx;
  const int tid = threadIdx.y * ALU_AREA + threadIdx.x;
  int tex_role = 0; /* thread 0 only */
  if (tid == 0) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    const unsigned k = atomicAdd(&sm_count[smid % HYB_SM_SLOTS], 1u);
    tex_role = (int)(k % (unsigned)blocks_per_sm) < tex_per_sm;
  }
  for (;;) {
    __syncthreads(); /* everyone has read the last claim (and finished its work) */
    if (tid == 0) {
      int kind = -1, idx = -1;
      if (!tex_role) {
        idx = hyb_claim(queue, ntiles, 1);
        if (idx >= 0) kind = 0;
      }
      if (kind < 0) {
        idx = hyb_claim(queue, ntiles, 0);
        if (idx >= 0) kind = 1;
      }
      s_kind = kind;
      s_idx = idx;
    }
    __syncthreads();
    const int kind = s_kind, idx = s_idx;
    if (kind < 0) break;
    if (kind == 0) {
      const int bx = (idx % tiles_x) * ALU_AREA, by = (idx / tiles_x) * ALU_AREA;
      alu_tile<typename hybrid_cache<S, NEAREST>::T>(ang, t0d, sino, sino_stride, nbins, na, nx, ny, per, out,
                                                     plane, bx, by, NULL);
    } else {
      const int tile = idx / HYB_UNITS, sub = idx % HYB_UNITS;
      const int ux = (tile % tiles_x) * ALU_AREA + (sub & 3) * 16;
      const int uy = (tile / tiles_x) * ALU_AREA + (sub >> 2) * 32;
      if (ux < nx && uy < ny) {
        /* 8-bit Z-order over 16 x 16 (a warp: 8 x 4 pixels), rows y and y + 16 */
        const int mx = (tid & 1) | ((tid >> 1) & 2) | ((tid >> 2) & 4) | ((tid >> 3) & 8);
        const int my = ((tid >> 1) & 1) | ((tid >> 2) & 2) | ((tid >> 3) & 4) | ((tid >> 4) & 8);
        /* the angles' constants staged in shared memory (the ALU cache's
         * space: a block does one kind of work at a time), HYB_ANG_TILE at a
         * time: read from global memory every two fetches they would share
         * the texture pipe */
        extern __shared__ float4 hyb_shm[];
        for (int t0 = 0; t0 < na; t0 += HYB_ANG_TILE) {
          const int m = na - t0 < HYB_ANG_TILE ? na - t0 : HYB_ANG_TILE;
          __syncthreads();
          if (tid < m) hyb_shm[tid] = ang[t0 + tid];
          __syncthreads();
          tex_pixels<S, NEAREST, 16>(tex, hyb_shm, t0, t0 + m, ux + mx, uy + my, nx, ny, out, plane, S,
                                     1.0f);
        }
      }
    }
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
           "backprojection kernel '%s': expected auto, tex, tex2, tex-mp, alu, alu2, hybrid "
           "(exact for nearest; linear: alu, alu2 exact, the texture ones 8-bit weights), "
           "tex4h, alu2-h (approximate: half-precision data), alu-os or alu2-os (approximate: "
           "4x oversampled bins, nearest sample)", name);
}

/* f->d_ang and f->d_t0d for every angle of the geometry, once per fbp_gpu,
 * on stream s (waited for: the host arrays are freed here). */
static ctr_status upload_angles(fbp_gpu *f, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const int64_t n = f->g->p.nangles;
  if (f->d_ang) return CTR_OK;
  free(f->h_ang);
  f->h_ang = NULL;
  ctr__par_angle *pa = (ctr__par_angle *)malloc(sizeof *pa * (size_t)n);
  float4 *k = (float4 *)malloc(sizeof *k * (size_t)n);
  double *t0 = (double *)malloc(sizeof *t0 * (size_t)n);
  if (!pa || !k || !t0) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "angle constants");
    goto cleanup;
  }
  ctr__par_angles(f->g, 0, n, pa);
  for (int64_t i = 0; i < n; i++) {
    k[i] = make_float4((float)pa[i].c, (float)pa[i].s, (float)pa[i].t0, 0.0f);
    t0[i] = pa[i].t0;
  }
  GPU_GET(f->ctx, f->d_ang, sizeof *k * (size_t)n, "FBP angle constants");
  GPU_GET(f->ctx, f->d_t0d, sizeof *t0 * (size_t)n, "FBP angle origins");
  CU(cudaMemcpyAsync(f->d_ang, k, sizeof *k * (size_t)n, cudaMemcpyHostToDevice, s));
  CU(cudaMemcpyAsync(f->d_t0d, t0, sizeof *t0 * (size_t)n, cudaMemcpyHostToDevice, s));
  CU(cudaStreamSynchronize(s));
  f->h_ang = k; /* the texture kernels' parameters */
  k = NULL;
cleanup:
  free(pa);
  free(k);
  free(t0);
  return st;
}

/* The texture kernels' parameter: the constants of angles [a, a + n) of
 * f->h_ang, n <= TEX_PARAM_ANGLES. */
static tex_angles tex_params(const fbp_gpu *f, int64_t a, int n) {
  tex_angles t;
  memcpy(t.k, f->h_ang + a, sizeof(float4) * (size_t)n);
  return t;
}

/* Blocks of 256 threads for the grid-stride helpers over n values. */
static unsigned helper_blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

/* *f->d_amax = the bits of the largest |value| of slices [s0, s0 + count),
 * angles [a0, a0 + na) of the device sinograms (the half kernels' scale). */
static ctr_status data_amax(fbp_gpu *f, int64_t s0, int count, int64_t a0, int64_t na,
                            cudaStream_t stream) {
  ctr_status st = CTR_OK;
  const int64_t nb = f->g->p.nbins, nat = f->g->p.nangles;
  if (!f->d_amax) GPU_GET(f->ctx, f->d_amax, sizeof(unsigned), "FBP data maximum");
  CU(cudaMemsetAsync(f->d_amax, 0, sizeof(unsigned), stream));
  abs_max<<<helper_blocks(nb * na), 256, 0, stream>>>(f->d_sino + s0 * nb * nat + a0 * nb,
                                                       (long long)(nb * nat), count,
                                                       (long long)(nb * na), f->d_amax);
  CU_LAUNCHED("abs_max");
cleanup:
  return st;
}

/* Texels of the layered sinogram texture. */
enum { TEXK_FLOAT = 0, TEXK_FLOAT2 = 1, TEXK_HALF4 = 2 };

/* The texture of angles [a0, a0 + na) of slices [s0, s0 + count) of the
 * device sinograms: float (count 1), float2 (count 2: two slices
 * interleaved) or half4 (count 1 .. 4, scaled as half_scale says for
 * *f->d_amax, missing slices 0). */
static ctr_status make_texture(fbp_gpu *f, int kind, int64_t s0, int count, int64_t a0, int64_t na,
                               cudaStream_t stream) {
  ctr_status st = CTR_OK;
  const int64_t nb = f->g->p.nbins, nat = f->g->p.nangles;
  const float *src = f->d_sino + s0 * nb * nat + a0 * nb;
  cudaChannelFormatDesc desc = kind == TEXK_HALF4    ? cudaCreateChannelDescHalf4()
                               : kind == TEXK_FLOAT2 ? cudaCreateChannelDesc<float2>()
                                                     : cudaCreateChannelDesc<float>();
  const size_t layers = (size_t)MAX_TEX_LAYERS < (size_t)nat ? (size_t)MAX_TEX_LAYERS : (size_t)nat;
  if (f->tex) {
    CU(cudaStreamSynchronize(stream)); /* the previous launch may still read it */
    cudaDestroyTextureObject(f->tex);
  }
  f->tex = 0;
  if (f->arr && f->arr_kind != kind) {
    cudaFreeArray(f->arr);
    f->arr = NULL;
  }
  if (!f->arr)
    CU(ctr__gpu_retry(f->ctx, cudaSuccess, [&] {
      return cudaMalloc3DArray(&f->arr, &desc, make_cudaExtent((size_t)nb, 0, layers), cudaArrayLayered);
    }));
  f->arr_kind = kind;
  /* float2 and half4 texels are 8 bytes: one staging buffer serves both. */
  if (kind != TEXK_FLOAT && !f->d_stage)
    GPU_GET(f->ctx, f->d_stage, 8 * (size_t)nb * layers, "FBP texture staging");
  if (kind == TEXK_FLOAT2) {
    /* Interleave the two slices' values into float2 through a device buffer. */
    CU(cudaMemcpy2DAsync(f->d_stage, sizeof(float2), src, sizeof(float), sizeof(float),
                         (size_t)(nb * na), cudaMemcpyDeviceToDevice, stream));
    CU(cudaMemcpy2DAsync((char *)f->d_stage + sizeof(float), sizeof(float2), src + nb * nat,
                         sizeof(float), sizeof(float), (size_t)(nb * na), cudaMemcpyDeviceToDevice, stream));
  } else if (kind == TEXK_HALF4) {
    CTR_CHECK_GOTO(st, data_amax(f, s0, count, a0, na, stream));
    pack_half4<<<helper_blocks(nb * na), 256, 0, stream>>>(src, (long long)(nb * nat), count,
                                                            (long long)(nb * na), f->d_amax,
                                                            (ushort4 *)f->d_stage);
    CU_LAUNCHED("pack_half4");
  }
  {
    cudaMemcpy3DParms m;
    memset(&m, 0, sizeof m);
    const size_t esz = kind == TEXK_FLOAT ? sizeof(float) : 8;
    m.srcPtr = make_cudaPitchedPtr(kind == TEXK_FLOAT ? (void *)src : f->d_stage, (size_t)nb * esz, (size_t)nb, 1);
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
    td.readMode = cudaReadModeElementType; /* half texels are read (and filtered) as float */
    CU(cudaCreateTextureObject(&f->tex, &rd, &td, NULL));
  }
cleanup:
  return st;
}

/* Entries per projection of the ALU caches (`per` bins per caching lane)
 * for the pixel size: (ALU_AREA - 1) pixels x (|c| + |s|) <= that x sqrt 2
 * voxel, plus the floor, the interpolation neighbour and a margin. */
static int alu_per(const ctr_parallel_params *p) {
  const int width = (int)ceil((double)(ALU_AREA - 1) * p->voxel * 1.41422) + 4;
  return (width + ALU_LANES - 1) / ALU_LANES;
}

/* Where the ALU and hybrid kernels read and write for slices from s0 and
 * angles from a0, and their sample-cache width. */
struct alu_span {
  const float4 *ang; /* angle a0's constants */
  const double *t0d;
  const float *sino; /* row a0 of slice s0's sinogram */
  float *out;        /* slice s0 of the output */
  long long stride, plane; /* floats between slices: sinograms, output */
  int per;
};
static alu_span alu_span_of(const fbp_gpu *f, int64_t s0, int64_t a0) {
  const ctr_parallel_params *p = &f->g->p;
  const long long stride = (long long)(p->nbins * p->nangles), plane = (long long)(p->nx * p->ny);
  return {f->d_ang + a0, f->d_t0d + a0, f->d_sino + s0 * stride + a0 * p->nbins, f->d_out + s0 * plane, stride, plane, alu_per(p)};
}

/* A bp_alu instance (every one has this signature). */
typedef void (*alu_kernel_fn)(const float4 *, const double *, const float *, long long, int, int,
                              int, int, int, float *, long long, const unsigned *);

/* The occupancy targets of ctr_tuning.fbp_occupancy as bp_alu's minimum of
 * resident blocks: 50, 75 and 100 % of the 2048 threads an SM holds on
 * Hopper (and Ampere's A100), in blocks of ALU_AREA * ALU_ROWS threads
 * (Chilingaryan et al. 2020, Sect. 6.9 and Table 19: __launch_bounds__). */
#define ALU_SM_THREADS 2048
#define ALU_OCC_BLOCKS(pct) ((pct) * ALU_SM_THREADS / 100 / (ALU_AREA * ALU_ROWS))
static_assert(ALU_OCC_BLOCKS(50) == 4 && ALU_OCC_BLOCKS(75) == 6 && ALU_OCC_BLOCKS(100) == 8,
              "the occupancy targets in whole blocks");
static_assert(ALU_PROJ <= 32, "KONST_REGS: a warp's lanes hold a pass's projections");

/* The caches with occupancy and angle-cache variants: the exact kernels
 * (alu, alu2; linear and nearest), whose launches the variants only
 * change; the others, and the continued sum, run the default instance (a
 * modest count of template instances: 4 caches x 4 targets x 3 choices). */
template <class C> struct alu_tunable { static constexpr bool value = false; };
template <int S> struct alu_tunable<pair_cache<S, 0> > { static constexpr bool value = true; };
template <int S> struct alu_tunable<sample_cache<S, 1, 0> > { static constexpr bool value = true; };

template <class C, int MINB> static alu_kernel_fn alu_variant_konst(int konst) {
  return konst == KONST_REGS     ? bp_alu<C, 0, MINB, KONST_REGS>
         : konst == KONST_OFFSET ? bp_alu<C, 0, MINB, KONST_OFFSET>
                                 : bp_alu<C, 0, MINB, KONST_SHARED>;
}

/* The variant of ctx's tuning: *minb its minimum of blocks per SM. */
template <class C, int CONT> static alu_kernel_fn alu_variant(const ctr_context *ctx, int *minb) {
  const ctr_tuning *t = ctr__tuning(ctx);
  const int occ = t->fbp_occupancy > 0 ? t->fbp_occupancy : 0;
  const int konst = t->fbp_angle_cache > 1 ? t->fbp_angle_cache - 1 : KONST_SHARED;
  *minb = 0;
  if constexpr (CONT || !alu_tunable<C>::value) {
    return bp_alu<C, CONT>;
  } else {
    *minb = occ ? ALU_OCC_BLOCKS(occ) : 0;
    switch (occ) {
    case 50: return alu_variant_konst<C, ALU_OCC_BLOCKS(50)>(konst);
    case 75: return alu_variant_konst<C, ALU_OCC_BLOCKS(75)>(konst);
    case 100: return alu_variant_konst<C, ALU_OCC_BLOCKS(100)>(konst);
    default: return alu_variant_konst<C, 0>(konst);
    }
  }
}

/* ctr_tuning.fbp_carveout as cudaFuncAttributePreferredSharedMemoryCarveout:
 * 0 the driver's choice (cudaSharedmemCarveoutDefault), -1 0 % (the most
 * L1), 1 .. 100 that percentage of the unified memory as shared memory. */
static int alu_carveout(const ctr_context *ctx) {
  const int v = ctr__tuning(ctx)->fbp_carveout;
  return v == 0 ? (int)cudaSharedmemCarveoutDefault : v < 0 ? (int)cudaSharedmemCarveoutMaxL1 : v;
}

/* Kernel k's attributes for a launch with shm bytes of dynamic shared
 * memory: the shared-memory size it needs and ctx's carveout (set on every
 * launch: the attributes are the process's, and another context may have
 * set others). */
static ctr_status alu_attributes(const ctr_context *ctx, alu_kernel_fn k, size_t shm) {
  ctr_status st = CTR_OK;
  if (shm > 48 * 1024)
    CU(cudaFuncSetAttribute((const void *)k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
  CU(cudaFuncSetAttribute((const void *)k, cudaFuncAttributePreferredSharedMemoryCarveout,
                          alu_carveout(ctx)));
cleanup:
  return st;
}

/* bp_alu with cache C on the C::S slices of span w, n angles whose
 * constants are loaded (s0, a0: the span's first slice and angle, for the
 * half kernels' scale); the variant and carveout of f's tuning. */
template <class C, int CONT>
static ctr_status launch_alu_cache(fbp_gpu *f, const alu_span &w, int64_t s0, int64_t a0, int64_t n,
                                   cudaStream_t s) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &f->g->p;
  const size_t shm = alu_shm<C>(w.per);
  const dim3 grid((unsigned)((p->nx + ALU_AREA - 1) / ALU_AREA), (unsigned)((p->ny + ALU_AREA - 1) / ALU_AREA));
  const dim3 block(ALU_AREA, ALU_ROWS);
  int minb = 0;
  const alu_kernel_fn k = alu_variant<C, CONT>(f->ctx, &minb);
  if (shm > 200 * 1024)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the alu kernel caches %zu bytes per block for a pixel of %g "
             "bins; use the kernel tex (ctr_fbp_options.kernel) or a pixel of fewer bins", shm,
             p->voxel);
  if (C::HALF) CTR_CHECK_GOTO(st, data_amax(f, s0, C::S, a0, n, s));
  CTR_CHECK_GOTO(st, alu_attributes(f->ctx, k, shm));
  k<<<grid, block, shm, s>>>(w.ang, w.t0d, w.sino, w.stride, (int)p->nbins, (int)n, (int)p->nx,
                             (int)p->ny, w.per, w.out, w.plane, f->d_amax);
  CU_LAUNCHED("bp_alu");
cleanup:
  return st;
}

template <class C> struct cache_tag { typedef C type; };

/* The cache of f's ALU kernel (alu, alu2, alu-os, alu2-os, alu2-h) for
 * count slices (1 or 2): fn(cache_tag<C>()). Nearest runs the sample
 * cache with one sample per bin. */
template <class Fn> static ctr_status alu_dispatch(const fbp_gpu *f, int count, Fn &&fn) {
  const int pair = count == 2;
  const int os = f->kernel == K_ALU_OS || f->kernel == K_ALU2_OS;
  if (f->kernel == K_ALU2_H) {
    if (f->nearest && pair) return fn(cache_tag<sample_cache<2, 1, 1> >());
    if (f->nearest) return fn(cache_tag<sample_cache<1, 1, 1> >());
    if (pair) return fn(cache_tag<pair_cache<2, 1> >());
    return fn(cache_tag<pair_cache<1, 1> >());
  }
  if (os && pair) return fn(cache_tag<sample_cache<2, OVERSAMPLE, 0> >());
  if (os) return fn(cache_tag<sample_cache<1, OVERSAMPLE, 0> >());
  if (f->nearest && pair) return fn(cache_tag<sample_cache<2, 1, 0> >());
  if (f->nearest) return fn(cache_tag<sample_cache<1, 1, 0> >());
  if (pair) return fn(cache_tag<pair_cache<2, 0> >());
  return fn(cache_tag<pair_cache<1, 0> >());
}

/* The ALU kernels on the count slices (1 or 2) of span w, n angles whose
 * constants are loaded; CONT: the continued sum (not the half kernels). */
template <int CONT>
static ctr_status launch_alu_span(fbp_gpu *f, const alu_span &w, int64_t s0, int count, int64_t a0,
                                  int64_t n, cudaStream_t s) {
  if (CONT && f->kernel == K_ALU2_H)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the kernel alu2-h does not continue a sum");
  return alu_dispatch(f, count, [&](auto tag) {
    typedef typename decltype(tag)::type C;
    return launch_alu_cache<C, C::HALF ? 0 : CONT>(f, w, s0, a0, n, s);
  });
}

extern "C" ctr_status ctr__fbp_kernel_info(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                           const ctr_fbp_options *o, int count,
                                           ctr__fbp_kernel_attrs *info) {
  fbp_gpu f;
  memset(&f, 0, sizeof f);
  memset(info, 0, sizeof *info);
  f.ctx = ctx;
  f.g = g;
  f.nearest = o && o->interp == CTR_FBP_NEAREST;
  CTR_CHECK(ctr__fbp_parse_kernel(o ? o->kernel : NULL, f.nearest, &f.kernel));
  if (f.kernel != K_ALU && f.kernel != K_ALU2 && f.kernel != K_ALU_OS && f.kernel != K_ALU2_OS &&
      f.kernel != K_ALU2_H)
    CTR_FAIL(CTR_E_UNSUPPORTED, "kernel information: the ALU kernels only (alu, alu2, alu-os, "
             "alu2-os, alu2-h), not %s", kernel_names[f.kernel]);
  if (count < 1 || count > ctr__fbp_kernel_slices(f.kernel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "kernel information: count is %d, expected 1 .. %d for %s",
             count, ctr__fbp_kernel_slices(f.kernel), kernel_names[f.kernel]);
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  return alu_dispatch(&f, count, [&](auto tag) {
    typedef typename decltype(tag)::type C;
    ctr_status st2 = CTR_OK;
    int dev = 0;
    cudaFuncAttributes a;
    memset(&a, 0, sizeof a);
    const size_t shm = alu_shm<C>(alu_per(&g->p));
    const alu_kernel_fn k = alu_variant<C, 0>(ctx, &info->min_blocks);
    CTR_CHECK(alu_attributes(ctx, k, shm));
    if (cudaFuncGetAttributes(&a, (const void *)k) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info->blocks_per_sm, (const void *)k,
                                                      ALU_AREA * ALU_ROWS, shm) != cudaSuccess ||
        cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&info->max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor,
                               dev) != cudaSuccess)
      st2 = ctr__error_set(CTR_E_DEVICE, "kernel information: the CUDA runtime's attributes");
    info->registers = a.numRegs;
    info->local_bytes = (int)a.localSizeBytes;
    info->shared_bytes = (int)(a.sharedSizeBytes + shm);
    info->threads = ALU_AREA * ALU_ROWS;
    return st2;
  });
}

/* The ALU kernels on slices [s0, s0 + count) of f, angles [a0, a0 + n). */
static ctr_status launch_alu(fbp_gpu *f, int64_t s0, int count, int64_t a0, int64_t n, cudaStream_t s) {
  return launch_alu_span<0>(f, alu_span_of(f, s0, a0), s0, count, a0, n, s);
}

/* Texture blocks per SM of the hybrid kernel, 0 .. blocks_per_sm:
 * ctr_tuning.fbp_hybrid_tex (0: HYBRID_TEX_DEFAULT, -1: none; larger than
 * blocks_per_sm: all). */
static int hybrid_tex_blocks(const fbp_gpu *f, int blocks_per_sm) {
  const int v = ctr__tuning(f->ctx)->fbp_hybrid_tex;
  const int t = v == 0 ? HYBRID_TEX_DEFAULT : v < 0 ? 0 : v;
  return t > blocks_per_sm ? blocks_per_sm : t;
}

/* The hybrid kernel (f->tex made for the same slices and angles) on a
 * persistent grid: as many blocks as fit on the GPU at once. */
template <int S, int NEAREST>
static ctr_status launch_hybrid(fbp_gpu *f, int64_t s0, int64_t a0, int64_t n, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &f->g->p;
  const size_t cache = alu_shm<typename hybrid_cache<S, NEAREST>::T>(alu_per(p));
  const size_t shm = cache > sizeof(float4) * HYB_ANG_TILE ? cache : sizeof(float4) * HYB_ANG_TILE;
  const int64_t tiles_x = (p->nx + ALU_AREA - 1) / ALU_AREA, tiles_y = (p->ny + ALU_AREA - 1) / ALU_AREA;
  const size_t work_bytes = sizeof(unsigned long long) + sizeof(unsigned) * HYB_SM_SLOTS;
  int dev = 0, nsm = 0, bps = 0;
  if (shm > 200 * 1024)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the hybrid kernel caches %zu bytes per block for a pixel of %g "
             "bins; use the kernel tex (ctr_fbp_options.kernel) or a pixel of fewer bins", shm,
             p->voxel);
  if (tiles_x * tiles_y * HYB_UNITS >= ((int64_t)1 << 31))
    CTR_FAIL(CTR_E_UNSUPPORTED, "the hybrid kernel's work queue holds < 2^31 units: %lld x %lld "
             "pixels are too many; use the kernel alu2 (ctr_fbp_options.kernel)", (long long)p->nx,
             (long long)p->ny);
  if (!f->d_hyb) GPU_GET(f->ctx, f->d_hyb, work_bytes, "FBP hybrid kernel's work queue");
  CU(cudaGetDevice(&dev));
  CU(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
  if (shm > 48 * 1024)
    CU(cudaFuncSetAttribute(bp_hybrid<S, NEAREST>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
  CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, bp_hybrid<S, NEAREST>, ALU_AREA * ALU_ROWS, shm));
  if (bps < 1 || nsm < 1) CTR_FAIL_GOTO(st, CTR_E_DEVICE, "the hybrid kernel fits no block on an SM");
  {
    const alu_span w = alu_span_of(f, s0, a0);
    const dim3 block(ALU_AREA, ALU_ROWS);
    unsigned long long *queue = (unsigned long long *)f->d_hyb;
    unsigned *sm_count = (unsigned *)(queue + 1);
    CU(cudaMemsetAsync(f->d_hyb, 0, work_bytes, s));
    bp_hybrid<S, NEAREST><<<(unsigned)(nsm * bps), block, shm, s>>>(
        f->tex, w.ang, w.t0d, w.sino, w.stride, (int)p->nbins, (int)n, (int)p->nx, (int)p->ny, w.per,
        w.out, w.plane, queue, sm_count, bps, hybrid_tex_blocks(f, bps), (int)tiles_x, (int)(tiles_x * tiles_y));
    CU_LAUNCHED("bp_hybrid");
  }
cleanup:
  return st;
}

/* Angles per texture-kernel launch. Every block walks all the angles of a
 * launch, so a whole launch streams the sinogram through L2 once per wave of
 * blocks; at 2048 angles x 2048 bins (16 MB per slice) the profile showed
 * the L2 missing half the time and the texture pipe waiting on DRAM, unlike
 * 1024^2 (bench/NOTES.md). Launches over chunks of about 4 MB of
 * sinogram rows keep the rows in L2 (ctr_tuning.fbp_tex_chunk = N: N angles,
 * for experiments; -1: no chunks). */
static int tex_chunk(const fbp_gpu *f, int64_t nbins, int texel_bytes, int n) {
  const int e = ctr__tuning(f->ctx)->fbp_tex_chunk;
  long c = e > 0 ? e : e < 0 ? 0 : (long)((4L << 20) / ((long)nbins * texel_bytes));
  if (c <= 0 || c > n) c = n;
  if (c > TEX_PARAM_ANGLES) c = TEX_PARAM_ANGLES; /* the constants a launch's parameter holds */
  return c < 32 && n > 32 ? 32 : (int)c;
}

ctr_status ctr__fbp_run_slices(fbp_gpu *f, int64_t s0, int count, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &f->g->p;
  const int64_t na = p->nangles, plane = p->nx * p->ny;
  float *out = f->d_out + s0 * plane;
  const int pair = count == 2, nearest = f->nearest;
  if (count < 1 || count > ctr__fbp_kernel_slices(f->kernel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "backprojection kernel %s: %d slices per launch (1 .. %d)",
             kernel_names[f->kernel], count, ctr__fbp_kernel_slices(f->kernel));
  CTR_CHECK(upload_angles(f, s));
  /* Launches over at most MAX_TEX_LAYERS angles: the texture kernels' layered
   * textures hold that many (the ALU kernels follow the same chunks). */
  for (int64_t a0 = 0; a0 < na; a0 += MAX_TEX_LAYERS) {
    const int64_t n = na - a0 < MAX_TEX_LAYERS ? na - a0 : MAX_TEX_LAYERS;
    const dim3 grid16((unsigned)((p->nx + 15) / 16), (unsigned)((p->ny + 15) / 16));
    switch (f->kernel) {
    case K_ALU: case K_ALU2: case K_ALU_OS: case K_ALU2_OS: case K_ALU2_H:
      CTR_CHECK(launch_alu(f, s0, count, a0, n, s));
      break;
    case K_HYBRID:
      CTR_CHECK(make_texture(f, pair ? TEXK_FLOAT2 : TEXK_FLOAT, s0, count, a0, n, s));
      if (pair && nearest) CTR_CHECK((launch_hybrid<2, 1>(f, s0, a0, n, s)));
      else if (pair) CTR_CHECK((launch_hybrid<2, 0>(f, s0, a0, n, s)));
      else if (nearest) CTR_CHECK((launch_hybrid<1, 1>(f, s0, a0, n, s)));
      else CTR_CHECK((launch_hybrid<1, 0>(f, s0, a0, n, s)));
      break;
    case K_TEX_MP: {
      CTR_CHECK(make_texture(f, TEXK_FLOAT, s0, 1, a0, n, s));
      const int chunk = tex_chunk(f, p->nbins, 4, (int)n);
      for (int ab = 0; ab < (int)n; ab += chunk) {
        const int ae = ab + chunk < (int)n ? ab + chunk : (int)n;
        const tex_angles ta = tex_params(f, a0 + ab, ae - ab);
        if (nearest) bp_tex_mp<1><<<grid16, 256, 0, s>>>(f->tex, ta, ab, ae, (int)p->nx, (int)p->ny, out);
        else bp_tex_mp<0><<<grid16, 256, 0, s>>>(f->tex, ta, ab, ae, (int)p->nx, (int)p->ny, out);
        CU_LAUNCHED("bp_tex_mp");
      }
    } break;
    default: { /* tex, tex2, tex4h */
      const int ns = f->kernel == K_TEX4H ? 4 : pair ? 2 : 1;
      const dim3 block(16, 8);
      CTR_CHECK(make_texture(f, ns == 4 ? TEXK_HALF4 : ns == 2 ? TEXK_FLOAT2 : TEXK_FLOAT, s0, count, a0, n, s));
      const int chunk = tex_chunk(f, p->nbins, ns == 1 ? 4 : 8, (int)n);
      for (int ab = 0; ab < (int)n; ab += chunk) {
        const int ae = ab + chunk < (int)n ? ab + chunk : (int)n;
        const tex_angles ta = tex_params(f, a0 + ab, ae - ab);
#define CTR__TEX_LAUNCH(NS, N)                                                                    \
  bp_tex<NS, N><<<grid16, block, 0, s>>>(f->tex, ta, ab, ae, (int)p->nx, (int)p->ny, out, plane,     \
                                         count, f->d_amax)
        if (ns == 4 && nearest) CTR__TEX_LAUNCH(4, 1);
        else if (ns == 4) CTR__TEX_LAUNCH(4, 0);
        else if (ns == 2 && nearest) CTR__TEX_LAUNCH(2, 1);
        else if (ns == 2) CTR__TEX_LAUNCH(2, 0);
        else if (nearest) CTR__TEX_LAUNCH(1, 1);
        else CTR__TEX_LAUNCH(1, 0);
#undef CTR__TEX_LAUNCH
        CU_LAUNCHED("bp_tex");
      }
    } break;
    }
  }
cleanup:
  return st;
}

int ctr__fbp_kernel_continues(fbp_kernel k) {
  return k == K_ALU || k == K_ALU2 || k == K_ALU_OS || k == K_ALU2_OS;
}

ctr_status ctr__fbp_run_continue(fbp_gpu *f, const float *sino, long long sino_stride, int count,
                                 int64_t a0, int64_t n, float *out, cudaStream_t s) {
  const ctr_parallel_params *p = &f->g->p;
  if (!ctr__fbp_kernel_continues(f->kernel))
    CTR_FAIL(CTR_E_UNSUPPORTED, "the backprojection kernel %s does not continue a sum (alu, alu2, "
             "alu-os and alu2-os do)", kernel_names[f->kernel]);
  if (count < 1 || count > ctr__fbp_kernel_slices(f->kernel) || n < 1 || a0 < 0 ||
      a0 + n > p->nangles || a0 / MAX_TEX_LAYERS != (a0 + n - 1) / MAX_TEX_LAYERS)
    CTR_FAIL(CTR_E_INTERNAL, "a continued backprojection of %d slices, angles [%lld, %lld): not "
             "within one launch group of %d angles", count, (long long)a0, (long long)(a0 + n),
             MAX_TEX_LAYERS);
  CTR_CHECK(upload_angles(f, s));
  const alu_span w = {f->d_ang + a0, f->d_t0d + a0, sino, out, sino_stride,
                      (long long)(p->nx * p->ny), alu_per(p)};
  return launch_alu_span<1>(f, w, 0, count, a0, n, s);
}

ctr_status ctr__fbp_run_kernel(fbp_gpu *f, int64_t s0, int pair, cudaStream_t s) {
  return ctr__fbp_run_slices(f, s0, pair ? 2 : 1, s);
}

/* Median of three timed runs of f's kernel on slices [0, count), per slice. */
static ctr_status time_kernel(fbp_gpu *f, int count, cudaStream_t s, double *ms_per_slice) {
  ctr_status st = CTR_OK;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float t[3];
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  CTR_CHECK_GOTO(st, ctr__fbp_run_slices(f, 0, count, s)); /* warm-up */
  for (int r = 0; r < 3; r++) {
    CU(cudaEventRecord(e0, s));
    CTR_CHECK_GOTO(st, ctr__fbp_run_slices(f, 0, count, s));
    CU(cudaEventRecord(e1, s));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&t[r], e0, e1));
  }
  {
    const float a = fminf(t[0], t[1]), b = fmaxf(t[0], t[1]);
    const float med = t[2] < a ? a : t[2] > b ? b : t[2];
    *ms_per_slice = med / (double)count;
  }
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  return st;
}

/* A candidate of the automatic choice timed on f (ctr__fbp_tune_choose). */
typedef struct tune_run {
  fbp_gpu *f;
  const fbp_kernel *cand;
  cudaStream_t s;
} tune_run;

static ctr_status time_candidate(void *user, int i, double *ms) {
  tune_run *t = (tune_run *)user;
  t->f->kernel = t->cand[i];
  return time_kernel(t->f, ctr__fbp_kernel_slices(t->cand[i]), t->s, ms);
}

ctr_status ctr__fbp_autotune(fbp_gpu *f, int64_t nslices, cudaStream_t s) {
  if (!f->auto_kernel) return CTR_OK;
  f->auto_kernel = 0;
  if (ctr__tuning(f->ctx)->tune < 0) return CTR_OK; /* the static default */
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
  /* The exact candidates: software interpolation, and point-sampled
   * textures for nearest (hardware linear weights are 8-bit: not exact, so
   * the texture kernels and the hybrid, whose texture tiles have them, are
   * candidates for nearest only). Never the approximate kernels: alu-os,
   * alu2-os (positions quantised to 1/4 bin), tex4h, alu2-h (half data).
   * Kernels of more slices than the run has are left out. */
  const fbp_kernel lin[2] = {K_ALU, K_ALU2},
                   near[6] = {K_ALU, K_ALU2, K_TEX, K_TEX2, K_TEX_MP, K_HYBRID};
  const fbp_kernel *all = f->nearest ? near : lin;
  const int nall = f->nearest ? 6 : 2;
  fbp_kernel cand[6];
  const char *names[6];
  int n = 0;
  for (int i = 0; i < nall; i++)
    if (ctr__fbp_kernel_slices(all[i]) <= nslices) cand[n] = all[i], names[n++] = kernel_names[all[i]];
  const fbp_kernel fallback = f->kernel;
  tune_run run = {f, cand, s};
  int chosen = -1;
  CTR_CHECK(ctr__fbp_tune_choose(f->ctx, &key, names, n, time_candidate, &run, &chosen));
  f->kernel = chosen >= 0 ? cand[chosen] : fallback;
  return CTR_OK;
}

void ctr__fbp_gpu_free(fbp_gpu *f) {
  cudaDeviceSynchronize(); /* as cudaFree did: the buffers go back unused */
  if (f->tex) cudaDestroyTextureObject(f->tex);
  if (f->arr) cudaFreeArray(f->arr);
  const int64_t nb = f->g ? f->g->p.nbins : 0, na = f->g ? f->g->p.nangles : 0;
  const int64_t layers = MAX_TEX_LAYERS < na ? MAX_TEX_LAYERS : na;
  GPU_PUT(f->ctx, f->d_sino, f->sino_bytes);
  GPU_PUT(f->ctx, f->d_out, f->out_bytes);
  GPU_PUT(f->ctx, f->d_w, sizeof(float) * (size_t)na);
  GPU_PUT(f->ctx, f->d_stage, 8 * (size_t)nb * (size_t)layers);
  GPU_PUT(f->ctx, f->d_amax, sizeof(unsigned));
  GPU_PUT(f->ctx, f->d_hyb, sizeof(unsigned long long) + sizeof(unsigned) * HYB_SM_SLOTS);
  GPU_PUT(f->ctx, f->d_ang, sizeof(float4) * (size_t)na);
  free(f->h_ang);
  GPU_PUT(f->ctx, f->d_t0d, sizeof(double) * (size_t)na);
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
      const int group = ctr__fbp_kernel_slices(f->kernel);
      const int count = nslices - s0 < group ? (int)(nslices - s0) : group;
      CTR_CHECK_GOTO(st, ctr__fbp_run_slices(f, s0, count, 0));
      s0 += count;
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

/* f's buffers for chunks of up to `nslices` slices on the context's first
 * GPU, the angular weights uploaded. */
static ctr_status fbp_gpu_setup(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                const ctr_fbp_options *o, int64_t nslices, fbp_gpu *f) {
  ctr_status st = CTR_OK;
  const ctr_parallel_params *p = &g->p;
  const int64_t nb = p->nbins, na = p->nangles, plane = p->nx * p->ny;
  float *w = NULL;
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  f->g = g;
  f->nearest = o && o->interp == CTR_FBP_NEAREST;
  CTR_CHECK(ctr__fbp_parse_kernel(o ? o->kernel : NULL, f->nearest, &f->kernel));
  f->auto_kernel = !o || !o->kernel || !*o->kernel || !strcmp(o->kernel, "auto");
  const int dev = ctr__context_gpu(ctx, 0);
  CU(cudaSetDevice(dev));
  f->sino_bytes = sizeof(float) * (size_t)(nb * na * nslices);
  f->out_bytes = sizeof(float) * (size_t)(plane * nslices);
  GPU_GET(ctx, f->d_sino, f->sino_bytes, "FBP sinograms");
  GPU_GET(ctx, f->d_out, f->out_bytes, "FBP slices");
  GPU_GET(ctx, f->d_w, sizeof(float) * (size_t)na, "FBP angular weights");
  w = (float *)malloc(sizeof(float) * (size_t)na);
  if (!w) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "angle weights");
  for (int64_t a = 0; a < na; a++) w[a] = (float)g->weight[a];
  CU(cudaMemcpy(f->d_w, w, sizeof(float) * (size_t)na, cudaMemcpyHostToDevice));
cleanup:
  free(w);
  if (st != CTR_OK) ctr__fbp_gpu_free(f);
  return st;
}

/* n slices of filtered sinograms (host or GPU memory) into f->d_sino,
 * weighted. */
static ctr_status fbp_gpu_load(fbp_gpu *f, const float *sino, int64_t n) {
  ctr_status st = CTR_OK;
  const int64_t nb = f->g->p.nbins, na = f->g->p.nangles;
  CU(cudaMemcpy(f->d_sino, sino, sizeof(float) * (size_t)(nb * na * n), cudaMemcpyDefault));
  {
    const dim3 grid((unsigned)((nb + 255) / 256), (unsigned)na, (unsigned)n);
    weight_rows<<<grid, 256>>>(f->d_sino, (int)nb, (int)na, (int)n, f->d_w);
    CU_LAUNCHED("weight_rows");
  }
cleanup:
  return st;
}

extern "C" ctr_status ctr__fbp_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                       const ctr_fbp_options *o, int64_t nslices,
                                       const float *sino, float *slices, int64_t *bad) {
  fbp_gpu f;
  unsigned long long *d_bad = NULL, h_bad = 0;
  const int64_t per_sino = g->p.nbins * g->p.nangles, plane = g->p.nx * g->p.ny;
  /* chunks of slices within ctr_fbp_options.gpu_budget (given: refused when
   * one slice does not fit) or the detected budget: all at once when they
   * fit, which is the same work as without a budget (fbp_gpu_memory.c) */
  const uint64_t given = o ? o->gpu_budget : 0;
  uint64_t budget = given;
  int64_t S = nslices;
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  if (!budget) CTR_CHECK(ctr__gpu_budget_detect(ctx, ctr__context_gpu(ctx, 0), &budget));
  CTR_CHECK(ctr__fbp_bp_gpu_chunk(&g->p, nslices, budget,
                                  given ? "ctr_fbp_options.gpu_budget" : NULL, &S));
  CTR_CHECK(fbp_gpu_setup(ctx, g, o, S, &f));
  ctr_status st = CTR_OK;
  if (bad) { /* the data policy on the device, counted over the chunks */
    GPU_GET(ctx, d_bad, sizeof h_bad, "FBP value counter");
    CU(cudaMemset(d_bad, 0, sizeof h_bad));
  }
  for (int64_t s0 = 0; s0 < nslices; s0 += S) {
    const int64_t n = nslices - s0 < S ? nslices - s0 : S;
    CTR_CHECK_GOTO(st, fbp_gpu_load(&f, sino + s0 * per_sino, n));
    CTR_CHECK_GOTO(st, fbp_gpu_run(&f, n, 1, NULL));
    if (bad) CTR_CHECK_GOTO(st, ctr__gpu_sanitize(f.d_out, (long long)(plane * n), d_bad, 0));
    /* slices: host or GPU memory */
    CU(cudaMemcpy(slices + s0 * plane, f.d_out, sizeof(float) * (size_t)(plane * n),
                  cudaMemcpyDefault));
  }
  if (bad) {
    CU(cudaMemcpy(&h_bad, d_bad, sizeof h_bad, cudaMemcpyDeviceToHost));
    *bad = (int64_t)h_bad;
  }
cleanup:
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_bad, sizeof h_bad);
  ctr__fbp_gpu_free(&f);
  return st;
}

extern "C" ctr_status ctr__fbp_bench_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                          const ctr_fbp_options *o, int64_t nslices,
                                          const float *sino, float *slices, int repeats,
                                          double *median_ms) {
  fbp_gpu f;
  CTR_CHECK(fbp_gpu_setup(ctx, g, o, nslices, &f));
  ctr_status st = fbp_gpu_load(&f, sino, nslices);
  if (st == CTR_OK) st = fbp_gpu_run(&f, nslices, 1, NULL); /* warm-up */
  if (st == CTR_OK) st = fbp_gpu_run(&f, nslices, repeats, median_ms);
  if (st == CTR_OK && slices &&
      cudaMemcpy(slices, f.d_out, sizeof(float) * (size_t)(g->p.nx * g->p.ny * nslices),
                 cudaMemcpyDeviceToHost) != cudaSuccess)
    st = ctr__error_set(CTR_E_DEVICE, "copying the slices to the host");
  ctr__fbp_gpu_free(&f);
  return st;
}
