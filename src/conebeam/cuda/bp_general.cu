/* The general-orbit backprojection kernel (bp_general.cuh).
 *
 * Each thread owns ZP consecutive slices of one (x, y) column (default 16
 * slices in 32 x 4 or 32 x 8 blocks, see dense_views: warps along x, whose
 * read-modify-writes of the volume are whole 128-byte lines). Per launch and view, a block computes in
 * double the position of its anchor (its centre, at the runs' middle slice)
 * and the derivatives about it, and classifies its box as outside the
 * detector (skipped), inside (no clamping) or across the border (clamped);
 * each thread offsets the anchor by its place in the block in float (~15
 * instructions per view instead of ~190 for a double anchor of its own).
 * Along the run, step k (counted from the middle slice) moves the position
 * by k du / c_k (likewise v), with c_k = c_0 + k dc
 * (RabbitCT's reference maths, exact to float rounding of a few-pixel
 * offset). Per update:
 *   c_k, 1/c_k (MUFU), k/c_k, two offsets          5
 *   floor and fraction of both, by adding 1.5 * 2^23 (round to nearest of
 *   the offset less 1/2: the FMA pipe, not the conversion unit)    6
 *   cell index from the sums' bit patterns, address     2
 *   one 16-byte load (the cell's polynomial)            1
 *   value = x + y s + z t + w s t                       3
 *   weight 1/c_k^2 and accumulate                       2
 * A thread's run that lies wholly outside the detector for a view adds
 * exact zeros and is skipped; runs wholly inside need no clamping; a warp
 * with any run crossing the border clamps positions to [-1, n]. */
#include "conebeam/cuda/bp_general.cuh"

#include <math.h>
#include <stdlib.h>

#include "core/projmath.h"
#include "filter/helix_weight_math.h"

#define MAGIC 12582912.0f     /* 1.5 * 2^23: x + MAGIC rounds x to an integer */
#define MAGIC_BITS 0x4B400000u /* its bit pattern: bits(x + MAGIC) = MAGIC_BITS + round(x) */
#define ANCHOR_LIMIT 65536.0   /* anchors are clamped here; such runs are outside */
#define CTR__BPG_MAX_STEP 64.0 /* pixels between neighbouring slices, at most */
#define CTR__BPG_MAX_DET 16384

/* Cell indices are computed as bits(tv) * pitch + bits(tu) in wrapping 32-bit
 * arithmetic: that is W + (true index) with W = MAGIC_BITS * (pitch + 1) mod
 * 2^32. The pointer is pre-shifted by -W, so the result is right when
 * W + index stays inside [0, 2^32). True indices are below (ANCHOR_LIMIT +
 * nv + 3) * pitch < 2^30 for the detectors allowed; pitch is chosen among
 * nu + 3 .. nu + 66 so that W lies within 2^25 of 2^31. */
static __host__ __device__ unsigned wrap_offset(int pitch) {
  return MAGIC_BITS * (unsigned)(pitch + 1);
}

int ctr__bpg_pitch(int64_t nu) {
  const int lo = (int)CTR__BPG_MIN_PITCH(nu);
  int best = lo;
  double best_margin = -1;
  for (int p = lo; p < lo + CTR__BPG_PITCH_SPAN; p++) {
    const double w = (double)wrap_offset(p), m = fmin(w, 4294967296.0 - w);
    if (m > best_margin) best_margin = m, best = p;
  }
  return best;
}

int ctr__bpg_possible(const ctr_geometry *g, int64_t z0, int64_t nz) {
  if (g->nu > CTR__BPG_MAX_DET || g->nv > CTR__BPG_MAX_DET || nz <= 0) return 0;
  const ctr_volume_geometry *vg = &g->vol;
  double x[2], y[2], z[2];
  x[0] = ctr__voxel_coord(0, vg->nx, vg->voxel_x, vg->offset_x);
  x[1] = ctr__voxel_coord(vg->nx - 1, vg->nx, vg->voxel_x, vg->offset_x);
  y[0] = ctr__voxel_coord(0, vg->ny, vg->voxel_y, vg->offset_y);
  y[1] = ctr__voxel_coord(vg->ny - 1, vg->ny, vg->voxel_y, vg->offset_y);
  z[0] = ctr__voxel_coord(z0, vg->nz, vg->voxel_z, vg->offset_z);
  z[1] = ctr__voxel_coord(z0 + nz - 1, vg->nz, vg->voxel_z, vg->offset_z);
  for (int64_t n = 0; n < g->nviews; n++) {
    const double *P = g->views[n].P;
    double cmin = INFINITY, numax = 0;
    for (int q = 0; q < 8; q++) {
      const double px = x[q & 1], py = y[(q >> 1) & 1], pz = z[q >> 2];
      const double a = P[0] * px + P[1] * py + P[2] * pz + P[3];
      const double b = P[4] * px + P[5] * py + P[6] * pz + P[7];
      const double c = P[8] * px + P[9] * py + P[10] * pz + P[11];
      /* d/dk of a / c along z: (a_z c - a c_z) / c^2, numerator affine */
      const double nu_ = fabs(P[2] * c - a * P[10]) * vg->voxel_z;
      const double nv_ = fabs(P[6] * c - b * P[10]) * vg->voxel_z;
      cmin = fmin(cmin, c);
      numax = fmax(numax, fmax(nu_, nv_));
    }
    if (!(cmin > 0) || numax / (cmin * cmin) > CTR__BPG_MAX_STEP) return 0;
  }
  return 1;
}

/* One view's updates of a run (CLAMP: positions clamped to the detector's
 * padded range, for warps with a run crossing its border), in groups of G
 * slices: a group's G loads are all issued before any is used, so each
 * thread keeps G misses in flight (the loads wait on L2, not on issue). */
template <int ZP, int G, bool CLAMP, bool HELIX>
__device__ __forceinline__ void run_updates(float (&acc)[ZP], unsigned long long p,
                                            unsigned pitch, float c0, float dc, float fu0,
                                            float fv0, float du, float dv, float lou, float hiu,
                                            float lov, float hiv, float hd0, float hdk,
                                            float hs) {
#pragma unroll
  for (int k0 = 0; k0 < ZP; k0 += G) {
    float4 q[G];
    float s[G], t[G], w[G];
#pragma unroll
    for (int g = 0; g < G; g++) {
      const float kk = (float)(k0 + g - ZP / 2); /* slices from the anchor */
      const float rk = ctr__rcp_approx(fmaf(kk, dc, c0));
      const float kr = kk * rk;
      float su = fmaf(kr, du, fu0), sv = fmaf(kr, dv, fv0);
      if (CLAMP) {
        su = fminf(fmaxf(su, lou), hiu);
        sv = fminf(fmaxf(sv, lov), hiv);
      }
      const float tu = __fadd_rn(su, MAGIC), tv = __fadd_rn(sv, MAGIC);
      s[g] = __fsub_rn(su, __fsub_rn(tu, MAGIC));
      t[g] = __fsub_rn(sv, __fsub_rn(tv, MAGIC));
      w[g] = rk * rk;
      if (HELIX) /* the helical window at this slice (helix_weight_math.h) */
        w[g] *= ctr__helix_window_f(fmaf(-kk, hdk, hd0), hs);
      /* one IMAD and one IMAD.WIDE: the address as an integer, so the
       * compiler does not split it into base + 64-bit element offset */
      const unsigned cell = __float_as_uint(tv) * pitch + __float_as_uint(tu);
      q[g] = __ldg((const float4 *)(p + (unsigned long long)cell * 16ull));
    }
#pragma unroll
    for (int g = 0; g < G; g++) {
      const float val = fmaf(t[g], fmaf(s[g], q[g].w, q[g].z), fmaf(s[g], q[g].y, q[g].x));
      acc[k0 + g] = fmaf(val, w[g], acc[k0 + g]);
    }
  }
}

/* The read-modify-write of a thread's run. All loads before any store: the
 * compiler cannot prove that slices `slice` apart do not alias, and would
 * otherwise wait for each read-modify-write in turn. */
template <int ZP>
__device__ __forceinline__ void add_run(const ctr__bp_args &a, const float (&acc)[ZP], int i,
                                        int j, int k0) {
  float *col = a.vol + (long long)j * a.nx + i;
  float old[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) old[k] = k0 + k < a.nz_thread ? col[(long long)(k0 + k) * a.slice] : 0.0f;
#pragma unroll
  for (int k = 0; k < ZP; k++)
    if (k0 + k < a.nz_thread) col[(long long)(k0 + k) * a.slice] = old[k] + acc[k];
}

/* A view's constants for one block, computed once per launch in double and
 * kept in shared memory. */
struct bpg_view {
  float4 q0; /* fu0, fv0 (the anchor's fractions less 1/2), c0, flags */
  float4 q1; /* n1u, n1v, c1, lou: numerators and w step along x; offset of u = -1 */
  float4 q2; /* n2u, n2v, c2, lov: the same along y; offset of v = -1 (helix: 0) */
  float4 q3; /* nku, nkv, ck, hiu: the same along z; offset of u = nu */
  float4 q4; /* cell pointer (two words), hiv (offset of v = nv; helix: nv - 1), the
                helical window's argument at the anchor slice (else unused) */
};
enum { BPG_CLAMP = 0, BPG_INSIDE = 1, BPG_OUT = 2 };

/* 1 / c from the float reciprocal and two Newton steps: 2^-46 (w is far
 * from float's range limits), without the division's slow path. */
static __device__ __forceinline__ double rcp_d(double c) {
  double r = (double)ctr__rcp_approx((float)c);
  r = fma(r, fma(-c, r, 1.0), r);
  return fma(r, fma(-c, r, 1.0), r);
}

/* View `view`'s constants (matrix md) for the anchor (x, y, z) and the box
 * of voxels [x0, x1] x [y0, y1] x [z0, z1] (the block's live columns and
 * its runs). u - u0 = (dx n1u + dy n2u + dz nku) / c with c = c0 + dx c1 +
 * dy c2 + dz ck, and nXu = mXu - u0 mXc: the numerators of the offsets
 * about the anchor. */
__device__ void view_setup(bpg_view &s, const ctr__bp_args &a, const double *md, double hz,
                           long long view, double x, double y, double z, double x0, double x1,
                           double y0, double y1, double z0, double z1) {
  const double a0 = md[0] + x * md[1] + y * md[2] + z * md[3];
  const double b0 = md[4] + x * md[5] + y * md[6] + z * md[7];
  const double c0 = md[8] + x * md[9] + y * md[10] + z * md[11];
  const double r0 = rcp_d(c0), u0 = a0 * r0, v0 = b0 * r0;
  const double gu = floor(fmin(fmax(u0, -ANCHOR_LIMIT), ANCHOR_LIMIT));
  const double gv = floor(fmin(fmax(v0, -ANCHOR_LIMIT), ANCHOR_LIMIT));
  const int iu0 = (int)gu, iv0 = (int)gv;
  /* The box's image is the convex hull of its corners' (w > 0 over the
   * volume): outside when all corners lie beyond one border, inside when
   * all lie within [-1, n] with a margin far above the float positions'
   * error. */
  const double m = 1e-2;
  /* the rows' clamped range: [-1, nv], a helix's [0, nv - 1] (its edge rows) */
  const double rlo = a.helix ? 0.0 : -1.0, rhi = a.helix ? a.nv - 1.0 : (double)a.nv;
  bool in = true, lu = true, hu = true, lv = true, hv = true;
#pragma unroll 1
  for (int q = 0; q < 8; q++) {
    const double px = q & 1 ? x1 : x0, py = q & 2 ? y1 : y0, pz = q & 4 ? z1 : z0;
    const double r = rcp_d(md[8] + px * md[9] + py * md[10] + pz * md[11]);
    const double u = (md[0] + px * md[1] + py * md[2] + pz * md[3]) * r;
    const double v = (md[4] + px * md[5] + py * md[6] + pz * md[7]) * r;
    in = in && u >= -1 + m && u <= a.nu - m && v >= rlo + m && v <= rhi - m;
    lu = lu && u < -1 - m, hu = hu && u > a.nu + m;
    lv = lv && v < -1 - m, hv = hv && v > a.nv + m;
  }
  /* A helix (rows clamped to the edge rows [0, nv - 1], rlo and rhi above):
   * a box beyond them still reads the edge row; a box whose slices all have
   * a window weight of 0 skips the view. */
  double hd = 0.0;
  bool zero = false;
  if (a.helix) {
    lv = hv = false;
    hd = hz - z * (double)a.helix_dk;
    const double d0 = hz - z0 * (double)a.helix_dk, d1 = hz - z1 * (double)a.helix_dk;
    const double least = d0 * d1 <= 0.0 ? 0.0 : fmin(fabs(d0), fabs(d1));
    zero = least >= CTR__HELIX_PI + (double)a.helix_s + 1e-3;
  }
  const int flags = lu || hu || lv || hv || zero ? BPG_OUT : in ? BPG_INSIDE : BPG_CLAMP;
  const unsigned wrap = wrap_offset(a.pitch);
  const unsigned long long p = (unsigned long long)((const float4 *)a.pad + view * a.view_stride +
                                                    ((long long)iv0 * a.pitch + iu0) - (long long)wrap);
  s.q0 = make_float4((float)(u0 - gu) - 0.5f, (float)(v0 - gv) - 0.5f, (float)c0, __int_as_float(flags));
  s.q1 = make_float4((float)(md[1] - u0 * md[9]), (float)(md[5] - v0 * md[9]), (float)md[9],
                     (float)(-1 - iu0) - 0.5f);
  s.q2 = make_float4((float)(md[2] - u0 * md[10]), (float)(md[6] - v0 * md[10]), (float)md[10],
                     (float)(rlo - iv0) - 0.5f);
  s.q3 = make_float4((float)(md[3] - u0 * md[11]), (float)(md[7] - v0 * md[11]), (float)md[11],
                     (float)(a.nu - iu0) - 0.5f);
  s.q4 = make_float4(__uint_as_float((unsigned)p), __uint_as_float((unsigned)(p >> 32)),
                     (float)(rhi - iv0) - 0.5f, (float)hd);
}

/* Thread (x, y) = voxel column (i, j), its run slices k0 .. k0 + ZP - 1. Per
 * view a thread reads its block's constants (five broadcast 16-byte shared
 * loads), offsets them by its place in the block and runs its ZP updates;
 * blocks wholly outside the view skip it. */
template <int ZP, int MINB, bool HELIX> /* MINB: blocks per SM to fit, 0: no minimum (80
                                           registers at ZP 16); HELIX: a.helix's window */
__global__ void __launch_bounds__(256, MINB) bpg_kernel(const ctr__bp_args a,
                                                  const __grid_constant__ ctr__bp_views bv) {
  constexpr int GROUP = ZP < 8 ? ZP : 8;
  __shared__ bpg_view sv[CTR__BP_MAX_VIEWS];
  const int x0 = blockIdx.x * blockDim.x, y0 = blockIdx.y * blockDim.y;
  const int x1 = min(x0 + (int)blockDim.x, a.nx) - 1, y1 = min(y0 + (int)blockDim.y, a.ny) - 1;
  const int i = x0 + threadIdx.x, j = y0 + threadIdx.y;
  const int k0 = a.k_begin + blockIdx.z * ZP;
  const bool live = i < a.nx && j < a.ny;
  const float hx = 0.5f * (float)(x0 + x1), hy = 0.5f * (float)(y0 + y1); /* the anchor */
  /* dead threads sit on the anchor: their reads stay inside the block's box */
  const float dx = live ? (float)i - hx : 0.0f, dy = live ? (float)j - hy : 0.0f;
  const int nthreads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int n = tid; n < bv.n; n += nthreads)
    view_setup(sv[n], a, bv.md[n], bv.hz[n], bv.first + n, hx, hy, k0 + ZP / 2, x0, x1, y0, y1,
               k0, k0 + ZP - 1);
  __syncthreads();
  const unsigned pitch = (unsigned)a.pitch;
  float acc[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) acc[k] = 0.0f;
  for (int n = 0; n < bv.n; n++) {
    const float4 q0 = sv[n].q0;
    const int flags = __float_as_int(q0.w);
    if (flags == BPG_OUT) continue; /* the whole block sees nothing of the view */
    const float4 q1 = sv[n].q1, q2 = sv[n].q2, q3 = sv[n].q3, q4 = sv[n].q4;
    /* the thread's column: u - u0 = (dx n1u + dy n2u) / c, c = c0 + dx c1 + dy c2 */
    const float c = fmaf(dx, q1.z, fmaf(dy, q2.z, q0.z));
    const float rc = ctr__rcp_approx(c);
    const float ou = fmaf(dx, q1.x, dy * q2.x) * rc, ov = fmaf(dx, q1.y, dy * q2.y) * rc;
    /* along the run from there: du = nku - (u - u0) ck */
    const float du = fmaf(-ou, q3.z, q3.x), dv = fmaf(-ov, q3.z, q3.y);
    const unsigned long long p =
        (unsigned long long)__float_as_uint(q4.x) | ((unsigned long long)__float_as_uint(q4.y) << 32);
    if (flags == BPG_INSIDE)
      run_updates<ZP, GROUP, false, HELIX>(acc, p, pitch, c, q3.z, q0.x + ou, q0.y + ov, du, dv,
                                           q1.w, q3.w, q2.w, q4.z, q4.w, a.helix_dk, a.helix_s);
    else
      run_updates<ZP, GROUP, true, HELIX>(acc, p, pitch, c, q3.z, q0.x + ou, q0.y + ov, du, dv,
                                          q1.w, q3.w, q2.w, q4.z, q4.w, a.helix_dk, a.helix_s);
  }
  if (live) add_run<ZP>(a, acc, i, j, k0);
}

/* Whether the middle view puts neighbouring voxels (along x, y or z, at the
 * volume's centre) less than DENSE_PIXELS pixels apart. Then most of the
 * kernel's loads hit L1, and the default launch (32 x 4 blocks, 16 slices
 * per thread: ctr__bp_config.default_shape) runs with 64 registers, 8 blocks
 * per SM instead of 6, to keep more of them in flight: RabbitCT L = 1024
 * faster, while at L = 512 (voxels ~2.5 pixels apart) the extra blocks'
 * working sets crowd L1 and it is slower (bench/NOTES.md, issue 7).
 * ctr_tuning.bp_regs = 64 or 80 forces a form (experiments, tests). Launches of
 * sparser views keep 80 registers and take blocks of SPARSE_BLOCK_Y rows:
 * rows ~2.5 pixels apart share cache lines, so 8 rows fetch fewer lines per
 * update than 4 (faster at RabbitCT L = 512, slower at L = 1024:
 * bench/NOTES.md, issue 7). */
#define DENSE_PIXELS 1.6
#define SPARSE_BLOCK_Y 8
static int dense_views(const ctr__bp_args *a, const ctr__bp_views *bv) {
  const double *m = bv->md[bv->n / 2];
  const double x = 0.5 * a->nx, y = 0.5 * a->ny, z = 0.5 * a->nzs;
  const double w = m[8] + x * m[9] + y * m[10] + z * m[11];
  const double u = (m[0] + x * m[1] + y * m[2] + z * m[3]) / w;
  const double v = (m[4] + x * m[5] + y * m[6] + z * m[7]) / w;
  double step = 0;
  for (int d = 1; d <= 3; d++) { /* d/dx, d/dy, d/dz of (u, v) */
    const double du = (m[d] - u * m[8 + d]) / w, dv = (m[4 + d] - v * m[8 + d]) / w;
    step = fmax(step, sqrt(du * du + dv * dv));
  }
  return step < DENSE_PIXELS;
}

ctr_status ctr__bpg_launch(const ctr__bp_config *cfg, const ctr__bp_args *args,
                           const ctr__bp_views *bv, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const int zp = cfg->slices_per_thread;
  dim3 block(cfg->block_x, cfg->block_y);
  int dense = cfg->default_shape && bv->n > 0 && dense_views(args, bv);
  if (cfg->default_shape && !dense) block.y = SPARSE_BLOCK_Y;
  if (cfg->regs) dense = cfg->regs == 64; /* ctr_tuning.bp_regs */
  const dim3 grid((args->nx + block.x - 1) / block.x, (args->ny + block.y - 1) / block.y,
                  (args->nz_thread - args->k_begin + zp - 1) / zp);
  if (block.x * block.y > 256 || block.x * block.y < 32 || (block.x * block.y) % 32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "block %d x %d: expected 32 .. 256 threads, whole warps",
             cfg->block_x, cfg->block_y);
  void (*kern)(const ctr__bp_args, const ctr__bp_views);
  if (args->helix) /* the window's own instances: the other orbits' kernels unchanged */
    switch (zp) {
      case 1: kern = bpg_kernel<1, 0, true>; break;
      case 2: kern = bpg_kernel<2, 0, true>; break;
      case 4: kern = bpg_kernel<4, 0, true>; break;
      case 8: kern = bpg_kernel<8, 0, true>; break;
      case 16: kern = bpg_kernel<16, 0, true>; break;
      case 32: kern = bpg_kernel<32, 0, true>; break;
      default:
        CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8, 16 or 32", zp);
    }
  else if (zp == 16 && dense) kern = bpg_kernel<16, 4, false>; /* 64 registers */
  else
    switch (zp) {
      case 1: kern = bpg_kernel<1, 0, false>; break;
      case 2: kern = bpg_kernel<2, 0, false>; break;
      case 4: kern = bpg_kernel<4, 0, false>; break;
      case 8: kern = bpg_kernel<8, 0, false>; break;
      case 16: kern = bpg_kernel<16, 0, false>; break;
      case 32: kern = bpg_kernel<32, 0, false>; break;
      default:
        CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8, 16 or 32", zp);
    }
  kern<<<grid, block, 0, s>>>(*args, *bv);
  CU_LAUNCHED("general backprojection kernel");
cleanup:
  return st;
}
