/* Layout of filtered views resident on the device (layered textures or
 * zero-padded global memory, per backprojection variant), their
 * backprojection, configuration defaults, and setup helpers shared by the
 * FDK pipeline and the incremental backprojector. */
#include <stdio.h>
#include <stdlib.h>
#include "conebeam/cuda/views_layout.cuh"
#include "conebeam/cuda/bp_general.cuh"
#include "conebeam/cuda/bp_alu.cuh"
#include "gpu/gpu_buffers.h"

#include <math.h>
#include <string.h>


/* Tuned defaults (the kernel sweep of bench/NOTES.md): texture kernels
 * like long warps along x, the exact kernels' scattered loads like 8x8
 * tiles. */
#define DEFAULT_VIEWS_PER_LAUNCH 64
#define DEFAULT_TEX_SLICES 16
#define DEFAULT_TEX_BLOCK_X 32
#define DEFAULT_TEX_BLOCK_Y 4
#define DEFAULT_EXACT_SLICES 8
#define DEFAULT_EXACT_BLOCK_X 8
#define DEFAULT_EXACT_BLOCK_Y 8
/* The general kernel: 16-slice runs in 32 x 4 blocks (32 x 8 for launches of
 * sparse views, chosen per launch: bp_general.cu; bench/NOTES.md, issue 7). */
#define DEFAULT_GENERAL_SLICES 16
#define DEFAULT_GENERAL_BLOCK_X 32
#define DEFAULT_GENERAL_BLOCK_Y 4
/* The ALU kernel (bp_alu.cuh): 16-slice runs in its fixed 16 x 16 tile; off
 * by default (ctr_tuning.bp_alu = 0) until the GPU measurements of bench/NOTES.md,
 * "Cone-beam ALU backprojection (issue 48 item 3)", say whether it beats exact-pair. */
#define DEFAULT_ALU_SLICES 16
#define DEFAULT_ALU 0


extern "C" ctr__bp_config ctr__bp_config_resolve(const ctr_geometry *g, const ctr_fdk_options *o,
                                                 const ctr__bp_config *req) {
  ctr__bp_config c = {CTR__BP_AUTO, 0, 0, 0, 0, 0};
  if (req) c = *req;
  const int pair_ok = ctr__bp_pair_possible(g, o->z0, o->nz);
  if (c.variant == CTR__BP_AUTO) {
    /* The GPU's default is texture interpolation (docs/cuda.md). */
    switch (o->interp) {
      case CTR_INTERP_EXACT: c.variant = pair_ok ? CTR__BP_EXACT_PAIR : CTR__BP_EXACT; break;
      case CTR_INTERP_PRECISE:
        /* non-circular orbits: the general kernel (one reciprocal per update
         * either way, and it skips runs outside the detector) */
        c.variant = pair_ok                        ? CTR__BP_PRECISE_PAIR
                    : !ctr_geometry_is_circular(g) ? CTR__BP_PRECISE_GENERAL
                                                   : CTR__BP_PRECISE;
        break;
      default: c.variant = pair_ok ? CTR__BP_TEX_PAIR_HALF : CTR__BP_TEX; break;
    }
  }
  if (ctr__is_pair(c.variant) && !pair_ok)
    c.variant = c.variant == CTR__BP_EXACT_PAIR     ? CTR__BP_EXACT
                : c.variant == CTR__BP_PRECISE_PAIR ? CTR__BP_PRECISE
                                                    : CTR__BP_TEX;
  if (c.variant == CTR__BP_PRECISE_GENERAL && !ctr__bpg_possible(g, o->z0, o->nz))
    c.variant = CTR__BP_PRECISE;
  /* The ALU kernel: exact interpolation on an orbit whose u and depth do not
   * change along z (its columns' constants), over a flat detector; asked for
   * elsewhere, the exact kernel (the same interpolation from global memory). */
  const int alu_ok = ctr_geometry_is_circular(g) && !g->curved && !g->helical;
  const int alu_on = c.alu > 0 || (c.alu == 0 && DEFAULT_ALU);
  if (alu_on && alu_ok && (!req || req->variant == CTR__BP_AUTO) &&
      (c.variant == CTR__BP_EXACT || c.variant == CTR__BP_EXACT_PAIR))
    c.variant = CTR__BP_ALU;
  if (c.variant == CTR__BP_ALU && !alu_ok) c.variant = CTR__BP_EXACT;
  /* a helix: the general kernel, the one that weights by the helical window
   * (every interpolation mode; docs/geometry.md, "Helical orbits") */
  if (g->helical) c.variant = CTR__BP_PRECISE_GENERAL;
  /* A cylindrical detector's kernel (bp_kernel with CYL) computes its positions
   * in float: the precise variants run as exact (docs/cuda.md); on a helix,
   * exact always (the window's instances: CYL with HELIX). */
  if (g->curved)
    c.variant = c.variant == CTR__BP_PRECISE_PAIR ? CTR__BP_EXACT_PAIR
                : c.variant == CTR__BP_PRECISE || c.variant == CTR__BP_PRECISE_GENERAL
                    ? CTR__BP_EXACT
                    : c.variant;
  if (c.views_per_launch <= 0) c.views_per_launch = DEFAULT_VIEWS_PER_LAUNCH;
  if (c.views_per_launch > CTR__BP_MAX_VIEWS) c.views_per_launch = CTR__BP_MAX_VIEWS;
  const int tex = c.variant == CTR__BP_TEX || c.variant == CTR__BP_TEX_PAIR ||
                  c.variant == CTR__BP_TEX_PAIR_HALF;
  /* ctr_tuning.bp_slices and bp_block_x/y reach here through req
   * (ctr__bp_config_tuned, bp_config.h); zero fields take the defaults. */
  const int gen = c.variant == CTR__BP_PRECISE_GENERAL;
  if (c.variant == CTR__BP_ALU) { /* its tile is fixed: the block shape does not apply */
    if (c.slices_per_thread <= 0) c.slices_per_thread = DEFAULT_ALU_SLICES;
    c.block_x = c.block_y = CTR__BPA_TILE;
    return c;
  }
  if (gen && c.slices_per_thread <= 0 && c.block_x <= 0 && c.block_y <= 0) c.default_shape = 1;
  if (c.slices_per_thread <= 0)
    c.slices_per_thread = gen ? DEFAULT_GENERAL_SLICES : tex ? DEFAULT_TEX_SLICES : DEFAULT_EXACT_SLICES;
  if (c.block_x <= 0)
    c.block_x = gen ? DEFAULT_GENERAL_BLOCK_X : tex ? DEFAULT_TEX_BLOCK_X : DEFAULT_EXACT_BLOCK_X;
  if (c.block_y <= 0)
    c.block_y = gen ? DEFAULT_GENERAL_BLOCK_Y : tex ? DEFAULT_TEX_BLOCK_Y : DEFAULT_EXACT_BLOCK_Y;
  return c;
}

int ctr__is_pair(ctr__bp_variant v) {
  return v == CTR__BP_TEX_PAIR || v == CTR__BP_TEX_PAIR_HALF || v == CTR__BP_EXACT_PAIR ||
         v == CTR__BP_PRECISE_PAIR;
}
int ctr__is_tex(ctr__bp_variant v) {
  return v == CTR__BP_TEX || v == CTR__BP_TEX_PAIR || v == CTR__BP_TEX_PAIR_HALF;
}
/* Bytes per stored element of a variant's layout. */
/* The non-pair exact variants read each bilinear neighbourhood as one float4
 * (CTR__STORE_QUAD). */
int ctr__is_quad(ctr__bp_variant v) { return v == CTR__BP_EXACT || v == CTR__BP_PRECISE; }

size_t ctr__element_bytes(ctr__bp_variant v) {
  if (ctr__is_quad(v) || v == CTR__BP_PRECISE_GENERAL) return 16;
  return v == CTR__BP_TEX_PAIR_HALF ? 4 : ctr__is_pair(v) ? 8 : 4;
}

/* ------------------------------------------------------------------------- */
/* Resident filtered views                                                   */
/* ------------------------------------------------------------------------- */


/* Row pitch and elements per view of the padded (non-texture) layouts. */
static void padded_layout(const ctr_geometry *g, ctr__bp_variant v, int *pitch,
                          long long *view_stride) {
  if (v == CTR__BP_PRECISE_GENERAL) {
    *pitch = ctr__bpg_pitch(g->nu);
    *view_stride = (long long)*pitch * CTR__BPG_ROWS(g->nv);
  } else {
    *pitch = ctr__padded_pitch(g->nu);
    *view_stride = ctr__padded_size(g->nu, g->nv);
  }
}

size_t ctr__views_bytes(const ctr_geometry *g, ctr__bp_variant v, int64_t slots) {
  const size_t e = ctr__element_bytes(v);
  if (ctr__is_tex(v)) return (size_t)slots * (size_t)(g->nu * g->nv) * e + (size_t)slots * 4;
  int pitch;
  long long view_stride;
  padded_layout(g, v, &pitch, &view_stride);
  return (size_t)slots * (size_t)view_stride * e;
}

void ctr__views_free(ctr__dev_views *dv) {
  for (int a = 0; a < dv->narrays; a++) {
    if (dv->tex[a]) cudaDestroyTextureObject(dv->tex[a]);
    if (dv->surf[a]) cudaDestroySurfaceObject(dv->surf[a]);
    if (dv->arr[a]) cudaFreeArray(dv->arr[a]);
  }
  ctr__gpu_buffer_put(dv->ctx, dv->device, dv->d_wscale, (size_t)dv->nviews * sizeof(float));
  ctr__gpu_buffer_put(dv->ctx, dv->device, dv->d_max, sizeof(unsigned int));
  ctr__gpu_buffer_put(dv->ctx, dv->device, dv->d_pad, dv->pad_bytes);
  memset(dv, 0, sizeof *dv);
}

ctr_status ctr__views_create(const ctr_context *ctx, const ctr_geometry *g, ctr__bp_variant variant,
                             int64_t batch, int64_t slots, int max_layers, ctr__dev_views *dv) {
  ctr_status st = CTR_OK;
  memset(dv, 0, sizeof *dv);
  dv->ctx = ctx;
  {
    const cudaError_t e = cudaGetDevice(&dv->device); /* where the buffers go back */
    if (e != cudaSuccess) return ctr__cuda_status(e, "cudaGetDevice");
  }
  dv->variant = variant;
  dv->pair = ctr__is_pair(variant);
  dv->half = variant == CTR__BP_TEX_PAIR_HALF;
  dv->mirror = dv->pair ? ctr__pair_mirror(g) : 0;
  dv->nu = (int)g->nu;
  dv->nv = (int)g->nv;
  dv->nviews = slots;
  dv->batch = batch;
  const size_t e = ctr__element_bytes(variant);
  if (ctr__is_tex(variant)) {
    dv->layers_per_array = (max_layers / batch) * batch;
    if (dv->layers_per_array < batch)
      CTR_FAIL(CTR_E_UNSUPPORTED, "a batch of %lld views exceeds the %d texture layers",
               (long long)batch, max_layers);
    dv->narrays = (int)((slots + dv->layers_per_array - 1) / dv->layers_per_array);
    if (dv->narrays > MAX_ARRAYS)
      CTR_FAIL(CTR_E_UNSUPPORTED, "%lld views need more than %d layered textures",
               (long long)slots, MAX_ARRAYS);
    const cudaChannelFormatDesc desc = dv->half   ? cudaCreateChannelDescHalf2()
                                       : dv->pair ? cudaCreateChannelDesc<float2>()
                                                  : cudaCreateChannelDesc<float>();
    for (int a = 0; a < dv->narrays; a++) {
      const int64_t layers = a < dv->narrays - 1 ? dv->layers_per_array
                                                 : slots - a * dv->layers_per_array;
      CU(ctr__gpu_retry(ctx, cudaSuccess, [&] {
        return cudaMalloc3DArray(&dv->arr[a], &desc, make_cudaExtent(g->nu, g->nv, layers),
                                 cudaArrayLayered | cudaArraySurfaceLoadStore);
      }));
      cudaResourceDesc res;
      memset(&res, 0, sizeof res);
      res.resType = cudaResourceTypeArray;
      res.res.array.array = dv->arr[a];
      cudaTextureDesc td;
      memset(&td, 0, sizeof td);
      td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeBorder;
      td.filterMode = cudaFilterModeLinear;
      td.readMode = cudaReadModeElementType;
      td.normalizedCoords = 0;
      CU(cudaCreateTextureObject(&dv->tex[a], &res, &td, NULL));
      CU(cudaCreateSurfaceObject(&dv->surf[a], &res));
    }
    if (dv->half) {
      GPU_GET(ctx, dv->d_wscale, (size_t)slots * sizeof(float), "view scales");
      GPU_GET(ctx, dv->d_max, sizeof(unsigned int), "batch maximum");
    }
  } else {
    padded_layout(g, variant, &dv->pitch, &dv->view_stride);
    dv->pad_bytes = (size_t)(slots * dv->view_stride) * e;
    GPU_GET(ctx, dv->d_pad, dv->pad_bytes, "resident filtered views");
    CU(cudaMemset(dv->d_pad, 0, dv->pad_bytes)); /* the zero border (a kept buffer is not) */
  }
cleanup:
  if (st != CTR_OK) ctr__views_free(dv);
  return st;
}

/* Elements between a padded view's start and its pixel (0, 0). */
static int64_t ctr__views_origin(const ctr__dev_views *dv) {
  return dv->variant == CTR__BP_PRECISE_GENERAL ? CTR__BPG_ORIGIN(dv->pitch)
                                                : ctr__padded_origin(dv->nu);
}
/* Where the filter writes views [v0, v0 + batch). */
ctr__gpu_store ctr__views_target(const ctr__dev_views *dv, int64_t v0) {
  ctr__gpu_store s;
  memset(&s, 0, sizeof s);
  s.pair = dv->pair;
  s.mirror = dv->mirror;
  if (ctr__is_tex(dv->variant)) {
    s.kind = CTR__STORE_SURFACE;
    s.surf = dv->surf[v0 / dv->layers_per_array];
    s.layer0 = (int)(v0 % dv->layers_per_array);
    s.half = dv->half;
    s.wscale = dv->half ? dv->d_wscale + v0 : NULL;
    s.d_max = dv->d_max;
  } else {
    const size_t e = ctr__element_bytes(dv->variant);
    s.kind = dv->variant == CTR__BP_PRECISE_GENERAL ? CTR__STORE_COEF
             : ctr__is_quad(dv->variant)            ? CTR__STORE_QUAD
                                                    : CTR__STORE_LINEAR;
    s.base = (char *)dv->d_pad + (size_t)(v0 * dv->view_stride + ctr__views_origin(dv)) * e;
    s.pitch = dv->pitch;
    s.view_stride = dv->view_stride;
  }
  return s;
}

/* Backprojects n (<= CTR__BP_MAX_VIEWS) views held in slots [slot0, slot0 + n)
 * (inside one array) into slices [k_begin, k_end) of the grid (pairs: of the
 * lower half, with their mirrors). View k is idx[k] (idx NULL: slot0 + k);
 * alpha[k] (NULL: 1) scales its matrix: weight x 1 / alpha^2. */
ctr_status ctr__views_backproject(const ctr_geometry *g, const ctr__dev_views *dv,
                                  const ctr__bp_config *cfg, const int64_t *idx,
                                  const double *alpha, int64_t slot0, int64_t n, float *d_vol,
                                  int64_t z0, int64_t nzs, int64_t k_begin, int64_t k_end,
                                  cudaStream_t s) {
  ctr__bp_args a;
  memset(&a, 0, sizeof a);
  const int tex = ctr__is_tex(dv->variant);
  int64_t first = slot0;
  if (tex) {
    a.tex = dv->tex[slot0 / dv->layers_per_array];
    first = slot0 % dv->layers_per_array;
    if (dv->half) a.wscale = dv->d_wscale + (slot0 - first);
  } else {
    const size_t e = ctr__element_bytes(dv->variant);
    a.pad = (const char *)dv->d_pad + (size_t)ctr__views_origin(dv) * e;
    a.view_stride = dv->view_stride;
    a.pitch = dv->pitch;
  }
  a.nu = dv->nu;
  a.nv = dv->nv;
  a.vol = d_vol;
  a.nx = (int)g->vol.nx;
  a.ny = (int)g->vol.ny;
  a.nzs = (int)nzs;
  a.k_begin = (int)k_begin;
  a.nz_thread = (int)k_end;
  a.slice = (long long)g->vol.nx * g->vol.ny;
  ctr__helix_fdk hx;
  if (ctr__geometry_helix(g, &hx)) { /* the general (or curved exact) kernel's window */
    a.helix = 1;
    a.helix_s = (float)hx.s;
    a.helix_dk = (float)(hx.kz * g->vol.voxel_z);
  }
  ctr__bp_views bv;
  ctr__bp_views_fill(g, idx, slot0, (int)n, first, z0, tex, alpha, &bv);
  if (g->curved) return ctr__bp_launch_cyl(cfg, &a, &bv, s);
  if (dv->variant == CTR__BP_PRECISE_GENERAL) return ctr__bpg_launch(cfg, &a, &bv, s);
  if (dv->variant == CTR__BP_ALU) {
    if (!ctr_geometry_is_circular(g) || a.helix)
      CTR_FAIL(CTR_E_INTERNAL, "the alu backprojection kernel on a non-circular orbit "
               "(ctr__bp_config_resolve chooses exact there)");
    return ctr__bpa_launch(cfg, &a, &bv, s);
  }
  return ctr__bp_launch(cfg, ctr_geometry_is_circular(g), &a, &bv, s);
}

/* Slices the grid covers: all, or the lower half (with mirrors) for pairs. */
int64_t ctr__grid_slices(const ctr__dev_views *dv, int64_t nzs) { return dv->pair ? (nzs + 1) / 2 : nzs; }

/* Backprojects views [v0, v0 + n), held in the slots of the same numbers, in
 * launches of at most views_per_launch views. */
ctr_status ctr__backproject_batch(const ctr_geometry *g, const ctr__dev_views *dv,
                                  const ctr__bp_config *cfg, int64_t v0, int64_t n, float *d_vol,
                                  int64_t z0, int64_t nzs, int64_t k_begin, int64_t k_end,
                                  cudaStream_t s) {
  for (int64_t k = 0; k < n; k += cfg->views_per_launch) {
    const int64_t m = n - k < cfg->views_per_launch ? n - k : cfg->views_per_launch;
    CTR_CHECK(ctr__views_backproject(g, dv, cfg, NULL, NULL, v0 + k, m, d_vol, z0, nzs, k_begin,
                                     k_end, s));
  }
  return CTR_OK;
}

/* ------------------------------------------------------------------------- */
/* Setup shared by the entry points                                          */
/* ------------------------------------------------------------------------- */

ctr_status ctr__device_setup(const ctr_context *ctx, int device, cudaDeviceProp *prop,
                             uint64_t *budget) {
  ctr_status st = CTR_OK;
  *budget = 0;
  CU(cudaSetDevice(device));
  CU(cudaGetDeviceProperties(prop, device));
  CTR_CHECK_GOTO(st, ctr__gpu_budget_detect(ctx, device, budget));
cleanup:
  return st;
}

ctr_status ctr__check_memory(size_t need, uint64_t budget, const char *what) {
  if ((uint64_t)need <= budget) return CTR_OK;
  char a[32], b[32];
  CTR_FAIL(CTR_E_DEVICE_OUT_OF_MEMORY,
           "%s needs %s of GPU memory but the GPU's budget is %s (free memory and the context's "
           "kept buffers less 1 GiB): it holds the whole volume on the GPU; reconstruct a smaller "
           "volume, or use ctr_fdk / ctr_fdk_stream, whose streamed pipeline splits the volume "
           "into subvolumes that fit",
           what, ctr__format_bytes((double)need, a, sizeof a),
           ctr__format_bytes((double)budget, b, sizeof b));
}
