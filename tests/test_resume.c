/* One resume semantics for every command (src/stream/output.h, "Resume"):
 * the streamed FDK, the streamed FBP and the iterative solvers, each run
 * through the same steps, answer alike:
 *  - state left on disk (a journal, a checkpoint) and no resume: refused,
 *    CTR_E_INVALID_ARGUMENT with the command's resume option as the error's
 *    field, in the same words naming the option and the file to delete;
 *    the state is left as it was;
 *  - resume and no state: CTR_E_IO with the same field, naming the file;
 *  - a resume gives the bytes of an uninterrupted run;
 *  - the one intended difference: after success a journal is gone, a
 *    checkpoint stays (the point a later call with more iterations
 *    continues from);
 *  - the reports' `resumable` of FDK and FBP have one meaning: 1 after a
 *    failed run with a journalled unit (stopped by the test builds' hook
 *    CTRECON_INJECT_STOP_AFTER_SLABS) and after a refusal that left that
 *    run's journal alone; 0 after success, with nothing to resume, and when
 *    the journal is damaged. */
#include "harness.h"
#include "scratch_dir.h"

#include <unistd.h>

enum { N = 16, NU = 48, NVIEWS = 24, NBINS = 40, NANGLES = 30, NSLICES = 8 };

static ctr_context *g_ctx;
static ctr_geometry *g_cone;
static float *g_proj;           /* cone-beam projections, NU x NU x NVIEWS */
static ctr_parallel_params g_par; /* sinograms of NBINS x NANGLES, NSLICES of them */

/* ---- The commands ------------------------------------------------------------------ */

/* A streamed command run into `out`: its status, its report's `resumable`. */
typedef struct streamed {
  const char *name;
  const char *option; /* its resume option */
  ctr_status (*run)(const char *out, int resume, int *resumable);
} streamed;

static ctr_status run_fdk(const char *out, int resume, int *resumable) {
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint.width = hint.height = NU;
  hint.count = NVIEWS;
  hint.dtype = CTR_DTYPE_FLOAT32;
  ctr_stack_reader *r = NULL;
  ctr_status st = ctr_stack_open(P("cone.raw"), CTR_FORMAT_RAW, &hint, 0, &r);
  if (st != CTR_OK) return st;
  ctr_fdk_stream_options o = CTR_FDK_STREAM_OPTIONS_INIT;
  o.max_slab_slices = 4; /* 4 subvolumes */
  o.scratch_dir = g_dir;
  o.resume = resume;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  rep.resumable = -1;
  ctr_error_clear();
  st = ctr_fdk_stream(g_ctx, g_cone, &o, r, out, CTR_FORMAT_AUTO, &rep);
  *resumable = rep.resumable;
  ctr_stack_close(r);
  return st;
}

static ctr_status run_fbp(const char *out, int resume, int *resumable) {
  ctr_stack_reader *r = NULL;
  ctr_status st = ctr_stack_open(P("sino.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r);
  if (st != CTR_OK) return st;
  ctr_fbp_stream_options o = CTR_FBP_STREAM_OPTIONS_INIT;
  o.sinograms = 1;
  o.batch = 2; /* 4 bands */
  o.resume = resume;
  ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
  rep.resumable = -1;
  ctr_error_clear();
  st = ctr_fbp_stream(g_ctx, &g_par, &o, r, NULL, NULL, out, CTR_FORMAT_AUTO, &rep);
  *resumable = rep.resumable;
  ctr_stack_close(r);
  return st;
}

/* The refusal of state left on disk, in the words every command uses. */
static void check_refusal(const char *name, const char *option, const char *state) {
  char want[1024];
  snprintf(want, sizeof want, "'%s' holds ", state);
  CHECK_MSG(!strncmp(ctr_error_detail(), want, strlen(want)), "%s: '%s'", name,
            ctr_error_detail());
  snprintf(want, sizeof want, ": set %s to continue it, or delete '%s'", option, state);
  CHECK_MSG(strstr(ctr_error_detail(), want) != NULL, "%s: '%s'", name, ctr_error_detail());
  CHECK_MSG(!strcmp(ctr_error_get_field(), option), "%s: field '%s'", name, ctr_error_get_field());
}

/* Resume and nothing there. */
static void check_missing(const char *name, const char *option, const char *state) {
  char want[1024];
  snprintf(want, sizeof want, "cannot resume: no %s '%s'; run without %s to start over",
           strstr(state, "journal") ? "journal" : "checkpoint", state, option);
  CHECK_MSG(strstr(ctr_error_detail(), want) != NULL, "%s: '%s'", name, ctr_error_detail());
  CHECK_MSG(!strcmp(ctr_error_get_field(), option), "%s: field '%s'", name, ctr_error_get_field());
}

static void test_streamed(const streamed *c) {
  char out[512], again[512], dam[512], journal[600], djournal[600];
  snprintf(out, sizeof out, "%s", P(c->name));
  strcat(out, ".raw");
  snprintf(again, sizeof again, "%s.again.raw", P(c->name));
  snprintf(dam, sizeof dam, "%s.damaged.raw", P(c->name));
  snprintf(journal, sizeof journal, "%s.partial.journal", again);
  snprintf(djournal, sizeof djournal, "%s.partial.journal", dam);
  int resumable = -1;
  /* a run that succeeds: nothing to resume */
  CHECK_OK(c->run(out, 0, &resumable));
  CHECK_MSG(resumable == 0, "%s: success reports resumable %d", c->name, resumable);
  /* stopped after its first unit: kept for a resume */
  setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "1", 1);
  ctr_status st = c->run(again, 0, &resumable);
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  CHECK_MSG(st == CTR_E_CANCELLED && resumable == 1 && exists(journal) && !exists(again),
            "%s: stopped: %s, resumable %d, journal %d", c->name, ctr_status_name(st), resumable,
            exists(journal));
  /* the interrupted run's journal is not overwritten without resume */
  long long n0 = 0, n1 = 0;
  unsigned char *before = read_all(journal, &n0);
  CHECK_FAILS(c->run(again, 0, &resumable), CTR_E_INVALID_ARGUMENT, "holds");
  check_refusal(c->name, c->option, journal);
  unsigned char *after = read_all(journal, &n1);
  CHECK_MSG(before && after && n0 == n1 && !memcmp(before, after, (size_t)n0) && resumable == 1,
            "%s: a refusal changed the journal, or reports resumable %d", c->name, resumable);
  free(before);
  free(after);
  /* the resume: the uninterrupted bytes, and nothing left */
  CHECK_OK(c->run(again, 1, &resumable));
  CHECK_MSG(resumable == 0 && same_files(out, again) && !exists(journal),
            "%s: resumed: resumable %d, same %d, journal %d", c->name, resumable,
            same_files(out, again), exists(journal));
  /* resume and no journal */
  CHECK_FAILS(c->run(again, 1, &resumable), CTR_E_IO, "cannot resume");
  check_missing(c->name, c->option, journal);
  CHECK_MSG(resumable == 0, "%s: nothing to resume reports resumable %d", c->name, resumable);
  /* a damaged journal: a resume cannot help */
  setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "1", 1);
  st = c->run(dam, 0, &resumable);
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  FILE *f = fopen(djournal, "w");
  if (f) fputs("not a journal\n", f), fclose(f);
  CHECK_FAILS(c->run(dam, 1, &resumable), CTR_E_FORMAT, "journal");
  CHECK_MSG(st == CTR_E_CANCELLED && resumable == 0, "%s: a damaged journal reports resumable %d",
            c->name, resumable);
}

/* ---- Iterate ------------------------------------------------------------------------ */

static int g_calls;
static int count_calls(void *user, const ctr_iterate_info *info) {
  (void)user, (void)info;
  g_calls++;
  return 0;
}

static void test_iterate(void) {
  const char *option = "ctr_iterate_options.resume";
  ctr_projector *p = NULL;
  CHECK_OK(ctr_projector_create_cone(g_ctx, g_cone, NULL, &p));
  REQUIRE(p);
  const size_t bytes = sizeof(float) * N * N * N;
  float *straight = malloc(bytes), *x = malloc(bytes);
  REQUIRE(straight && x);
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = CTR_ITERATE_CGLS;
  o.iterations = 4;
  CHECK_OK(ctr_iterate(p, &o, g_proj, straight, NULL));
  const char *ck = P("it.checkpoint"), *lock = P("it.checkpoint.lock");
  o.checkpoint = ck;
  o.iterations = 2;
  o.on_iteration = count_calls;
  ctr_iterate_report rep = CTR_ITERATE_REPORT_INIT;
  CHECK_OK(ctr_iterate(p, &o, g_proj, x, &rep));
  /* the intended difference: a checkpoint stays after success */
  CHECK(rep.checkpointed == 2 && exists(ck) && !exists(lock));
  /* not overwritten without resume, and nothing of the run happens */
  long long n0 = 0, n1 = 0;
  unsigned char *before = read_all(ck, &n0);
  g_calls = 0;
  o.iterations = 4;
  CHECK_FAILS(ctr_iterate(p, &o, g_proj, x, NULL), CTR_E_INVALID_ARGUMENT, "holds");
  check_refusal("iterate", option, ck);
  unsigned char *after = read_all(ck, &n1);
  CHECK_MSG(before && after && n0 == n1 && !memcmp(before, after, (size_t)n0) && g_calls == 0 &&
                !exists(lock),
            "iterate: a refusal changed the checkpoint (%d iterations ran)", g_calls);
  free(before);
  free(after);
  /* the resume: the uninterrupted bits; the checkpoint stays */
  o.resume = 1;
  rep = (ctr_iterate_report)CTR_ITERATE_REPORT_INIT;
  CHECK_OK(ctr_iterate(p, &o, g_proj, x, &rep));
  CHECK_MSG(rep.resumed == 2 && rep.checkpointed == 4 && !memcmp(x, straight, bytes) &&
                exists(ck) && !exists(lock),
            "iterate: resumed %lld, checkpointed %lld", (long long)rep.resumed,
            (long long)rep.checkpointed);
  /* resume and no checkpoint: nothing is created */
  remove(ck);
  CHECK_FAILS(ctr_iterate(p, &o, g_proj, x, NULL), CTR_E_IO, "cannot resume");
  check_missing("iterate", option, ck);
  CHECK(!exists(ck) && !exists(lock));
  free(straight);
  free(x);
  ctr_projector_free(p);
}

/* ---- Setup ---------------------------------------------------------------------------- */

static int setup(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &g_ctx));
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 200;
  cp.sdd = 300;
  cp.nu = cp.nv = NU;
  cp.du = cp.dv = 2.4;
  cp.nviews = NVIEWS;
  const ctr_volume_geometry vol = {N, N, N, 4, 4, 4, 0, 0, 0};
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g_cone));
  CHECK_OK(ctr_phantom_shepp_logan(28.0, 0.02, &ph));
  if (!g_ctx || !g_cone || !ph) return 0;
  g_proj = malloc(sizeof(float) * NU * NU * NVIEWS);
  int64_t pd[3] = {NU, NU, NVIEWS};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(g_ctx, ph, g_cone, 1, &pa));
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = info.height = NU;
  info.count = NVIEWS;
  info.dtype = CTR_DTYPE_FLOAT32;
  CHECK_OK(ctr_stack_save(P("cone.raw"), CTR_FORMAT_RAW, &info, CTR_DTYPE_FLOAT32, g_proj, 0));
  /* sinograms of the same head's central slices */
  g_par = (ctr_parallel_params)CTR_PARALLEL_PARAMS_INIT;
  g_par.nbins = NBINS;
  g_par.nangles = NANGLES;
  g_par.pixel_size = 1.6;
  ctr_parallel_geometry *pg = NULL;
  CHECK_OK(ctr_parallel_create(&g_par, &pg));
  float *sino = malloc(sizeof(float) * NBINS * NANGLES * NSLICES);
  double z[NSLICES];
  for (int s = 0; s < NSLICES; s++) z[s] = -8.0 + 2.0 * s;
  if (pg && sino) CHECK_OK(ctr_phantom_sinogram(ph, pg, NSLICES, z, 1, sino));
  info.width = NBINS;
  info.height = NANGLES;
  info.count = NSLICES;
  CHECK_OK(ctr_stack_save(P("sino.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32, sino, 0));
  free(sino);
  ctr_parallel_free(pg);
  ctr_phantom_free(ph);
  return g_proj != NULL;
}

int main(void) {
  if (!scratch_open("ctr_resume")) return 1;
  if (setup()) {
    static const streamed k_streamed[2] = {
        {"fdk", "ctr_fdk_stream_options.resume", run_fdk},
        {"fbp", "ctr_fbp_stream_options.resume", run_fbp}};
    for (int i = 0; i < 2; i++) test_streamed(&k_streamed[i]);
    test_iterate();
  }
  free(g_proj);
  ctr_geometry_free(g_cone);
  ctr_context_free(g_ctx);
  scratch_close();
  return th_finish("test_resume");
}
