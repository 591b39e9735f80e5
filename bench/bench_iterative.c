/* Iterative CT benchmark (issue 23): the projector and the algorithms on the
 * GPU, with the data ASTRA gets (bench/astra_iterative.py).
 *
 *   bench_iterative [--cases LIST] [--repeats R] [--json FILE] [--dump DIR]
 *                   [--pairs matched|fast|both] [--memory pinned|pageable|both]
 *                   [--forward-only] [--gpu-budget-gb G]
 *                   [--tune KEY=VALUE]...
 *
 * Cases (comma list; default fp-A,fp-B,iter-A,cgls-B20,fista-256):
 *  fp-A       forward projection of 512^3 (0.5 mm) to 496 views of 1248 x 960, and the
 *             adjoint, data on the GPU: seconds and GUPS (views x voxels / s / 1e9)
 *  fp-B       the same for 1024^3 (0.25 mm) to 1200 views of 1024^2
 *  iter-A     one SIRT and one CGLS iteration at 512^3 from case A's projections, matched
 *             and fast pairs: the median time per iteration (steady state, from the
 *             iterations' callbacks) and the whole call
 *  cgls-B20   20 CGLS iterations of 1024^3 from 1200 x 1024^2, matched and fast: the
 *             whole call (host projections in, host volume out)
 *  cgls-2048  CGLS on 2048^3 (0.125 mm) from 1200 x 2048^2: its plan and two iterations'
 *             time (needs about 120 GB of host memory; about 10 minutes)
 *  fista-256  FISTA-TV against FDK at 60 views of 256^3 from exact Shepp-Logan line
 *             integrals: the relative errors and the margin
 * --pairs matched|fast|both (default both) picks the pairs iter-A, cgls-B20 and cgls-2048
 * run (cgls-2048: matched unless fast alone is named); --forward-only leaves the adjoints
 * out of fp-A and fp-B (the forward projector's own runs). --gpu-budget-gb G caps
 * cgls-2048's GPU budget at G x 1e9 bytes (80: plan as on an 80 GB H100 when the card is
 * larger). --tune sets a key of the context's tuning table (ctr_tuning_set). With
 * --pairs fast, fp-A and fp-B time the fast pair's projector (its forward is the matched
 * one's kernel; the branches fwd-hybrid and fwd-half changed it, bench/NOTES.md).
 * Medians of R repeats after a warm-up. With --dump DIR, case A's volume, projections and
 * geometry go to DIR for the ASTRA comparison. Writes the benchmark JSON of
 * docs/design.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ctrecon.h"

#if CTR_HAVE_CUDA
#include "bench_floor.h"
#include "iterative/iterative.h"

typedef bench_cone geo_case;

static const geo_case CASE_A = BENCH_CASE_A, CASE_B = BENCH_CASE_B;
static const geo_case CASE_2048 = {"2048", 2048, 2048, 2048, 1200, 0.125, 1000.0, 1500.0, 0.20};
static const geo_case CASE_F = {"F", 256, 384, 384, 60, 1.0, 750.0, 1200.0, 1.0};

static bench_json json;
static bench_floor floor_rates; /* measured when pageable arrays are benchmarked (--memory) */
static int repeats = 3;
static int pairs = 3;        /* bit 0: matched, bit 1: fast */
static int memories = 1;     /* iter-A, cgls-B20: bit 0 pinned arrays, bit 1 pageable (--memory) */
static int forward_only = 0; /* fp cases: no adjoints */
static double gpu_budget_gb = 0; /* cgls-2048: cap on the GPU budget, GB (0: the card's) */

static ctr_phantom *head(const geo_case *c) {
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(0.95 * 0.5 * (double)c->n * c->voxel, 0.02, &ph))
    BENCH_DIE("phantom: %s", ctr_error_detail());
  return ph;
}

/* The voxelised head (pinned host memory). */
static float *voxelised(const geo_case *c, const ctr_geometry *g, const ctr_phantom *ph) {
  const size_t nvox = (size_t)(c->n * c->n * c->n);
  float *v = ctr_host_alloc(nvox * sizeof(float));
  if (!v) BENCH_DIE("out of host memory (volume)");
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
  int64_t vd[3] = {c->n, c->n, c->n};
  ctr_array va = ctr_array_make(v, CTR_DTYPE_FLOAT32, 3, vd);
  if (ctr_phantom_voxelize(NULL, ph, &vol, 1, 0, &va)) BENCH_DIE("voxelize: %s", ctr_error_detail());
  return v;
}

/* ---- Projector ---------------------------------------------------------------- */

/* Forward and adjoint with every vector on the GPU (the projector's own
 * layouts and tables included), median of the repeats after a warm-up. */
static void bench_projector(ctr_context *ctx, const geo_case *c, const char *dump) {
  ctr_geometry *g = bench_cone_geometry(c);
  ctr_phantom *ph = head(c);
  float *vol = voxelised(c, g, ph);
  ctr_projector *p = NULL;
  /* the matched pair, or with --pairs fast the fast pair */
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  po.pair = pairs == 2 ? CTR_PAIR_FAST : CTR_PAIR_MATCHED;
  const char *pair = ctr_projector_pair_name(po.pair);
  if (ctr_projector_create_cone(ctx, g, &po, &p)) BENCH_DIE("projector: %s", ctr_error_detail());
  const int64_t nvox = c->n * c->n * c->n, nproj = c->nu * c->nv * c->nviews;
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  uint64_t budget = 0;
  ctr_context_get_memory_budgets(ctx, &budget, NULL);
  if (ctr__it_plan(p, 1, 1, po.pair == CTR_PAIR_FAST, CTR_DEVICE_CUDA, budget, 0, 0, &plan))
    BENCH_DIE("plan: %s", ctr_error_detail());
  if (plan.placement != CTR_PLACE_DEVICE) BENCH_DIE("case %s does not fit the GPU", c->name);
  ctr__proj_use(p, &plan);
  ctr__vec x, y;
  if (ctr__vec_alloc(p, nvox, 1, &x) || ctr__vec_alloc(p, nproj, 1, &y) ||
      ctr__vec_upload(p, &x, vol))
    BENCH_DIE("device vectors: %s", ctr_error_detail());
  double tf[16], ta[16];
  for (int r = 0; r <= repeats && r < 16; r++) {
    double t0 = ctr__now_s();
    if (ctr__proj_forward(p, &x, &y, 0, c->nviews)) BENCH_DIE("forward: %s", ctr_error_detail());
    const double t1 = ctr__now_s();
    if (!forward_only && ctr__proj_adjoint(p, &y, &x, 0, c->nviews))
      BENCH_DIE("adjoint: %s", ctr_error_detail());
    const double t2 = ctr__now_s();
    if (r > 0) tf[r - 1] = t1 - t0, ta[r - 1] = t2 - t1;
    if (r == 0 && dump) { /* the forward projection of the voxelised head, for ASTRA */
      float *proj = malloc(sizeof(float) * (size_t)nproj);
      if (!proj || ctr__vec_download(p, proj, &y)) BENCH_DIE("download");
      bench_save_raw(dump, "proj.raw", proj, sizeof(float) * (size_t)nproj);
      bench_save_raw(dump, "vol.raw", vol, sizeof(float) * (size_t)nvox);
      char path[1024];
      snprintf(path, sizeof path, "%s/geometry.json", dump);
      if (ctr_geometry_save_json(g, path, 1)) BENCH_DIE("geometry: %s", ctr_error_detail());
      free(proj);
    }
    if (r == 0 && ctr__vec_upload(p, &x, vol)) BENCH_DIE("upload");
  }
  const double sf = bench_median(tf, repeats), sa = bench_median(ta, repeats);
  const double ups = (double)c->nviews * (double)nvox;
  if (forward_only)
    printf("case %s (%s pair): forward %.4f s (%.1f GUPS)\n", c->name, pair, sf, ups / sf / 1e9);
  else
    printf("case %s (%s pair): forward %.4f s (%.1f GUPS), adjoint %.4f s (%.1f GUPS)\n", c->name,
           pair, sf, ups / sf / 1e9, sa, ups / sa / 1e9);
  bench_json_case(&json, "\"name\": \"%s/forward\", \"seconds\": %.6f, \"gups\": %.2f, \"volume\": %lld, "
            "\"views\": %lld, \"detector\": [%lld, %lld], \"pair\": \"%s\"", c->name, sf, ups / sf / 1e9,
            (long long)c->n, (long long)c->nviews, (long long)c->nu, (long long)c->nv, pair);
  if (!forward_only)
    bench_json_case(&json, "\"name\": \"%s/adjoint\", \"seconds\": %.6f, \"gups\": %.2f, \"pair\": \"%s\"",
              c->name, sa, ups / sa / 1e9, pair);
  /* The public call, host arrays in and out (what ASTRA's FP3D_CUDA times). */
  {
    float *proj = ctr_host_alloc(sizeof(float) * (size_t)nproj);
    double th[16];
    if (!proj) BENCH_DIE("out of host memory");
    for (int r = 0; r <= repeats && r < 16; r++) {
      const double t0 = ctr__now_s();
      if (ctr_projector_forward(p, vol, proj)) BENCH_DIE("forward: %s", ctr_error_detail());
      if (r > 0) th[r - 1] = ctr__now_s() - t0;
    }
    const double sh = bench_median(th, repeats);
    printf("case %s (%s pair): forward, host arrays in and out, %.4f s\n", c->name, pair, sh);
    bench_json_case(&json, "\"name\": \"%s/forward-host\", \"seconds\": %.6f, \"gups\": %.2f, \"pair\": \"%s\"",
              c->name, sh, ups / sh / 1e9, pair);
    ctr_host_free(proj);
    ctr__proj_use(p, &plan);
  }
  /* The fast pair's backprojection (host round trip included: the public
   * ctr_backprojector takes host images). */
  if (forward_only) goto out;
  ctr_projector_options pfo = CTR_PROJECTOR_OPTIONS_INIT;
  pfo.pair = CTR_PAIR_FAST;
  ctr_projector *pf = NULL;
  if (ctr_projector_create_cone(ctx, g, &pfo, &pf)) BENCH_DIE("fast projector: %s", ctr_error_detail());
  ctr__proj_use(pf, &plan);
  double tb[16];
  for (int r = 0; r <= repeats && r < 16; r++) {
    const double t0 = ctr__now_s();
    if (ctr__proj_adjoint(pf, &y, &x, 0, c->nviews)) BENCH_DIE("fast adjoint: %s", ctr_error_detail());
    if (r > 0) tb[r - 1] = ctr__now_s() - t0;
  }
  const double sb = bench_median(tb, repeats);
  printf("case %s: fast (unmatched) backprojection %.4f s (%.1f GUPS)\n", c->name, sb,
         ups / sb / 1e9);
  bench_json_case(&json, "\"name\": \"%s/adjoint-fast\", \"seconds\": %.6f, \"gups\": %.2f, \"pair\": \"fast\"",
            c->name, sb, ups / sb / 1e9);
  ctr_projector_free(pf);
out:
  ctr__vec_free(p, &x);
  ctr__vec_free(p, &y);
  ctr_projector_free(p);
  ctr_host_free(vol);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* ---- Algorithms -------------------------------------------------------------- */

typedef struct laps {
  int n;
  double t[256];
  double split[3][256]; /* each iteration's forward, adjoint and vector seconds */
} laps;

static int lap(void *user, const ctr_iterate_info *i) {
  laps *l = user;
  if (l->n < 256) {
    l->split[0][l->n] = i->seconds_forward;
    l->split[1][l->n] = i->seconds_adjoint;
    l->split[2][l->n] = i->seconds_vector;
    l->t[l->n++] = i->seconds;
  }
  return 0;
}

/* One run of `it` iterations: the whole call's seconds and the median time
 * of iterations 2 .. it (the steady state), and their median forward,
 * adjoint and vector seconds (split). */
static void run_algorithm(ctr_projector *p, ctr_iterate_algorithm a, int64_t it, const float *proj,
                          float *vol, double *total, double *per, double split[3],
                          ctr_iterate_report *rep) {
  laps l = {0};
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = a;
  o.iterations = it;
  o.on_iteration = lap;
  o.user = &l;
  *rep = (ctr_iterate_report)CTR_ITERATE_REPORT_INIT;
  const double t0 = ctr__now_s();
  if (ctr_iterate(p, &o, proj, vol, rep)) BENCH_DIE("%s: %s", ctr_iterate_algorithm_name(a), ctr_error_detail());
  *total = ctr__now_s() - t0;
  double d[256];
  int n = 0;
  for (int k = 1; k < l.n; k++) d[n++] = l.t[k] - l.t[k - 1];
  *per = n ? bench_median(d, n) : *total;
  for (int s = 0; s < 3; s++)
    split[s] = l.n > 1 ? bench_median(l.split[s] + 1, l.n - 1) : l.n ? l.split[s][0] : 0.0;
}

/* `runs` timed runs of each algorithm and pair (after a warm-up run when
 * warm is set). */
static void bench_iterations(ctr_context *ctx, const geo_case *c, int64_t iterations,
                             const ctr_iterate_algorithm *algs, int nalgs, int warm, int runs) {
  ctr_geometry *g = bench_cone_geometry(c);
  ctr_phantom *ph = head(c);
  const int64_t nproj = c->nu * c->nv * c->nviews;
  float *proj = ctr_host_alloc(sizeof(float) * (size_t)nproj);
  float *vol = voxelised(c, g, ph);
  if (!proj) BENCH_DIE("out of host memory");
  int64_t pd[3] = {c->nu, c->nv, c->nviews};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  double pinned_s = -1; /* the pinned run of the algorithm, for the pageable run's floor */
  fprintf(stderr, "case %s: exact projections of the head...\n", c->name);
  if (ctr_phantom_project(NULL, ph, g, 1, &pa)) BENCH_DIE("project: %s", ctr_error_detail());
  for (int pair = 0; pair < 2; pair++) {
    if (!(pairs >> pair & 1)) continue;
    ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
    po.pair = pair ? CTR_PAIR_FAST : CTR_PAIR_MATCHED;
    ctr_projector *p = NULL;
    if (ctr_projector_create_cone(ctx, g, &po, &p)) BENCH_DIE("projector: %s", ctr_error_detail());
    for (int k = 0; k < nalgs; k++)
    for (int m = 0; m < 2; m++) { /* the caller's arrays pinned, then pageable (malloc'd, touched) */
      if (!(memories >> m & 1)) continue;
      float *pp = proj, *pv = vol;
      if (m) {
        pp = malloc(sizeof(float) * (size_t)nproj);
        pv = malloc(sizeof(float) * (size_t)(c->n * c->n * c->n));
        if (!pp || !pv) BENCH_DIE("out of host memory (pageable arrays)");
        memcpy(pp, proj, sizeof(float) * (size_t)nproj);
        memcpy(pv, vol, sizeof(float) * (size_t)(c->n * c->n * c->n));
      }
      double tot[16], per[16], spl[3][16], sm[3];
      ctr_iterate_report rep = CTR_ITERATE_REPORT_INIT;
      for (int r = warm ? -1 : 0; r < runs && r < 16; r++) {
        double t, q, s3[3];
        run_algorithm(p, algs[k], iterations, pp, pv, &t, &q, s3, &rep);
        if (r >= 0) {
          tot[r] = t, per[r] = q;
          for (int s = 0; s < 3; s++) spl[s][r] = s3[s];
        }
      }
      for (int s = 0; s < 3; s++) sm[s] = bench_median(spl[s], runs);
      if (m) free(pp), free(pv);
      const double st = bench_median(tot, runs), sp = bench_median(per, runs);
      /* the pageable floor: the pinned run plus the host copies the DMA cannot
       * hide (projections and the start volume up, the result down) */
      double floor_s = -1;
      if (!m) pinned_s = st;
      if (m && pinned_s > 0 && floor_rates.dma_up > 0) {
        const double vb = 4.0 * (double)(c->n * c->n * c->n);
        floor_s = bench_floor_seconds(&floor_rates, pinned_s, 4.0 * (double)nproj + vb, vb);
        pinned_s = -1;
      }
      char plan[512], fl[64] = "";
      ctr_iterate_plan_describe(&rep.plan, plan, sizeof plan);
      if (floor_s > 0) snprintf(fl, sizeof fl, " (pageable floor %.3f s)", floor_s);
      printf("case %s: %s (%s pair, %s arrays), %lld iterations: %.3f s in all%s, %.4f s per iteration "
             "(forward %.4f, adjoint %.4f, vector work %.4f s); setup %.3f s; "
             "residual %.4g of ||b||; plan: %s\n", c->name, ctr_iterate_algorithm_name(algs[k]),
             ctr_projector_pair_name(po.pair), m ? "pageable" : "pinned", (long long)iterations, st, fl,
             sp, sm[0], sm[1], sm[2], rep.seconds_setup, rep.residual / rep.norm_b, plan);
      bench_json_case(&json, "\"name\": \"%s/%s/%s/%lld-iterations%s\", \"memory\": \"%s\", \"seconds\": %.6f, "
                "\"floor_seconds\": %.6f, "
                "\"seconds_per_iteration\": %.6f, \"forward_seconds_per_iteration\": %.6f, "
                "\"adjoint_seconds_per_iteration\": %.6f, \"vector_seconds_per_iteration\": %.6f, "
                "\"setup_seconds\": %.6f, \"iterations\": %lld, \"pair\": \"%s\", "
                "\"relative_residual\": %.6g, \"placement\": \"%s\", \"volume\": %lld, \"views\": "
                "%lld, \"detector\": [%lld, %lld]",
                c->name, ctr_iterate_algorithm_name(algs[k]), ctr_projector_pair_name(po.pair),
                (long long)iterations, m ? "/pageable" : "", m ? "pageable" : "pinned", st, floor_s, sp,
                sm[0], sm[1], sm[2], rep.seconds_setup, (long long)iterations,
                ctr_projector_pair_name(po.pair), rep.residual / rep.norm_b,
                ctr_iterate_placement_name(rep.plan.placement), (long long)c->n,
                (long long)c->nviews, (long long)c->nu, (long long)c->nv);
    }
    ctr_projector_free(p);
  }
  ctr_host_free(proj);
  ctr_host_free(vol);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* 2048^3 from 1200 x 2048^2: the projections of the voxelised head (the
 * GPU's own forward projection, slab by slab), then CGLS for two
 * iterations with the volume in host memory. */
static void bench_2048(ctr_context *ctx) {
  const geo_case *c = &CASE_2048;
  ctr_geometry *g = bench_cone_geometry(c);
  ctr_phantom *ph = head(c);
  ctr_projector *p = NULL;
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  po.pair = pairs == 2 ? CTR_PAIR_FAST : CTR_PAIR_MATCHED;
  if (ctr_projector_create_cone(ctx, g, &po, &p)) BENCH_DIE("projector: %s", ctr_error_detail());
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = CTR_ITERATE_CGLS;
  o.iterations = 2;
  uint64_t gb = 0, hb = 0;
  ctr_context_get_memory_budgets(ctx, &gb, &hb);
  if (gpu_budget_gb > 0 && gb > (uint64_t)(gpu_budget_gb * 1e9)) gb = (uint64_t)(gpu_budget_gb * 1e9);
  o.gpu_budget = gb;
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  if (ctr_iterate_plan_compute(p, &o, CTR_DEVICE_CUDA, gb, hb, &plan)) BENCH_DIE("plan: %s", ctr_error_detail());
  char text[512];
  ctr_iterate_plan_describe(&plan, text, sizeof text);
  const int64_t nproj = c->nu * c->nv * c->nviews, nvox = c->n * c->n * c->n;
  const double need = (double)plan.host_bytes + 4.0 * (double)(nproj + nvox);
  printf("case 2048: plan %s; host memory %.1f GB with the caller's arrays, %.1f GB available\n",
         text, need / 1e9, (double)hb / 1e9);
  if (need > (double)hb) {
    printf("case 2048: skipped (not enough host memory)\n");
    bench_json_case(&json, "\"name\": \"2048/cgls/skipped\", \"host_bytes_needed\": %.0f, \"host_bytes_available\": "
              "%llu", need, (unsigned long long)hb);
    goto done;
  }
  float *vol = voxelised(c, g, ph);
  float *proj = malloc(sizeof(float) * (size_t)nproj);
  if (!proj) BENCH_DIE("out of host memory (projections)");
  fprintf(stderr, "case 2048: projecting the voxelised head...\n");
  double t0 = ctr__now_s();
  if (ctr_projector_forward(p, vol, proj)) BENCH_DIE("forward: %s", ctr_error_detail());
  const double tfwd = ctr__now_s() - t0;
  laps l = {0};
  o.on_iteration = lap;
  o.user = &l;
  ctr_iterate_report rep = CTR_ITERATE_REPORT_INIT;
  t0 = ctr__now_s();
  if (ctr_iterate(p, &o, proj, vol, &rep)) BENCH_DIE("CGLS: %s", ctr_error_detail());
  const double total = ctr__now_s() - t0;
  const double per = l.n >= 2 ? l.t[1] - l.t[0] : total;
  ctr_iterate_plan_describe(&rep.plan, text, sizeof text);
  printf("case 2048: forward projection (host in/out, slab-wise) %.1f s; CGLS (%s pair) 2 iterations "
         "%.1f s in all, %.1f s per iteration (forward %.1f s, adjoint %.1f s in all); plan: %s\n",
         tfwd, ctr_projector_pair_name(po.pair), total, per, rep.seconds_forward, rep.seconds_adjoint,
         text);
  bench_json_case(&json, "\"name\": \"2048/cgls/%s/2-iterations\", \"seconds\": %.3f, \"seconds_per_iteration\": "
            "%.3f, \"forward_seconds\": %.3f, \"adjoint_seconds\": %.3f, \"placement\": \"%s\", "
            "\"slabs\": %lld, \"gpu_bytes\": %llu, \"host_bytes\": %llu, \"volume\": 2048, "
            "\"views\": 1200, \"detector\": [2048, 2048]", ctr_projector_pair_name(po.pair), total, per, rep.seconds_forward,
            rep.seconds_adjoint, ctr_iterate_placement_name(rep.plan.placement),
            (long long)rep.plan.nslabs, (unsigned long long)rep.plan.gpu_bytes,
            (unsigned long long)rep.plan.host_bytes);
  free(proj);
  ctr_host_free(vol);
done:
  ctr_projector_free(p);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* FISTA-TV against FDK at few views: exact line integrals of the head, the
 * errors against its voxelisation over the object (ctr_volume_compare). */
static void bench_fista(ctr_context *ctx) {
  const geo_case *c = &CASE_F;
  ctr_geometry *g = bench_cone_geometry(c);
  ctr_phantom *ph = head(c);
  const int64_t nproj = c->nu * c->nv * c->nviews, nvox = c->n * c->n * c->n;
  float *proj = malloc(sizeof(float) * (size_t)nproj), *fdk = malloc(sizeof(float) * (size_t)nvox),
        *x = malloc(sizeof(float) * (size_t)nvox);
  float *truth = voxelised(c, g, ph);
  int64_t pd[3] = {c->nu, c->nv, c->nviews}, vd[3] = {c->n, c->n, c->n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array fa = ctr_array_make(fdk, CTR_DTYPE_FLOAT32, 3, vd);
  if (ctr_phantom_project(NULL, ph, g, 1, &pa)) BENCH_DIE("project: %s", ctr_error_detail());
  if (ctr_fdk(ctx, g, NULL, &pa, &fa)) BENCH_DIE("fdk: %s", ctr_error_detail());
  ctr_projector *p = NULL;
  if (ctr_projector_create_cone(ctx, g, NULL, &p)) BENCH_DIE("projector: %s", ctr_error_detail());
  /* versioned structs: initialised, and the status checked (the first GPU
   * run printed uninitialised memory for both) */
  ctr_volume_error ef = CTR_VOLUME_ERROR_INIT, ex = CTR_VOLUME_ERROR_INIT;
  if (ctr_volume_compare(fdk, truth, c->n, c->n, c->n, c->n / 10, &ef))
    BENCH_DIE("compare: %s", ctr_error_detail());
  printf("case fista-256: FDK RMSE over the object %.5f\n", ef.rmse_object);
  bench_json_case(&json, "\"name\": \"fista-256/fdk\", \"rmse_object\": %.6g, \"rmse_flat\": %.6g, \"views\": 60, "
            "\"volume\": 256", ef.rmse_object, ef.rmse_flat);
  const double weights[] = {1e-5, 3e-5, 1e-4};
  for (int w = 0; w < 3; w++) {
    ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
    o.algorithm = CTR_ITERATE_FISTA_TV;
    o.iterations = 100;
    o.tv_weight = weights[w];
    o.nonneg = 1;
    const double t0 = ctr__now_s();
    if (ctr_iterate(p, &o, proj, x, NULL)) BENCH_DIE("fista: %s", ctr_error_detail());
    const double t = ctr__now_s() - t0;
    if (ctr_volume_compare(x, truth, c->n, c->n, c->n, c->n / 10, &ex))
      BENCH_DIE("compare: %s", ctr_error_detail());
    printf("case fista-256: FISTA-TV (W = %g, 100 iterations, %.1f s) RMSE over the object %.5f: "
           "%.0f %% of FDK's\n", weights[w], t, ex.rmse_object, 100.0 * ex.rmse_object / ef.rmse_object);
    bench_json_case(&json, "\"name\": \"fista-256/fista-tv/W%g\", \"seconds\": %.3f, \"rmse_object\": %.6g, "
              "\"rmse_flat\": %.6g, \"ratio_to_fdk\": %.4f, \"iterations\": 100", weights[w], t,
              ex.rmse_object, ex.rmse_flat, ex.rmse_object / ef.rmse_object);
  }
  ctr_projector_free(p);
  free(proj);
  free(fdk);
  free(x);
  ctr_host_free(truth);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

int main(int argc, char **argv) {
  const char *json_path = NULL, *dump = NULL, *cases = "fp-A,fp-B,iter-A,cgls-B20,fista-256";
  const char *kv[16];
  char kvbuf[8][128];
  int nkv = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = argv[++i];
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--forward-only")) forward_only = 1;
    else if (!strcmp(argv[i], "--tune") && i + 1 < argc) {
      const char *a = argv[++i], *eq = strchr(a, '=');
      if (!eq || nkv >= 8 || (size_t)(eq - a) >= sizeof kvbuf[0]) BENCH_DIE("--tune KEY=VALUE (at most 8), not \"%s\"", a);
      snprintf(kvbuf[nkv], sizeof kvbuf[nkv], "%.*s", (int)(eq - a), a);
      kv[2 * nkv] = kvbuf[nkv];
      kv[2 * nkv + 1] = eq + 1;
      nkv++;
    } else if (!strcmp(argv[i], "--gpu-budget-gb") && i + 1 < argc) {
      gpu_budget_gb = atof(argv[++i]);
      if (!(gpu_budget_gb >= 1 && gpu_budget_gb <= 1e4)) BENCH_DIE("--gpu-budget-gb: 1 .. 10000 (GB)");
    }
    else if (!strcmp(argv[i], "--memory") && i + 1 < argc) {
      const char *w = argv[++i];
      memories = !strcmp(w, "pinned") ? 1 : !strcmp(w, "pageable") ? 2 : !strcmp(w, "both") ? 3 : 0;
      if (!memories) BENCH_DIE("--memory: pinned, pageable or both, not \"%s\"", w);
    } else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) {
      const char *w = argv[++i];
      pairs = !strcmp(w, "matched") ? 1 : !strcmp(w, "fast") ? 2 : !strcmp(w, "both") ? 3 : 0;
      if (!pairs) BENCH_DIE("--pairs: matched, fast or both, not \"%s\"", w);
    } else
      BENCH_DIE("usage: %s [--cases LIST] [--repeats R] [--json FILE] [--dump DIR] "
                "[--pairs matched|fast|both] [--memory pinned|pageable|both] [--forward-only] [--gpu-budget-gb G] "
                "[--tune KEY=VALUE]", argv[0]);
  }
  if (repeats < 1 || repeats > 15) BENCH_DIE("--repeats: 1 .. 15");
  if (ctr_cuda_get_device_count() < 1) BENCH_DIE("no usable GPU");
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (ctr_cuda_get_device_info(0, &info)) BENCH_DIE("%s", ctr_error_detail());
  ctr_context *ctx = bench_context(CTR_DEVICE_CUDA, kv, nkv);
  if (!ctx) return 1;
  if (json_path) {
    json.f = fopen(json_path, "w");
    if (!json.f) BENCH_DIE("cannot write %s", json_path);
    char date[32];
    bench_date(date, sizeof date);
    char budget[512] = "";
    if (gpu_budget_gb > 0) snprintf(budget, sizeof budget, " --gpu-budget-gb %g", gpu_budget_gb);
    for (int k = 0; k < nkv; k++)
      snprintf(budget + strlen(budget), sizeof budget - strlen(budget), " --tune %s=%s", kv[2 * k], kv[2 * k + 1]);
    fprintf(json.f, "{\n  \"gpu\": \"%s\",\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n  "
            "\"command\": \"bench_iterative --cases %s --repeats %d --pairs %s%s%s\",\n  \"cases\": [\n",
            info.name, date, bench_revision(), cases, repeats,
            pairs == 1 ? "matched" : pairs == 2 ? "fast" : "both", forward_only ? " --forward-only" : "",
            budget);
  }
  if (memories & 2) {
    if (bench_floor_measure(&floor_rates)) BENCH_DIE("floor: out of memory");
    printf("floor rates: DMA %.1f GB/s up, %.1f down; staged host copy %.1f up, %.1f down (GB/s)\n",
           floor_rates.dma_up, floor_rates.dma_down, floor_rates.copy_up, floor_rates.copy_down);
  }
  if (bench_listed(cases, "fp-A")) bench_projector(ctx, &CASE_A, dump);
  if (bench_listed(cases, "fp-B")) bench_projector(ctx, &CASE_B, NULL);
  if (bench_listed(cases, "iter-A")) {
    const ctr_iterate_algorithm a[2] = {CTR_ITERATE_SIRT, CTR_ITERATE_CGLS};
    bench_iterations(ctx, &CASE_A, 4, a, 2, 1, repeats);
  }
  if (bench_listed(cases, "cgls-B20")) { /* one run of 20 iterations, setup included, as users run it */
    const ctr_iterate_algorithm a[1] = {CTR_ITERATE_CGLS};
    bench_iterations(ctx, &CASE_B, 20, a, 1, 0, 1);
  }
  if (bench_listed(cases, "cgls-2048")) bench_2048(ctx);
  if (bench_listed(cases, "fista-256")) bench_fista(ctx);
  if (json.f) {
    fprintf(json.f, "\n  ]\n}\n");
    fclose(json.f);
  }
  ctr_context_free(ctx);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "bench_iterative: built without CUDA\n");
  return 1;
}
#endif
