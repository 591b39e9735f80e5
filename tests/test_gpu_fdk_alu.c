/* The shared-memory (ALU) cone-beam backprojection kernel (variant alu,
 * src/conebeam/cuda/bp_alu.cuh) against the double-precision reference and
 * the exact kernel: views past every table limit (2100 views, more than a
 * layered texture's 2048), volumes that are not multiples of its 16 x 16
 * tile, magnifications at which a tile's footprint exceeds its cache (the
 * global-memory path) or does so for some views only; which kernel a
 * geometry gets (non-circular orbits, curved detectors and helices run the
 * exact kernels) and ctr_tuning.bp_alu through FDK and the incremental
 * backprojector. On white noise (the worst case for interpolation error):
 * relative RMS 1e-5 against the double reference at case A's sampling
 * (test_gpu_fdk's bound for exact interpolation), and no worse than the exact
 * kernel's own error where magnification takes that past 1e-5 (16 pixels a
 * voxel: ~2e-5 for both); against the exact kernel, whose positions and
 * blend it computes but for v's one-FMA step a slice, 5e-6 (a CPU emulation
 * of the kernel's arithmetic gave 0.3-2.4e-6). Exits 77 (skipped) without a
 * usable GPU. */
#include "harness.h"

#if CTR_HAVE_CUDA
#include "conebeam/cpu/backproject.h"
#include "conebeam/cuda/bp_config.h"

/* CTR_TEST_QUICK=1 (for compute-sanitizer): one launch shape per geometry. */
static int quick;

/* A circular orbit with detector and volume offsets (no mirror symmetry). */
static ctr_geometry *orbit(int64_t nx, int64_t ny, int64_t nz, int64_t nu, int64_t nv,
                           int64_t nviews, double sid, double sdd, double pixel) {
  ctr_circular_params p =
      th_circular_params(sid, sdd, nu, nv, pixel, pixel, nviews, CTR_DETECTOR_FLAT);
  p.angle_start_deg = th_uniform(0, 360);
  p.offset_u = th_uniform(-2, 2);
  p.offset_v = th_uniform(-2, 2);
  ctr_volume_geometry vol = {nx, ny, nz, 1.0, 1.0, 1.0, th_uniform(-1, 1), th_uniform(-1, 1),
                             th_uniform(-1, 1)};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

/* Backprojects views of white noise (the worst case for interpolation
 * error) with the alu kernel at several launch shapes and with the exact
 * kernel; checks both against the double reference (bound: 1e-5, or 1.2 x
 * the exact kernel's error when `relative`) and against each other. */
static void check_geometry(const char *what, ctr_geometry *g, int relative) {
  if (!g) return;
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  const ctr_volume_geometry vg = ctr_geometry_get_volume(g);
  const int64_t nvox = vg.nx * vg.ny * vg.nz;
  float *filt = malloc(sizeof(float) * nu * nv * nviews);
  for (int64_t i = 0; i < nu * nv * nviews; i++) filt[i] = (float)th_uniform(-1, 1);
  double *ref = calloc(nvox, sizeof(double));
  ctr__bp_reference(g, 0, nviews, filt, ref, 0, vg.nz);
  float *exact = malloc(sizeof(float) * nvox), *out = malloc(sizeof(float) * nvox);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = vg.nz;
  const ctr__bp_config ce = {CTR__BP_EXACT, 64, 8, 8, 8, 0, 0, 0};
  CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &ce, filt, exact, 1, NULL));
  const double ee = th_rel_rms_d(exact, ref, nvox);
  /* N' and Z': whole and partial stages of views, runs of 1 .. 16 slices */
  static const int shapes[][2] = {{64, 16}, {5, 8}, {64, 4}, {33, 2}, {64, 1}};
  for (int si = 0; si < (quick ? 1 : 5); si++) {
    const ctr__bp_config c = {CTR__BP_ALU, shapes[si][0], shapes[si][1], 0, 0, 0, 0, 0};
    const ctr__bp_config r = ctr__bp_config_resolve(g, &o, &c);
    CHECK(r.variant == CTR__BP_ALU && r.slices_per_thread == shapes[si][1]);
    memset(out, 0xff, sizeof(float) * nvox); /* NaN poison: every voxel must be written */
    CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, filt, out, 1, NULL));
    const double e = th_rel_rms_d(out, ref, nvox), d = th_rel_rms_f(out, exact, nvox);
    if (si == 0)
      printf("%s (%lld views, %lld x %lld x %lld): alu vs reference %.2e, exact vs reference "
             "%.2e, alu vs exact %.2e\n", what, (long long)nviews, (long long)vg.nx,
             (long long)vg.ny, (long long)vg.nz, e, ee, d);
    const double bound = relative ? 1.2 * ee + 1e-6 : 1e-5;
    CHECK_MSG(e < bound, "%s: alu N'=%d Z'=%d vs reference: relative RMS %g (bound %g)", what,
              shapes[si][0], shapes[si][1], e, bound);
    CHECK_MSG(d < 5e-6, "%s: alu N'=%d Z'=%d vs exact: relative RMS %g", what, shapes[si][0],
              shapes[si][1], d);
  }
  if (!relative) CHECK_MSG(ee < 1e-5, "%s: exact vs reference %g", what, ee);
  free(filt);
  free(ref);
  free(exact);
  free(out);
  ctr_geometry_free(g);
}

/* Case A's sampling (about 1.5 detector pixels per voxel) past 2048 views,
 * a volume of partial tiles (37 x 29, 23 slices) that overflows the detector
 * (zeros beyond its edges); a footprint larger than the cache at every
 * view (16 pixels per voxel: the global path), and one that fits at some
 * angles only (about 3.3 pixels per voxel: a tile sees 53 to 75 columns). */
static void test_geometries(void) {
  check_geometry("2100 views", orbit(37, 29, 23, 56, 40, 2100, 100, 150, 1.0), 0);
  check_geometry("footprint beyond the cache", orbit(13, 11, 9, 224, 224, 24, 60, 240, 0.25), 1);
  check_geometry("footprint beyond the cache at some views",
                 orbit(40, 34, 20, 176, 96, 36, 100, 200, 0.6), 1);
}

/* Which kernel a geometry gets: alu asked for on a tilted orbit (c and u
 * change along z), over a curved detector or on a helix runs the exact
 * kernels; ctr_tuning.bp_alu turns exact interpolation's choice to alu on
 * circular orbits only, and a variant asked for by name stays. */
static void test_choice(void) {
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  ctr_geometry *g = orbit(20, 20, 10, 40, 30, 12, 100, 150, 1.0);
  if (!g) return;
  o.nz = 10;
  o.interp = CTR_INTERP_EXACT;
  ctr__bp_config c = {CTR__BP_AUTO, 0, 0, 0, 0, 0, 0, 1};
  ctr__bp_config r = ctr__bp_config_resolve(g, &o, &c);
  CHECK_MSG(r.variant == CTR__BP_ALU && r.block_x == 16 && r.block_y == 16 &&
                r.slices_per_thread == 16,
            "bp_alu on, exact: %s %dx%d Z'=%d", ctr__bp_variant_name(r.variant), r.block_x,
            r.block_y, r.slices_per_thread);
  c.alu = -1;
  r = ctr__bp_config_resolve(g, &o, &c);
  CHECK(r.variant == CTR__BP_EXACT || r.variant == CTR__BP_EXACT_PAIR);
  c.alu = 0; /* the default: the exact kernels until measured (docs/tuning.md) */
  r = ctr__bp_config_resolve(g, &o, &c);
  CHECK(r.variant == CTR__BP_EXACT || r.variant == CTR__BP_EXACT_PAIR);
  c.alu = 1;
  o.interp = CTR_INTERP_TEXTURE; /* another interpolation: unchanged */
  r = ctr__bp_config_resolve(g, &o, &c);
  CHECK(r.variant == CTR__BP_TEX || r.variant == CTR__BP_TEX_PAIR_HALF);
  o.interp = CTR_INTERP_EXACT;
  c.variant = CTR__BP_EXACT; /* by name: stays */
  CHECK(ctr__bp_config_resolve(g, &o, &c).variant == CTR__BP_EXACT);
  /* through the context's tuning table */
  ctr_tuning t;
  CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
  CHECK_OK(ctr_tuning_set(&t, "bp_alu", "on"));
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.tuning = &t;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  const ctr__bp_config tuned = ctr__bp_config_tuned(ctx, NULL);
  CHECK(tuned.alu == 1);
  CHECK(ctr__bp_config_resolve(g, &o, &tuned).variant == CTR__BP_ALU);
  /* a tilted orbit: exact */
  ctr_geometry *h = NULL;
  {
    double *M = malloc(sizeof(double) * 12 * 12);
    for (int64_t i = 0; i < 12; i++) {
      double P[12];
      ctr_geometry_get_matrix(g, i, P);
      for (int q = 0; q < 12; q++) M[12 * i + q] = P[q];
      M[12 * i + 10] += 0.05 * P[8]; /* depth changes along z */
    }
    const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
    CHECK_OK(ctr_geometry_create_matrices(40, 30, 0, 0, 12, M, &vol, &h));
    free(M);
  }
  if (h) {
    CHECK(!ctr_geometry_is_circular(h));
    CHECK(ctr__bp_config_resolve(h, &o, &tuned).variant == CTR__BP_EXACT);
    const ctr__bp_config named = {CTR__BP_ALU, 0, 0, 0, 0, 0, 0, 0};
    CHECK(ctr__bp_config_resolve(h, &o, &named).variant == CTR__BP_EXACT);
    ctr_geometry_free(h);
  }
  /* a cylindrical detector: exact */
  const ctr_circular_params p = th_circular_params(100, 150, 40, 30, 1, 1, 12, CTR_DETECTOR_CYLINDRICAL);
  ctr_volume_geometry vol = {20, 20, 10, 1, 1, 1, 0, 0, 0};
  ctr_geometry *cyl = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &cyl));
  if (cyl) {
    const ctr__bp_variant v = ctr__bp_config_resolve(cyl, &o, &tuned).variant;
    CHECK_MSG(v == CTR__BP_EXACT || v == CTR__BP_EXACT_PAIR, "curved: %s", ctr__bp_variant_name(v));
    ctr_geometry_free(cyl);
  }
  ctr_context_free(ctx);
  ctr_geometry_free(g);
}

/* FDK and the incremental backprojector with bp_alu on: the exact kernels'
 * volume to float rounding (3e-6), whole and as a slab; the backprojector against
 * the weighted double reference. */
static void test_pipeline(void) {
  const int64_t n = 48, det = 80, nviews = 150;
  ctr_geometry *g = orbit(n, n, n, det, det, nviews, 200, 320, 1.2);
  if (!g) return;
  const int64_t np = det * det * nviews, nvox = n * n * n;
  float *proj = malloc(sizeof(float) * np);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.4 * n, 1.0, &ph));
  int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  float *a = malloc(sizeof(float) * nvox), *b = malloc(sizeof(float) * nvox);
  ctr_array aa = ctr_array_make(a, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ba = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_context *ctx[2] = {NULL, NULL};
  static const char *const onoff[2] = {"off", "on"};
  for (int k = 0; k < 2; k++) {
    ctr_tuning t;
    CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
    CHECK_OK(ctr_tuning_set(&t, "bp_alu", onoff[k]));
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.device = CTR_DEVICE_CUDA;
    co.tuning = &t;
    CHECK_OK(ctr_context_create(&co, &ctx[k]));
  }
  if (ctx[0] && ctx[1]) {
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.interp = CTR_INTERP_EXACT;
    CHECK_OK(ctr_fdk(ctx[0], g, &o, &pa, &aa));
    memset(b, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr_fdk(ctx[1], g, &o, &pa, &ba));
    double e = th_rel_rms_f(b, a, nvox);
    printf("FDK exact, bp_alu on vs off: relative RMS %.2e\n", e);
    CHECK_MSG(e < 3e-6, "FDK bp_alu on vs off: %g", e);
    o.z0 = 7;
    o.nz = 23; /* a slab */
    int64_t sd[3] = {n, n, 23};
    ctr_array sa = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, sd);
    CHECK_OK(ctr_fdk(ctx[1], g, &o, &pa, &sa));
    e = th_rel_rms_f(b, a + 7 * n * n, 23 * n * n);
    CHECK_MSG(e < 3e-6, "FDK slab, bp_alu on vs the whole volume off: %g", e);
    /* the incremental backprojector: weighted views in any order */
    enum { NB = 40 };
    int64_t idx[NB];
    const float *img[NB];
    float wf[NB];
    double w[NB];
    for (int k = 0; k < NB; k++) {
      idx[k] = (k * 37) % nviews;
      img[k] = proj + idx[k] * det * det;
      wf[k] = (float)th_uniform(0.5, 2.0);
      w[k] = wf[k];
    }
    double *ref = calloc(nvox, sizeof(double));
    CHECK_OK(ctr_fdk_backproject_reference(NULL, g, NB, idx, img, w, ref));
    ctr_fdk_options bo = CTR_FDK_OPTIONS_INIT;
    bo.interp = CTR_INTERP_EXACT;
    ctr_backprojector *bp = NULL;
    CHECK_OK(ctr_backprojector_create(ctx[1], g, &bo, &bp));
    if (bp) {
      CHECK_OK(ctr_backprojector_add(bp, 15, idx, img, wf));
      CHECK_OK(ctr_backprojector_add(bp, NB - 15, idx + 15, img + 15, wf + 15));
      CHECK_OK(ctr_backprojector_read(bp, b));
      e = th_rel_rms_d(b, ref, nvox);
      printf("backprojector, bp_alu on: vs reference %.2e\n", e);
      CHECK_MSG(e < 1e-5, "backprojector bp_alu on vs reference %g", e);
      ctr_backprojector_free(bp);
    }
    free(ref);
  }
  ctr_context_free(ctx[0]);
  ctr_context_free(ctx[1]);
  ctr_phantom_free(ph);
  free(proj);
  free(a);
  free(b);
  ctr_geometry_free(g);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_fdk_alu: SKIPPED (no usable GPU)\n");
    return 77;
  }
  quick = getenv("CTR_TEST_QUICK") != NULL;
  test_choice();
  test_geometries();
  test_pipeline();
  return th_finish("test_gpu_fdk_alu");
}
#else
int main(void) {
  printf("test_gpu_fdk_alu: SKIPPED (built without CUDA)\n");
  return 77;
}
#endif
