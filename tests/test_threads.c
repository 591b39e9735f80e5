/* The thread contract of the public objects (docs/api.md, "Threads"), as
 * stated in the headers: one context shared by several threads at once,
 * const geometries shared read-only, one projector per thread, and the
 * error detail of each thread its own. Every concurrent result must have
 * the bits of the same call made alone.
 *
 * Built twice (RTK's way): as test_threads on the CPU backend and with
 * CTR_TEST_CUDA as test_gpu_threads, where the shared context is a CUDA
 * context (exit 77, skipped, without a GPU). */
#include "harness.h"

#include <pthread.h>
#include <stdint.h>

#define NT 4 /* threads */

static ctr_context *g_ctx; /* the one context every thread uses */

static void fill(float *p, size_t n, unsigned seed) {
  uint32_t s = 2654435761u * (seed + 1);
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)(s >> 8) / 16777216.0f;
  }
}

static int same_bits(const float *a, const float *b, size_t n) {
  return memcmp(a, b, n * sizeof *a) == 0;
}

/* ---- cone-beam FDK on one shared context and geometry ---------------------- */

enum { CN = 24, CU = 40, CV = 32, CVIEWS = 36 };
static ctr_geometry *g_cone;

/* One thread's work: the call, its input and output. */
typedef ctr_status (*call_fn)(const float *in, float *out);
typedef struct job {
  call_fn call;
  float *in, *out;
  ctr_status st;
  char detail[256];
} job;

static void *job_main(void *arg) {
  job *j = arg;
  for (int rep = 0; rep < 3 && j->st == CTR_OK; rep++) j->st = j->call(j->in, j->out);
  snprintf(j->detail, sizeof j->detail, "%s", ctr_error_detail());
  return NULL;
}

/* NT threads make `call` at once on one context, each on inputs of its own
 * (nin floats from seed + thread); each result must have the bits of the
 * same call made alone. */
static void check_shared(const char *what, call_fn call, size_t nin, size_t nout, unsigned seed) {
  job jobs[NT];
  float *alone = malloc(NT * nout * sizeof(float));
  REQUIRE(alone);
  for (int t = 0; t < NT; t++) {
    jobs[t] = (job){call, malloc(nin * sizeof(float)), calloc(nout, sizeof(float)), CTR_OK, ""};
    REQUIRE(jobs[t].in && jobs[t].out);
    fill(jobs[t].in, nin, seed + (unsigned)t);
    CHECK_OK(call(jobs[t].in, alone + t * nout));
  }
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) CHECK(pthread_create(&th[t], NULL, job_main, &jobs[t]) == 0);
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NT; t++) {
    CHECK_MSG(jobs[t].st == CTR_OK, "%s, thread %d: %s", what, t, jobs[t].detail);
    CHECK_MSG(same_bits(jobs[t].out, alone + t * nout, nout),
              "thread %d: %s on a shared context differs from the same call alone", t, what);
    free(jobs[t].in);
    free(jobs[t].out);
  }
  free(alone);
}

static ctr_status run_fdk(const float *proj, float *vol) {
  const int64_t pd[3] = {CU, CV, CVIEWS}, vd[3] = {CN, CN, CN};
  const ctr_array p = ctr_array_make((void *)proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array v = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  return ctr_fdk(g_ctx, g_cone, &o, &p, &v);
}

static void test_fdk_shared_context(void) {
  ctr_circular_params c = CTR_CIRCULAR_PARAMS_INIT;
  c.sid = 400;
  c.sdd = 600;
  c.nu = CU;
  c.nv = CV;
  c.du = c.dv = 1.5;
  c.nviews = CVIEWS;
  const ctr_volume_geometry vg = {CN, CN, CN, 1, 1, 1, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&c, &vg, &g_cone));
  REQUIRE(g_cone);
  check_shared("FDK", run_fdk, (size_t)CU * CV * CVIEWS, (size_t)CN * CN * CN, 0);
}

/* ---- parallel-beam FBP on one shared context and geometry ------------------- */

enum { PB = 64, PA = 90, PS = 3 };
static ctr_parallel_geometry *g_par;

static ctr_status run_fbp(const float *sino, float *slices) {
  const int64_t sd[3] = {PB, PA, PS}, vd[3] = {PB, PB, PS};
  const ctr_array s = ctr_array_make((void *)sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array v = ctr_array_make(slices, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  return ctr_fbp(g_ctx, g_par, &o, &s, &v);
}

static void test_fbp_shared_context(void) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = PB;
  p.nangles = PA;
  CHECK_OK(ctr_parallel_create(&p, &g_par));
  REQUIRE(g_par);
  check_shared("FBP", run_fbp, (size_t)PB * PA * PS, (size_t)PB * PB * PS, 100);
}

/* ---- iterative: one projector per thread, one context ----------------------- */

typedef struct pjob {
  ctr_projector *p;
  float *vol, *proj, *back;
  ctr_status st;
  char detail[256];
} pjob;

static void *projector_main(void *arg) {
  pjob *j = arg;
  for (int rep = 0; rep < 2 && j->st == CTR_OK; rep++) {
    j->st = ctr_projector_forward(j->p, j->vol, j->proj);
    if (j->st == CTR_OK) j->st = ctr_projector_adjoint(j->p, j->proj, j->back);
  }
  snprintf(j->detail, sizeof j->detail, "%s", ctr_error_detail());
  return NULL;
}

static void test_projectors_per_thread(void) {
  REQUIRE(g_cone);
  const size_t nv = (size_t)CN * CN * CN, np = (size_t)CU * CV * CVIEWS;
  pjob jobs[NT];
  float *alone_p = malloc(NT * np * sizeof(float)), *alone_b = malloc(NT * nv * sizeof(float));
  REQUIRE(alone_p && alone_b);
  for (int t = 0; t < NT; t++) {
    jobs[t] = (pjob){NULL, malloc(nv * sizeof(float)), malloc(np * sizeof(float)),
                     malloc(nv * sizeof(float)), CTR_OK, ""};
    REQUIRE(jobs[t].vol && jobs[t].proj && jobs[t].back);
    fill(jobs[t].vol, nv, 200u + (unsigned)t);
    CHECK_OK(ctr_projector_create_cone(g_ctx, g_cone, NULL, &jobs[t].p));
    REQUIRE(jobs[t].p);
    CHECK_OK(ctr_projector_forward(jobs[t].p, jobs[t].vol, alone_p + t * np));
    CHECK_OK(ctr_projector_adjoint(jobs[t].p, alone_p + t * np, alone_b + t * nv));
  }
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) CHECK(pthread_create(&th[t], NULL, projector_main, &jobs[t]) == 0);
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NT; t++) {
    CHECK_MSG(jobs[t].st == CTR_OK, "thread %d: %s", t, jobs[t].detail);
    CHECK_MSG(same_bits(jobs[t].proj, alone_p + t * np, np),
              "thread %d: forward projection differs from the same call alone", t);
    CHECK_MSG(same_bits(jobs[t].back, alone_b + t * nv, nv),
              "thread %d: adjoint differs from the same call alone", t);
    ctr_projector_free(jobs[t].p);
    free(jobs[t].vol);
    free(jobs[t].proj);
    free(jobs[t].back);
  }
  free(alone_p);
  free(alone_b);
}

/* ---- the error detail is the thread's own ------------------------------------ */

typedef struct ejob {
  int fail;
  pthread_barrier_t *bar;
  ctr_status st;
  char detail[256];
} ejob;

static void *error_main(void *arg) {
  ejob *j = arg;
  ctr_error_clear();
  if (j->fail) { /* a call that fails, naming the member */
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.nz = -3;
    const int64_t pd[3] = {CU, CV, CVIEWS}, vd[3] = {CN, CN, CN};
    float dummy = 0;
    const ctr_array p = ctr_array_make(&dummy, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array v = ctr_array_make(&dummy, CTR_DTYPE_FLOAT32, 3, vd);
    j->st = ctr_fdk(g_ctx, g_cone, &o, &p, &v);
  }
  pthread_barrier_wait(j->bar); /* both threads are past their call */
  pthread_barrier_wait(j->bar);
  snprintf(j->detail, sizeof j->detail, "%s", ctr_error_detail());
  return NULL;
}

static void test_error_detail_per_thread(void) {
  REQUIRE(g_cone);
  pthread_barrier_t bar;
  REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
  ejob a = {1, &bar, CTR_OK, ""}, b = {0, &bar, CTR_OK, ""};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, error_main, &a) == 0);
  CHECK(pthread_create(&tb, NULL, error_main, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&bar);
  CHECK_MSG(a.st != CTR_OK && strstr(a.detail, "-3") != NULL,
            "the failing thread keeps its own detail (naming the value -3): %s", a.detail);
  CHECK_MSG(b.detail[0] == '\0', "the other thread's detail stays empty: '%s'", b.detail);
}

int main(void) {
#ifdef CTR_TEST_CUDA
  const char *name = "test_gpu_threads";
  if (ctr_cuda_get_device_count() < 1) {
    printf("%s: SKIPPED (no usable GPU)\n", name);
    return 77;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
#else
  const char *name = "test_threads";
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
#endif
  if (ctr_context_create(&co, &g_ctx) != CTR_OK) {
    fprintf(stderr, "%s: context: %s\n", name, ctr_error_detail());
    return 1;
  }
  test_fdk_shared_context();
  test_fbp_shared_context();
  test_projectors_per_thread();
  test_error_detail_per_thread();
  ctr_geometry_free(g_cone);
  ctr_parallel_free(g_par);
  ctr_context_free(g_ctx);
  return th_finish(name);
}
