/* CUDA FDK against the CPU: the GPU filter against the CPU filter, every
 * backprojection variant and configuration against the double-precision
 * reference on random geometries, end-to-end FDK against the CPU backend
 * (pinned and pageable memory, uint16, slabs), and GPU out-of-memory.
 * Exits 77 (skipped) without a usable GPU. */
#include "harness.h"

#if CTR_HAVE_CUDA
#include "conebeam/cpu/backproject.h"
#include "conebeam/cuda/bp_config.h"

/* CTR_TEST_QUICK=1 (for compute-sanitizer): one configuration per variant. */
static int quick;

static double sq(double x) { return x * x; }

/* Turns the world by `deg` about x and then about y under every matrix of
 * *g: the orbit's axis tilts, so c and u depend on z (as on a C-arm). */
static void tilt_geometry(ctr_geometry **g, double deg) {
  if (!*g) return;
  const int64_t n = ctr_geometry_get_view_count(*g);
  int64_t nu, nv;
  ctr_geometry_get_detector(*g, &nu, &nv, NULL, NULL);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(*g);
  const double t = deg * 3.14159265358979323846 / 180.0, c = cos(t), s = sin(t);
  /* R = Ry Rx, world point x -> R x */
  const double R[3][3] = {{c, s * s, s * c}, {0, c, -s}, {-s, c * s, c * c}};
  double *M = malloc(sizeof(double) * 12 * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double P[12];
    ctr_geometry_get_matrix(*g, i, P);
    for (int r = 0; r < 3; r++) {
      for (int q = 0; q < 3; q++)
        M[12 * i + 4 * r + q] = P[4 * r] * R[0][q] + P[4 * r + 1] * R[1][q] + P[4 * r + 2] * R[2][q];
      M[12 * i + 4 * r + 3] = P[4 * r + 3];
    }
  }
  ctr_geometry *h = NULL;
  CHECK_OK(ctr_geometry_create_matrices(nu, nv, 0, 0, n, M, &vol, &h));
  free(M);
  ctr_geometry_free(*g);
  *g = h;
}

/* A random geometry: circular (optionally symmetric so the mirrored-pair
 * kernels apply), perturbed into arbitrary matrices (kind 3) and tilted as
 * well (kind 4: z enters every row). */
static ctr_geometry *random_geometry(int kind, int64_t nx, int64_t ny, int64_t nz, int64_t nu,
                                     int64_t nv, int64_t nviews) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = th_uniform(80, 140);
  p.sdd = p.sid * th_uniform(1.3, 2.0);
  p.nu = nu;
  p.nv = nv;
  p.du = th_uniform(0.9, 1.5);
  p.dv = th_uniform(0.9, 1.5);
  p.nviews = nviews;
  p.angle_start_deg = th_uniform(0, 360);
  p.angle_range_deg = kind == 2 ? th_uniform(200, 260) : 360;
  ctr_volume_geometry vol = {nx, ny, nz, th_uniform(0.8, 1.2), th_uniform(0.8, 1.2),
                             th_uniform(0.8, 1.2), 0, 0, 0};
  if (kind != 0) { /* asymmetric: detector and volume offsets */
    p.offset_u = th_uniform(-4, 4);
    p.offset_v = th_uniform(-4, 4);
    vol.offset_x = th_uniform(-2, 2);
    vol.offset_z = th_uniform(-2, 2);
  }
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (kind >= 3) th_perturb_geometry(&g, 0.02); /* arbitrary matrices: skewed */
  if (kind == 4) tilt_geometry(&g, th_uniform(3, 8));
  if (g) CHECK(ctr_geometry_is_circular(g) == (kind < 4));
  return g;
}

/* The GPU filter computes the CPU filter's sums in another order (cuFFT vs
 * FFTW): agreement to float rounding, ~1e-7 relative; 1e-5 allows for the
 * longest rows. Full and short (Parker) scans, detector offsets. */
static void test_filter(void) {
  for (int kind = 1; kind <= 2; kind++) {
    ctr_geometry *g = random_geometry(kind, 16, 16, 16, 97, 41, 37);
    if (!g) continue;
    const int64_t n = 37 * 97 * 41;
    float *in = malloc(sizeof(float) * n), *cpu = malloc(sizeof(float) * n), *gpu = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) in[i] = cpu[i] = (float)th_uniform(0, 3);
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.window = CTR_WINDOW_HAMMING;
    o.cutoff = 0.8;
    CHECK_OK(ctr_fdk_filter(NULL, g, &o, 0, 37, cpu));
    CHECK_OK(ctr__cuda_fdk_filter(NULL, g, &o, 0, 37, in, gpu));
    const double e = th_rel_rms_f(gpu, cpu, n);
    printf("filter kind %d: GPU vs CPU relative RMS %.2e\n", kind, e);
    CHECK_MSG(e < 1e-5, "GPU filter differs from the CPU filter: %g", e);
    free(in);
    free(cpu);
    free(gpu);
    ctr_geometry_free(g);
  }
}

/* Ramp-filtered projections of random ellipsoids seen by g: the data FDK
 * backprojects. */
static float *filtered_phantom(ctr_geometry *g) {
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  const ctr_volume_geometry vg = ctr_geometry_get_volume(g);
  ctr_ellipsoid e[6];
  for (int k = 0; k < 6; k++) {
    const double r = 0.3 * vg.nx * vg.voxel_x;
    e[k] = (ctr_ellipsoid){th_uniform(-1, 1), vg.offset_x + th_uniform(-r, r),
                           vg.offset_y + th_uniform(-r, r), vg.offset_z + th_uniform(-r, r),
                           th_uniform(1.5, 6), th_uniform(1.5, 6), th_uniform(1.5, 6),
                           th_uniform(0, 180), th_uniform(0, 180), 0};
  }
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(e, 6, &ph));
  float *p = malloc(sizeof(float) * nu * nv * nviews);
  int64_t pd[3] = {nu, nv, nviews};
  ctr_array pa = ctr_array_make(p, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  /* The backprojection tests' geometries may overflow a narrow detector,
   * which the offset-weight rule would take for a half fan: plain rows here. */
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.offset_weight = CTR_OFFSET_WEIGHT_OFF;
  CHECK_OK(ctr_fdk_filter(NULL, g, &o, 0, nviews, p));
  ctr_phantom_free(ph);
  return p;
}

/* Every variant and a spread of launch configurations against the double
 * reference, on filtered projections of random ellipsoids. Exact modes: fp32
 * positions and sums, ~3e-6 (the bound is 1e-5). Texture modes: the
 * hardware's 8-bit interpolation weights, bound 2e-3 (half2 storage adds
 * ~2^-12 relative rounding). Precise modes (positions in double): 1e-6.
 * White noise, the worst case for interpolation
 * error, is reported once per geometry for the record. */
static void test_variants(void) {
  static const ctr__bp_variant variants[] = {CTR__BP_TEX,     CTR__BP_TEX_PAIR,
                                             CTR__BP_TEX_PAIR_HALF, CTR__BP_EXACT,
                                             CTR__BP_EXACT_PAIR, CTR__BP_PRECISE,
                                             CTR__BP_PRECISE_PAIR, CTR__BP_PRECISE_GENERAL,
                                             CTR__BP_ALU};
  enum { NVARIANTS = sizeof variants / sizeof variants[0] };
  static const int configs[][4] = {{32, 8, 16, 16}, {8, 1, 32, 8}, {64, 16, 16, 16},
                                   {16, 4, 32, 4}, {5, 2, 8, 8}};
  for (int kind = 0; kind <= 4; kind += quick ? 4 : 1) {
    const int64_t nx = 23, ny = 19, nz = kind == 0 ? 21 : 18, nu = 61, nv = 50, nviews = 45;
    ctr_geometry *g = random_geometry(kind, nx, ny, nz, nu, kind == 0 ? 51 : nv, nviews);
    if (!g) continue;
    int64_t du, dvv;
    ctr_geometry_get_detector(g, &du, &dvv, NULL, NULL);
    const int64_t np = du * dvv * nviews, nvox = nx * ny * nz;
    float *filt = filtered_phantom(g);
    float *noise = malloc(sizeof(float) * np);
    for (int64_t i = 0; i < np; i++) noise[i] = (float)th_uniform(-1, 1);
    double *ref = calloc(nvox, sizeof(double));
    ctr__bp_reference(g, 0, nviews, filt, ref, 0, nz);
    float *out = malloc(sizeof(float) * nvox);
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.nz = nz;
    printf("geometry kind %d: pair kernels %s\n", kind,
           ctr__bp_pair_possible(g, 0, nz) ? "apply" : "do not apply");
    CHECK(ctr__bp_pair_possible(g, 0, nz) == (kind == 0));
    {
      double *nref = calloc(nvox, sizeof(double));
      float *nout = malloc(sizeof(float) * nvox);
      ctr__bp_reference(g, 0, nviews, noise, nref, 0, nz);
      ctr__bp_config c = {CTR__BP_TEX, 32, 8, 16, 16, 0, 0, 0};
      CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, noise, nout, 1, NULL));
      printf("  white noise, tex: relative RMS %.2e (worst case, not bounded)\n",
             th_rel_rms_d(nout, nref, nvox));
      free(nref);
      free(nout);
    }
    for (int vi = 0; vi < NVARIANTS; vi++) {
      for (int ci = 0; ci < (quick ? 1 : 5); ci++) {
        ctr__bp_config c = {variants[vi], configs[ci][0], configs[ci][1], configs[ci][2],
                            configs[ci][3], 0, 0, 0};
        const ctr__bp_config r = ctr__bp_config_resolve(g, &o, &c);
        /* alu: orbits with u and c constant along z (kinds 0-3), else exact */
        if (variants[vi] == CTR__BP_ALU)
          CHECK(r.variant == (kind < 4 ? CTR__BP_ALU : CTR__BP_EXACT));
        memset(out, 0xff, sizeof(float) * nvox); /* NaN poison: every voxel must be written */
        double ms = 0;
        CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, filt, out, 1, &ms));
        const double e = th_rel_rms_d(out, ref, nvox);
        const int tex = r.variant == CTR__BP_TEX || r.variant == CTR__BP_TEX_PAIR ||
                        r.variant == CTR__BP_TEX_PAIR_HALF;
        const int precise = r.variant == CTR__BP_PRECISE || r.variant == CTR__BP_PRECISE_PAIR ||
                            r.variant == CTR__BP_PRECISE_GENERAL;
        /* precise: double positions, float blend and sums: ~1e-7 */
        const double bound = tex ? 2e-3 : precise ? 1e-6 : 1e-5;
        if (ci == 0)
          printf("  %-10s N'=%2d Z'=%2d %2dx%-2d: relative RMS %.2e (bound %.0e)\n",
                 ctr__bp_variant_name(r.variant), c.views_per_launch, c.slices_per_thread,
                 c.block_x, c.block_y, e, bound);
        CHECK_MSG(e < bound, "kind %d %s N'=%d Z'=%d block %dx%d: relative RMS %g", kind,
                  ctr__bp_variant_name(r.variant), c.views_per_launch, c.slices_per_thread,
                  c.block_x, c.block_y, e);
      }
    }
    free(noise);
    free(filt);
    free(ref);
    free(out);
    ctr_geometry_free(g);
  }
}

/* End to end on a Shepp-Logan: the CUDA backend equals the CPU backend to
 * float rounding in exact mode (same filter maths, same interpolation), and
 * gives the same quality against the phantom in texture mode. Pinned and
 * pageable buffers, float32 and uint16 input, a slab. */
static void test_end_to_end(void) {
  const int64_t n = 64, det = 96, nviews = 100; /* 100 views: 4 batches, a partial last one */
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 256;
  p.sdd = 384;
  p.nu = p.nv = det;
  p.du = p.dv = 1.5;
  p.nviews = nviews;
  ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.45 * n, 1.0, &ph));
  if (!g || !ph) return;
  const int64_t np = det * det * nviews, nvox = n * n * n;
  float *proj = ctr_host_alloc(sizeof(float) * np); /* pinned */
  float *proj_pageable = malloc(sizeof(float) * np);
  uint16_t *proj16 = malloc(sizeof(uint16_t) * np);
  float *cpu = malloc(sizeof(float) * nvox), *gpu = ctr_host_alloc(sizeof(float) * nvox);
  float *gpu2 = malloc(sizeof(float) * nvox), *truth = malloc(sizeof(float) * nvox);
  int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array pp = ctr_array_make(proj_pageable, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array p16 = ctr_array_make(proj16, CTR_DTYPE_UINT16, 3, pd);
  ctr_array ta = ctr_array_make(truth, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ca = ctr_array_make(cpu, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ga = ctr_array_make(gpu, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array g2 = ctr_array_make(gpu2, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  CHECK_OK(ctr_phantom_voxelize(NULL, ph, &vol, 2, 0, &ta));
  memcpy(proj_pageable, proj, sizeof(float) * np);
  ctr_context *cctx = NULL, *gctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &cctx));
  co.device = CTR_DEVICE_CUDA;
  CHECK_OK(ctr_context_create(&co, &gctx));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  o.interp = CTR_INTERP_EXACT;
  CHECK_OK(ctr_fdk(cctx, g, &o, &pa, &ca));
  CHECK_OK(ctr_fdk(gctx, g, &o, &pa, &ga));
  double e = th_rel_rms_f(gpu, cpu, nvox);
  printf("end to end exact (pinned): GPU vs CPU relative RMS %.2e\n", e);
  CHECK_MSG(e < 2e-5, "exact GPU FDK vs CPU FDK: %g", e);
  memset(gpu2, 0xff, sizeof(float) * nvox);
  CHECK_OK(ctr_fdk(gctx, g, &o, &pp, &g2)); /* pageable in and out */
  CHECK(memcmp(gpu, gpu2, sizeof(float) * nvox) == 0);
  /* Launch shapes forced through the context's tuning table (slices per
   * thread and blocks of the exact kernels): every voxel's position comes
   * from its own indices, so the volume is the default's, bit for bit. */
  static const char *const shapes[][2] = {{"2", "16x8"}, {"16", "32x4"}, {"1", "8x4"}, {"4", "auto"}};
  for (int si = 0; si < 4; si++) {
    ctr_tuning t;
    CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
    CHECK_OK(ctr_tuning_set(&t, "bp_slices", shapes[si][0]));
    CHECK_OK(ctr_tuning_set(&t, "bp_block", shapes[si][1]));
    ctr_context_options to = co; /* CUDA */
    to.tuning = &t;
    ctr_context *tctx = NULL;
    CHECK_OK(ctr_context_create(&to, &tctx));
    if (!tctx) continue;
    memset(gpu2, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr_fdk(tctx, g, &o, &pa, &g2));
    CHECK_MSG(memcmp(gpu, gpu2, sizeof(float) * nvox) == 0,
              "exact FDK with bp_slices %s, bp_block %s differs from the default's", shapes[si][0],
              shapes[si][1]);
    ctr_context_free(tctx);
  }
  /* uint16 input: the same values as float give the same volume. */
  for (int64_t i = 0; i < np; i++) {
    proj16[i] = (uint16_t)lrint(fmin(65535.0, proj[i] * 500.0));
    proj_pageable[i] = proj16[i];
  }
  CHECK_OK(ctr_fdk(gctx, g, &o, &p16, &ga));
  CHECK_OK(ctr_fdk(gctx, g, &o, &pp, &g2));
  CHECK(memcmp(gpu, gpu2, sizeof(float) * nvox) == 0);
  /* Texture mode: same quality against the phantom as the CPU. */
  o.interp = CTR_INTERP_TEXTURE;
  CHECK_OK(ctr_fdk(gctx, g, &o, &pa, &ga));
  ctr_volume_error ec = CTR_VOLUME_ERROR_INIT, eg = CTR_VOLUME_ERROR_INIT;
  CHECK_OK(ctr_volume_compare(cpu, truth, n, n, n, n / 5, &ec));
  CHECK_OK(ctr_volume_compare(gpu, truth, n, n, n, n / 5, &eg));
  printf("Shepp-Logan RMSE away from edges: CPU %.5f, GPU texture %.5f\n", ec.rmse_flat, eg.rmse_flat);
  CHECK_MSG(eg.rmse_flat < ec.rmse_flat * 1.05 + 1e-4, "texture GPU %g vs CPU %g", eg.rmse_flat,
            ec.rmse_flat);
  CHECK_MSG(th_rel_rms_f(gpu, cpu, nvox) < 2e-3, "texture GPU vs CPU relative RMS %g",
            th_rel_rms_f(gpu, cpu, nvox));
  /* A slab (pair kernels do not apply) equals the same slices of the CPU. */
  o.interp = CTR_INTERP_EXACT;
  o.z0 = 10;
  o.nz = 23;
  int64_t sd[3] = {n, n, 23};
  ctr_array sa = ctr_array_make(gpu2, CTR_DTYPE_FLOAT32, 3, sd);
  CHECK_OK(ctr_fdk(gctx, g, &o, &pa, &sa));
  e = th_rel_rms_f(gpu2, cpu + 10 * n * n, 23 * n * n);
  CHECK_MSG(e < 2e-5, "slab GPU vs CPU: %g", e);
  ctr_context_free(cctx);
  ctr_context_free(gctx);
  ctr_host_free(proj);
  ctr_host_free(gpu);
  free(proj_pageable);
  free(proj16);
  free(cpu);
  free(gpu2);
  free(truth);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* Fraction of (voxel, view) pairs of g whose position falls outside the
 * detector ([-1, nu] x [-1, nv]), from the matrices in double. */
static double fraction_outside(const ctr_geometry *g) {
  const ctr_volume_geometry *vg = &g->vol;
  int64_t out = 0, all = 0;
  for (int64_t n = 0; n < g->nviews; n++)
    for (int64_t k = 0; k < vg->nz; k++)
      for (int64_t j = 0; j < vg->ny; j++)
        for (int64_t i = 0; i < vg->nx; i++) {
          const double x = ctr__voxel_coord(i, vg->nx, vg->voxel_x, vg->offset_x);
          const double y = ctr__voxel_coord(j, vg->ny, vg->voxel_y, vg->offset_y);
          const double z = ctr__voxel_coord(k, vg->nz, vg->voxel_z, vg->offset_z);
          const double *P = g->views[n].P;
          const double c = P[8] * x + P[9] * y + P[10] * z + P[11];
          const double u = (P[0] * x + P[1] * y + P[2] * z + P[3]) / c;
          const double v = (P[4] * x + P[5] * y + P[6] * z + P[7]) / c;
          out += !(u > -1 && u < (double)g->nu && v > -1 && v < (double)g->nv);
          all++;
        }
  return (double)out / (double)all;
}

/* The general kernel where the volume overflows the detector, so that for
 * a view a thread's run lies wholly outside (skipped), wholly inside
 * (unclamped) or across the border (clamped), on tilted, skewed matrices:
 * every run length and block shape against the double reference. */
static void test_general_clipping(void) {
  const int64_t nx = 40, ny = 36, nz = 70, nviews = 17;
  ctr_geometry *g = random_geometry(4, nx, ny, nz, 44, 34, nviews);
  if (!g) return;
  const int64_t nvox = nx * ny * nz;
  const double outside = fraction_outside(g);
  printf("general kernel: %.0f %% of voxel-view pairs outside the detector\n", 100 * outside);
  CHECK_MSG(outside > 0.1 && outside < 0.9, "the test geometry should overflow the detector: %g",
            outside);
  float *filt = filtered_phantom(g);
  double *ref = calloc(nvox, sizeof(double));
  ctr__bp_reference(g, 0, nviews, filt, ref, 0, nz);
  float *out = malloc(sizeof(float) * nvox);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = nz;
  o.interp = CTR_INTERP_PRECISE;
  CHECK(ctr__bp_config_resolve(g, &o, NULL).variant == CTR__BP_PRECISE_GENERAL);
  /* the last two: Z' = 16 in the 64-register form (ctr__bp_config.regs, as
   * ctr_tuning.bp_regs sets it), and the default shape, each launch
   * choosing its registers */
  static const int shapes[][3] = {{32, 8, 16}, {32, 32, 4}, {16, 16, 8}, {8, 8, 4}, {4, 32, 2},
                                  {2, 8, 16},  {1, 32, 8},  {16, 16, 16}, {0, 0, 0}};
  for (int si = 0; si < (quick ? 1 : 9); si++) {
    ctr__bp_config c = {CTR__BP_PRECISE_GENERAL, 7, shapes[si][0], shapes[si][1], shapes[si][2],
                        0, 0, 0};
    if (si == 7) c.regs = 64;
    if (si == 8) c = ctr__bp_config_resolve(g, &o, NULL);
    memset(out, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, filt, out, 1, NULL));
    const double e = th_rel_rms_d(out, ref, nvox);
    /* positions are float offsets from the block's anchor, over up to half
     * a block and half a run of voxels: the error grows with Z' */
    printf("  Z'=%2d %2dx%-2d: relative RMS %.2e (bound 2e-6)\n", c.slices_per_thread, c.block_x,
           c.block_y, e);
    CHECK_MSG(e < 2e-6, "general Z'=%d %dx%d: %g", c.slices_per_thread, c.block_x, c.block_y, e);
  }
  CHECK(ctr__bp_config_resolve(g, &o, NULL).default_shape == 1);
  free(out);
  free(ref);
  free(filt);
  ctr_geometry_free(g);
}

/* The FP64 reference on the GPU equals the CPU's (same formulas, double
 * arithmetic; only the summation order of nothing differs): ~1e-14. The
 * incremental backprojector with weights and views in any order equals the
 * weighted reference to fp32 rounding (exact mode). */
static void test_reference_and_backprojector(void) {
  ctr_geometry *g = random_geometry(4, 17, 15, 13, 40, 36, 21);
  if (!g) return;
  const int64_t nvox = 17 * 15 * 13, n = 21;
  float *filt = filtered_phantom(g);
  int64_t idx[21];
  const float *img[21];
  double w[21];
  float wf[21];
  for (int64_t k = 0; k < n; k++) { /* reversed order, random weights */
    idx[k] = n - 1 - k;
    img[k] = filt + idx[k] * 40 * 36;
    wf[k] = (float)th_uniform(0.5, 2.0);
    w[k] = wf[k];
  }
  double *cpu = calloc(nvox, sizeof(double)), *gpu = calloc(nvox, sizeof(double));
  ctr_context *gctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  CHECK_OK(ctr_context_create(&co, &gctx));
  CHECK_OK(ctr_fdk_backproject_reference(NULL, g, n, idx, img, w, cpu));
  CHECK_OK(ctr_fdk_backproject_reference(gctx, g, n, idx, img, w, gpu));
  double e = 0, s = 0;
  for (int64_t i = 0; i < nvox; i++) e += sq(gpu[i] - cpu[i]), s += sq(cpu[i]);
  printf("FP64 reference GPU vs CPU: relative RMS %.2e\n", sqrt(e / s));
  CHECK_MSG(s > 0 && sqrt(e / s) < 1e-12, "FP64 reference GPU vs CPU %g", sqrt(e / s));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.interp = CTR_INTERP_EXACT;
  ctr_backprojector *b = NULL;
  float *out = malloc(sizeof(float) * nvox);
  CHECK_OK(ctr_backprojector_create(gctx, g, &o, &b));
  CHECK_OK(ctr_backprojector_add(b, 8, idx, img, wf));
  CHECK_OK(ctr_backprojector_add(b, n - 8, idx + 8, img + 8, wf + 8));
  CHECK_OK(ctr_backprojector_read(b, out));
  CHECK_MSG(th_rel_rms_d(out, cpu, nvox) < 1e-5, "backprojector vs reference %g", th_rel_rms_d(out, cpu, nvox));
  CHECK_OK(ctr_backprojector_reset(b));
  CHECK_OK(ctr_backprojector_read(b, out));
  double mx = 0;
  for (int64_t i = 0; i < nvox; i++) mx = fmax(mx, fabs(out[i]));
  CHECK(mx == 0.0);
  ctr_backprojector_free(b);
  /* Precise (the general kernel on these matrices) in calls of 13 and 8
   * views, under chunk schedules from one view at a time to whole calls and
   * split schedules (the first views into the lower slices while the rest
   * upload), images pageable and pinned: the same volume to fp32
   * rounding. */
  o.interp = CTR_INTERP_PRECISE;
  static const struct {
    const char *chunks, *split;
    int pinned;
  } plans[] = {{NULL, NULL, 0},   {"1,1", NULL, 0}, {"1,4", NULL, 0},  {"3,2", NULL, 0},
               {"64,64", NULL, 0}, {NULL, "1,5", 0}, {NULL, "5,12", 0}, {NULL, "7,1", 1},
               {NULL, "2,4,6,9", 0}, {NULL, NULL, 1}};
  float *pinned = ctr_host_alloc(sizeof(float) * n * 40 * 36);
  CHECK(pinned != NULL);
  const float *pimg[21];
  for (int64_t k = 0; k < n; k++) {
    if (pinned) memcpy(pinned + k * 40 * 36, img[k], sizeof(float) * 40 * 36);
    pimg[k] = pinned ? pinned + k * 40 * 36 : img[k];
  }
  for (size_t pi = 0; pi < sizeof plans / sizeof plans[0]; pi++) {
    const float *const *im = plans[pi].pinned ? pimg : img;
    /* the schedules through the context's tuning table */
    ctr_tuning t;
    CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
    if (plans[pi].chunks) CHECK_OK(ctr_tuning_set(&t, "bp_chunks", plans[pi].chunks));
    if (plans[pi].split) CHECK_OK(ctr_tuning_set(&t, "bp_split", plans[pi].split));
    ctr_context *tctx = NULL;
    co.tuning = &t;
    CHECK_OK(ctr_context_create(&co, &tctx));
    if (!tctx) continue;
    b = NULL;
    CHECK_OK(ctr_backprojector_create(tctx, g, &o, &b));
    CHECK_OK(ctr_backprojector_add(b, 13, idx, im, wf));
    CHECK_OK(ctr_backprojector_add(b, n - 13, idx + 13, im + 13, wf + 13));
    CHECK_OK(ctr_backprojector_read(b, out));
    e = th_rel_rms_d(out, cpu, nvox);
    CHECK_MSG(e < 1e-6, "precise backprojector, chunks %s, split %s, %s: %g",
              plans[pi].chunks ? plans[pi].chunks : "default",
              plans[pi].split ? plans[pi].split : "default", plans[pi].pinned ? "pinned" : "pageable", e);
    ctr_backprojector_free(b);
    ctr_context_free(tctx);
  }
  ctr_host_free(pinned);
  ctr_context_free(gctx);
  free(out);
  free(cpu);
  free(gpu);
  free(filt);
  ctr_geometry_free(g);
}

/* A volume far beyond the GPU's memory for the kernels alone (the streamed
 * pipeline would split it): a clear error naming the need. */
static void test_out_of_memory(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 20000;
  p.sdd = 30000;
  p.nu = p.nv = 64;
  p.nviews = 8;
  ctr_volume_geometry vol = {8192, 8192, 1024, 1, 1, 1, 0, 0, 0}; /* 256 GiB */
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (!g) return;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = 1024;
  float dummy[4];
  CHECK_FAILS(ctr__cuda_backproject(NULL, g, &o, NULL, dummy, NULL, 1, NULL),
              CTR_E_DEVICE_OUT_OF_MEMORY, "GiB of GPU memory");
  ctr_geometry_free(g);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_fdk: SKIPPED (no usable GPU)\n");
    return 77;
  }
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (ctr_cuda_get_device_info(0, &info) == CTR_OK) printf("GPU 0: %s\n", info.name);
  quick = getenv("CTR_TEST_QUICK") != NULL;
  test_filter();
  test_variants();
  test_general_clipping();
  test_end_to_end();
  test_reference_and_backprojector();
  test_out_of_memory();
  return th_finish("test_gpu_fdk");
}
#else
int main(void) {
  printf("test_gpu_fdk: SKIPPED (built without CUDA)\n");
  return 77;
}
#endif
