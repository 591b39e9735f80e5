/* The backend seams of iterative, parbeam and pet (their backend.h): each
 * registry finds the CPU backend and names the CUDA one, built exactly when
 * this build has CUDA; a built backend has the operations its table says it
 * has (the CPU's optional ones NULL, so that the parents' host paths run);
 * and the threading each backend.h states holds on the CPU: work started on
 * two threads at once gives the bits of the same work done one after the
 * other (parallel-beam array functions on one context, PET projectors of one
 * system, iterative projectors of two contexts). */
#include "harness.h"

#include "iterative/backend.h"
#include "parbeam/backend.h"
#include "pet/backend.h"
#include "pet_test_util.h"

#include <pthread.h>
#include <string.h>

/* ---- Registries and tables -------------------------------------------------------- */

static void test_iterative_table(void) {
  const ctr__it_backend *cpu = &ctr__it_backend_cpu, *cuda = &ctr__it_backend_cuda;
  CHECK(!strcmp(cpu->head.name, "cpu") && cpu->head.kind == CTR_DEVICE_CPU && cpu->head.built);
  CHECK(!strcmp(cuda->head.name, "cuda") && cuda->head.kind == CTR_DEVICE_CUDA &&
        cuda->head.built == CTR_HAVE_CUDA);
  /* host vectors: every vector operation; no device memory, so none of
   * the device-memory operations */
  CHECK(cpu->forward && cpu->adjoint && cpu->copy && cpu->fill && cpu->comb && cpu->mul &&
        cpu->recip && cpu->clip && cpu->dot && cpu->sanitize && cpu->tv_primal && cpu->tv_dual);
  CHECK(!cpu->alloc && !cpu->free && !cpu->fast_queue && !cpu->fast_sync && !cpu->device_args &&
        !cpu->slots_device && !cpu->pin && !cpu->unpin);
  if (cuda->head.built) /* a backend with device memory has every operation */
    CHECK(cuda->forward && cuda->adjoint && cuda->release && cuda->fast_queue &&
          cuda->fast_sync && cuda->device_args && cuda->slots_device && cuda->pin &&
          cuda->unpin && cuda->alloc && cuda->free && cuda->copy && cuda->fill && cuda->comb &&
          cuda->mul && cuda->recip && cuda->clip && cuda->dot && cuda->sanitize &&
          cuda->tv_primal && cuda->tv_dual);
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

/* parbeam/backend.h: any thread may call the operations, several at once
 * on one context (CPU). */
typedef struct par_job {
  ctr_context *ctx;
  ctr_parallel_geometry *g;
  float *sino;
  ctr_corrections c;
} par_job;

static int par_run(void *arg, float *out) {
  par_job *p = arg;
  const ctr_parallel_params *q = ctr_parallel_get_params(p->g);
  const int64_t nsino = q->nbins * q->nangles * 2;
  if (ctr_fbp_backproject(p->ctx, p->g, NULL, 2, p->sino, out) != CTR_OK) return 1;
  /* Paganin's filter (FFTW plans under the library's lock) on a copy of
   * the sinograms, after the slices */
  float *img = out + q->nx * q->ny * 2;
  memcpy(img, p->sino, sizeof(float) * (size_t)nsino);
  return ctr_paganin_filter(p->ctx, &p->c, 0.05, q->nbins, q->nangles, 2, img) != CTR_OK;
}

static void test_parbeam_threads(void) {
  ctr_context *ctx = NULL;
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = CTR_DEVICE_CPU;
  o.num_threads = 2;
  CHECK_OK(ctr_context_create(&o, &ctx));
  REQUIRE(ctx);
  par_job pj[2];
  job j[2];
  memset(j, 0, sizeof j);
  for (int i = 0; i < 2; i++) {
    ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
    p.nbins = 48 + 16 * i;
    p.nangles = 60 + 30 * i;
    pj[i].ctx = ctx;
    pj[i].g = NULL;
    CHECK_OK(ctr_parallel_create(&p, &pj[i].g));
    REQUIRE(pj[i].g);
    const int64_t nsino = p.nbins * p.nangles * 2;
    pj[i].sino = malloc(sizeof(float) * (size_t)nsino);
    REQUIRE(pj[i].sino);
    pet_test_random(pj[i].sino, nsino, 7 + (unsigned)i);
    pj[i].c = (ctr_corrections)CTR_CORRECTIONS_INIT;
    pj[i].c.paganin_delta_beta = 200 + 100 * i;
    pj[i].c.energy_kev = 20;
    pj[i].c.distance_mm = 100;
    const ctr_parallel_params *q = ctr_parallel_get_params(pj[i].g);
    j[i] = (job){par_run, &pj[i], q->nx * q->ny * 2 + nsino, 20, NULL, NULL, 0, 0};
  }
  run_pair("parbeam: ctr_fbp_backproject and ctr_paganin_filter on one context", j, NULL);
  for (int i = 0; i < 2; i++) {
    free(pj[i].sino);
    ctr_parallel_free(pj[i].g);
  }
  ctr_context_free(ctx);
}

/* pet/backend.h: projectors of one system on different threads at once
 * (the views' tables built on first use, under the system's lock). */
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
  /* the serial results on one system, the concurrent ones on a fresh one:
   * the threads' first round builds its views' tables at once, views 30
   * and 77 on both threads */
  ctr_pet_system *s[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) CHECK_OK(ctr_pet_system_create(&p, &k, &s[i]));
  REQUIRE(s[0] && s[1]);
  const int64_t n = p.nx * p.ny * p.nz;
  float *x = malloc(sizeof(float) * (size_t)n);
  REQUIRE(x);
  pet_test_random(x, n, 3);
  pet_job serial[2] = {{NULL, x, n, {1, 30, 77}}, {NULL, x, n, {2, 30, 77}}};
  pet_job shared[2] = {serial[0], serial[1]};
  job j[2];
  for (int i = 0; i < 2; i++) {
    CHECK_OK(ctr_pet_projector_create(ctx, s[0], &serial[i].pr));
    CHECK_OK(ctr_pet_projector_create(ctx, s[1], &shared[i].pr));
    REQUIRE(serial[i].pr && shared[i].pr);
    j[i] = (job){pet_run, &shared[i], 6 * n, 4, NULL, NULL, 0, 0};
  }
  void *const serial_arg[2] = {&serial[0], &serial[1]};
  run_pair("pet: two projectors of one system", j, serial_arg);
  for (int i = 0; i < 2; i++) {
    ctr_pet_projector_free(serial[i].pr);
    ctr_pet_projector_free(shared[i].pr);
    ctr_pet_system_free(s[i]);
  }
  free(x);
  ctr_context_free(ctx);
}

/* iterative/backend.h: projectors of different contexts on different
 * threads at once. */
typedef struct it_job {
  ctr_projector *pr;
  const float *vol;
  int64_t nvol, nproj;
} it_job;

static int it_run(void *arg, float *out) {
  it_job *p = arg;
  return ctr_projector_forward(p->pr, p->vol, out) != CTR_OK ||
         ctr_projector_adjoint(p->pr, out, out + p->nproj) != CTR_OK;
}

static void test_iterative_threads(void) {
  ctr_context *ctx[2] = {NULL, NULL};
  ctr_parallel_geometry *g[2] = {NULL, NULL};
  it_job ij[2];
  job j[2];
  float *vol[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
    o.device = CTR_DEVICE_CPU;
    CHECK_OK(ctr_context_create(&o, &ctx[i]));
    ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
    p.nbins = 40 + 8 * i;
    p.nangles = 36 + 12 * i;
    CHECK_OK(ctr_parallel_create(&p, &g[i]));
    REQUIRE(ctx[i] && g[i]);
    ij[i].pr = NULL;
    CHECK_OK(ctr_projector_create_parallel(ctx[i], g[i], 3, NULL, &ij[i].pr));
    REQUIRE(ij[i].pr);
    int64_t vd[3], pd[3];
    ctr_projector_get_volume_dims(ij[i].pr, vd);
    ctr_projector_get_projection_dims(ij[i].pr, pd);
    ij[i].nvol = vd[0] * vd[1] * vd[2];
    ij[i].nproj = pd[0] * pd[1] * pd[2];
    vol[i] = malloc(sizeof(float) * (size_t)ij[i].nvol);
    REQUIRE(vol[i]);
    pet_test_random(vol[i], ij[i].nvol, 11 + (unsigned)i);
    ij[i].vol = vol[i];
    j[i] = (job){it_run, &ij[i], ij[i].nproj + ij[i].nvol, 6, NULL, NULL, 0, 0};
  }
  run_pair("iterative: projectors of two contexts", j, NULL);
  for (int i = 0; i < 2; i++) {
    ctr_projector_free(ij[i].pr);
    ctr_parallel_free(g[i]);
    ctr_context_free(ctx[i]);
    free(vol[i]);
  }
}

int main(void) {
  test_iterative_table();
  test_parbeam_table();
  test_pet_table();
  test_parbeam_threads();
  test_pet_threads();
  test_iterative_threads();
  return th_finish("test_backends");
}
