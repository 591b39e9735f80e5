/* The shared-memory ("ALU") cone-beam backprojection kernel (bp_alu.cuh).
 *
 * A block owns a tile of 16 x 16 columns and Z' slices (256 threads, one
 * column each, warps of 8 x 4 columns). Views go in stages of ALU_STAGE:
 *  1. warp 0 projects the tile's 8 corners for each view of the stage
 *     (lanes 8 s .. 8 s + 7: view s) and reduces them to the detector
 *     rectangle the tile sees, one pixel of margin on each side (the image
 *     of the box under a projective map with c > 0 is the convex hull of its
 *     corners' images; the margin covers the float rounding of the corners'
 *     and the voxels' positions);
 *  2. the block copies each rectangle into shared memory as float2 pairs
 *     (q[x], q[x + 1] - q[x]) (zero outside the detector: what the padded
 *     global layout and the exact kernel's clamping give; the layout's zero
 *     border lets pairs next to the detector read it unguarded), rows
 *     ALU_PITCH pairs apart;
 *  3. each thread interpolates its column's Z' samples from the cache:
 *     per update
 *        v relative to the cache: one FMA (linear in the slice)         1
 *        floor and fraction: add 2^23 rounding toward zero, subtract    3
 *        the pair's index from the sum's bit pattern (one IMAD)         1
 *        two 8-byte shared loads (upper and lower row)                  2
 *        two FMAs along u, the difference and an FMA along v            4
 *        weight and accumulate (one FMA)                                1
 *     12 instructions and 16 bytes of shared memory (4 wavefronts a warp);
 *     the column's u, weight and fraction along u are computed once a view.
 * A view whose rectangle does not fit (ALU_COLS x ALU_ROWS pairs: extreme
 * magnification) is read by the whole block from global memory, as the
 * exact kernel reads it; so is a column whose run strays outside the
 * rectangle (it cannot beyond rounding; the check keeps shared reads inside
 * the cache whatever the geometry). Positions are the exact kernel's fp32
 * positions (v by one FMA a slice from the column's first), the bilinear
 * blend its blend: the results agree with the exact kernel's to float
 * rounding (test_gpu_fdk). */
#include "conebeam/cuda/bp_alu.cuh"

#include "core/projmath.h"

#define ALU_THREADS (CTR__BPA_TILE * CTR__BPA_TILE)
#define ALU_WARPS (ALU_THREADS / 32)
#define ALU_STAGE 2  /* views per fill of the cache */
#define ALU_ROWS 64  /* cached rows per view, at most */
#define ALU_COLS 64  /* cached pairs per row, at most */
#define ALU_PITCH 65 /* pairs between cached rows: odd, so that rows fall in different banks */
#define ALU_VIEW_PAIRS (ALU_ROWS * ALU_PITCH)
#define ALU_SHARED_BYTES (ALU_STAGE * ALU_VIEW_PAIRS * sizeof(float2))
#define ALU_MAGIC 8388608.0f        /* 2^23: x + 2^23 rounded toward zero is 2^23 + floor(x) */
#define ALU_MAGIC_BITS 0x4B000000u  /* its bit pattern: bits(that sum) = ALU_MAGIC_BITS + floor(x) */

/* A view's cached rectangle: pairs of columns [cu0, cu0 + w), rows
 * [cv0, cv0 + h); h = 0: not cached (the block reads global memory). */
struct alu_foot {
  int cu0, cv0, w, h;
};

/* Lane q (0..7) of a group of 8 holds corner q's position (u, v), good
 * whether it is finite and in front of the source; lane 0 returns the
 * rectangle of the group's corners. */
static __device__ __forceinline__ alu_foot corner_rect(float u, float v, bool good) {
  float u0 = u, u1 = u, v0 = v, v1 = v;
  int all = good;
#pragma unroll
  for (int o = 1; o < 8; o <<= 1) {
    u0 = fminf(u0, __shfl_xor_sync(0xffffffffu, u0, o));
    u1 = fmaxf(u1, __shfl_xor_sync(0xffffffffu, u1, o));
    v0 = fminf(v0, __shfl_xor_sync(0xffffffffu, v0, o));
    v1 = fmaxf(v1, __shfl_xor_sync(0xffffffffu, v1, o));
    all &= __shfl_xor_sync(0xffffffffu, all, o);
  }
  alu_foot f = {0, 0, 0, 0};
  if (!all) return f;
  const int fu0 = (int)floorf(u0), fu1 = (int)floorf(u1);
  const int fv0 = (int)floorf(v0), fv1 = (int)floorf(v1);
  f.cu0 = fu0 - 1; /* pairs floor(u) in [fu0, fu1], a pair of margin each side */
  f.w = fu1 - fu0 + 3;
  f.cv0 = fv0 - 1; /* rows floor(v), floor(v) + 1 in [fv0, fv1 + 1], a row of margin */
  f.h = fv1 - fv0 + 4;
  if (f.w > ALU_COLS || f.h > ALU_ROWS) f.h = 0;
  return f;
}

template <int ZP>
__global__ void __launch_bounds__(ALU_THREADS, 3)
    bp_alu_kernel(const ctr__bp_args a, const __grid_constant__ ctr__bp_views bv) {
  extern __shared__ float2 cache[]; /* [ALU_STAGE][ALU_ROWS][ALU_PITCH] */
  __shared__ alu_foot foot[ALU_STAGE];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int i0 = blockIdx.x * CTR__BPA_TILE, j0 = blockIdx.y * CTR__BPA_TILE;
  const int k0 = a.k_begin + blockIdx.z * ZP;
  /* warps of 8 x 4 columns: a half warp's 8-byte loads span few banks */
  const int i = i0 + (warp & 1) * 8 + (lane & 7);
  const int j = j0 + (warp >> 1) * 4 + (lane >> 3);
  const bool live = i < a.nx && j < a.ny;
  const float fi = (float)i, fj = (float)j, fk = (float)k0;
  float acc[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) acc[k] = 0.0f;
  for (int n0 = 0; n0 < bv.n; n0 += ALU_STAGE) {
    const int ns = min(ALU_STAGE, bv.n - n0);
    if (warp == 0) {
      const int s = lane >> 3, q = lane & 7;
      float u = 0.0f, v = 0.0f;
      bool good = false;
      if (s < ns) {
        /* the tile's corners: its live columns, the block's whole run of slices */
        const float ci1 = (float)min(i0 + CTR__BPA_TILE - 1, a.nx - 1);
        const float cj1 = (float)min(j0 + CTR__BPA_TILE - 1, a.ny - 1);
        const float ck1 = (float)(k0 + ZP - 1);
        const float *m = bv.m[n0 + s];
        const float x = q & 1 ? ci1 : (float)i0, y = q & 2 ? cj1 : (float)j0, z = q & 4 ? ck1 : fk;
        const float pa = fmaf(z, m[3], fmaf(y, m[2], fmaf(x, m[1], m[0])));
        const float pb = fmaf(z, m[7], fmaf(y, m[6], fmaf(x, m[5], m[4])));
        const float pc = fmaf(z, m[11], fmaf(y, m[10], fmaf(x, m[9], m[8])));
        u = pa / pc;
        v = pb / pc;
        good = pc > 0.0f && fabsf(u) < 1e6f && fabsf(v) < 1e6f; /* false for NaN */
      }
      const alu_foot f = corner_rect(u, v, good); /* every lane takes part */
      if (q == 0 && s < ns) foot[s] = f;
    }
    __syncthreads();
    /* the fill: warp w copies rows w, w + 8, ...; lanes along the row */
    for (int s = 0; s < ns; s++) {
      const alu_foot f = foot[s];
      const float *view = (const float *)a.pad + (long long)(bv.first + n0 + s) * a.view_stride;
      float2 *c = cache + s * ALU_VIEW_PAIRS;
      for (int r = warp; r < f.h; r += ALU_WARPS) {
        /* The padded layout holds zeros in row -1, rows nv and nv + 1, column -1
         * and columns nu and nu + 1 (CTR_PAD_LO, CTR_PAD_HI): pairs at columns
         * [-1, nu] of rows [-1, nv] read it unguarded; the rest are zero. */
        const int gy = f.cv0 + r;
        const bool row_in = (unsigned)(gy + 1) <= (unsigned)(a.nv + 1);
        const float *row = view + (long long)gy * a.pitch;
        for (int x = lane; x < f.w; x += 32) {
          const int gx = f.cu0 + x;
          const bool in = row_in && (unsigned)(gx + 1) <= (unsigned)(a.nu + 1);
          const float q0 = in ? __ldg(row + gx) : 0.0f, q1 = in ? __ldg(row + gx + 1) : 0.0f;
          c[r * ALU_PITCH + x] = make_float2(q0, q1 - q0);
        }
      }
    }
    __syncthreads();
    if (live)
      for (int s = 0; s < ns; s++) {
        const int n = n0 + s;
        const float *m = bv.m[n];
        const alu_foot f = foot[s];
        const float ws = a.wscale ? __ldg(a.wscale + bv.first + n) : 1.0f;
        /* the exact kernel's column constants (bp_kernel, CIRC) */
        const float axy = fmaf(fj, m[2], fmaf(fi, m[1], m[0]));
        const float bxy = fmaf(fj, m[6], fmaf(fi, m[5], m[4]));
        const float cxy = fmaf(fj, m[10], fmaf(fi, m[9], m[8]));
        const float r = __frcp_rn(cxy);
        const float u = axy * r, w = ws * r * r;
        const float dy = m[7] * r;
        /* u and v relative to the cached rectangle; v at the run's ends */
        const float ur = u - (float)f.cu0;
        const float yr0 = fmaf(fk, m[7], bxy) * r - (float)f.cv0;
        const float yr1 = fmaf((float)(ZP - 1), dy, yr0);
        const bool cached = f.h > 0 && ur >= 0.0f && ur < (float)f.w &&
                            fminf(yr0, yr1) >= 0.0f && fmaxf(yr0, yr1) < (float)(f.h - 1);
        if (cached) {
          const float tu = __fadd_rz(ur, ALU_MAGIC);
          const float fu = ur - (tu - ALU_MAGIC);
          /* bits(ty) * ALU_PITCH + base = row * ALU_PITCH + pair (wrapping) */
          const unsigned base =
              (__float_as_uint(tu) - ALU_MAGIC_BITS) - ALU_MAGIC_BITS * (unsigned)ALU_PITCH;
          const float2 *cs = cache + s * ALU_VIEW_PAIRS;
#pragma unroll
          for (int k = 0; k < ZP; k++) {
            const float yr = fmaf((float)k, dy, yr0);
            const float ty = __fadd_rz(yr, ALU_MAGIC);
            const float fv = yr - (ty - ALU_MAGIC);
            const unsigned e = __float_as_uint(ty) * (unsigned)ALU_PITCH + base;
            const float2 p0 = cs[e], p1 = cs[e + ALU_PITCH];
            const float top = fmaf(fu, p0.y, p0.x), bot = fmaf(fu, p1.y, p1.x);
            acc[k] = fmaf(w, fmaf(fv, bot - top, top), acc[k]);
          }
        } else { /* the exact kernel's reads, from global memory */
          const float *view = (const float *)a.pad + (long long)(bv.first + n) * a.view_stride;
#pragma unroll
          for (int k = 0; k < ZP; k++) {
            const float v = fmaf(fk + (float)k, m[7], bxy) * r;
            acc[k] = fmaf(w, ctr__bilinear_padded(view, a.pitch, a.nu, a.nv, u, v), acc[k]);
          }
        }
      }
    __syncthreads(); /* the next stage overwrites the cache */
  }
  if (!live) return;
  float *col = a.vol + (long long)j * a.nx + i;
#pragma unroll
  for (int k = 0; k < ZP; k++) {
    const int z = k0 + k;
    if (z >= a.nz_thread) break;
    col[(long long)z * a.slice] += acc[k];
  }
}

template <int ZP>
static ctr_status launch(dim3 grid, cudaStream_t s, const ctr__bp_args &a,
                         const ctr__bp_views &bv) {
  ctr_status st = CTR_OK;
  CU(cudaFuncSetAttribute(bp_alu_kernel<ZP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)ALU_SHARED_BYTES));
  /* three blocks' caches (200 KB) a multiprocessor: the largest shared-memory carveout; the
   * fill's global reads need little L1 (a pair's two pixels share a line) */
  CU(cudaFuncSetAttribute(bp_alu_kernel<ZP>, cudaFuncAttributePreferredSharedMemoryCarveout,
                          (int)cudaSharedmemCarveoutMaxShared));
  bp_alu_kernel<ZP><<<grid, ALU_THREADS, ALU_SHARED_BYTES, s>>>(a, bv);
  CU_LAUNCHED("ALU backprojection kernel");
cleanup:
  return st;
}

ctr_status ctr__bpa_launch(const ctr__bp_config *cfg, const ctr__bp_args *args,
                           const ctr__bp_views *bv, cudaStream_t s) {
  const int zp = cfg->slices_per_thread;
  if (zp != 1 && zp != 2 && zp != 4 && zp != 8 && zp != 16)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "slices per thread %d: the alu kernel takes 1, 2, 4, 8 or 16", zp);
  const int nzg = args->nz_thread - args->k_begin;
  if (nzg <= 0 || args->nx <= 0 || args->ny <= 0 || bv->n <= 0) return CTR_OK;
  const dim3 grid((args->nx + CTR__BPA_TILE - 1) / CTR__BPA_TILE,
                  (args->ny + CTR__BPA_TILE - 1) / CTR__BPA_TILE, (nzg + zp - 1) / zp);
  switch (zp) {
    case 1: return launch<1>(grid, s, *args, *bv);
    case 2: return launch<2>(grid, s, *args, *bv);
    case 4: return launch<4>(grid, s, *args, *bv);
    case 8: return launch<8>(grid, s, *args, *bv);
    default: return launch<16>(grid, s, *args, *bv);
  }
}
