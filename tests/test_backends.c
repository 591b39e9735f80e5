/* The backend seams of cone beam (engine.h), iterative, parbeam and pet
 * (their backend.h): each
 * registry finds the CPU backend and names the CUDA one, built exactly when
 * this build has CUDA; a built backend has the operations its table says it
 * has (the CPU's optional ones NULL, so that the parents' host paths run);
 * and the PET seam's threading on the CPU: projectors of two systems on two
 * threads at once, building their views' tables at once, give the bits of
 * the same work done alone. (Parallel beam and the iterative projectors on
 * threads: tests/test_threads.c.) */
#include "harness.h"

#include "conebeam/engine.h"
#include "iterative/backend.h"
#include "parbeam/backend.h"
#include "pet/backend.h"
#include "pet_test_util.h"

#include <pthread.h>
#include <string.h>

/* ---- Registries and tables -------------------------------------------------------- */

static void test_conebeam_table(void) {
  const ctr__engine_backend *cpu = NULL, *cuda = &ctr__engine_backend_cuda;
  CHECK_OK(ctr__engine_backend_of(NULL, &cpu)); /* no context: the CPU */
  REQUIRE(cpu);
  CHECK(cpu == &ctr__engine_backend_cpu && !strcmp(cpu->head.name, "cpu") && cpu->head.built);
  CHECK(cpu->create && cpu->cost && cpu->bpj_create);
  CHECK(!strcmp(cuda->head.name, "cuda") && cuda->head.kind == CTR_DEVICE_CUDA &&
        cuda->head.built == CTR_HAVE_CUDA);
  CHECK((cuda->create != NULL) == CTR_HAVE_CUDA); /* built exactly when it can create */
  CHECK(cuda->cost != NULL);                       /* the memory model: in every build */
  CHECK(ctr__engine_backend_find(CTR_DEVICE_CUDA) == cuda);
}

static void test_iterative_table(void) {
  const ctr__it_backend *cpu = &ctr__it_backend_cpu, *cuda = &ctr__it_backend_cuda;
  CHECK(!strcmp(cpu->head.name, "cpu") && cpu->head.kind == CTR_DEVICE_CPU && cpu->head.built);
  CHECK(!strcmp(cuda->head.name, "cuda") && cuda->head.kind == CTR_DEVICE_CUDA &&
        cuda->head.built == CTR_HAVE_CUDA);
  /* host vectors: every vector operation; no device memory, so none of
   * the device-memory operations */
  CHECK(cpu->forward && cpu->adjoint && cpu->copy && cpu->fill && cpu->comb && cpu->mul &&
        cpu->recip && cpu->clip && cpu->dot && cpu->sanitize && cpu->tv_primal && cpu->tv_dual &&
        cpu->penalty && cpu->count_weights);
  CHECK(!cpu->alloc && !cpu->free && !cpu->fast_queue && !cpu->sync && !cpu->device_args &&
        !cpu->slots_device && !cpu->pin && !cpu->unpin);
  if (cuda->head.built) /* a backend with device memory has every operation */
    CHECK(cuda->forward && cuda->adjoint && cuda->release && cuda->fast_queue &&
          cuda->sync && cuda->device_args && cuda->slots_device && cuda->pin &&
          cuda->unpin && cuda->alloc && cuda->free && cuda->copy && cuda->fill && cuda->comb &&
          cuda->mul && cuda->recip && cuda->clip && cuda->dot && cuda->sanitize &&
          cuda->tv_primal && cuda->tv_dual && cuda->penalty && cuda->count_weights);
  else
    CHECK(!cuda->forward && !cuda->alloc && !cuda->copy);
  ctr_context *ctx = NULL;
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&o, &ctx));
  const ctr__it_backend *be = NULL;
  CHECK_OK(ctr__it_backend_of(ctx, &be));
  CHECK(be == cpu);
  ctr_context_free(ctx);
}

static void test_parbeam_table(void) {
  const ctr__par_backend *cpu = NULL;
  CHECK_OK(ctr__par_backend_of(NULL, &cpu)); /* no context: the CPU */
  REQUIRE(cpu);
  CHECK(!strcmp(cpu->head.name, "cpu") && cpu->head.built && cpu == &ctr__par_backend_cpu);
  CHECK(cpu->backproject && cpu->dezinger && cpu->stripes && cpu->paganin);
  CHECK(!cpu->sinograms && !cpu->projections); /* fbp.c's host drivers */
  const ctr__par_backend *cuda = &ctr__par_backend_cuda;
  CHECK(!strcmp(cuda->head.name, "cuda") && cuda->head.kind == CTR_DEVICE_CUDA &&
        cuda->head.built == CTR_HAVE_CUDA);
  if (cuda->head.built)
    CHECK(cuda->backproject && cuda->sinograms && cuda->projections && cuda->dezinger &&
          cuda->stripes && cuda->paganin);
  else
    CHECK(!cuda->backproject && !cuda->paganin);
}

static void test_pet_table(void) {
  const ctr__pet_backend *cpu = NULL;
  CHECK_OK(ctr__pet_backend_of(NULL, &cpu));
  REQUIRE(cpu);
  CHECK(!strcmp(cpu->head.name, "cpu") && cpu->head.built && cpu == &ctr__pet_backend_cpu);
  CHECK(cpu->create && cpu->destroy && cpu->project && cpu->fft);
  CHECK(!cpu->reconstruct); /* pet_recon.c's host iterations */
  const ctr__pet_backend *cuda = &ctr__pet_backend_cuda;
  CHECK(!strcmp(cuda->head.name, "cuda") && cuda->head.kind == CTR_DEVICE_CUDA &&
        cuda->head.built == CTR_HAVE_CUDA);
  if (cuda->head.built)
    CHECK(cuda->create && cuda->destroy && cuda->project && cuda->reconstruct && cuda->fft);
  else
    CHECK(!cuda->create && !cuda->project);
}

/* ---- Thread contracts on the CPU ---------------------------------------------------- */

/* Two jobs run once each on the calling thread (with serial_arg[i] when
 * given, else their own arg), then both at once on two threads, `rounds`
 * times: every concurrent result must equal the serial one bit for bit. A
 * job writes its result to out (n floats) and returns 0 on success. */
typedef int (*job_fn)(void *arg, float *out);
typedef struct job {
  job_fn run;
  void *arg;
  int64_t n;
  int rounds;
  float *ref, *out;
  int failed, differed;
} job;

static void *job_thread(void *arg) {
  job *j = arg;
  for (int r = 0; r < j->rounds && !j->failed; r++) {
    memset(j->out, 0xff, sizeof(float) * (size_t)j->n); /* NaN: a skipped write shows */
    if (j->run(j->arg, j->out)) j->failed = 1;
    else if (memcmp(j->out, j->ref, sizeof(float) * (size_t)j->n)) j->differed++;
  }
  return NULL;
}

static void run_pair(const char *what, job j[2], void *const serial_arg[2]) {
  for (int i = 0; i < 2; i++) {
    j[i].ref = malloc(sizeof(float) * (size_t)j[i].n);
    j[i].out = malloc(sizeof(float) * (size_t)j[i].n);
    REQUIRE(j[i].ref && j[i].out);
    CHECK_MSG(j[i].run(serial_arg ? serial_arg[i] : j[i].arg, j[i].ref) == 0,
              "%s: serial job %d failed: %s", what, i, ctr_error_detail());
  }
  pthread_t t[2];
  for (int i = 0; i < 2; i++) REQUIRE(pthread_create(&t[i], NULL, job_thread, &j[i]) == 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    printf("%s, thread %d: %d rounds, %d differed from the serial result\n", what, i, j[i].rounds,
           j[i].differed);
    CHECK_MSG(!j[i].failed, "%s: thread %d failed: %s", what, i, ctr_error_detail());
    CHECK_MSG(j[i].differed == 0, "%s: thread %d: %d of %d rounds differ", what, i, j[i].differed,
              j[i].rounds);
    free(j[i].ref);
    free(j[i].out);
  }
}

/* pet/backend.h: two projectors of one system on different threads at once
 * (the system builds each view's tables on first use, under its lock). */
typedef struct pet_job {
  ctr_pet_projector *pr;
  const float *x;
  int64_t n, views[3];
} pet_job;

static int pet_run(void *arg, float *out) {
  pet_job *p = arg;
  for (int v = 0; v < 3; v++) {
    float *y = out + 2 * v * p->n;
    if (ctr_pet_project(p->pr, CTR_PET_FORWARD, p->views[v], p->x, y) != CTR_OK ||
        ctr_pet_project(p->pr, CTR_PET_BACK, p->views[v], y, y + p->n) != CTR_OK)
      return 1;
  }
  return 0;
}

static void test_pet_threads(void) {
  ctr_context *ctx = NULL;
  CHECK_OK(pet_test_context(&ctx, 1));
  REQUIRE(ctx);
  const ctr_pet_params p = pet_test_params(21, 19, 7, 8.0);
  const ctr_pet_kernel_params k = pet_test_kernel_variant();
  const int64_t n = p.nx * p.ny * p.nz;
  float *x = malloc(sizeof(float) * (size_t)n);
  REQUIRE(x);
  pet_test_random(x, n, 3);
  /* the serial results on systems of their own, the concurrent ones on one
   * fresh system: both threads' first round builds its tables at once (view
   * 30 by both) */
  ctr_pet_system *s[4] = {NULL, NULL, NULL, NULL};
  pet_job serial[2] = {{NULL, x, n, {1, 30, 77}}, {NULL, x, n, {2, 30, 76}}};
  pet_job shared[2] = {serial[0], serial[1]};
  job j[2];
  for (int i = 0; i < 2; i++) {
    CHECK_OK(ctr_pet_system_create(&p, &k, &s[i]));
    CHECK_OK(ctr_pet_system_create(&p, &k, &s[2 + i]));
    REQUIRE(s[i] && s[2 + i]);
    CHECK_OK(ctr_pet_projector_create(ctx, s[i], &serial[i].pr));
    CHECK_OK(ctr_pet_projector_create(ctx, s[2], &shared[i].pr));
    REQUIRE(serial[i].pr && shared[i].pr);
    j[i] = (job){pet_run, &shared[i], 6 * n, 4, NULL, NULL, 0, 0};
  }
  void *const serial_arg[2] = {&serial[0], &serial[1]};
  run_pair("pet: two projectors of one system", j, serial_arg);
  for (int i = 0; i < 2; i++) {
    ctr_pet_projector_free(serial[i].pr);
    ctr_pet_projector_free(shared[i].pr);
  }
  for (int i = 0; i < 4; i++) ctr_pet_system_free(s[i]);
  free(x);
  ctr_context_free(ctx);
}

/* ---- Why no GPU: the context's error in words (src/core/context.c) ------------------- */

static void test_cuda_reason(void) {
  char why[256];
  /* a driver older than the runtime: both versions and the release needed */
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_OLD_DRIVER, 12040, 13000, NULL);
  CHECK(strstr(why, "driver supports CUDA 12.4") && strstr(why, "CUDA runtime is 13.0") &&
        strstr(why, "CUDA 13.0 or newer") && strstr(why, "580.65.06"));
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_OLD_DRIVER, 11080, 12080, NULL);
  CHECK(strstr(why, "CUDA 11.8") && strstr(why, "runtime is 12.8") && strstr(why, "525.60.13"));
  /* no driver at all (libcuda.so.1 missing: the runtime says "insufficient driver") */
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_OLD_DRIVER, 0, 13000, NULL);
  CHECK(strstr(why, "no NVIDIA driver") && strstr(why, "libcuda.so.1") && strstr(why, "580.65.06"));
  /* a runtime of an unknown major: no release named, still the versions */
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_OLD_DRIVER, 13000, 14010, NULL);
  CHECK(strstr(why, "runtime is 14.1") && strstr(why, "CUDA 14.0 or newer") && !strstr(why, "Linux"));
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_NO_DEVICE, 13000, 13000, NULL);
  CHECK(strstr(why, "sees no GPU") && strstr(why, "CUDA 13.0"));
  ctr__cuda_reason(why, sizeof why, CTR__CUDA_PROBE_ERROR, 13000, 13000, "bad thing");
  CHECK(strstr(why, "cudaGetDeviceCount failed: bad thing"));
  char tiny[8]; /* truncated, terminated */
  ctr__cuda_reason(tiny, sizeof tiny, CTR__CUDA_PROBE_NO_DEVICE, 13000, 13000, NULL);
  CHECK(strlen(tiny) == sizeof tiny - 1);

  /* the context: with no usable GPU, CTR_E_NO_DEVICE (or no backend) says why */
  if (ctr_cuda_get_device_count() > 0) return;
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = CTR_DEVICE_CUDA;
  ctr_context *ctx = NULL;
  const ctr_status st = ctr_context_create(&o, &ctx);
  CHECK(st == (CTR_HAVE_CUDA ? CTR_E_NO_DEVICE : CTR_E_UNSUPPORTED) && !ctx);
  CHECK(!CTR_HAVE_CUDA || (strstr(ctr_error_detail(), "no usable GPU was found: ") &&
                           (strstr(ctr_error_detail(), "driver") ||
                            strstr(ctr_error_detail(), "cudaGetDeviceCount"))));
}

int main(void) {
  test_cuda_reason();
  test_conebeam_table();
  test_iterative_table();
  test_parbeam_table();
  test_pet_table();
  test_pet_threads();
  return th_finish("test_backends");
}
