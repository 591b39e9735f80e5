/* Arrays in GPU memory used in place (issue 22, "Arrays"): ctr_fbp,
 * ctr_fbp_backproject and ctr_iterate on a CUDA context take their
 * sinograms / projections and slices / volumes (and the truth) in GPU memory,
 * device or managed, either array or both, and give the same bits (and the
 * same data-policy counts and reports) as from host memory, in every
 * placement of the iterative plan; a CPU context refuses a GPU array with
 * CTR_E_INVALID_ARGUMENT naming it; ctr_fbp_filter and ctr_fbp_projections
 * (host memory only) refuse one on any context. PET: ctr_pet_reconstruct's
 * image (start and result), ctr_pet_project's and ctr_pet_project_fft's in
 * and out on a CUDA projector / context, the same bits as host arrays; CPU
 * ones refuse them by name, and so does ctr_pet_simulate (host only) its
 * activity. Exits 77 without CUDA or a GPU. */
#include "harness.h"
#include "pet_test_util.h"

#if CTR_HAVE_CUDA
#include <cuda_runtime.h>
#include <unistd.h>

/* A GPU copy of n floats of h (h NULL: every byte 0xff, NaN), device or
 * managed memory; NULL on failure. */
static float *gpu_copy(const float *h, int64_t n, int managed) {
  float *d = NULL;
  const size_t bytes = sizeof(float) * (size_t)n;
  const cudaError_t e = managed ? cudaMallocManaged((void **)&d, bytes, cudaMemAttachGlobal)
                                : cudaMalloc((void **)&d, bytes);
  if (e != cudaSuccess) return NULL;
  const cudaError_t c = h ? cudaMemcpy(d, h, bytes, cudaMemcpyDefault) : cudaMemset(d, 0xff, bytes);
  if (c != cudaSuccess) {
    cudaFree(d);
    return NULL;
  }
  return d;
}

/* 1 when the n floats at g (GPU memory) have the bits of those at h. */
static int same_bits(const float *g, const float *h, int64_t n) {
  float *b = malloc(sizeof(float) * (size_t)n);
  const int ok = b && cudaMemcpy(b, g, sizeof(float) * (size_t)n, cudaMemcpyDefault) == cudaSuccess &&
                 memcmp(b, h, sizeof(float) * (size_t)n) == 0;
  free(b);
  return ok;
}

static ctr_parallel_geometry *parallel(int64_t nbins, int64_t nangles, int64_t n) {
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = nbins;
  pp.nangles = nangles;
  pp.nx = pp.ny = n;
  pp.pixel_size = 1.6;
  pp.voxel = 1.25;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&pp, &g));
  return g;
}

/* ---- FBP ------------------------------------------------------------------------ */

static void test_fbp(ctr_context *gpu, ctr_context *cpu) {
  const int64_t nb = 64, na = 90, n = 48, ns = 20; /* two chunks of the GPU pipeline */
  const int64_t nsino = nb * na * ns, nsl = n * n * ns;
  ctr_parallel_geometry *g = parallel(nb, na, n);
  REQUIRE(g);
  float *sino = malloc(sizeof(float) * (size_t)nsino), *ref = malloc(sizeof(float) * (size_t)nsl);
  float *filt = malloc(sizeof(float) * (size_t)nsino), *host = malloc(sizeof(float) * (size_t)nsl);
  REQUIRE(sino && ref && filt && host);
  for (int64_t i = 0; i < nsino; i++) sino[i] = (float)th_uniform(0, 3);
  sino[7] = NAN; /* the data policy: counted and replaced on both paths */
  sino[nsino - 3] = INFINITY;
  const int64_t sd[3] = {nb, na, ns}, vd[3] = {n, n, ns};
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.kernel = "alu"; /* no timing run choosing between calls */
  ctr_value_counts hc = CTR_VALUE_COUNTS_INIT;
  o.counts = &hc;
  ctr_array hs = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array hv = ctr_array_make(ref, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(gpu, g, &o, &hs, &hv));
  CHECK(hc.input == 2);
  for (int k = 0; k < 4; k++) {
    /* k: 0 both in device memory, 1 sinograms on the GPU and slices on the
     * host, 2 the other way round, 3 both in managed memory */
    float *ds = k == 2 ? NULL : gpu_copy(sino, nsino, k == 3);
    float *dv = k == 1 ? NULL : gpu_copy(NULL, nsl, k == 3);
    REQUIRE((k == 2 || ds) && (k == 1 || dv));
    memset(host, 0xff, sizeof(float) * (size_t)nsl);
    ctr_array as = ctr_array_make(ds ? ds : sino, CTR_DTYPE_FLOAT32, 3, sd);
    ctr_array av = ctr_array_make(dv ? dv : host, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_value_counts dc = CTR_VALUE_COUNTS_INIT;
    o.counts = &dc;
    CHECK_OK(ctr_fbp(gpu, g, &o, &as, &av));
    CHECK_MSG(dv ? same_bits(dv, ref, nsl) : !memcmp(host, ref, sizeof(float) * (size_t)nsl),
              "ctr_fbp case %d: GPU arrays give other slices than host arrays", k);
    CHECK_MSG(dc.input == hc.input && dc.output == hc.output, "ctr_fbp case %d: counts %lld/%lld, "
              "host %lld/%lld", k, (long long)dc.input, (long long)dc.output,
              (long long)hc.input, (long long)hc.output);
    cudaFree(ds);
    cudaFree(dv);
  }
  /* ctr_fbp_backproject of filtered sinograms: device in, device out */
  memcpy(filt, sino, sizeof(float) * (size_t)nsino);
  o.counts = NULL;
  ctr_fbp_options q = o;
  ctr_value_counts qc = CTR_VALUE_COUNTS_INIT;
  q.counts = &qc; /* the NaN: counted, no warning */
  CHECK_OK(ctr_fbp_filter(gpu, g, &q, ns, filt));
  CHECK_OK(ctr_fbp_backproject(gpu, g, &o, ns, filt, ref));
  float *df = gpu_copy(filt, nsino, 0), *dv = gpu_copy(NULL, nsl, 0);
  REQUIRE(df && dv);
  CHECK_OK(ctr_fbp_backproject(gpu, g, &o, ns, df, dv));
  CHECK_MSG(same_bits(dv, ref, nsl), "ctr_fbp_backproject: GPU arrays give other slices");
  /* A CPU context (or none) cannot read them; the host-only entry points
   * refuse them on any context. */
  ctr_array ds = ctr_array_make(df, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array dva = ctr_array_make(dv, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_FAILS(ctr_fbp(cpu, g, NULL, &ds, &hv), CTR_E_INVALID_ARGUMENT,
              "ctr_fbp: the sinograms array is in the memory of GPU");
  CHECK_FAILS(ctr_fbp(cpu, g, NULL, &hs, &dva), CTR_E_INVALID_ARGUMENT,
              "the slices array is in the memory of GPU");
  CHECK_FAILS(ctr_fbp(NULL, g, NULL, &hs, &dva), CTR_E_INVALID_ARGUMENT, "a CPU context cannot read");
  CHECK_FAILS(ctr_fbp_backproject(cpu, g, NULL, ns, df, ref), CTR_E_INVALID_ARGUMENT,
              "ctr_fbp_backproject: the sino array is in the memory of GPU");
  CHECK_FAILS(ctr_fbp_filter(gpu, g, NULL, ns, df), CTR_E_INVALID_ARGUMENT,
              "ctr_fbp_filter: the sino array is in the memory of GPU");
  const int64_t pd[3] = {nb, ns, na};
  ctr_array dp = ctr_array_make(df, CTR_DTYPE_FLOAT32, 3, pd);
  float *flat = malloc(sizeof(float) * (size_t)(nb * ns));
  for (int64_t i = 0; flat && i < nb * ns; i++) flat[i] = 1.0f;
  CHECK_FAILS(ctr_fbp_projections(gpu, g, NULL, &dp, flat, NULL, 0, &hv), CTR_E_INVALID_ARGUMENT,
              "ctr_fbp_projections: the projections array is in the memory of GPU");
  free(flat);
  cudaFree(df);
  cudaFree(dv);
  free(sino);
  free(ref);
  free(filt);
  free(host);
  ctr_parallel_free(g);
}

/* ---- Iterative ------------------------------------------------------------------ */

/* ctr_iterate of proj from host arrays and from GPU arrays (device memory;
 * start: the initial volume with CTR_ITERATE_INIT_GIVEN, else NULL):
 * the same bits, the same placement and residuals. */
static void iterate_both(ctr_projector *p, ctr_iterate_options *o, const float *proj,
                         const float *start, const float *truth, const char *what) {
  int64_t vd[3], pd[3];
  ctr_projector_get_volume_dims(p, vd);
  ctr_projector_get_projection_dims(p, pd);
  const int64_t nvol = vd[0] * vd[1] * vd[2], nproj = pd[0] * pd[1] * pd[2];
  float *host = malloc(sizeof(float) * (size_t)nvol);
  REQUIRE(host);
  if (start) memcpy(host, start, sizeof(float) * (size_t)nvol);
  ctr_iterate_report rh = CTR_ITERATE_REPORT_INIT, rd = CTR_ITERATE_REPORT_INIT;
  o->truth = truth;
  CHECK_OK(ctr_iterate(p, o, proj, host, &rh));
  /* the GPU arrays' run is a fresh one: the first run's checkpoint would be
     refused without resume (stream/output.h, "Resume") */
  if (o->checkpoint) remove(o->checkpoint);
  float *dp = gpu_copy(proj, nproj, 0), *dv = gpu_copy(start, nvol, 0);
  float *dt = truth ? gpu_copy(truth, nvol, 0) : NULL;
  REQUIRE(dp && dv && (!truth || dt));
  o->truth = dt;
  CHECK_OK(ctr_iterate(p, o, dp, dv, &rd));
  o->truth = NULL;
  CHECK_MSG(same_bits(dv, host, nvol), "%s: GPU arrays give another volume than host arrays", what);
  CHECK_MSG(rd.plan.placement == rh.plan.placement && rd.iterations == rh.iterations &&
                rd.residual == rh.residual && rd.norm_b == rh.norm_b,
            "%s: reports differ (placement %s / %s, residual %.9g / %.9g)", what,
            ctr_iterate_placement_name(rd.plan.placement),
            ctr_iterate_placement_name(rh.plan.placement), rd.residual, rh.residual);
  printf("%s: %s, %lld iterations, residual %.6g\n", what,
         ctr_iterate_placement_name(rh.plan.placement), (long long)rh.iterations, rh.residual);
  cudaFree(dp);
  cudaFree(dv);
  cudaFree(dt);
  free(host);
}

/* A GPU budget that gives placement `want` for o on p (0: none found). */
static uint64_t budget_for(const ctr_projector *p, const ctr_iterate_options *o,
                           ctr_iterate_placement want) {
  for (uint64_t b = 1 << 16; b < ((uint64_t)1 << 32); b += b / 8) {
    ctr_iterate_plan pl = CTR_ITERATE_PLAN_INIT;
    if (ctr_iterate_plan_compute(p, o, CTR_DEVICE_CUDA, b, (uint64_t)1 << 32, &pl) == CTR_OK &&
        pl.placement == want)
      return b;
  }
  return 0;
}

/* Every algorithm and start, in every placement, for one projector. */
static void iterate_cases(ctr_projector *p, const float *proj, const float *truth, const char *name) {
  int64_t vd[3];
  ctr_projector_get_volume_dims(p, vd);
  const int64_t nvol = vd[0] * vd[1] * vd[2];
  float *start = malloc(sizeof(float) * (size_t)nvol);
  REQUIRE(start);
  for (int64_t i = 0; i < nvol; i++) start[i] = (float)th_uniform(0, 0.01);
  char what[128], ckpt[96];
  snprintf(ckpt, sizeof ckpt, "/tmp/ctr_gpu_arrays_%d.ckpt", (int)getpid());
  static const ctr_iterate_placement places[3] = {CTR_PLACE_DEVICE, CTR_PLACE_PROJ_DEVICE,
                                                   CTR_PLACE_STREAMED};
  for (int a = 0; a < 4; a++) {
    for (int pl = 0; pl < 3; pl++) {
      ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
      o.algorithm = (ctr_iterate_algorithm)a;
      o.iterations = 3;
      o.subsets = 3;
      o.nonneg = a != CTR_ITERATE_CGLS;
      o.tv_weight = 1e-3;
      /* the starts: zero, FDK / FBP (GPU arrays in and out of ctr_fdk /
       * ctr_fbp), the caller's volume */
      o.init = (ctr_iterate_init)((a + pl) % 3);
      if (places[pl] != CTR_PLACE_DEVICE) {
        o.max_slab_slices = 2;
        o.gpu_budget = budget_for(p, &o, places[pl]);
        CHECK_MSG(o.gpu_budget > 0, "%s: no GPU budget gives placement %s", name,
                  ctr_iterate_placement_name(places[pl]));
        if (!o.gpu_budget) continue;
      }
      if (a == CTR_ITERATE_SIRT) o.checkpoint = ckpt; /* the fingerprint of GPU projections */
      snprintf(what, sizeof what, "%s %s %s init %d", name,
               ctr_iterate_algorithm_name(o.algorithm), ctr_iterate_placement_name(places[pl]),
               (int)o.init);
      iterate_both(p, &o, proj, o.init == CTR_ITERATE_INIT_GIVEN ? start : NULL,
                   a == CTR_ITERATE_FISTA_TV ? truth : NULL, what);
      remove(ckpt);
    }
  }
  free(start);
}

static void test_iterate(ctr_context *gpu, ctr_context *cpu) {
  /* parallel beam: 40 bins x 30 angles x 3 slices of 32 x 32 */
  ctr_parallel_geometry *g = parallel(40, 30, 32);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(28.0, 0.02, &ph));
  REQUIRE(g && ph);
  const int64_t ns = 3, nvol = 32 * 32 * ns, nproj = 40 * 30 * ns;
  const double z[3] = {-4, 0, 6};
  float *sino = malloc(sizeof(float) * (size_t)nproj), *truth = malloc(sizeof(float) * (size_t)nvol);
  REQUIRE(sino && truth);
  CHECK_OK(ctr_phantom_sinogram(ph, g, ns, z, 1, sino));
  for (int s = 0; s < ns; s++) CHECK_OK(ctr_phantom_slice(ph, g, z[s], 2, truth + s * 32 * 32));
  ctr_projector *pp = NULL;
  CHECK_OK(ctr_projector_create_parallel(gpu, g, ns, NULL, &pp));
  if (pp) iterate_cases(pp, sino, truth, "parallel");
  /* cone beam: 24^3 from 18 views of 48 x 48 */
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 200;
  cp.sdd = 300;
  cp.nu = cp.nv = 48;
  cp.du = cp.dv = 2.4;
  cp.nviews = 18;
  const int64_t n = 24, cvol = n * n * n, cproj = 48 * 48 * 18;
  const double h = 64.0 / (double)n;
  ctr_volume_geometry vol = {n, n, n, h, h, h, 0, 0, 0};
  ctr_geometry *cg = NULL;
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &cg));
  float *cpj = malloc(sizeof(float) * (size_t)cproj), *ctruth = malloc(sizeof(float) * (size_t)cvol);
  REQUIRE(cg && cpj && ctruth);
  const int64_t vdims[3] = {n, n, n}, pdims[3] = {48, 48, 18};
  ctr_array pa = ctr_array_make(cpj, CTR_DTYPE_FLOAT32, 3, pdims);
  ctr_array ta = ctr_array_make(ctruth, CTR_DTYPE_FLOAT32, 3, vdims);
  CHECK_OK(ctr_phantom_project(NULL, ph, cg, 1, &pa));
  CHECK_OK(ctr_phantom_voxelize(NULL, ph, &vol, 2, 0, &ta));
  ctr_projector *cpr = NULL;
  CHECK_OK(ctr_projector_create_cone(gpu, cg, NULL, &cpr));
  if (cpr) iterate_cases(cpr, cpj, ctruth, "cone");
  /* A CPU projector refuses GPU arrays, naming them. */
  ctr_projector *cpu_p = NULL;
  CHECK_OK(ctr_projector_create_parallel(cpu, g, ns, NULL, &cpu_p));
  float *dp = gpu_copy(sino, nproj, 0), *dv = gpu_copy(NULL, nvol, 0), *hv = malloc(sizeof(float) * (size_t)nvol);
  if (cpu_p && dp && dv && hv) {
    ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
    CHECK_FAILS(ctr_iterate(cpu_p, &o, dp, hv, NULL), CTR_E_INVALID_ARGUMENT,
                "ctr_iterate: the projections array is in the memory of GPU");
    CHECK_FAILS(ctr_iterate(cpu_p, &o, sino, dv, NULL), CTR_E_INVALID_ARGUMENT,
                "the volume array is in the memory of GPU");
    o.truth = dv;
    CHECK_FAILS(ctr_iterate(cpu_p, &o, sino, hv, NULL), CTR_E_INVALID_ARGUMENT,
                "the truth array is in the memory of GPU");
  } else {
    CHECK_MSG(0, "setup of the CPU projector's refusal");
  }
  cudaFree(dp);
  cudaFree(dv);
  free(hv);
  ctr_projector_free(cpu_p);
  ctr_projector_free(pp);
  ctr_projector_free(cpr);
  ctr_geometry_free(cg);
  ctr_parallel_free(g);
  ctr_phantom_free(ph);
  free(sino);
  free(truth);
  free(cpj);
  free(ctruth);
}

/* ---- PET ------------------------------------------------------------------------ */

typedef struct pet_calls {
  const float *image; /* the pointer every call got */
  int n;
} pet_calls;

static int pet_on_iteration(void *user, int it, const float *image) {
  pet_calls *c = user;
  if (c->n++ == 0) c->image = image;
  else if (c->image != image) c->image = NULL;
  return 0;
}

/* ctr_pet_reconstruct with image in host memory and in GPU memory (device,
 * or managed): the same bits and status, and on_iteration gets the caller's
 * GPU array. start NULL: the uniform start (all 0). */
static void pet_recon_both(ctr_pet_projector *pr, const ctr_pet_histo *h,
                           ctr_pet_recon_options *o, const float *start, int64_t n,
                           const char *what) {
  float *host = calloc((size_t)n, sizeof(float));
  REQUIRE(host);
  if (start) memcpy(host, start, sizeof(float) * (size_t)n);
  const ctr_status sh = ctr_pet_reconstruct(pr, h, o, host, NULL);
  for (int managed = 0; managed < 2; managed++) {
    float *d = gpu_copy(host, n, managed); /* any values: overwritten below */
    REQUIRE(d);
    if (start) CHECK(cudaMemcpy(d, start, sizeof(float) * (size_t)n, cudaMemcpyDefault) == cudaSuccess);
    else CHECK(cudaMemset(d, 0, sizeof(float) * (size_t)n) == cudaSuccess);
    pet_calls calls = {NULL, 0};
    o->on_iteration = pet_on_iteration, o->user = &calls;
    const ctr_status sd = ctr_pet_reconstruct(pr, h, o, d, NULL);
    o->on_iteration = NULL, o->user = NULL;
    CHECK_MSG(sd == sh, "%s (%s): status %s, host %s", what, managed ? "managed" : "device",
              ctr_status_name(sd), ctr_status_name(sh));
    CHECK_MSG(same_bits(d, host, n), "%s (%s): a GPU image gives another result than a host one",
              what, managed ? "managed" : "device");
    CHECK_MSG(calls.n == o->iterations && calls.image == d,
              "%s: on_iteration called %d times (expected %d), with the GPU image %s", what,
              calls.n, o->iterations, calls.image == d ? "each time" : "not each time");
    cudaFree(d);
  }
  free(host);
}

/* ctr_pet_project (p) or ctr_pet_project_fft (fft_ctx and fft_sys, p NULL)
 * of in: host arrays against GPU arrays, each or both, device or managed. */
static void pet_project_both(ctr_pet_projector *p, ctr_context *fft_ctx, ctr_pet_system *fft_sys,
                             ctr_pet_direction dir, int64_t view, const float *in, int64_t n,
                             const char *what) {
  float *ref = malloc(sizeof(float) * (size_t)n), *host = malloc(sizeof(float) * (size_t)n);
  REQUIRE(ref && host);
#define PET_RUN(a, b) (p ? ctr_pet_project(p, dir, view, (a), (b)) \
                         : ctr_pet_project_fft(fft_ctx, fft_sys, view, 2, (a), (b)))
  CHECK_OK(PET_RUN(in, ref));
  for (int k = 0; k < 4; k++) {
    /* k: 0 both in device memory, 1 in on the GPU, 2 out on the GPU, 3 both managed */
    float *di = k == 2 ? NULL : gpu_copy(in, n, k == 3);
    float *dout = k == 1 ? NULL : gpu_copy(NULL, n, k == 3);
    REQUIRE((k == 2 || di) && (k == 1 || dout));
    memset(host, 0xff, sizeof(float) * (size_t)n);
    CHECK_OK(PET_RUN(di ? di : in, dout ? dout : host));
    CHECK_MSG(dout ? same_bits(dout, ref, n) : !memcmp(host, ref, sizeof(float) * (size_t)n),
              "%s case %d: GPU arrays give another result than host arrays", what, k);
    cudaFree(di);
    cudaFree(dout);
  }
#undef PET_RUN
  free(ref);
  free(host);
}

static void test_pet(ctr_context *gpu, ctr_context *cpu) {
  ctr_pet_params p;
  ctr_pet_kernel_params k;
  ctr_pet_phantom ph;
  pet_test_spheres(32, 6, 6, &p, &k, &ph); /* test_pet_recon's study, smaller */
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL, *cpu_pr = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  REQUIRE(s);
  CHECK_OK(ctr_pet_projector_create(gpu, s, &pr));
  CHECK_OK(ctr_pet_projector_create(cpu, s, &cpu_pr));
  ctr_pet_sim_options so = CTR_PET_SIM_OPTIONS_INIT;
  so.events = 3e5, so.seed = 11, so.attenuation = 1; /* with factors */
  CHECK_OK(ctr_pet_simulate(cpu, s, &ph, &so, &h));
  REQUIRE(pr && cpu_pr && h && h->factors);
  const int64_t n = p.nx * p.ny * p.nz;
  float *start = malloc(sizeof(float) * (size_t)n), *in = malloc(sizeof(float) * (size_t)n);
  REQUIRE(start && in);
  for (int64_t i = 0; i < n; i++) start[i] = (float)th_uniform(0.5, 2);
  for (int64_t i = 0; i < n; i++) in[i] = (float)th_uniform(0, 1);
  /* every algorithm, from the uniform start and from the caller's */
  char what[96];
  for (int a = 0; a < 3; a++) {
    ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
    o.algorithm = (ctr_pet_algorithm)a;
    o.iterations = 2;
    for (int given = 0; given < 2; given++) {
      snprintf(what, sizeof what, "ctr_pet_reconstruct %s, %s start", ctr_pet_algorithm_name(o.algorithm),
               given ? "given" : "uniform");
      pet_recon_both(pr, h, &o, given ? start : NULL, n, what);
    }
  }
  /* the data policy on the result, on the device: a NaN start voxel spreads;
   * stored as 0 (the same bits), or strict, the same error */
  start[n / 2 + 3] = NAN;
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  o.algorithm = CTR_PET_OSEM, o.iterations = 1;
  pet_recon_both(pr, h, &o, start, n, "ctr_pet_reconstruct with a NaN start voxel");
  o.strict = 1;
  pet_recon_both(pr, h, &o, start, n, "ctr_pet_reconstruct with a NaN start voxel, strict");
  float *dimg = gpu_copy(start, n, 0);
  REQUIRE(dimg);
  CHECK_FAILS(ctr_pet_reconstruct(pr, h, &o, dimg, NULL), CTR_E_FORMAT, "the reconstructed image");
  /* per-view projections both ways, first and last view */
  const int64_t nv = ctr_pet_system_get_view_count(s);
  for (int64_t v = 0; v < nv; v += nv - 1)
    for (int d = 0; d < 2; d++) {
      snprintf(what, sizeof what, "ctr_pet_project %s view %lld", d ? "back" : "forward",
               (long long)v);
      pet_project_both(pr, NULL, NULL, (ctr_pet_direction)d, v, in, n, what);
    }
  /* the FFT reference (invariant kernels) */
  ctr_pet_kernel_params ki = k;
  ki.radial_fwhm_edge_mm = ki.radial_fwhm_center_mm;
  ctr_pet_system *si = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &ki, &si));
  if (si) pet_project_both(NULL, gpu, si, CTR_PET_FORWARD, 1, in, n, "ctr_pet_project_fft");
  /* CPU projectors and contexts cannot read GPU arrays; the simulation reads
   * host memory only */
  float *dio = gpu_copy(in, n, 0), *hout = malloc(sizeof(float) * (size_t)n);
  REQUIRE(dio && hout);
  CHECK_FAILS(ctr_pet_project(cpu_pr, CTR_PET_FORWARD, 0, dio, hout), CTR_E_INVALID_ARGUMENT,
              "ctr_pet_project: the in array is in the memory of GPU");
  CHECK_FAILS(ctr_pet_project(cpu_pr, CTR_PET_BACK, 0, in, dio), CTR_E_INVALID_ARGUMENT,
              "ctr_pet_project: the out array is in the memory of GPU");
  o.strict = 0;
  CHECK_FAILS(ctr_pet_reconstruct(cpu_pr, h, &o, dimg, NULL), CTR_E_INVALID_ARGUMENT,
              "ctr_pet_reconstruct: the image array is in the memory of GPU");
  ctr_pet_projector *none = NULL;
  CHECK_OK(ctr_pet_projector_create(NULL, s, &none));
  if (none)
    CHECK_FAILS(ctr_pet_reconstruct(none, h, &o, dimg, NULL), CTR_E_INVALID_ARGUMENT,
                "a CPU context cannot read");
  if (si)
    CHECK_FAILS(ctr_pet_project_fft(cpu, si, 0, 2, dio, hout), CTR_E_INVALID_ARGUMENT,
                "ctr_pet_project_fft: the in array is in the memory of GPU");
  ctr_pet_histo *h2 = NULL;
  so.activity = dio;
  CHECK_FAILS(ctr_pet_simulate(gpu, s, NULL, &so, &h2), CTR_E_INVALID_ARGUMENT,
              "ctr_pet_simulate: the activity array is in the memory of GPU");
  CHECK(h2 == NULL);
  cudaFree(dimg);
  cudaFree(dio);
  free(hout);
  free(start);
  free(in);
  ctr_pet_projector_free(none);
  ctr_pet_projector_free(cpu_pr);
  ctr_pet_projector_free(pr);
  ctr_pet_histo_free(h);
  ctr_pet_system_free(si);
  ctr_pet_system_free(s);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_arrays: SKIPPED (no usable GPU)\n");
    return 77;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  ctr_context *gpu = NULL, *cpu = NULL;
  co.device = CTR_DEVICE_CUDA;
  CHECK_OK(ctr_context_create(&co, &gpu));
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &cpu));
  if (gpu && cpu) {
    test_fbp(gpu, cpu);
    test_iterate(gpu, cpu);
    test_pet(gpu, cpu);
  }
  ctr_context_free(gpu);
  ctr_context_free(cpu);
  return th_finish("test_gpu_arrays");
}
#else
int main(void) {
  printf("test_gpu_arrays: built without CUDA: skipped\n");
  return 77;
}
#endif
