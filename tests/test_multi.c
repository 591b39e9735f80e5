/* Several workers on one FDK run (Okitsu et al. 2010; docs/multi-gpu.md):
 * the split planner and its cost model (pure functions: 1-8 workers, unequal
 * device memory, volumes that fit one device and volumes that do not), and
 * the executor with several engines: a volume split bit-identical to one
 * worker (in memory and file to file, every store), a projection split
 * within the summation-order bound derived below, an interrupted run on
 * several workers resumed on another number, cancellation and a failing
 * input with several workers.
 *
 * Built twice: as test_multi with CPU engines (several sharing the cores),
 * and with CTR_TEST_CUDA as test_gpu_multi, where the workers are CUDA
 * engines on GPU 0 (two engines created on one device; skipped without a
 * GPU). */
#include "harness.h"
#include "scratch_dir.h"

#include "conebeam/cpu/backproject.h"
#include "conebeam/plan_split.h"

#include <ftw.h>
#include <unistd.h>

enum { NU = 48, NV = 40, NVIEWS = 60, N = 32 };
#define NPROJ ((size_t)NU * NV * NVIEWS)
#define NVOX ((size_t)N * N * N)

static ctr_context *g_ctx;
static ctr_geometry *g_geom;
static float *g_proj;
static float *g_one;     /* one worker, in memory, six subvolumes (multi_opts) */
static double *g_abs;    /* per voxel: the sum of |terms| of its backprojection (the bound) */

#ifdef CTR_TEST_CUDA
#define TEST_INTERP CTR_INTERP_EXACT
#else
#define TEST_INTERP CTR_INTERP_DEFAULT
#endif

/* ---- The planner ------------------------------------------------------------------ */

static ctr_geometry *cube_geometry(int64_t n, int64_t det, int64_t views) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 8 * n;
  p.sdd = 12 * n;
  p.nu = p.nv = det;
  p.du = p.dv = 1.5 * (double)n / (double)det;
  p.nviews = views;
  ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

static void test_split_budget(void) {
  /* equal devices, one worker each: the device's budget */
  const uint64_t eq[4] = {8u << 30, 8u << 30, 8u << 30, 8u << 30};
  CHECK(ctr__split_gpu_budget(eq, 4, 4) == (8u << 30));
  CHECK(ctr__split_gpu_budget(eq, 4, 2) == (8u << 30));
  /* unequal memory: the smallest device decides */
  const uint64_t uneq[3] = {80ull << 30, 40ull << 30, 24ull << 30};
  CHECK(ctr__split_gpu_budget(uneq, 3, 3) == (24ull << 30));
  CHECK(ctr__split_gpu_budget(uneq, 3, 2) == (40ull << 30)); /* the third is not used */
  /* more workers than devices: shared in turn (5 on 3: 2, 2, 1) */
  CHECK(ctr__split_gpu_budget(uneq, 3, 5) == (20ull << 30));
  CHECK(ctr__split_gpu_budget(eq, 1, 2) == (4u << 30));
  CHECK(ctr__split_gpu_budget(eq, 0, 2) == 0);
}

static void test_planner(void) {
  ctr_geometry *g = cube_geometry(512, 512, 360);
  if (!g) return;
  for (int w = 1; w <= 8; w++) {
    for (int s = 0; s < 3; s++) {
      for (int fits = 0; fits < 2; fits++) {
        ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
        q.device = CTR_DEVICE_CUDA;
        q.workers = w;
        q.split = (ctr_fdk_split)s;
        q.interp = CTR_INTERP_TEXTURE;
        q.host_budget = 64ull << 30;
        /* 512 MiB volume + 360 MiB of views resident: 3 GiB fits one device;
         * 700 MiB does not hold the volume */
        q.gpu_budget = fits ? (3ull << 30) : (700ull << 20);
        ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
        const ctr_status st = ctr_fdk_plan_compute(g, &q, &p);
        CHECK_MSG(st == CTR_OK, "workers %d split %s %s: %s", w, ctr_fdk_split_name(q.split),
                  fits ? "fits" : "out of core", ctr_error_detail());
        if (st != CTR_OK) continue;
        CHECK(p.gpu_bytes <= q.gpu_budget && p.host_bytes <= q.host_budget);
        if (w == 1) {
          CHECK_MSG(p.workers == 1 && p.split == CTR_FDK_SPLIT_VOLUME, "one worker: %d %s", p.workers,
                    ctr_fdk_split_name(p.split));
          continue;
        }
        if (q.split != CTR_FDK_SPLIT_AUTO) CHECK(p.split == q.split);
        if (p.split == CTR_FDK_SPLIT_VOLUME) {
          /* every worker gets a subvolume; no mirrored pairs once split */
          CHECK_MSG(p.nslabs >= w && p.workers == w && !p.pair, "volume: %lld subvolumes, %d "
                    "workers, pair %d", (long long)p.nslabs, p.workers, p.pair);
        } else {
          /* a subset each at least */
          CHECK_MSG(p.workers == (w < p.nbatches ? w : p.nbatches), "projections: %d workers of %d, "
                    "%lld subsets", p.workers, w, (long long)p.nbatches);
          /* automatic batches: as many for each worker (no worker idle at the end) */
          CHECK_MSG(p.nbatches % p.workers == 0, "projections: %lld subsets of %lld views for %d "
                    "workers", (long long)p.nbatches, (long long)p.views_per_batch, p.workers);
          /* all workers on the same subvolumes: as many as one worker needs */
          if (fits) CHECK_MSG(p.nslabs == 1 && p.pair, "projections in core: %lld subvolumes, pair %d",
                              (long long)p.nslabs, p.pair);
        }
        if (q.split == CTR_FDK_SPLIT_AUTO) {
          const double tv = p.seconds[CTR_FDK_SPLIT_VOLUME], tp = p.seconds[CTR_FDK_SPLIT_PROJECTIONS];
          CHECK_MSG(tv > 0 && tp > 0, "both schemes costed: %g %g", tv, tp);
          CHECK_MSG(p.split == (tv <= tp ? CTR_FDK_SPLIT_VOLUME : CTR_FDK_SPLIT_PROJECTIONS),
                    "the cheaper scheme: volume %g s, projections %g s, chose %s", tv, tp,
                    ctr_fdk_split_name(p.split));
        }
      }
    }
  }
  /* The model's shape: in core, mirrored pairs make the projection split the
   * cheaper on 2 GPUs; out of core (no pairs either way, reductions per
   * subvolume) the volume split is. More workers never cost more. */
  {
    ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
    q.device = CTR_DEVICE_CUDA;
    q.workers = 2;
    q.host_budget = 64ull << 30;
    q.gpu_budget = 3ull << 30;
    ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
    CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
    CHECK_MSG(p.split == CTR_FDK_SPLIT_PROJECTIONS, "in core on 2: %s (volume %g s, projections %g s)",
              ctr_fdk_split_name(p.split), p.seconds[1], p.seconds[2]);
    q.gpu_budget = 700ull << 20;
    CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
    CHECK_MSG(p.split == CTR_FDK_SPLIT_VOLUME, "out of core on 2: %s (volume %g s, projections %g s)",
              ctr_fdk_split_name(p.split), p.seconds[1], p.seconds[2]);
    double prev = 1e30;
    for (int w = 1; w <= 8; w *= 2) {
      q.workers = w;
      q.gpu_budget = 3ull << 30;
      CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
      const double t = p.seconds[p.split];
      CHECK_MSG(t > 0 && t <= prev, "%d workers: %g s after %g s", w, t, prev);
      prev = t;
    }
  }
  /* A budget too small for any plan: the error names the budget. */
  {
    ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
    q.device = CTR_DEVICE_CUDA;
    q.workers = 4;
    q.host_budget = 64ull << 30;
    q.gpu_budget = 200ull << 20; /* below the reserve the model keeps */
    ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
    CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_DEVICE_OUT_OF_MEMORY, "GPU");
    q.workers = 99;
    CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "workers");
  }
  ctr_geometry_free(g);
}

/* ---- The executor ------------------------------------------------------------------ */

/* The options of every run here: the same N' (the GPU kernels add a launch's
 * views in registers, so N' is part of the summation order). */
static ctr_fdk_stream_options multi_opts(int workers, ctr_fdk_split split, int64_t max_slab, ctr_fdk_store store) {
  ctr_fdk_stream_options o = CTR_FDK_STREAM_OPTIONS_INIT;
  o.fdk.interp = TEST_INTERP;
  o.fdk.views_per_batch = 8;
  o.workers = workers;
  o.split = split;
  o.max_slab_slices = max_slab;
  o.store = store;
  o.scratch_dir = g_dir;
  return o;
}

static int setup(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
#ifdef CTR_TEST_CUDA
  co.device = CTR_DEVICE_CUDA;
  co.device_index = 0; /* the workers share GPU 0 */
#else
  co.device = CTR_DEVICE_CPU;
#endif
  CHECK_OK(ctr_context_create(&co, &g_ctx));
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = NU;
  p.nv = NV;
  p.du = 9;
  p.dv = 12;
  p.nviews = NVIEWS;
  ctr_volume_geometry vol = {N, N, N, 8, 8, 8, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g_geom));
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.95 * 128, 1.0, &ph));
  if (!g_ctx || !g_geom || !ph) {
    ctr_phantom_free(ph);
    return 0;
  }
  g_proj = malloc(NPROJ * sizeof(float));
  g_one = malloc(NVOX * sizeof(float));
  const int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(g_one, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g_geom, 1, &pa));
  ctr_phantom_free(ph);
  ctr_fdk_stream_options so = multi_opts(1, CTR_FDK_SPLIT_AUTO, 6, CTR_FDK_STORE_AUTO);
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &so, &pa, &va, &rep));
  CHECK(rep.workers == 1 && rep.plan.nslabs == 6);
  /* The bound of a different summation order: both orders add the same K
   * float terms t_k of a voxel; recursive summation errs by at most
   * (K - 1) u sum |t_k| (u = 2^-24) each way, so two orders differ by at
   * most 2 (K - 1) u sum |t_k|. sum |t_k| is the backprojection of the
   * filtered views' magnitudes (in double). The filtered views are the same
   * in both: each view is filtered once, by the same code. */
  float *filt = malloc(NPROJ * sizeof(float));
  memcpy(filt, g_proj, NPROJ * sizeof(float));
  ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
  CHECK_OK(ctr_fdk_filter(NULL, g_geom, &fo, 0, NVIEWS, filt));
  for (size_t i = 0; i < NPROJ; i++) filt[i] = fabsf(filt[i]);
  g_abs = calloc(NVOX, sizeof(double));
  ctr__bp_reference(g_geom, 0, NVIEWS, filt, g_abs, 0, N);
  free(filt);
  return 1;
}

/* |a - b| <= 2 (K - 1) u sum|t| + 4 ulp(|b|) per voxel. */
static int within_order_bound(const float *a, const float *b, const char *what) {
  const double u = ldexp(1.0, -24);
  int64_t bad = 0, differ = 0;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < NVOX; i++) {
    const double d = fabs((double)a[i] - (double)b[i]);
    const double bound = 2.0 * (NVIEWS - 1) * u * g_abs[i] + 4.0 * u * fabs((double)b[i]);
    differ += a[i] != b[i];
    if (!(d <= bound)) bad++;
    if (bound > 0 && d / bound > worst) worst = d / bound, at = i;
  }
  printf("%s: %lld of %zu voxels differ from one worker, worst %.3f of the bound", what,
         (long long)differ, NVOX, worst);
  if (bad) /* where, to tell a region (an edge, a slab) from scattered rounding */
    printf(" at (x %zu, y %zu, z %zu): %.9g against %.9g", at % N, at / N % N, at / N / N,
           (double)a[at], (double)b[at]);
  printf("\n");
  CHECK_MSG(bad == 0, "%s: %lld voxels beyond the summation-order bound", what, (long long)bad);
  return bad == 0;
}

static void test_memory(void) {
  const int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  float *vol = malloc(NVOX * sizeof(float)), *one = malloc(NVOX * sizeof(float));
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va1 = ctr_array_make(one, CTR_DTYPE_FLOAT32, 3, vd);
  const ctr_fdk_store stores[3] = {CTR_FDK_STORE_AUTO, CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  for (int w = 2; w <= 4; w++) {
    for (int si = 0; si < 3; si++) {
      ctr_fdk_stream_options o = multi_opts(w, CTR_FDK_SPLIT_VOLUME, 6, stores[si]);
      ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
      memset(vol, 0xff, NVOX * sizeof(float));
      CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep));
      CHECK_MSG(rep.workers == w && rep.plan.split == CTR_FDK_SPLIT_VOLUME && rep.plan.nslabs == 6,
                "volume split on %d: %d workers, %s, %lld subvolumes", w, rep.workers,
                ctr_fdk_split_name(rep.plan.split), (long long)rep.plan.nslabs);
      CHECK_MSG(!memcmp(vol, g_one, NVOX * sizeof(float)),
                "volume split on %d workers, store %s: not bit-identical to one worker", w,
                ctr_fdk_store_name(stores[si]));
      /* each worker reports its own times; every one backprojected */
      for (int i = 0; i < rep.workers; i++) CHECK(rep.worker_timings[i].backproject > 0);
    }
    /* the projection split: within the bound of another summation order of
     * one worker's terms (the same subvolumes: on the GPU a whole symmetric
     * volume uses the mirrored-pair kernels, whose terms differ) */
    const int64_t slabs[2] = {0, 7};
    for (int k = 0; k < 2; k++) {
      ctr_fdk_stream_options o = multi_opts(1, CTR_FDK_SPLIT_AUTO, slabs[k], CTR_FDK_STORE_HOST);
      ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
      CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va1, &rep));
      o = multi_opts(w, CTR_FDK_SPLIT_PROJECTIONS, slabs[k], CTR_FDK_STORE_HOST);
      memset(vol, 0xff, NVOX * sizeof(float));
      CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep));
      CHECK(rep.workers == w && rep.plan.split == CTR_FDK_SPLIT_PROJECTIONS &&
            rep.plan.nslabs == (k ? 5 : 1));
      CHECK(rep.timings.reduce > 0);
      char what[64];
      snprintf(what, sizeof what, "projection split on %d workers, %lld subvolume(s)", w,
               (long long)rep.plan.nslabs);
      within_order_bound(vol, one, what);
#ifdef CTR_TEST_CUDA
      if (k == 0) {
        /* filtered views kept on the GPU: one symmetric subvolume with
         * resident views takes the mirrored-pair kernels (plan.c), whose
         * mirror-slice terms differ from the host store's (the mirror's
         * detector row is taken by symmetry), so the reference is one worker
         * with the same plan. With several workers the last batches are held
         * back and each slab's sums start once every worker has it
         * (engine.h, tail_*): the same terms in another order. */
        float *tail = malloc(NVOX * sizeof(float)), *dev1 = malloc(NVOX * sizeof(float));
        ctr_array ta = ctr_array_make(tail, CTR_DTYPE_FLOAT32, 3, vd);
        ctr_array d1 = ctr_array_make(dev1, CTR_DTYPE_FLOAT32, 3, vd);
        o = multi_opts(1, CTR_FDK_SPLIT_AUTO, 0, CTR_FDK_STORE_DEVICE);
        CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &d1, &rep));
        const int pair = rep.plan.pair;
        CHECK(rep.plan.store == CTR_FDK_STORE_DEVICE && rep.plan.nslabs == 1 && pair == 1);
        o = multi_opts(w, CTR_FDK_SPLIT_PROJECTIONS, 0, CTR_FDK_STORE_DEVICE);
        memset(tail, 0xff, NVOX * sizeof(float));
        CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &ta, &rep));
        CHECK(rep.workers == w && rep.plan.store == CTR_FDK_STORE_DEVICE && rep.plan.pair == pair &&
              rep.plan.nbatches >= 2 * w);
        snprintf(what, sizeof what, "projection split on %d workers, views kept on the GPU", w);
        within_order_bound(tail, dev1, what);
        free(dev1);
        free(tail);
      } else {
        /* views kept on the GPU, subvolumes too thin to hold batches back
         * (no tail): the same sums as with views on the host */
        float *dev = malloc(NVOX * sizeof(float));
        ctr_array da = ctr_array_make(dev, CTR_DTYPE_FLOAT32, 3, vd);
        o = multi_opts(w, CTR_FDK_SPLIT_PROJECTIONS, slabs[k], CTR_FDK_STORE_DEVICE);
        memset(dev, 0xff, NVOX * sizeof(float));
        CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &da, &rep));
        CHECK(rep.workers == w && rep.plan.store == CTR_FDK_STORE_DEVICE && rep.plan.nslabs == 5);
        snprintf(what, sizeof what, "projection split on %d workers, views on the GPU, 5 subvolumes", w);
        within_order_bound(dev, one, what);
        CHECK_MSG(!memcmp(dev, vol, NVOX * sizeof(float)),
                  "%s: not bit-identical to the split with views on the host", what);
        free(dev);
      }
#endif
    }
  }
  free(vol);
  free(one);
}

#ifdef CTR_TEST_CUDA
/* Several real GPUs where the machine has them (a worker each, peer or host
 * copies between devices): the volume split bit-identical to one worker, the
 * projection split within the summation-order bound. Skipped, and said, on
 * one GPU. */
static void test_devices(void) {
  const int have = ctr_cuda_get_device_count();
  if (have < 2) {
    printf("several GPUs: SKIPPED (%d GPU visible)\n", have);
    return;
  }
  const int nd = have < 4 ? have : 4;
  int devices[4] = {0, 1, 2, 3};
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.devices = devices;
  co.ndevices = nd;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  if (!ctx) return;
  CHECK(ctr_context_get_device_count(ctx) == nd);
  const int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  float *vol = malloc(NVOX * sizeof(float)), *one = malloc(NVOX * sizeof(float));
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va1 = ctr_array_make(one, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  ctr_fdk_stream_options o = multi_opts(nd, CTR_FDK_SPLIT_VOLUME, 6, CTR_FDK_STORE_AUTO);
  memset(vol, 0xff, NVOX * sizeof(float));
  CHECK_OK(ctr_fdk_stream_memory(ctx, g_geom, &o, &pa, &va, &rep));
  CHECK_MSG(rep.workers == nd && rep.plan.split == CTR_FDK_SPLIT_VOLUME, "%d GPUs, volume split: %d "
            "workers, %s", nd, rep.workers, ctr_fdk_split_name(rep.plan.split));
  CHECK_MSG(!memcmp(vol, g_one, NVOX * sizeof(float)),
            "volume split on %d GPUs: not bit-identical to one worker", nd);
  for (int i = 0; i < rep.workers; i++)
    CHECK_MSG(rep.worker_timings[i].backproject > 0, "GPU worker %d did not backproject", i);
  o = multi_opts(1, CTR_FDK_SPLIT_AUTO, 0, CTR_FDK_STORE_HOST);
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va1, &rep));
  o = multi_opts(nd, CTR_FDK_SPLIT_PROJECTIONS, 0, CTR_FDK_STORE_HOST);
  memset(vol, 0xff, NVOX * sizeof(float));
  CHECK_OK(ctr_fdk_stream_memory(ctx, g_geom, &o, &pa, &va, &rep));
  CHECK_MSG(rep.workers == nd && rep.plan.split == CTR_FDK_SPLIT_PROJECTIONS && rep.timings.reduce > 0,
            "%d GPUs, projection split: %d workers, %s", nd, rep.workers,
            ctr_fdk_split_name(rep.plan.split));
  char what[64];
  snprintf(what, sizeof what, "projection split on %d GPUs", nd);
  within_order_bound(vol, one, what);
  /* views kept on the GPUs: the tail path (each slab's sums across the
   * devices once every GPU has it), within the bound of one worker with the
   * same plan (mirrored pairs), and bit for bit the sums of as many workers
   * sharing one GPU */
  float *tail = malloc(NVOX * sizeof(float));
  ctr_array ta = ctr_array_make(tail, CTR_DTYPE_FLOAT32, 3, vd);
  o = multi_opts(1, CTR_FDK_SPLIT_AUTO, 0, CTR_FDK_STORE_DEVICE);
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va1, &rep));
  o = multi_opts(nd, CTR_FDK_SPLIT_PROJECTIONS, 0, CTR_FDK_STORE_DEVICE);
  memset(vol, 0xff, NVOX * sizeof(float));
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep));
  const ctr_fdk_plan shared = rep.plan;
  memset(tail, 0xff, NVOX * sizeof(float));
  CHECK_OK(ctr_fdk_stream_memory(ctx, g_geom, &o, &pa, &ta, &rep));
  CHECK(rep.workers == nd && rep.plan.store == CTR_FDK_STORE_DEVICE && rep.plan.nbatches >= 2 * nd &&
        rep.plan.pair && rep.plan.views_per_batch == shared.views_per_batch &&
        rep.plan.pair == shared.pair);
  snprintf(what, sizeof what, "projection split on %d GPUs, views kept on them", nd);
  within_order_bound(tail, one, what);
  CHECK_MSG(!memcmp(tail, vol, NVOX * sizeof(float)),
            "%s: not bit-identical to %d workers sharing one GPU", what, nd);
  free(tail);
  free(vol);
  free(one);
  ctr_context_free(ctx);
}
#endif

/* Progress with several workers: reported from the calling thread after
 * every subset; a cancellation stops them all. */
static int g_calls, g_cancel_at;
static int count_progress(void *user, const char *stage, double f) {
  (void)user, (void)stage, (void)f;
  return ++g_calls == g_cancel_at;
}

static int64_t journal_lines(const char *path) {
  long long n;
  unsigned char *b = read_all(path, &n);
  int64_t lines = 0;
  for (long long i = 0; b && i + 5 < n; i++) lines += !memcmp(b + i, "\nslab ", 6);
  free(b);
  return lines;
}

static void test_files(void) {
  const char *in = P("proj.raw");
  CHECK_OK(ctr_stack_save(in, CTR_FORMAT_RAW, &(ctr_stack_info){CTR_STACK_INFO_VERSION, NU, NV,
                          NVIEWS, CTR_DTYPE_FLOAT32,
                                                               {0, 0, 0}, {0, 0, 0}},
                          CTR_DTYPE_FLOAT32, g_proj, 0));
  ctr_stack_info hint = {CTR_STACK_INFO_VERSION, NU, NV, NVIEWS, CTR_DTYPE_FLOAT32, {0, 0, 0}, {0, 0, 0}};
  ctr_stack_reader *rd = NULL;
  CHECK_OK(ctr_stack_open(in, CTR_FORMAT_RAW, &hint, 0, &rd));
  if (!rd) return;
  /* one worker, file to file: the reference bytes */
  ctr_fdk_stream_options o = multi_opts(1, CTR_FDK_SPLIT_AUTO, 6, CTR_FDK_STORE_AUTO);
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("one.raw"), CTR_FORMAT_AUTO, &rep));
  const ctr_fdk_store stores[3] = {CTR_FDK_STORE_AUTO, CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  for (int w = 2; w <= 3; w++)
    for (int si = 0; si < 3; si++) {
      o = multi_opts(w, CTR_FDK_SPLIT_VOLUME, 6, stores[si]);
      o.overwrite = 1; /* one output for every case */
      CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("multi.raw"), CTR_FORMAT_AUTO, &rep));
      CHECK_MSG(same_files(P("multi.raw"), P("one.raw")),
                "file to file on %d workers, store %s: bytes differ from one worker", w,
                ctr_fdk_store_name(stores[si]));
    }
  /* projection split to a file (each worker writes its share of the
   * slices of every subvolume; the journal joins their checksums) */
  o = multi_opts(3, CTR_FDK_SPLIT_PROJECTIONS, 6, CTR_FDK_STORE_HOST);
  CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("proj3.raw"), CTR_FORMAT_AUTO, &rep));
  {
    ctr_stack_info vh = {CTR_STACK_INFO_VERSION, N, N, N, CTR_DTYPE_FLOAT32, {0, 0, 0}, {0, 0, 0}},
                   vi = CTR_STACK_INFO_INIT;
    float *vol = NULL;
    CHECK_OK(ctr_stack_load(P("proj3.raw"), CTR_FORMAT_RAW, &vh, CTR_DTYPE_FLOAT32, &vi,
                            (void **)&vol));
    if (vol) within_order_bound(vol, g_one, "projection split on 3 workers, file");
    free(vol);
  }
  /* Interrupted on 2 workers after 2 journalled subvolumes (the writer's
   * fault injection), resumed on 1; and interrupted on 1, resumed on 3: the
   * same bytes as the uninterrupted run. */
  const int first[2] = {2, 1}, second[2] = {1, 3};
  for (int k = 0; k < 2; k++) {
    const char *out = P("resumed.raw");
    o = multi_opts(first[k], CTR_FDK_SPLIT_VOLUME, 6, CTR_FDK_STORE_AUTO);
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
    const ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK_MSG(st == CTR_E_CANCELLED && strstr(ctr_error_detail(), "fault injection"),
              "interrupted on %d: %s (%s)", first[k], ctr_status_name(st), ctr_error_detail());
    CHECK_MSG(journal_lines(P("resumed.raw.partial.journal")) == 2, "%lld journalled",
              (long long)journal_lines(P("resumed.raw.partial.journal")));
    o = multi_opts(second[k], CTR_FDK_SPLIT_AUTO, 0, CTR_FDK_STORE_AUTO);
    o.resume = 1;
    CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep));
    CHECK_MSG(rep.slabs_resumed == 2 && rep.plan.nslabs == 6, "resumed %lld of %lld",
              (long long)rep.slabs_resumed, (long long)rep.plan.nslabs);
    CHECK_MSG(same_files(out, P("one.raw")), "interrupted on %d, resumed on %d: bytes differ",
              first[k], second[k]);
    CHECK(!exists(P("resumed.raw.partial")) && !exists(P("resumed.raw.partial.journal")));
    unlink(out);
  }
  /* A multi-page TIFF takes its pages in order: several workers asked for
   * are refused, naming the formats that take them (left automatic on
   * several GPUs, one worker writes it). */
  o = multi_opts(2, CTR_FDK_SPLIT_VOLUME, 6, CTR_FDK_STORE_AUTO);
  CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("multi.tif"), CTR_FORMAT_AUTO, &rep),
              CTR_E_UNSUPPORTED, "TIFF stack pattern");
  CHECK(!exists(P("multi.tif")));
  /* A projection split interrupted on 3 workers and resumed with the split
   * and workers left automatic: the journal's split on as many workers (its
   * sums depend on them), the same bytes as the uninterrupted run. */
  {
    const char *out = P("resumed3.raw");
    o = multi_opts(3, CTR_FDK_SPLIT_PROJECTIONS, 6, CTR_FDK_STORE_HOST);
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
    const ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK_MSG(st == CTR_E_CANCELLED, "projection split interrupted: %s", ctr_status_name(st));
    o = multi_opts(0, CTR_FDK_SPLIT_AUTO, 0, CTR_FDK_STORE_AUTO);
    o.resume = 1;
    CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep));
    CHECK_MSG(rep.slabs_resumed == 2 && rep.workers == 3 &&
                  rep.plan.split == CTR_FDK_SPLIT_PROJECTIONS,
              "resumed %lld subvolumes on %d workers, %s split", (long long)rep.slabs_resumed,
              rep.workers, ctr_fdk_split_name(rep.plan.split));
    CHECK_MSG(same_files(out, P("proj3.raw")),
              "projection split on 3 workers interrupted and resumed: bytes differ");
    unlink(out);
  }
  /* Progress and cancellation with three workers. */
  {
    ctr_context *cctx = NULL;
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
#ifdef CTR_TEST_CUDA
    co.device = CTR_DEVICE_CUDA;
    co.device_index = 0;
#else
    co.device = CTR_DEVICE_CPU;
#endif
    co.progress = count_progress;
    CHECK_OK(ctr_context_create(&co, &cctx));
    if (cctx) {
      o = multi_opts(3, CTR_FDK_SPLIT_VOLUME, 6, CTR_FDK_STORE_AUTO);
      g_calls = 0;
      g_cancel_at = -1;
      CHECK_OK(ctr_fdk_stream(cctx, g_geom, &o, rd, P("progress.raw"), CTR_FORMAT_AUTO, &rep));
      const int64_t subsets = rep.plan.nslabs * rep.plan.nbatches;
      CHECK_MSG(g_calls >= subsets && g_calls <= subsets + 2, "%d progress calls for %lld subsets",
                g_calls, (long long)subsets);
      g_calls = 0;
      g_cancel_at = 10;
      CHECK_FAILS(ctr_fdk_stream(cctx, g_geom, &o, rd, P("cancel.raw"), CTR_FORMAT_AUTO, &rep),
                  CTR_E_CANCELLED, "cancel");
      CHECK(!exists(P("cancel.raw")));
      ctr_context_free(cctx);
    }
  }
  ctr_stack_close(rd);
  /* A truncated input with several workers: the reader's error, no hang. */
  {
    FILE *f = fopen(P("short.raw"), "wb");
    if (f) {
      fwrite(g_proj, sizeof(float), NPROJ / 2, f);
      fclose(f);
    }
    ctr_stack_reader *sr = NULL;
    hint.count = NVIEWS;
    const ctr_status st = ctr_stack_open(P("short.raw"), CTR_FORMAT_RAW, &hint, 0, &sr);
    /* refused at open (size checked) or at the read: either names the file */
    if (st == CTR_OK) {
      o = multi_opts(3, CTR_FDK_SPLIT_VOLUME, 6, CTR_FDK_STORE_AUTO);
      CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, &o, sr, P("short_out.raw"), CTR_FORMAT_AUTO, &rep),
                  CTR_E_IO, "short.raw");
      ctr_stack_close(sr);
    } else {
      CHECK_MSG(strstr(ctr_error_detail(), "short.raw") != NULL, "%s", ctr_error_detail());
    }
  }
}

int main(void) {
#ifdef CTR_TEST_CUDA
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_multi: SKIPPED (no usable GPU)\n");
    return 77;
  }
#endif
  test_split_budget();
  test_planner();
  if (!scratch_open("multi")) return 1;
  if (setup()) {
    test_memory();
#ifdef CTR_TEST_CUDA
    test_devices();
#endif
    test_files();
  }
  free(g_proj);
  free(g_one);
  free(g_abs);
  ctr_geometry_free(g_geom);
  ctr_context_free(g_ctx);
  scratch_close();
  return th_finish("test_multi");
}
