/* Cone-beam backprojection kernels (Lu et al. 2016, Alg. 1, and its descendants).
 *
 * Each thread owns one (x, y) column of the volume and ZP consecutive slices
 * (ZP accumulators in registers); a launch covers N' views, read from a
 * layered texture inter-layer first (Lu et al. 2016, Sect. 4.1-4.2) or from padded
 * global memory. On circular orbits c and u do not depend on z, so per view
 * and column one reciprocal serves all ZP slices and v advances linearly
 * (Lu et al. 2016, Eq. 6). The PAIR variants also accumulate the mirror slice about
 * the source plane: the second channel of the view holds the detector flipped
 * about the principal row, so one fetch at (u, v) returns both voxels'
 * samples (their u and weight are equal). */
#include "conebeam/cuda/bp_kernels.cuh"

#include "core/cylmath.h"
#include "core/projmath.h"
#include "filter/helix_weight_math.h"

enum {
  MODE_TEX = 0,
  MODE_TEX_PAIR = 1,
  MODE_EXACT = 2,
  MODE_EXACT_PAIR = 3,
  MODE_PRECISE = 4,     /* MODE_EXACT at double-precision positions */
  MODE_PRECISE_PAIR = 5 /* MODE_EXACT_PAIR at double-precision positions */
};
/* TEX_PAIR_HALF runs MODE_TEX_PAIR: a half2 texture reads as float2. */

template <int MODE>
struct sample_t {
  typedef float type;
};
template <>
struct sample_t<MODE_TEX_PAIR> {
  typedef float2 type;
};
template <>
struct sample_t<MODE_EXACT_PAIR> {
  typedef float2 type;
};
template <>
struct sample_t<MODE_PRECISE_PAIR> {
  typedef float2 type;
};

__device__ __forceinline__ void acc_add(float &a, float w, float s) { a = fmaf(w, s, a); }

__device__ __forceinline__ void acc_add(float2 &a, float w, float2 s) {
  a.x = fmaf(w, s.x, a.x);
  a.y = fmaf(w, s.y, a.y);
}

/* One bilinear sample at (u, v) of layer/view `n` (texture coordinates carry
 * the +0.5 shift; global ones do not). */
template <int MODE>
__device__ __forceinline__ typename sample_t<MODE>::type sample(const ctr__bp_args &a, float u,
                                                                 float v, int n) {
  if constexpr (MODE == MODE_TEX) {
    return tex2DLayered<float>(a.tex, u, v, n);
  } else if constexpr (MODE == MODE_TEX_PAIR) {
    return tex2DLayered<float2>(a.tex, u, v, n);
  } else if constexpr (MODE == MODE_EXACT) {
    /* one 16-byte load: the neighbourhood stored as float4 (CTR__STORE_QUAD) */
    const float4 *base = (const float4 *)a.pad + (long long)n * a.view_stride;
    const int i = ctr__bilinear_setup(a.pitch, a.nu, a.nv, &u, &v);
    const float4 q = __ldg(base + i);
    return ctr__lerp2(q.x, q.y, q.z, q.w, u, v);
  } else if constexpr (MODE == MODE_EXACT_PAIR) {
    const float2 *base = (const float2 *)a.pad + (long long)n * a.view_stride;
    const int i = ctr__bilinear_setup(a.pitch, a.nu, a.nv, &u, &v);
    const float2 q00 = __ldg(base + i), q01 = __ldg(base + i + 1);
    const float2 q10 = __ldg(base + i + a.pitch), q11 = __ldg(base + i + a.pitch + 1);
    return make_float2(ctr__lerp2(q00.x, q01.x, q10.x, q11.x, u, v),
                       ctr__lerp2(q00.y, q01.y, q10.y, q11.y, u, v));
  } else {
    return typename sample_t<MODE>::type{}; /* precise variants use sample_precise */
  }
}

/* Precise variants: software bilinear at an integer anchor plus a small float
 * offset (ctr__bilinear_setup_split), blended in float. */
template <int MODE>
__device__ __forceinline__ typename sample_t<MODE>::type sample_precise(const ctr__bp_args &a,
                                                                         int iu0, float fu,
                                                                         int iv0, float fv,
                                                                         int n) {
  float wu, wv;
  const int i = ctr__bilinear_setup_split(a.pitch, a.nu, a.nv, iu0, fu, iv0, fv, &wu, &wv);
  if constexpr (MODE == MODE_PRECISE) {
    const float4 *base = (const float4 *)a.pad + (long long)n * a.view_stride;
    const float4 q = __ldg(base + i);
    return ctr__lerp2(q.x, q.y, q.z, q.w, wu, wv);
  } else {
    const float2 *base = (const float2 *)a.pad + (long long)n * a.view_stride;
    const float2 q00 = __ldg(base + i), q01 = __ldg(base + i + 1);
    const float2 q10 = __ldg(base + i + a.pitch), q11 = __ldg(base + i + a.pitch + 1);
    return make_float2(ctr__lerp2(q00.x, q01.x, q10.x, q11.x, wu, wv),
                       ctr__lerp2(q00.y, q01.y, q10.y, q11.y, wu, wv));
  }
}

/* CYL: a cylindrical detector (docs/geometry.md, "Curved (cylindrical)
 * detectors"), whose views bv.m[n] hold ctr__bp_views_fill's curved
 * constants: the column's depth s = m0 + i m1 + j m2 and lateral offset
 * l = m3 + i m4 + j m5 (mm), u0 m6, fu m7, v0 m8, fv z = m9 + k m10, the
 * weight's d^2 m11. One atan2 and one reciprocal a column and view (the
 * orbit is circular: u and r do not change along z); v is linear in z over
 * r. The pair modes' mirror holds as for a flat detector: v - v0 is odd in
 * z. The flat instantiations (CYL false) compile as before.
 * HELIX (with CYL, MODE_EXACT only): a curved detector on a helix, m9 then
 * holding fv (z(slice 0) - the view's source height); each update weighted
 * by the helical window w(hz[n] - k helix_dk, helix_s) and v clamped to the
 * detector's edge rows [0, nv - 1] (filter/helix_weight_math.h; the CPU's
 * cyl_row_helix), a view whose window is 0 at all the thread's slices
 * skipped. */
template <int ZP, bool CIRC, int MODE, bool CYL = false, bool HELIX = false>
__global__ void __launch_bounds__(256, 3)
    bp_kernel(const ctr__bp_args a, const __grid_constant__ ctr__bp_views bv) {
  typedef typename sample_t<MODE>::type acc_t;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k0 = a.k_begin + blockIdx.z * ZP;
  if (i >= a.nx || j >= a.ny) return;
  const float fi = (float)i, fj = (float)j, fk = (float)k0;
  acc_t acc[ZP];
#pragma unroll
  for (int k = 0; k < ZP; k++) acc[k] = acc_t{};
  for (int n = 0; n < bv.n; n++) {
    const float *m = bv.m[n];
    const int layer = bv.first + n;
    const float ws = a.wscale ? __ldg(a.wscale + layer) : 1.0f;
    /* Every voxel's coordinates derive from its own slice index, never from
     * the chunk start, so results do not depend on how z is split. */
    if constexpr (CYL) {
      float u, ir;
      ctr__cyl_map_f(fmaf(fj, m[2], fmaf(fi, m[1], m[0])), fmaf(fj, m[5], fmaf(fi, m[4], m[3])),
                     m[6], m[7], &u, &ir);
      const float w = ws * m[11] * ir * ir;
      if constexpr (HELIX) {
        /* the window's argument at the thread's slices: linear in k */
        const float h0 = fmaf(-fk, a.helix_dk, (float)bv.hz[n]);
        const float h1 = fmaf(-(float)(ZP - 1), a.helix_dk, h0);
        const float reach = 3.14159265f + a.helix_s + 1e-3f;
        if (h0 * h1 > 0.0f && fminf(fabsf(h0), fabsf(h1)) >= reach) continue;
        const float hi = (float)(a.nv - 1);
#pragma unroll
        for (int k = 0; k < ZP; k++) {
          const float wh = ctr__helix_window_f(fmaf(-(float)k, a.helix_dk, h0), a.helix_s);
          const float v = fminf(fmaxf(fmaf(fmaf(fk + (float)k, m[10], m[9]), ir, m[8]), 0.0f), hi);
          if (wh > 0.0f) acc_add(acc[k], w * wh, sample<MODE>(a, u, v, layer));
        }
      } else {
#pragma unroll
        for (int k = 0; k < ZP; k++) {
          const float v = fmaf(fmaf(fk + (float)k, m[10], m[9]), ir, m[8]);
          acc_add(acc[k], w, sample<MODE>(a, u, v, layer));
        }
      }
      continue;
    }
    if constexpr (MODE == MODE_PRECISE || MODE == MODE_PRECISE_PAIR) {
      /* The column's position at slice k0 in double, split into an integer
       * anchor and a float fraction; slice k moves it by
       * k (m3 c0 - a0 m11) / (c0 c_k) in u (likewise v): a few pixels,
       * exact enough in float. */
      const double *md = bv.md[n];
      const double di = (double)i, dj = (double)j, dk = (double)k0;
      const double a0 = fma(dk, md[3], fma(dj, md[2], fma(di, md[1], md[0])));
      const double b0 = fma(dk, md[7], fma(dj, md[6], fma(di, md[5], md[4])));
      const double c0 = fma(dk, md[11], fma(dj, md[10], fma(di, md[9], md[8])));
      const double r0 = __drcp_rn(c0);
      const double u0 = a0 * r0, v0 = b0 * r0, gu = floor(u0), gv = floor(v0);
      const int iu0 = (int)fmax(fmin(gu, 1e9), -1e9), iv0 = (int)fmax(fmin(gv, 1e9), -1e9);
      const float fu0 = (float)(u0 - (double)iu0), fv0 = (float)(v0 - (double)iv0);
      const float du = (float)((md[3] * c0 - a0 * md[11]) * r0);
      const float dv = (float)((md[7] * c0 - b0 * md[11]) * r0);
      const float c0f = (float)c0, dc = (float)md[11];
      const float r0f = (float)r0;
#pragma unroll
      for (int k = 0; k < ZP; k++) {
        /* circular orbits: c does not change along the column */
        const float rk = CIRC ? r0f : ctr__rcp_approx(fmaf((float)k, dc, c0f));
        const float kr = (float)k * rk;
        acc_add(acc[k], ws * rk * rk,
                sample_precise<MODE>(a, iu0, fmaf(kr, du, fu0), iv0, fmaf(kr, dv, fv0), layer));
      }
      continue;
    }
    const float axy = fmaf(fj, m[2], fmaf(fi, m[1], m[0]));
    const float bxy = fmaf(fj, m[6], fmaf(fi, m[5], m[4]));
    const float cxy = fmaf(fj, m[10], fmaf(fi, m[9], m[8]));
    if constexpr (CIRC) {
      /* c and u are constant along the column; v is linear in z (Eq. 6). */
      const float r = __frcp_rn(cxy);
      const float u = axy * r, w = ws * r * r;
#pragma unroll
      for (int k = 0; k < ZP; k++)
        acc_add(acc[k], w, sample<MODE>(a, u, fmaf(fk + (float)k, m[7], bxy) * r, layer));
    } else {
#pragma unroll
      for (int k = 0; k < ZP; k++) {
        const float z = fk + (float)k;
        const float r = ctr__rcp_approx(fmaf(z, m[11], cxy));
        const float u = fmaf(z, m[3], axy) * r;
        const float v = fmaf(z, m[7], bxy) * r;
        acc_add(acc[k], ws * r * r, sample<MODE>(a, u, v, layer));
      }
    }
  }
  float *col = a.vol + (long long)j * a.nx + i;
#pragma unroll
  for (int k = 0; k < ZP; k++) {
    const int z = k0 + k;
    if (z >= a.nz_thread) break;
    if constexpr (MODE == MODE_TEX_PAIR || MODE == MODE_EXACT_PAIR || MODE == MODE_PRECISE_PAIR) {
      const int zm = a.nzs - 1 - z;
      col[(long long)z * a.slice] += acc[k].x;
      if (zm != z) col[(long long)zm * a.slice] += acc[k].y;
    } else {
      col[(long long)z * a.slice] += acc[k];
    }
  }
}

/* The grid and block of a launch: threads over (x, y), ZP slices each. */
static ctr_status launch_shape(const ctr__bp_config *cfg, const ctr__bp_args *args, dim3 *grid,
                               dim3 *block) {
  const int zp = cfg->slices_per_thread;
  *block = dim3(cfg->block_x, cfg->block_y);
  *grid = dim3((args->nx + block->x - 1) / block->x, (args->ny + block->y - 1) / block->y,
               (args->nz_thread - args->k_begin + zp - 1) / zp);
  if (block->x * block->y > 256 || block->x * block->y < 32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "block %d x %d: expected 32 .. 256 threads", cfg->block_x,
             cfg->block_y);
  return CTR_OK;
}

template <int ZP>
static void launch_cyl(ctr__bp_variant v, dim3 grid, dim3 block, cudaStream_t s,
                       const ctr__bp_args &a, const ctr__bp_views &bv) {
  switch (v) {
    case CTR__BP_TEX: bp_kernel<ZP, true, MODE_TEX, true><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_TEX_PAIR:
    case CTR__BP_TEX_PAIR_HALF:
      bp_kernel<ZP, true, MODE_TEX_PAIR, true><<<grid, block, 0, s>>>(a, bv);
      break;
    case CTR__BP_EXACT: bp_kernel<ZP, true, MODE_EXACT, true><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_EXACT_PAIR:
      bp_kernel<ZP, true, MODE_EXACT_PAIR, true><<<grid, block, 0, s>>>(a, bv);
      break;
    default: break;
  }
}

/* A curved detector on a helix: the exact variant's HELIX instances. */
template <int ZP>
static void launch_cyl_helix(dim3 grid, dim3 block, cudaStream_t s, const ctr__bp_args &a,
                             const ctr__bp_views &bv) {
  bp_kernel<ZP, true, MODE_EXACT, true, true><<<grid, block, 0, s>>>(a, bv);
}

ctr_status ctr__bp_launch_cyl(const ctr__bp_config *cfg, const ctr__bp_args *args,
                              const ctr__bp_views *bv, cudaStream_t s) {
  ctr_status st = CTR_OK;
  const int zp = cfg->slices_per_thread;
  dim3 grid, block;
  CTR_CHECK(launch_shape(cfg, args, &grid, &block));
  if (args->helix) {
    if (cfg->variant != CTR__BP_EXACT)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "backprojection variant %s: a cylindrical detector on a helix has the exact "
               "kernel", ctr__bp_variant_name(cfg->variant));
    switch (zp) {
      case 1: launch_cyl_helix<1>(grid, block, s, *args, *bv); break;
      case 2: launch_cyl_helix<2>(grid, block, s, *args, *bv); break;
      case 4: launch_cyl_helix<4>(grid, block, s, *args, *bv); break;
      case 8: launch_cyl_helix<8>(grid, block, s, *args, *bv); break;
      case 16: launch_cyl_helix<16>(grid, block, s, *args, *bv); break;
      default:
        CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8 or 16", zp);
    }
    CU_LAUNCHED("cylindrical helical backprojection kernel");
    return st;
  }
  if (cfg->variant != CTR__BP_TEX && cfg->variant != CTR__BP_TEX_PAIR &&
      cfg->variant != CTR__BP_TEX_PAIR_HALF && cfg->variant != CTR__BP_EXACT &&
      cfg->variant != CTR__BP_EXACT_PAIR)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "backprojection variant %s: a cylindrical detector has the tex, tex-pair, "
             "tex-pair-half, exact and exact-pair kernels", ctr__bp_variant_name(cfg->variant));
  switch (zp) {
    case 1: launch_cyl<1>(cfg->variant, grid, block, s, *args, *bv); break;
    case 2: launch_cyl<2>(cfg->variant, grid, block, s, *args, *bv); break;
    case 4: launch_cyl<4>(cfg->variant, grid, block, s, *args, *bv); break;
    case 8: launch_cyl<8>(cfg->variant, grid, block, s, *args, *bv); break;
    case 16: launch_cyl<16>(cfg->variant, grid, block, s, *args, *bv); break;
    default:
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8 or 16", zp);
  }
  CU_LAUNCHED("cylindrical backprojection kernel");
cleanup:
  return st;
}

template <int ZP, bool CIRC>
static void launch_mode(ctr__bp_variant v, dim3 grid, dim3 block, cudaStream_t s,
                        const ctr__bp_args &a, const ctr__bp_views &bv) {
  switch (v) {
    case CTR__BP_TEX: bp_kernel<ZP, CIRC, MODE_TEX><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_TEX_PAIR:
    case CTR__BP_TEX_PAIR_HALF: bp_kernel<ZP, CIRC, MODE_TEX_PAIR><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_EXACT: bp_kernel<ZP, CIRC, MODE_EXACT><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_EXACT_PAIR: bp_kernel<ZP, CIRC, MODE_EXACT_PAIR><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_PRECISE: bp_kernel<ZP, CIRC, MODE_PRECISE><<<grid, block, 0, s>>>(a, bv); break;
    case CTR__BP_PRECISE_PAIR: bp_kernel<ZP, CIRC, MODE_PRECISE_PAIR><<<grid, block, 0, s>>>(a, bv); break;
    default: break;
  }
}

template <int ZP>
static void launch_zp(const ctr__bp_config *cfg, int circular, dim3 grid, dim3 block,
                      cudaStream_t s, const ctr__bp_args &a, const ctr__bp_views &bv) {
  if (circular) launch_mode<ZP, true>(cfg->variant, grid, block, s, a, bv);
  else launch_mode<ZP, false>(cfg->variant, grid, block, s, a, bv);
}

ctr_status ctr__bp_launch(const ctr__bp_config *cfg, int circular,
                                     const ctr__bp_args *args, const ctr__bp_views *bv,
                                     cudaStream_t s) {
  ctr_status st = CTR_OK;
  const int zp = cfg->slices_per_thread;
  dim3 grid, block;
  CTR_CHECK(launch_shape(cfg, args, &grid, &block));
  if (cfg->variant < CTR__BP_TEX || cfg->variant > CTR__BP_PRECISE_PAIR)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "backprojection variant %d unknown", (int)cfg->variant);
  switch (zp) {
    case 1: launch_zp<1>(cfg, circular, grid, block, s, *args, *bv); break;
    case 2: launch_zp<2>(cfg, circular, grid, block, s, *args, *bv); break;
    case 4: launch_zp<4>(cfg, circular, grid, block, s, *args, *bv); break;
    case 8: launch_zp<8>(cfg, circular, grid, block, s, *args, *bv); break;
    case 16: launch_zp<16>(cfg, circular, grid, block, s, *args, *bv); break;
    default:
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices per thread %d: expected 1, 2, 4, 8 or 16", zp);
  }
  CU_LAUNCHED("backprojection kernel");
cleanup:
  return st;
}

void ctr__bp_views_fill(const ctr_geometry *g, const int64_t *idx, int64_t first, int n,
                        int64_t layer, int64_t z0, int texture, const double *alpha,
                        ctr__bp_views *bv) {
  const ctr_volume_geometry *vg = &g->vol;
  const double x0 = ctr__voxel_coord(0, vg->nx, vg->voxel_x, vg->offset_x);
  const double y0 = ctr__voxel_coord(0, vg->ny, vg->voxel_y, vg->offset_y);
  const double zs = ctr__voxel_coord(z0, vg->nz, vg->voxel_z, vg->offset_z);
  ctr__helix_fdk hx;
  const int helix = ctr__geometry_helix(g, &hx);
  bv->n = n;
  bv->first = (int)layer;
  for (int k = 0; k < n; k++) {
    const double *P = g->views[idx ? idx[k] : first + k].P;
    bv->hz[k] = helix ? ctr__helix_arg(g->views[idx ? idx[k] : first + k].src[2], zs, hx.kz) : 0.0;
    const double sc = alpha ? alpha[k] : 1.0;
    ctr__cyl_view c;
    if (ctr__geometry_cyl_view(g, idx ? idx[k] : first + k, &c)) { /* bp_kernel<..., CYL>'s */
      const double t = texture ? 0.5 : 0.0; /* texel centres sit at +0.5 */
      const double m[12] = {c.d - x0 * c.ct - y0 * c.st, -vg->voxel_x * c.ct, -vg->voxel_y * c.st,
                            -x0 * c.st + y0 * c.ct,      -vg->voxel_x * c.st, vg->voxel_y * c.ct,
                            c.u0 + t, c.fu, c.v0 + t, c.fv * (zs - c.zs), c.fv * vg->voxel_z,
                            c.d * c.d / (sc * sc)};
      for (int q = 0; q < 12; q++) {
        bv->m[k][q] = (float)m[q];
        bv->md[k][q] = m[q];
      }
      continue;
    }
    double row[3][4];
    for (int r = 0; r < 3; r++) {
      const double *p = P + 4 * r;
      row[r][0] = sc * (p[0] * x0 + p[1] * y0 + p[2] * zs + p[3]);
      row[r][1] = sc * p[0] * vg->voxel_x;
      row[r][2] = sc * p[1] * vg->voxel_y;
      row[r][3] = sc * p[2] * vg->voxel_z;
    }
    if (texture) /* u + 0.5 = (a + 0.5 c) / c: texel centres sit at +0.5 */
      for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) row[r][q] += 0.5 * row[2][q];
    for (int r = 0; r < 3; r++)
      for (int q = 0; q < 4; q++) {
        bv->m[k][4 * r + q] = (float)row[r][q];
        bv->md[k][4 * r + q] = row[r][q];
      }
  }
}
