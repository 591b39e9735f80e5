/* `ctrecon rabbitct`: a RabbitCT runner. Loads a backprojection module with
 * dlopen and drives it through the call protocol of the published runner
 * (RabbitCT 1.0.3, Rohkohl et al. 2009): all matrices read up front;
 * Prepare (timed apart); Load (not timed); the volume and, unless the module
 * provided them in Load, the projection buffers allocated after Load; per
 * subset, the views read into the buffers (not timed), then one timed
 * Backprojection call per view with adv_projNumber the absolute view,
 * adv_numAvailProjs the subset's size and adv_firstProjOfSubset 1 on the
 * subset's first call only; Finish; the volume scored in HU against the
 * file's reference; Unload. Each call is timed with the wall clock in whole
 * microseconds and the RabbitCT time is their sum, as the published runner
 * reports it (docs/rabbitct.md). */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../modules/rabbitct/rabbitct.h"
#include "cli.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define RCT_CMD "rabbitct"
#define RCT_EXTENT 256.0 /* mm: the volume edge for every L */

const cli_command cli_cmd_rabbitct = {
    "rabbitct",
    "run a RabbitCT backprojection module on a RabbitCT file, time and score it",
    "ctrecon rabbitct FILE [--size L] [options]",
    "A RabbitCT runner (Rohkohl et al., Med. Phys. 36:3940, 2009) that follows the\n"
    "published runner (RabbitCT 1.0.3) call for call, so its time is the time a\n"
    "RabbitCT submission reports. It loads the module (a shared library exporting\n"
    "RCTLoadAlgorithm, RCTAlgorithmBackprojection, RCTFinishAlgorithm,\n"
    "RCTUnloadAlgorithm and optionally RCTPrepareAlgorithm), reads every view's\n"
    "matrix, calls Prepare (timed, reported apart) and Load (not timed). The\n"
    "projection buffers are the module's when Load provides them, else the\n"
    "runner allocates them (plain memory) after Load: N/4 buffers (N at L = 1024\n"
    "or with --prefetch-all-projections). For each subset the runner reads the\n"
    "views into the buffers (not timed), then calls RCTAlgorithmBackprojection once\n"
    "per view with adv_firstProjOfSubset = 1 on the subset's first call only. The\n"
    "RabbitCT time is the sum of those calls, each measured with the wall clock in\n"
    "whole microseconds. The L^3 volume (voxel 256/L mm, first voxel at\n"
    "-(L-1)/2 x 256/L mm) is then scored against the file's reference of that size\n"
    "in HU: RMSE, MSE, largest error and PSNR (peak 4095); without such a\n"
    "reference, scoring is skipped. GUPS = views x L^3 / RabbitCT time / 1e9.\n"
    "--buffers N changes the buffer count: the run is then not the benchmark, and\n"
    "the report says so. --device, --interp and --projection-buffers set\n"
    "CTRECON_DEVICE, CTRECON_INTERP and CTRECON_RABBITCT_BUFFERS for the module\n"
    "before it is loaded (when not given, a value already in the environment is\n"
    "kept). The default module is\n"
    "<directory of ctrecon>/modules/rabbitct/" CTR_RABBITCT_MODULE_NAME ".",
    "  ctrecon rabbitct shepp.rct --size 256\n"
    "  ctrecon rabbitct shepp.rct --size 512 --device cuda --interp texture --json r512.json\n"
    "  ctrecon rabbitct rabbit.rct --size 128 --module ./libmy_rabbitct.so\n"
    "  ctrecon rabbitct shepp.rct --size 512 --projection-buffers runner\n",
};

typedef struct rct_args {
  const char *file, *module, *json, *device, *interp, *owner;
  int64_t size, buffers;
  int buffers_given, prefetch, quiet, threads, threads_given, force;
  cli_common tune; /* its --tune settings only */
} rct_args;

typedef struct rct_run {
  const rct_args *a;
  cli_session session;
  ctr_rabbitct *reader;
  const ctr_rabbitct_header *h;
  char module[4096];
  const char *device, *interp, *owner; /* what the module sees */
  int device_from_env, interp_from_env, owner_from_env;
  void *lib;
  RabbitCtFunction prepare, load, backproject, finish, unload;
  RabbitCtGlobalData gd;
  int loaded;           /* Load succeeded: Unload is due */
  double *matrices;     /* N x 12 */
  double **matrix_ptrs; /* N */
  float **buffers;      /* the runner's, when the module provides none */
  float *buffer_block;  /* their memory, one block as the published runner's */
  unsigned nbuffers;    /* views per subset */
  int module_buffers;   /* the module provided adv_pProjBuffers in Load */
  float *own_volume; /* the runner's f_L when the module left it NULL */
  uint16_t *ref;
  double t_prepare, t_load, t_bp, t_finish;
  int64_t nsubsets;
  double *t_subset, *t_first; /* per subset: all its calls, its first call */
  int scored;
  ctr_rabbitct_score score;
} rct_run;

/* ---- Options ----------------------------------------------------------------- */

static int parse_device(const char *cmd, const char *name, const char *value, void *dst) {
  if (strcmp(value, "auto") && strcmp(value, "cpu") && strcmp(value, "cuda"))
    return cli_usage_error(cmd, "%s '%s': expected auto, cpu or cuda", name, value);
  *(const char **)dst = value;
  return 0;
}

static int parse_interp(const char *cmd, const char *name, const char *value, void *dst) {
  if (strcmp(value, "precise") && strcmp(value, "exact") && strcmp(value, "texture"))
    return cli_usage_error(cmd, "%s '%s': expected precise, exact or texture", name, value);
  *(const char **)dst = value;
  return 0;
}

static int parse_owner(const char *cmd, const char *name, const char *value, void *dst) {
  if (strcmp(value, "module") && strcmp(value, "runner"))
    return cli_usage_error(cmd, "%s '%s': expected module or runner", name, value);
  *(const char **)dst = value;
  return 0;
}

static int parse_size(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const long long v = strtoll(value, &end, 10);
  if (end == value || *end || errno || v < 1 || v > 1024)
    return cli_usage_error(cmd, "%s '%s': expected a volume size L in 1 .. 1024", name, value);
  *(int64_t *)dst = v;
  return 0;
}

static int parse_buffers(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const long long v = strtoll(value, &end, 10);
  if (end == value || *end || errno || v < 1 || v > 65536)
    return cli_usage_error(cmd, "%s '%s': expected a buffer count in 1 .. 65536", name, value);
  *(int64_t *)dst = v;
  return 0;
}

/* Takes the one positional argument (FILE) out of argv, wherever it is, so
 * that the table parser sees options only. Option values are skipped as the
 * parser would take them (a value never starts with "--"). */
static int take_file(const cli_opt *opts, int argc, char **argv, char **out, int *nout,
                     const char **file) {
  int n = 0;
  out[n++] = argv[0];
  *file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (arg[0] == '-' && arg[1] != '\0') {
      out[n++] = argv[i];
      const char *eq = strchr(arg, '=');
      const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
      for (const cli_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, arg, len) && o->metavar && !eq &&
            i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
          out[n++] = argv[++i];
          break;
        }
    } else if (!*file) {
      *file = arg;
    } else {
      out[n++] = argv[i]; /* the parser reports the stray argument */
    }
  }
  out[n] = NULL;
  *nout = n;
  return 0;
}

/* ---- The module ---------------------------------------------------------------- */

/* <directory of the running executable>/modules/rabbitct/<module>. */
static int default_module(rct_run *r) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME,
                     "cannot find the running executable (/proc/self/exe: %s); give --module PATH",
                     strerror(errno));
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  if (snprintf(r->module, sizeof r->module, "%s/modules/rabbitct/%s", exe,
               CTR_RABBITCT_MODULE_NAME) >= (int)sizeof r->module)
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "module path too long; give --module PATH");
  return 0;
}

/* CTRECON_DEVICE / CTRECON_INTERP: the option, else the environment's value,
 * else the module's default, written out so that what is printed is what the
 * module sees. */
static const char *set_env(const char *name, const char *given, const char *dflt, int *from_env) {
  const char *env = getenv(name);
  *from_env = 0;
  if (!given && env && *env) {
    *from_env = 1;
    return env;
  }
  const char *v = given ? given : dflt;
  setenv(name, v, 1);
  return v;
}

static RabbitCtFunction lookup(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  RabbitCtFunction f;
  memcpy(&f, &p, sizeof f); /* object to function pointer, as POSIX allows */
  return f;
}

static int load_module(rct_run *r) {
  const rct_args *a = r->a;
  if (a->module) {
    /* A bare name would send dlopen searching the library path: the option
     * names a file. */
    const int bare = !strchr(a->module, '/');
    if (snprintf(r->module, sizeof r->module, "%s%s", bare ? "./" : "", a->module) >=
        (int)sizeof r->module)
      return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "--module '%s': path too long", a->module);
  } else {
    int rc = default_module(r);
    if (rc) return rc;
  }
  struct stat st;
  if (stat(r->module, &st) != 0)
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "cannot load module '%s': %s%s", r->module,
                     strerror(errno), a->module ? "" : " (build it, or give --module PATH)");
  r->device = set_env("CTRECON_DEVICE", a->device, "auto", &r->device_from_env);
  r->interp = set_env("CTRECON_INTERP", a->interp, "precise", &r->interp_from_env);
  r->owner = set_env("CTRECON_RABBITCT_BUFFERS", a->owner, "module", &r->owner_from_env);
  /* --tune KEY=VALUE: CTRECON_<KEY>, which the module gives its context's
   * tuning table (ctr_tuning_set_env) */
  for (int i = 0; i < a->tune.ntune; i++) {
    const char *t = a->tune.tune[i], *eq = strchr(t, '=');
    char name[80] = "CTRECON_";
    for (size_t k = strlen(name); t < eq && k + 1 < sizeof name; t++, k++)
      name[k] = (char)toupper((unsigned char)*t), name[k + 1] = '\0';
    setenv(name, eq + 1, 1);
  }
#ifdef _OPENMP
  if (a->threads > 0) omp_set_num_threads(a->threads);
#endif
  r->lib = dlopen(r->module, RTLD_NOW | RTLD_LOCAL);
  if (!r->lib) {
    const char *e = dlerror();
    if (e && strstr(e, r->module))
      return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "cannot load module: %s", e);
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "cannot load module '%s': %s", r->module,
                     e ? e : "unknown dlopen error");
  }
  const struct {
    const char *name;
    RabbitCtFunction *fn;
    int required;
  } syms[] = {{RCT_LOAD, &r->load, 1},
              {RCT_PREPARE, &r->prepare, 0},
              {RCT_BACKPROJECTION, &r->backproject, 1},
              {RCT_FINISH, &r->finish, 1},
              {RCT_UNLOAD, &r->unload, 1}};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = lookup(r->lib, syms[i].name);
    if (!*syms[i].fn && syms[i].required)
      return cli_error(RCT_CMD, CLI_EXIT_INPUT,
                       "module '%s' does not export %s, which the RabbitCT protocol requires",
                       r->module, syms[i].name);
  }
  return 0;
}

/* ---- The run ---------------------------------------------------------------------- */

static int open_file(rct_run *r) {
  const rct_args *a = r->a;
  ctr_status st = ctr_rabbitct_open(a->file, &r->reader);
  if (st != CTR_OK) return cli_fail_file(RCT_CMD, st, a->file);
  r->h = ctr_rabbitct_get_header(r->reader);
  const int64_t N = r->h->nviews;
  r->matrices = malloc((size_t)N * 12 * sizeof(double));
  r->matrix_ptrs = malloc((size_t)N * sizeof(double *));
  if (!r->matrices || !r->matrix_ptrs)
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "out of memory for %lld matrices", (long long)N);
  for (int64_t i = 0; i < N; i++) {
    r->matrix_ptrs[i] = r->matrices + i * 12;
    st = ctr_rabbitct_read_view(r->reader, i, r->matrix_ptrs[i], NULL);
    if (st != CTR_OK) return cli_fail_file(RCT_CMD, st, a->file);
  }
  return 0;
}

/* The published runner's buffer count: N/4, passed to Prepare and Load;
 * when the runner allocates the buffers itself, N at L = 1024 or with
 * --prefetch-all-projections. --buffers N replaces both (not the benchmark). */
static unsigned count_buffers(const rct_run *r, int runner_owned) {
  const int64_t N = r->h->nviews;
  int64_t n = N / 4 > 0 ? N / 4 : 1;
  if (r->a->buffers_given) n = r->a->buffers;
  else if (runner_owned && (r->a->size == 1024 || r->a->prefetch)) n = N;
  return (unsigned)(n < N ? n : N);
}

/* The runner's buffers, allocated after Load when the module provided none:
 * one zeroed block of plain (pageable) memory, reused for every subset. */
static int alloc_buffers(rct_run *r) {
  const int64_t pixels = r->h->width * r->h->height;
  r->nbuffers = count_buffers(r, 1);
  const double bytes = (double)r->nbuffers * (double)pixels * sizeof(float);
  r->buffers = calloc(r->nbuffers, sizeof(float *));
  void *p = NULL;
  if (!r->buffers || bytes > (double)SIZE_MAX ||
      posix_memalign(&p, 64, (size_t)r->nbuffers * (size_t)pixels * sizeof(float)) != 0) {
    char b[32];
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME,
                     "out of memory: %u projection buffers need %s; give --buffers N with fewer",
                     r->nbuffers, cli_bytes(bytes, b, sizeof b));
  }
  r->buffer_block = p;
  memset(p, 0, (size_t)r->nbuffers * (size_t)pixels * sizeof(float));
  for (unsigned k = 0; k < r->nbuffers; k++) r->buffers[k] = r->buffer_block + (size_t)k * pixels;
  r->gd.adv_numProjBuffers = r->nbuffers;
  r->gd.adv_pProjBuffers = r->buffers;
  return 0;
}

static int module_failed(const rct_run *r, const char *fn) {
  return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "%s returned false (module '%s', CTRECON_DEVICE=%s)",
                   fn, r->module, r->device);
}

static int prepare_and_load(rct_run *r) {
  const int64_t L = r->a->size;
  RabbitCtGlobalData *gd = &r->gd;
  memset(gd, 0, sizeof *gd);
  gd->L = (unsigned)L;
  gd->S_x = (unsigned)r->h->width;
  gd->S_y = (unsigned)r->h->height;
  gd->R_L = (float)(RCT_EXTENT / (double)L);
  gd->O_L = -0.5f * gd->R_L * ((float)gd->L - 1.0f); /* the published runner's expression */
  gd->f_L = NULL;
  gd->adv_numProjBuffers = count_buffers(r, 0);
  gd->adv_pProjBuffers = NULL;
  gd->adv_N = (unsigned)r->h->nviews;
  gd->adv_ppProjMatrixBuffers = r->matrix_ptrs;
  if (r->prepare) {
    const double t0 = cli_now();
    const bool ok = r->prepare(gd);
    r->t_prepare = cli_now() - t0;
    if (!ok) return module_failed(r, RCT_PREPARE);
  }
  const double t0 = cli_now();
  const bool ok = r->load(gd);
  r->t_load = cli_now() - t0;
  if (!ok) return module_failed(r, RCT_LOAD);
  r->loaded = 1;
  if (!gd->f_L) {
    const size_t n = (size_t)(L * L * L);
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(float)) != 0) {
      char b[32];
      return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "out of memory: the %lld^3 volume needs %s",
                       (long long)L, cli_bytes(4.0 * (double)n, b, sizeof b));
    }
    memset(p, 0, n * sizeof(float));
    r->own_volume = p;
    gd->f_L = p;
  }
  r->module_buffers = gd->adv_pProjBuffers != NULL;
  if (r->module_buffers) {
    r->nbuffers = gd->adv_numProjBuffers < count_buffers(r, 0) ? gd->adv_numProjBuffers
                                                                : count_buffers(r, 0);
    if (r->nbuffers == 0)
      return cli_error(RCT_CMD, CLI_EXIT_RUNTIME,
                       "module '%s' provided projection buffers but set adv_numProjBuffers to 0",
                       r->module);
    r->buffers = gd->adv_pProjBuffers;
    return 0;
  }
  return alloc_buffers(r);
}

/* Wall-clock microseconds, as the published runner takes them. */
static long long now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int backproject_all(rct_run *r) {
  RabbitCtGlobalData *gd = &r->gd;
  const int64_t N = r->h->nviews;
  r->nsubsets = (N + r->nbuffers - 1) / r->nbuffers;
  r->t_subset = calloc((size_t)r->nsubsets, sizeof(double));
  r->t_first = calloc((size_t)r->nsubsets, sizeof(double));
  if (!r->t_subset || !r->t_first) return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "out of memory");
  long long total_us = 0;
  for (int64_t first = 0, s = 0; first < N; first += r->nbuffers, s++) {
    if (cli_progress(&r->session, "backprojecting", (double)first / (double)N))
      return cli_error(RCT_CMD, CLI_EXIT_INTERRUPTED, "interrupted; no output was written");
    const unsigned n = (unsigned)(N - first < r->nbuffers ? N - first : r->nbuffers);
    for (unsigned k = 0; k < n; k++) {
      ctr_status st = ctr_rabbitct_read_view(r->reader, first + k, NULL, r->buffers[k]);
      if (st != CTR_OK) {
        cli_progress_end(&r->session);
        return cli_fail_file(RCT_CMD, st, r->a->file);
      }
    }
    for (unsigned k = 0; k < n; k++) {
      gd->I_n = r->buffers[k];
      gd->A_n = r->matrix_ptrs[first + k];
      gd->adv_projNumber = (unsigned)(first + k);
      gd->adv_numAvailProjs = n;
      gd->adv_firstProjOfSubset = k == 0;
      const long long t0 = now_us();
      const bool ok = r->backproject(gd);
      const long long us = now_us() - t0;
      total_us += us;
      r->t_subset[s] += 1e-6 * (double)us;
      if (k == 0) r->t_first[s] = 1e-6 * (double)us;
      if (!ok) {
        cli_progress_end(&r->session);
        return cli_error(RCT_CMD, CLI_EXIT_RUNTIME,
                         "%s returned false for view %lld (module '%s', CTRECON_DEVICE=%s)",
                         RCT_BACKPROJECTION, (long long)(first + k), r->module, r->device);
      }
    }
  }
  r->t_bp = 1e-6 * (double)total_us;
  cli_progress(&r->session, "backprojecting", 1.0);
  const double t0 = cli_now();
  const bool ok = r->finish(gd);
  r->t_finish = cli_now() - t0;
  return ok ? 0 : module_failed(r, RCT_FINISH);
}

/* "16, 32" or "none". */
static const char *list_sizes(const ctr_rabbitct_header *h, char *buf, size_t len) {
  size_t used = 0;
  snprintf(buf, len, "none");
  for (int k = 0; k < h->nref && used < len; k++) {
    int m = snprintf(buf + used, len - used, "%s%lld", k ? ", " : "", (long long)h->ref_sizes[k]);
    if (m < 0) break;
    used += (size_t)m;
  }
  return buf;
}

static int score(rct_run *r) {
  const int64_t L = r->a->size;
  int have = 0;
  for (int k = 0; k < r->h->nref; k++) have |= r->h->ref_sizes[k] == L;
  if (!have) return 0; /* print_report says so */
  r->ref = malloc((size_t)(L * L * L) * sizeof(uint16_t));
  if (!r->ref)
    return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "out of memory for the %lld^3 reference",
                     (long long)L);
  ctr_status st = ctr_rabbitct_read_reference(r->reader, L, r->ref);
  if (st == CTR_OK)
    st = ctr_rabbitct_score_volume(r->gd.f_L, r->ref, L, r->h->hu0, r->h->hu1, &r->score);
  if (st != CTR_OK) return cli_fail_file(RCT_CMD, st, r->a->file);
  r->scored = 1;
  return 0;
}

/* ---- Report ---------------------------------------------------------------------- */

static double gups(const rct_run *r) {
  const double L = (double)r->a->size, t = r->t_bp > 1e-9 ? r->t_bp : 1e-9;
  return (double)r->h->nviews * L * L * L / t / 1e9;
}

/* Whether the module is ctrecon's (it reads CTRECON_*), and the device and
 * interpolation it then uses. */
static int module_is_ours(const rct_run *r) {
  const char *base = strrchr(r->module, '/');
  return !strcmp(base ? base + 1 : r->module, CTR_RABBITCT_MODULE_NAME);
}
static int runs_on_cpu(const rct_run *r) {
  return !strcmp(r->device, "cpu") || (!strcmp(r->device, "auto") && ctr_cuda_get_device_count() < 1);
}
static const char *effective_interp(const rct_run *r) {
  return module_is_ours(r) && runs_on_cpu(r) ? "exact" : r->interp;
}

static void print_report(const rct_run *r) {
  const cli_session *s = &r->session;
  const int64_t L = r->a->size, N = r->h->nviews;
  cli_info(s, "module          %s\n", r->module);
  if (module_is_ours(r) && runs_on_cpu(r))
    cli_info(s, "device          cpu (CTRECON_DEVICE%s%s), interp exact: the CPU's fp32 bilinear "
                "(CTRECON_INTERP=%s applies on the GPU only)\n",
             r->device_from_env ? " from the environment" : "",
             strcmp(r->device, "cpu") ? "=auto, no usable GPU" : "", r->interp);
  else
    cli_info(s, "device          %s (CTRECON_DEVICE%s), interp %s (CTRECON_INTERP%s)\n", r->device,
             r->device_from_env ? " from the environment" : "", r->interp,
             r->interp_from_env ? " from the environment" : "");
  cli_info(s, "problem         L = %lld (voxel %g mm), %lld views of %lld x %lld\n", (long long)L,
           RCT_EXTENT / (double)L, (long long)N, (long long)r->h->width, (long long)r->h->height);
  if (r->a->buffers_given)
    cli_info(s, "protocol        NOT the benchmark: --buffers %u (the published runner uses %lld)\n",
             r->nbuffers, (long long)(N / 4 > 0 ? N / 4 : 1));
  else
    cli_info(s, "protocol        the published runner's (RabbitCT 1.0.3)\n");
  cli_info(s, "buffers         %lld subsets of up to %u views, in %s\n", (long long)r->nsubsets,
           r->nbuffers,
           r->module_buffers ? "the module's buffers (provided in Load)"
                             : "the runner's buffers (plain memory, allocated after Load)");
  cli_info(s, "backprojection  %.4f s (sum of %lld calls), %.4f ms per view, %.4g GUPS\n", r->t_bp,
           (long long)N, 1e3 * r->t_bp / (double)N, gups(r));
  double first = 0, first_max = 0;
  for (int64_t k = 0; k < r->nsubsets; k++) {
    first += r->t_first[k];
    if (r->t_first[k] > first_max) first_max = r->t_first[k];
  }
  cli_info(s, "first calls     %.4f s (each subset's first call; the longest %.2f ms)\n", first,
           1e3 * first_max);
  if (r->prepare)
    cli_info(s, "prepare         %.4f s (not in the RabbitCT time)\n", r->t_prepare);
  else
    cli_info(s, "prepare         (the module has none)\n");
  cli_info(s, "load            %.4f s (not timed by RabbitCT)\n", r->t_load);
  cli_info(s, "finish          %.4f s (not timed by RabbitCT)\n", r->t_finish);
  if (!r->scored) {
    char sizes[128];
    cli_info(s, "scoring skipped: '%s' has no %lld^3 reference volume (sizes present: %s)\n",
             r->a->file, (long long)L, list_sizes(r->h, sizes, sizeof sizes));
    return;
  }
  cli_info(s, "RMSE            %.4f HU\n", r->score.rmse);
  cli_info(s, "MSE             %.6g HU^2\n", r->score.mse);
  cli_info(s, "max error       %.0f HU\n", r->score.max_error);
  if (isfinite(r->score.psnr))
    cli_info(s, "PSNR            %.2f dB\n", r->score.psnr);
  else
    cli_info(s, "PSNR            inf (identical to the reference)\n");
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* A number, or null when there is none (unscored, infinite PSNR). */
static void json_number(FILE *f, int have, double v, const char *fmt) {
  if (have && isfinite(v))
    fprintf(f, fmt, v);
  else
    fputs("null", f);
}

static int write_json(const rct_run *r, int argc, char **argv) {
  const char *path = r->a->json;
  char tmp[4200];
  FILE *f = NULL;
  int rc = cli_text_create(RCT_CMD, path, tmp, sizeof tmp, &f);
  if (rc) return rc;
  char date[32], gpu[300] = "";
  const time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (strcmp(r->device, "cpu") && ctr_cuda_get_device_count() > 0 &&
      ctr_cuda_get_device_info(0, &info) == CTR_OK)
    snprintf(gpu, sizeof gpu, "%s", info.name);
  const char *rev = getenv("CTR_GIT_REVISION");
  fputs("{\n  \"gpu\": ", f);
  if (*gpu)
    json_string(f, gpu);
  else
    fputs("null", f);
  fputs(",\n  \"date\": ", f);
  json_string(f, date);
  fputs(",\n  \"revision\": ", f);
  json_string(f, rev && *rev ? rev : "unknown");
  /* The command as typed: "ctrecon rabbitct FILE ...". */
  char cmd[8192];
  size_t used = (size_t)snprintf(cmd, sizeof cmd, "ctrecon");
  for (int i = 0; i < argc && used < sizeof cmd; i++)
    used += (size_t)snprintf(cmd + used, sizeof cmd - used, " %s", argv[i]);
  fputs(",\n  \"command\": ", f);
  json_string(f, cmd);
  fputs(",\n  \"module\": ", f);
  json_string(f, r->module);
  fputs(",\n  \"device\": ", f);
  json_string(f, r->device);
  fputs(",\n  \"interp\": ", f);
  json_string(f, effective_interp(r));
  fprintf(f, ",\n  \"protocol\": \"%s\",\n  \"buffers_owner\": \"%s\"",
          r->a->buffers_given ? "non-standard" : "published", r->module_buffers ? "module" : "runner");
  fprintf(
      f,
      ",\n  \"cases\": [\n    {\"name\": \"rabbitct/L%lld\", \"seconds\": %.6f, \"gups\": %.4f, ",
      (long long)r->a->size, r->t_bp, gups(r));
  fputs("\"rmse_hu\": ", f);
  json_number(f, r->scored, r->score.rmse, "%.6f");
  fputs(", \"mse\": ", f);
  json_number(f, r->scored, r->score.mse, "%.6g");
  fputs(", \"max_error_hu\": ", f);
  json_number(f, r->scored, r->score.max_error, "%.0f");
  fputs(", \"psnr\": ", f);
  json_number(f, r->scored, r->score.psnr, "%.4f");
  fprintf(f,
          ", \"views\": %lld, \"L\": %lld, \"detector\": [%lld, %lld], \"buffers\": %u, "
          "\"ms_per_view\": %.6f, \"prepare_seconds\": ",
          (long long)r->h->nviews, (long long)r->a->size, (long long)r->h->width,
          (long long)r->h->height, r->nbuffers, 1e3 * r->t_bp / (double)r->h->nviews);
  json_number(f, r->prepare != NULL, r->t_prepare, "%.6f");
  fprintf(f, ", \"load_seconds\": %.6f, \"finish_seconds\": %.6f, \"subsets\": %lld",
          r->t_load, r->t_finish, (long long)r->nsubsets);
  const double *lists[2] = {r->t_subset, r->t_first};
  const char *names[2] = {"subset_seconds", "first_call_seconds"};
  for (int l = 0; l < 2; l++) {
    fprintf(f, ", \"%s\": [", names[l]);
    for (int64_t k = 0; k < r->nsubsets; k++) fprintf(f, "%s%.6f", k ? ", " : "", lists[l][k]);
    fputc(']', f);
  }
  fputs("}\n  ]\n}\n", f);
  if ((rc = cli_text_commit(RCT_CMD, f, tmp, path, r->a->force))) return rc;
  cli_info(&r->session, "wrote %s\n", path);
  return 0;
}

static int run(rct_run *r, int argc, char **argv) {
  const rct_args *a = r->a;
  int rc = 0;
  const cli_file in[] = {{"FILE", a->file}, {"--module", a->module}, {0}};
  const cli_output out[] = {{"--json", a->json, CLI_OUT_FILE}, {0}};
  rc = cli_check_files(RCT_CMD, in, out, a->force);
  if (!rc) rc = open_file(r);
  if (!rc) rc = load_module(r);
  if (!rc) rc = prepare_and_load(r);
  if (!rc) rc = backproject_all(r);
  cli_progress_end(&r->session);
  if (!rc) rc = score(r);
  if (r->loaded) {
    r->loaded = 0;
    if (!r->unload(&r->gd)) cli_warn(RCT_CMD, "%s returned false", RCT_UNLOAD);
  }
  if (rc) return rc;
  print_report(r);
  return a->json ? write_json(r, argc, argv) : 0;
}

int cmd_rabbitct(int argc, char **argv) {
  rct_args a;
  memset(&a, 0, sizeof a);
  a.size = 128;
  a.tune = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--size", "L", "volume size L^3 over 256 mm, 1..1024 (default 128)", parse_size, &a.size,
       NULL},
      {"--module", "PATH",
       "backprojection module (default: <ctrecon's "
       "directory>/modules/rabbitct/" CTR_RABBITCT_MODULE_NAME ")",
       cli_parse_string, &a.module, NULL},
      {"--buffers", "N",
       "views per subset, instead of the published runner's N/4 (N at L = 1024); NOT the "
       "benchmark (default: the published count)",
       parse_buffers, &a.buffers, &a.buffers_given},
      {"--prefetch-all-projections", NULL,
       "all views in one subset when the runner allocates the buffers, as the published "
       "runner's option of that name",
       cli_set_flag, &a.prefetch, NULL},
      {"--projection-buffers", "WHO",
       "module or runner: who allocates the projection buffers (CTRECON_RABBITCT_BUFFERS) "
       "(default: the environment's, else module)",
       parse_owner, &a.owner, NULL},
      {"--device", "auto|cpu|cuda",
       "CTRECON_DEVICE for the module (default: the environment's, else auto)", parse_device,
       &a.device, NULL},
      {"--interp", "MODE",
       "CTRECON_INTERP for the module: precise, exact or texture (default: the environment's, "
       "else precise)", parse_interp,
       &a.interp, NULL},
      {"--json", "FILE", "also write the results as JSON, benchmark layout (default: none)",
       cli_parse_string, &a.json, NULL},
      CLI_FORCE_OPTION(&a.force),
      {"--threads", "N",
       "OpenMP threads of the module's CPU code; 0 = OpenMP's default (default 0)",
       cli_parse_threads, &a.threads, &a.threads_given},
      {"--tune", "KEY=VALUE",
       "a tuning switch of docs/tuning.md for the module, e.g. bp_chunks=32,32: sets "
       "CTRECON_<KEY> before the module is loaded (repeatable) (default: the environment's)",
       cli_parse_tune, &a.tune, NULL},
      {"--quiet", NULL, "no progress bar, no report; errors and warnings only", cli_set_flag,
       &a.quiet, NULL},
      {0},
  };
  char **args = malloc(((size_t)argc + 1) * sizeof(char *));
  if (!args) return cli_error(RCT_CMD, CLI_EXIT_RUNTIME, "out of memory");
  int nargs = 0;
  take_file(opts, argc, argv, args, &nargs, &a.file);
  int rc = cli_parse(&cli_cmd_rabbitct, opts, nargs, args);
  free(args);
  if (rc) return rc < 0 ? 0 : rc;
  if (!a.file)
    return cli_usage_error(RCT_CMD, "missing the RabbitCT file: ctrecon rabbitct FILE --size L");
  if (a.prefetch && a.buffers_given)
    return cli_usage_error(RCT_CMD, "--prefetch-all-projections and --buffers both set the "
                                    "views per subset: give one");
  rct_run r;
  memset(&r, 0, sizeof r);
  r.a = &a;
  r.session.cmd = RCT_CMD;
  r.session.common = (cli_common)CLI_COMMON_INIT;
  r.session.common.quiet = a.quiet;
  r.session.bar = !a.quiet && isatty(STDERR_FILENO);
  cli_install_sigint();
  rc = run(&r, argc, argv);
  cli_progress_end(&r.session);
  /* The module stays mapped: a library with CUDA or OpenMP state may
   * register exit-time handlers, and unmapping it first would crash at exit. */
  free(r.own_volume);
  free(r.ref);
  if (!r.module_buffers) free(r.buffers); /* the module's are the module's */
  free(r.buffer_block);
  free(r.t_subset);
  free(r.t_first);
  free(r.matrices);
  free(r.matrix_ptrs);
  ctr_rabbitct_close(r.reader);
  return rc;
}
