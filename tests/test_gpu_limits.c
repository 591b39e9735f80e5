/* The fixed-size tables and grid limits of the GPU paths at, just below and
 * just past each limit (issue 41's audit): cone-beam views per launch
 * (CTR__BP_MAX_VIEWS = 64) and per batch, layered textures (2048 layers an
 * array, arrays per layout), the general kernel's detector limit
 * (CTR__BPG_MAX_DET = 16384) and step limit, the iterative projector's
 * adjoint batch (ADJ_MAX_BATCH = 64), forward view groups (FWD_VIEWS = 16)
 * and its launches' 65535 blocks along y. Each case against the CPU backend
 * or the double-precision reference, and two runs bit for bit. Exits 77
 * (skipped) without a usable GPU. */
#include "harness.h"

#if CTR_HAVE_CUDA
#include "conebeam/cpu/backproject.h"
#include "conebeam/cuda/bp_config.h"

static ctr_context *g_cpu, *g_gpu;

static double rel_rms(const float *a, const float *b, const double *bd, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    const double r = bd ? bd[i] : (double)b[i];
    e += ((double)a[i] - r) * ((double)a[i] - r);
    s += r * r;
  }
  return s > 0 ? sqrt(e / s) : INFINITY;
}

static ctr_geometry *circular(int64_t n, int64_t nu, int64_t nv, double du, double dv,
                              int64_t nviews) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 40.0 * (double)n;
  p.sdd = 60.0 * (double)n;
  p.nu = nu;
  p.nv = nv;
  p.du = du;
  p.dv = dv;
  p.nviews = nviews;
  p.angle_start_deg = 11;
  ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

/* Smooth values (already "filtered" for the kernel-level tests, line
 * integrals for FDK): bilinear interpolation of them is nearly exact, so
 * the kernels' own errors (texture weights, float positions) dominate. */
static float *smooth_views(const ctr_geometry *g) {
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  float *p = malloc(sizeof(float) * (size_t)(nu * nv * nviews));
  for (int64_t k = 0; k < nviews; k++)
    for (int64_t v = 0; v < nv; v++)
      for (int64_t u = 0; u < nu; u++) {
        const double x = (u - 0.5 * nu) / (0.5 * nu), y = (v - 0.5 * nv) / (0.5 * nv);
        p[(k * nv + v) * nu + u] =
            (float)(exp(-2.0 * (x * x + y * y)) * (1.0 + 0.3 * sin(0.37 * (double)k + 3.0 * x)));
      }
  return p;
}

/* FDK end to end at 63, 64, 65 and 129 views (views per launch and per
 * batch: 64), with batches of the planner's choice and forced to 7, 63 and
 * 100 views (a partial last batch, a batch that is not a launch's multiple):
 * the GPU equals the CPU to float rounding in exact mode (2e-5, as in
 * test_gpu_fdk) and to the texture bound (2e-3) in texture mode; a second
 * run gives the same bits. */
static void test_fdk_views(void) {
  static const int64_t counts[] = {63, 64, 65, 129};
  static const int64_t batches[] = {0, 7, 63, 100};
  const int64_t n = 24, det = 40, nvox = n * n * n;
  for (int ci = 0; ci < 4; ci++) {
    ctr_geometry *g = circular(n, det, det, 1.5, 1.5, counts[ci]);
    if (!g) continue;
    float *proj = smooth_views(g);
    float *cpu = malloc(sizeof(float) * nvox), *gpu = malloc(sizeof(float) * nvox),
          *again = malloc(sizeof(float) * nvox);
    int64_t pd[3] = {det, det, counts[ci]}, vd[3] = {n, n, n};
    ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array ca = ctr_array_make(cpu, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_array ga = ctr_array_make(gpu, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_array aa = ctr_array_make(again, CTR_DTYPE_FLOAT32, 3, vd);
    for (int interp = 0; interp < 2; interp++) {
      ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
      o.interp = interp ? CTR_INTERP_TEXTURE : CTR_INTERP_EXACT;
      CHECK_OK(ctr_fdk(g_cpu, g, &o, &pa, &ca));
      for (int bi = 0; bi < 4; bi++) {
        o.views_per_batch = batches[bi];
        memset(gpu, 0xff, sizeof(float) * nvox); /* NaN: every voxel must be written */
        CHECK_OK(ctr_fdk(g_gpu, g, &o, &pa, &ga));
        const double e = rel_rms(gpu, cpu, NULL, nvox), bound = interp ? 2e-3 : 2e-5;
        if (bi == 0)
          printf("FDK %3lld views %-7s: GPU vs CPU relative RMS %.2e (bound %.0e)\n",
                 (long long)counts[ci], interp ? "texture" : "exact", e, bound);
        CHECK_MSG(e < bound, "FDK %lld views, %s, batches of %lld: GPU vs CPU %g",
                  (long long)counts[ci], interp ? "texture" : "exact", (long long)batches[bi], e);
        memset(again, 0, sizeof(float) * nvox);
        CHECK_OK(ctr_fdk(g_gpu, g, &o, &pa, &aa));
        CHECK_MSG(memcmp(gpu, again, sizeof(float) * nvox) == 0,
                  "FDK %lld views, %s, batches of %lld: two runs differ", (long long)counts[ci],
                  interp ? "texture" : "exact", (long long)batches[bi]);
      }
    }
    free(proj);
    free(cpu);
    free(gpu);
    free(again);
    ctr_geometry_free(g);
  }
}

/* Bound of a variant against the double reference on smooth views:
 * texture interpolation 2e-3, fp32 positions 1e-5, double positions 1e-6
 * (test_gpu_fdk's bounds). */
static double variant_bound(ctr__bp_variant v) {
  if (v == CTR__BP_TEX || v == CTR__BP_TEX_PAIR || v == CTR__BP_TEX_PAIR_HALF) return 2e-3;
  if (v == CTR__BP_EXACT || v == CTR__BP_EXACT_PAIR || v == CTR__BP_ALU) return 1e-5;
  return 1e-6;
}

/* Views per launch (the kernel parameter's table holds CTR__BP_MAX_VIEWS =
 * 64): every variant with N' = 1, 63, 64 and 65 (resolved to 64) on 129
 * views, on a symmetric circular orbit (pair kernels) and on perturbed
 * matrices (the general kernel), against the double reference; a second
 * run gives the same bits. */
static void test_launch_views(void) {
  static const ctr__bp_variant variants[] = {CTR__BP_TEX,        CTR__BP_TEX_PAIR,
                                             CTR__BP_TEX_PAIR_HALF, CTR__BP_EXACT,
                                             CTR__BP_EXACT_PAIR, CTR__BP_PRECISE,
                                             CTR__BP_PRECISE_PAIR, CTR__BP_PRECISE_GENERAL,
                                             CTR__BP_ALU};
  enum { NVARIANTS = sizeof variants / sizeof variants[0] };
  static const int launches[] = {1, 63, 64, 65};
  const int64_t n = 16, nvox = n * n * n, nviews = 129;
  for (int kind = 0; kind < 2; kind++) {
    ctr_geometry *g = circular(n, 30, 30, 1.2, 1.2, nviews);
    if (kind) th_perturb_geometry(&g, 0.02);
    if (!g) continue;
    float *filt = smooth_views(g);
    double *ref = calloc(nvox, sizeof(double));
    ctr__bp_reference(g, 0, nviews, filt, ref, 0, n);
    float *out = malloc(sizeof(float) * nvox), *again = malloc(sizeof(float) * nvox);
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.nz = n;
    for (int vi = 0; vi < NVARIANTS; vi++)
      for (int li = 0; li < 4; li++) {
        ctr__bp_config c = {variants[vi], launches[li], 0, 0, 0, 0, 0, 0};
        const ctr__bp_config r = ctr__bp_config_resolve(g, &o, &c);
        CHECK_MSG(r.views_per_launch == (launches[li] < CTR__BP_MAX_VIEWS ? launches[li]
                                                                          : CTR__BP_MAX_VIEWS),
                  "N' %d resolved to %d", launches[li], r.views_per_launch);
        memset(out, 0xff, sizeof(float) * nvox);
        CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, filt, out, 1, NULL));
        const double e = rel_rms(out, NULL, ref, nvox), bound = variant_bound(r.variant);
        if (li == 3)
          printf("launch N'=65 (-> %d) %-15s kind %d: relative RMS %.2e (bound %.0e)\n",
                 r.views_per_launch, ctr__bp_variant_name(r.variant), kind, e, bound);
        CHECK_MSG(e < bound, "kind %d %s N'=%d: relative RMS %g", kind,
                  ctr__bp_variant_name(r.variant), launches[li], e);
        memset(again, 0, sizeof(float) * nvox);
        CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, filt, again, 1, NULL));
        CHECK_MSG(memcmp(out, again, sizeof(float) * nvox) == 0, "kind %d %s N'=%d: runs differ",
                  kind, ctr__bp_variant_name(r.variant), launches[li]);
      }
    free(filt);
    free(ref);
    free(out);
    free(again);
    ctr_geometry_free(g);
  }
}

/* Layered textures hold 2048 layers: the texture layout of 2047, 2048, 2049
 * and 4097 views spans one, one, two and three arrays; with N' = 48 an array
 * holds 2016 views (batches never straddle two). Against the double
 * reference (kernel level), and FDK with resident views against the CPU. */
static void test_texture_layers(void) {
  static const int64_t counts[] = {2047, 2048, 2049, 4097};
  const int64_t n = 8, det = 12, nvox = n * n * n;
  float *out = malloc(sizeof(float) * nvox), *cpu = malloc(sizeof(float) * nvox);
  double *ref = malloc(sizeof(double) * nvox);
  for (int ci = 0; ci < 4; ci++) {
    ctr_geometry *g = circular(n, det, det, 1.5, 1.5, counts[ci]);
    if (!g) continue;
    float *views = smooth_views(g);
    memset(ref, 0, sizeof(double) * nvox);
    ctr__bp_reference(g, 0, counts[ci], views, ref, 0, n);
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.nz = n;
    for (int li = 0; li < 2; li++) {
      ctr__bp_config c = {CTR__BP_TEX, li ? 48 : 64, 0, 0, 0, 0, 0, 0};
      memset(out, 0xff, sizeof(float) * nvox);
      CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &c, views, out, 1, NULL));
      const double e = rel_rms(out, NULL, ref, nvox);
      printf("texture layers: %lld views, N'=%d: relative RMS %.2e (bound 2e-3)\n",
             (long long)counts[ci], c.views_per_launch, e);
      CHECK_MSG(e < 2e-3, "tex %lld views N'=%d: relative RMS %g", (long long)counts[ci],
                c.views_per_launch, e);
    }
    /* FDK: the planner keeps the filtered views resident on the GPU */
    int64_t pd[3] = {det, det, counts[ci]}, vd[3] = {n, n, n};
    ctr_array pa = ctr_array_make(views, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array ca = ctr_array_make(cpu, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_array ga = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
    o.interp = CTR_INTERP_TEXTURE;
    CHECK_OK(ctr_fdk(g_cpu, g, &o, &pa, &ca));
    for (int bi = 0; bi < 2; bi++) {
      o.views_per_batch = bi ? 100 : 0; /* 100: 2000 views an array */
      memset(out, 0xff, sizeof(float) * nvox);
      CHECK_OK(ctr_fdk(g_gpu, g, &o, &pa, &ga));
      const double e = rel_rms(out, cpu, NULL, nvox);
      CHECK_MSG(e < 2e-3, "texture FDK %lld views, batches of %lld: GPU vs CPU %g",
                (long long)counts[ci], (long long)o.views_per_batch, e);
    }
    free(views);
    ctr_geometry_free(g);
  }
  free(out);
  free(cpu);
  free(ref);
}

/* Resident texture views past 64 arrays of 2048 layers (131072 views; the
 * layout held at most 64 arrays, and FDK with texture interpolation
 * refused longer scans): 131073 views of a tiny detector, GPU against CPU. */
static void test_many_arrays(void) {
  const int64_t n = 4, det = 6, nviews = 64 * 2048 + 1, nvox = n * n * n;
  ctr_geometry *g = circular(n, det, det, 1.5, 1.5, nviews);
  if (!g) return;
  float *views = smooth_views(g);
  float *cpu = malloc(sizeof(float) * nvox), *gpu = malloc(sizeof(float) * nvox);
  int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(views, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ca = ctr_array_make(cpu, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ga = ctr_array_make(gpu, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.interp = CTR_INTERP_TEXTURE;
  CHECK_OK(ctr_fdk(g_cpu, g, &o, &pa, &ca));
  memset(gpu, 0xff, sizeof(float) * nvox);
  CHECK_OK(ctr_fdk(g_gpu, g, &o, &pa, &ga));
  const double e = rel_rms(gpu, cpu, NULL, nvox);
  printf("texture FDK, %lld views (65 arrays): GPU vs CPU relative RMS %.2e (bound 2e-3)\n",
         (long long)nviews, e);
  CHECK_MSG(e < 2e-3, "texture FDK %lld views: GPU vs CPU %g", (long long)nviews, e);
  free(views);
  free(cpu);
  free(gpu);
  ctr_geometry_free(g);
}

/* The general kernel's limits: detectors up to CTR__BPG_MAX_DET = 16384
 * pixels wide, and at most 64 pixels between neighbouring slices on the
 * detector; past either the precise kernel serves instead (the general
 * kernel asked for, resolved to the precise one). Each case on perturbed
 * matrices against the double reference (1e-6). */
static void test_general_limits(void) {
  static const struct {
    int64_t nu, nv;
    double du, dv;
    int general;
  } cases[] = {{16384, 6, 0.02, 2.0, 1}, {16385, 6, 0.02, 2.0, 0},
               {40, 160, 1.5, 0.08, 1},  {40, 160, 1.5, 0.01, 0}};
  const int64_t n = 6, nvox = n * n * n, nviews = 5;
  for (int ci = 0; ci < 4; ci++) {
    ctr_geometry *g = circular(n, cases[ci].nu, cases[ci].nv, cases[ci].du, cases[ci].dv, nviews);
    th_perturb_geometry(&g, 0.01);
    if (!g) continue;
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.nz = n;
    o.interp = CTR_INTERP_PRECISE;
    const ctr__bp_config want = {CTR__BP_PRECISE_GENERAL, 0, 0, 0, 0, 0, 0, 0};
    const ctr__bp_config r = ctr__bp_config_resolve(g, &o, &want);
    printf("general kernel: detector %lld x %lld, pitch %.2f x %.2f: %s\n",
           (long long)cases[ci].nu, (long long)cases[ci].nv, cases[ci].du, cases[ci].dv,
           ctr__bp_variant_name(r.variant));
    CHECK_MSG((r.variant == CTR__BP_PRECISE_GENERAL) == cases[ci].general,
              "detector %lld x %lld pitch %g x %g: variant %s", (long long)cases[ci].nu,
              (long long)cases[ci].nv, cases[ci].du, cases[ci].dv, ctr__bp_variant_name(r.variant));
    float *filt = smooth_views(g), *out = malloc(sizeof(float) * nvox);
    double *ref = calloc(nvox, sizeof(double));
    ctr__bp_reference(g, 0, nviews, filt, ref, 0, n);
    double s = 0;
    for (int64_t i = 0; i < nvox; i++) s += fabs(ref[i]);
    CHECK_MSG(s > 0, "case %d: the detector sees nothing of the volume", ci);
    memset(out, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr__cuda_backproject(NULL, g, &o, &want, filt, out, 1, NULL));
    const double e = rel_rms(out, NULL, ref, nvox);
    CHECK_MSG(e < 1e-6, "case %d (%s): relative RMS %g", ci, ctr__bp_variant_name(r.variant), e);
    free(filt);
    free(out);
    free(ref);
    ctr_geometry_free(g);
  }
}

/* GPU forward and adjoint projections against the CPU's (1e-5, as in
 * test_gpu_iterative: the same positions, sums in another order), two GPU
 * runs bit for bit. Returns the GPU adjoint of y (caller frees). */
static float *compare_projector(const char *what, ctr_projector *pg, ctr_projector *pc,
                                const float *x, const float *y, int64_t nvol, int64_t nproj) {
  float *a = malloc(sizeof(float) * (size_t)nproj), *b = malloc(sizeof(float) * (size_t)nproj);
  float *c = malloc(sizeof(float) * (size_t)nvol), *d = malloc(sizeof(float) * (size_t)nvol);
  CHECK_OK(ctr_projector_forward(pc, x, a));
  memset(b, 0xff, sizeof(float) * (size_t)nproj);
  CHECK_OK(ctr_projector_forward(pg, x, b));
  double e = rel_rms(b, a, NULL, nproj);
  printf("%s forward: GPU vs CPU relative RMS %.2e\n", what, e);
  CHECK_MSG(e < 1e-5, "%s forward: GPU vs CPU %g", what, e);
  CHECK_OK(ctr_projector_forward(pg, x, a));
  CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)nproj) == 0, "%s forward: runs differ", what);
  CHECK_OK(ctr_projector_adjoint(pc, y, c));
  memset(d, 0xff, sizeof(float) * (size_t)nvol);
  CHECK_OK(ctr_projector_adjoint(pg, y, d));
  e = rel_rms(d, c, NULL, nvol);
  printf("%s adjoint: GPU vs CPU relative RMS %.2e\n", what, e);
  CHECK_MSG(e < 1e-5, "%s adjoint: GPU vs CPU %g", what, e);
  CHECK_OK(ctr_projector_adjoint(pg, y, c));
  CHECK_MSG(memcmp(c, d, sizeof(float) * (size_t)nvol) == 0, "%s adjoint: runs differ", what);
  free(a);
  free(b);
  free(c);
  return d;
}

static float *random_floats(int64_t n, unsigned seed) {
  float *x = malloc(sizeof(float) * (size_t)n);
  srand(seed);
  for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX;
  return x;
}

/* The iterative cone projector at 15, 16, 17 views (forward groups of
 * FWD_VIEWS = 16, adjoint batches of the planner's 16) and 63, 64, 65, 129
 * views (ADJ_MAX_BATCH = 64 caps a batch), all on the GPU and with a GPU
 * budget of 400 kB that streams the longer scans in blocks of views and
 * batches of 8: the adjoint adds each voxel's views in slot order whatever
 * the plan, so both plans give the same bits. */
static void test_iterative_views(void) {
  static const int64_t counts[] = {15, 16, 17, 63, 64, 65, 129};
  const int64_t n = 20, nu = 28, nv = 22, nvol = n * n * n;
  for (int ci = 0; ci < 7; ci++) {
    ctr_geometry *g = circular(n, nu, nv, 1.6, 1.6, counts[ci]);
    if (!g) continue;
    const int64_t nproj = nu * nv * counts[ci];
    ctr_projector *pc = NULL, *pg = NULL, *ps = NULL;
    ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
    CHECK_OK(ctr_projector_create_cone(g_cpu, g, NULL, &pc));
    CHECK_OK(ctr_projector_create_cone(g_gpu, g, NULL, &pg));
    po.gpu_budget = 400000; /* 129 views: streamed (plan.c) */
    CHECK_OK(ctr_projector_create_cone(g_gpu, g, &po, &ps));
    if (pc && pg && ps) {
      float *x = random_floats(nvol, 3), *y = random_floats(nproj, 4);
      char what[64];
      snprintf(what, sizeof what, "cone projector, %lld views", (long long)counts[ci]);
      float *adj = compare_projector(what, pg, pc, x, y, nvol, nproj);
      float *adj_s = malloc(sizeof(float) * (size_t)nvol);
      CHECK_OK(ctr_projector_adjoint(ps, y, adj_s));
      CHECK_MSG(memcmp(adj, adj_s, sizeof(float) * (size_t)nvol) == 0,
                "%s: the streamed plan's adjoint differs", what);
      free(x);
      free(y);
      free(adj);
      free(adj_s);
    }
    ctr_projector_free(pc);
    ctr_projector_free(pg);
    ctr_projector_free(ps);
    ctr_geometry_free(g);
  }
}

/* Launch grids hold at most 65535 blocks along y: a parallel-beam projector
 * whose detector has 262141 rows (slices; the forward and table launches
 * cover 4 rows a block: 262140 fit), and volumes 65530 and 262141 voxels
 * along y (the plane stacks' launch covers one padded row a block: ny + 6
 * <= 65535; the adjoint 4 rows a block). These failed to launch before. */
static void test_iterative_grid(void) {
  static const struct {
    int64_t nx, ny, nslices, nbins;
  } cases[] = {{2, 2, 262141, 3}, {2, 65529, 1, 4}, {2, 65530, 1, 4}, {2, 262141, 1, 4}};
  const double angles[3] = {0.0, 180.0, 0.3};
  for (int ci = 0; ci < 4; ci++) {
    ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
    pp.nbins = cases[ci].nbins;
    pp.nangles = 3;
    pp.angles_deg = angles;
    pp.nx = cases[ci].nx;
    pp.ny = cases[ci].ny;
    pp.axis = 0.5 * (double)(cases[ci].nbins - 1) + 0.25;
    ctr_parallel_geometry *g = NULL;
    CHECK_OK(ctr_parallel_create(&pp, &g));
    if (!g) continue;
    ctr_projector *pc = NULL, *pg = NULL;
    CHECK_OK(ctr_projector_create_parallel(g_cpu, g, cases[ci].nslices, NULL, &pc));
    CHECK_OK(ctr_projector_create_parallel(g_gpu, g, cases[ci].nslices, NULL, &pg));
    if (pc && pg) {
      const int64_t nvol = cases[ci].nx * cases[ci].ny * cases[ci].nslices;
      const int64_t nproj = cases[ci].nbins * 3 * cases[ci].nslices;
      float *x = random_floats(nvol, 5), *y = random_floats(nproj, 6);
      char what[96];
      snprintf(what, sizeof what, "parallel projector %lld x %lld x %lld", (long long)cases[ci].nx,
               (long long)cases[ci].ny, (long long)cases[ci].nslices);
      free(compare_projector(what, pg, pc, x, y, nvol, nproj));
      free(x);
      free(y);
    }
    ctr_projector_free(pc);
    ctr_projector_free(pg);
    ctr_parallel_free(g);
  }
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_limits: SKIPPED (no usable GPU)\n");
    return 77;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &g_cpu));
  co.device = CTR_DEVICE_CUDA;
  CHECK_OK(ctr_context_create(&co, &g_gpu));
  if (!g_cpu || !g_gpu) return th_finish("test_gpu_limits");
  test_fdk_views();
  test_launch_views();
  test_texture_layers();
  test_many_arrays();
  test_general_limits();
  test_iterative_views();
  test_iterative_grid();
  ctr_context_free(g_cpu);
  ctr_context_free(g_gpu);
  return th_finish("test_gpu_limits");
}
#else
int main(void) {
  printf("test_gpu_limits: SKIPPED (built without CUDA)\n");
  return 77;
}
#endif
