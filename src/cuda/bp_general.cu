/* The general-orbit backprojection kernel (bp_general.cuh).
 *
 * Each thread owns ZP consecutive slices of one (x, y) column (default 16
 * slices in 32 x 4 blocks: warps along x, whose read-modify-writes of the
 * volume are whole 128-byte lines). Per view and column, the position at the
 * run's middle slice is computed in double and split into an integer cell
 * anchor and a float fraction; slice k (counted from there) moves it by
 * k du / c_k (likewise v), with c_k = c_0 + k dc (RabbitCT's reference maths, exact to float rounding
 * of a few-pixel offset). Per update:
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
#include "cuda/bp_general.cuh"

#include <math.h>

#include "common/projmath.h"

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
static unsigned wrap_offset(int pitch) { return MAGIC_BITS * (unsigned)(pitch + 1); }

int ctr__bpg_pitch(int64_t nu) {
  int best = (int)nu + 3;
  double best_margin = -1;
  for (int p = (int)nu + 3; p < (int)nu + 3 + 64; p++) {
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
template <int ZP, int G, bool CLAMP>
__device__ __forceinline__ void run_updates(float (&acc)[ZP], unsigned long long p,
                                            unsigned pitch, float c0, float dc, float fu0,
                                            float fv0, float du, float dv, float lou, float hiu,
                                            float lov, float hiv) {
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

template <int ZP>
__global__ void __launch_bounds__(256) bpg_kernel(const ctr__bp_args a,
                                                  const __grid_constant__ ctr__bp_views bv) {
  constexpr int GROUP = ZP < 8 ? ZP : 8;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k0 = a.k_begin + blockIdx.z * ZP;
  const bool live = i < a.nx && j < a.ny;
  const unsigned pitch = (unsigned)a.pitch;
  const unsigned wrap = MAGIC_BITS * (pitch + 1u);
  float acc[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) acc[k] = 0.0f;
  for (int n = 0; n < bv.n; n++) {
    const double *md = bv.md[n];
    /* the anchor: the run's middle slice, so offsets stay within ZP/2 slices */
    const double di = (double)i, dj = (double)j, dk = (double)(k0 + ZP / 2);
    const double a0 = fma(dk, md[3], fma(dj, md[2], fma(di, md[1], md[0])));
    const double b0 = fma(dk, md[7], fma(dj, md[6], fma(di, md[5], md[4])));
    const double c0 = fma(dk, md[11], fma(dj, md[10], fma(di, md[9], md[8])));
    /* 1 / c0 from the float reciprocal and two Newton steps: 2^-46 */
    double r0 = (double)ctr__rcp_approx((float)c0);
    r0 = fma(r0, fma(-c0, r0, 1.0), r0);
    r0 = fma(r0, fma(-c0, r0, 1.0), r0);
    const double u0 = a0 * r0, v0 = b0 * r0;
    const double gu = floor(fmin(fmax(u0, -ANCHOR_LIMIT), ANCHOR_LIMIT));
    const double gv = floor(fmin(fmax(v0, -ANCHOR_LIMIT), ANCHOR_LIMIT));
    int iu0 = (int)gu, iv0 = (int)gv;
    /* centred: the cell of offset s is round(s), its fraction s - round(s) */
    float fu0 = (float)(u0 - gu) - 0.5f, fv0 = (float)(v0 - gv) - 0.5f;
    float du = (float)((md[3] * c0 - a0 * md[11]) * r0);
    float dv = (float)((md[7] * c0 - b0 * md[11]) * r0);
    float c0f = (float)c0, dc = (float)md[11];
    /* offsets of u = -1 and u = nu (likewise v) */
    float lou = (float)(-1 - iu0) - 0.5f, hiu = (float)(a.nu - iu0) - 0.5f;
    float lov = (float)(-1 - iv0) - 0.5f, hiv = (float)(a.nv - iv0) - 0.5f;
    /* The run's extent: offsets are monotonic in k, so its ends bound it
     * (computed exactly as the first and last updates compute them). */
    const float kb = (float)(-(ZP / 2)), ke = (float)(ZP - 1 - ZP / 2);
    const float krb = kb * ctr__rcp_approx(fmaf(kb, dc, c0f)), kre = ke * ctr__rcp_approx(fmaf(ke, dc, c0f));
    const float ub = fmaf(krb, du, fu0), vb = fmaf(krb, dv, fv0);
    const float ue = fmaf(kre, du, fu0), ve = fmaf(kre, dv, fv0);
    const float umin = fminf(ub, ue), umax = fmaxf(ub, ue);
    const float vmin = fminf(vb, ve), vmax = fmaxf(vb, ve);
    const float margin = 1e-3f; /* runs that graze the border take the clamped path */
    const bool out = !live || umax < lou - margin || umin > hiu + margin ||
                     vmax < lov - margin || vmin > hiv + margin;
    const bool inside = umin >= lou && umax <= hiu && vmin >= lov && vmax <= hiv;
    if (__all_sync(0xffffffffu, out)) continue;
    if (out) { /* read the all-zero cell (nu, nv) with weight 1: adds exact zeros */
      iu0 = a.nu, iv0 = a.nv;
      fu0 = fv0 = du = dv = dc = 0.0f;
      c0f = 1.0f;
      lou = hiu = lov = hiv = 0.0f;
    }
    const unsigned long long p =
        (unsigned long long)((const float4 *)a.pad + (long long)(bv.first + n) * a.view_stride +
                             ((long long)iv0 * a.pitch + iu0) - (long long)wrap);
    if (__all_sync(0xffffffffu, inside || out))
      run_updates<ZP, GROUP, false>(acc, p, pitch, c0f, dc, fu0, fv0, du, dv, lou, hiu, lov, hiv);
    else
      run_updates<ZP, GROUP, true>(acc, p, pitch, c0f, dc, fu0, fv0, du, dv, lou, hiu, lov, hiv);
  }
  if (!live) return;
  /* All loads of the column before any store: the compiler cannot prove
   * that slices `slice` apart do not alias, and would otherwise wait for
   * each read-modify-write in turn. */
  float *col = a.vol + (long long)j * a.nx + i;
  float old[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) old[k] = k0 + k < a.nz_thread ? col[(long long)(k0 + k) * a.slice] : 0.0f;
#pragma unroll
  for (int k = 0; k < ZP; k++)
    if (k0 + k < a.nz_thread) col[(long long)(k0 + k) * a.slice] = old[k] + acc[k];
}

ctr_status ctr__bpg_launch(const ctr__bp_config *cfg, const ctr__bp_args *args,
                           const ctr__bp_views *bv, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const int zp = cfg->slices_per_thread;
  const dim3 block(cfg->block_x, cfg->block_y);
  const dim3 grid((args->nx + block.x - 1) / block.x, (args->ny + block.y - 1) / block.y,
                  (args->nz_thread - args->k_begin + zp - 1) / zp);
  if (block.x * block.y > 256 || block.x * block.y < 32 || (block.x * block.y) % 32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "block %d x %d: expected 32 .. 256 threads, whole warps",
             cfg->block_x, cfg->block_y);
  switch (zp) {
    case 1: bpg_kernel<1><<<grid, block, 0, s>>>(*args, *bv); break;
    case 2: bpg_kernel<2><<<grid, block, 0, s>>>(*args, *bv); break;
    case 4: bpg_kernel<4><<<grid, block, 0, s>>>(*args, *bv); break;
    case 8: bpg_kernel<8><<<grid, block, 0, s>>>(*args, *bv); break;
    case 16: bpg_kernel<16><<<grid, block, 0, s>>>(*args, *bv); break;
    case 32: bpg_kernel<32><<<grid, block, 0, s>>>(*args, *bv); break;
    default:
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8, 16 or 32", zp);
  }
  CU_LAUNCHED("general backprojection kernel");
cleanup:
  return st;
}
