/* `ctrecon iterate`: iterative reconstruction (SIRT, CGLS, OS-SART,
 * FISTA-TV, PDHG-TV, PWLS) of cone-beam projections for a geometry file, or of
 * parallel-beam sinograms; the residual of every iteration, a checkpoint
 * after each for --resume, a convergence plot and table. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const cli_command cli_cmd_iterate = {
    "iterate",
    "iterative reconstruction: SIRT, CGLS, OS-SART, FISTA-TV, PDHG-TV, PWLS",
    "ctrecon iterate (--geometry FILE --projections FILE | --sinograms FILE [--geometry "
    "PARALLEL.json]) --out FILE "
    "[options]",
    "Reconstructs a volume by iterating on the projections with a matched projector\n"
    "pair: ray-driven Joseph forward projection A and its exact transpose A^T\n"
    "(docs/iterative.md). Cone beam takes a geometry file and projections (line\n"
    "integrals, nu x nv x views); parallel beam takes sinograms (nbins x nangles\n"
    "each, one per slice) and the angles, axis and slice grid of `ctrecon fbp`, or a\n"
    "parallel-beam geometry file (docs/parallel-beam.md, \"Geometry files\");\n"
    "with --tilt (laminography) one per detector row, and --slices sets the volume's.\n"
    "Algorithms: sirt (simultaneous, weighted by row and column sums), cgls\n"
    "(conjugate gradients on the least-squares problem: fastest on consistent data,\n"
    "unconstrained), os-sart (SIRT one subset of views at a time: a few iterations\n"
    "go far), fista-tv (accelerated, with total-variation regularisation: few views,\n"
    "noise), pdhg-tv (the same problem by Chambolle and Pock's primal-dual method:\n"
    "exact TV steps, no inner iterations), pwls (penalised weighted least squares by\n"
    "preconditioned conjugate gradients: statistical weights from the counts, --i0,\n"
    "or a file, --weights, and an optional quadratic or Huber roughness penalty:\n"
    "noisy, low-count data). Each iteration prints its residual ||b - A x|| (and, with --truth, the\n"
    "error against a reference volume). After each iteration the state goes to a\n"
    "checkpoint (OUT.checkpoint): an interrupted run continues with --resume and\n"
    "gives the volume an uninterrupted run gives. On a GPU the vectors stay in GPU\n"
    "memory when they fit; beyond it the volume is projected slab by slab.",
    "  ctrecon iterate --geometry geom.json --projections proj.nrrd --out rec.nrrd \\\n"
    "      --algorithm cgls --iterations 20 --plot conv.png\n"
    "  ctrecon iterate --geometry geom.json --projections proj.nrrd --out rec.nrrd \\\n"
    "      --algorithm fista-tv --tv-weight 0.0005 --nonneg --iterations 50 --truth truth.nrrd\n"
    "  ctrecon iterate --sinograms sino.tif --angle-range 180 --out slices.nrrd \\\n"
    "      --algorithm os-sart --subsets 12 --iterations 5\n"
    "  ctrecon iterate --sinograms lamino.nrrd --angle-range 360 --tilt 20 --slices 24 \\\n"
    "      --out layers.nrrd --algorithm cgls --iterations 15\n"
    "  ctrecon iterate --geometry geom.json --projections proj.nrrd --out rec.nrrd \\\n"
    "      --algorithm pwls --i0 5000 --penalty huber --beta 2000 --huber-delta 0.002\n",
};

typedef struct it_args {
  const char *geometry, *projections, *sinograms, *out, *truth, *plot, *residuals, *checkpoint;
  const char *preview, *init, *angles, *shifts, *algorithm, *pair, *weights, *penalty;
  int64_t workers; /* --workers: 0 = one per GPU */
  ctr_file_format out_format;
  ctr_dtype raw_dtype;
  double box[2], angle_start, angle_range, axis, voxel, pixel, input_scale, tilt;
  int64_t tilt_slices;
  int tilt_given;
  int64_t size[2], iterations, subsets, tv_iterations, checkpoint_every, slab;
  double tolerance, relaxation, tv_weight, i0, beta, huber_delta;
  int box_given, axis_given, size_given, nonneg, resume, keep_checkpoint, strict, subsets_given,
      tv_given, every_given, relax_given, parallel_given, raw_given, angle_units, force,
      pwls_given, beta_given, delta_given;
  uint64_t gpu_mem, host_mem;
  cli_common common;
} it_args;

/* A run's history, one entry per iteration (resumed ones too). */
typedef struct history {
  int64_t n, cap;
  double *res, *rel, *err, *sec;
} history;

typedef struct it_run {
  const it_args *a;
  cli_session session;
  history h;        /* resumed iterations (from the checkpoint's history) too */
  int64_t base;     /* the iteration before the history's first (0 unless a resumed run's
                       checkpoint has no history: one of an older ctrecon) */
  double sec0;      /* seconds of the resumed part */
  int rc;
  /* the checkpoint (when checkpoints) and its run lock; --init FILE */
  char ckpath[4200], lockpath[4300];
  int checkpoints, init_file;
  /* the data, the geometry (one of g, pg) and the projector */
  ctr_geometry *g;
  ctr_parallel_geometry *pg;
  ctr_context *ctx;
  ctr_projector *p;
  float *proj, *vol, *truth, *weights;
  int64_t nslices, vd[3], pdims[3];
  ctr_stack_info out_info;
  ctr_iterate_options o;
  ctr_iterate_report rep;
  double seconds;
} it_run;

/* ---- Option parsers ------------------------------------------------------- */


/* ---- History ---------------------------------------------------------------- */

static int history_add(const char *cmd, history *h, double res, double rel, double err, double sec) {
  if (h->n == h->cap) {
    const int64_t cap = h->cap ? 2 * h->cap : 64;
    double *b = realloc(h->res, sizeof(double) * 4 * (size_t)cap);
    if (!b) return cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory for the iteration history");
    /* one block of four arrays: move the old ones to their new places */
    memmove(b + 3 * cap, b + 3 * h->cap, sizeof(double) * (size_t)h->n);
    memmove(b + 2 * cap, b + 2 * h->cap, sizeof(double) * (size_t)h->n);
    memmove(b + cap, b + h->cap, sizeof(double) * (size_t)h->n);
    h->res = b, h->rel = b + cap, h->err = b + 2 * cap, h->sec = b + 3 * cap;
    h->cap = cap;
  }
  h->res[h->n] = res, h->rel[h->n] = rel, h->err[h->n] = err, h->sec[h->n] = sec;
  h->n++;
  return 0;
}

#define CSV_HEADER "iteration,residual,relative_residual,error,seconds\n"

/* The table (--residuals): written under a temporary name, then renamed. */
static int write_table(const char *path, const history *h, int64_t base, int force) {
  char tmp[4300];
  FILE *f = NULL;
  const int rc = cli_text_create("iterate", path, tmp, sizeof tmp, &f);
  if (rc) return rc;
  fputs(CSV_HEADER, f);
  for (int64_t i = 0; i < h->n; i++)
    fprintf(f, "%lld,%.9g,%.9g,%.9g,%.6f\n", (long long)(base + i + 1), h->res[i], h->rel[i],
            h->err[i], h->sec[i]);
  return cli_text_commit("iterate", f, tmp, path, force);
}

/* ---- Per iteration -------------------------------------------------------------- */

static int on_iteration(void *user, const ctr_iterate_info *i) {
  it_run *r = user;
  if (i->resumed) { /* the checkpoint's history, before the first new iteration */
    r->sec0 = i->seconds;
    return (r->rc = history_add("iterate", &r->h, i->residual, i->relative_residual, i->error,
                                i->seconds));
  }
  if (r->base + r->h.n != i->iteration - 1) { /* resumed without the history: start it here */
    r->h.n = 0;
    r->base = i->iteration - 1;
    r->sec0 = 0;
  }
  const double sec = r->sec0 + i->seconds;
  if ((r->rc = history_add("iterate", &r->h, i->residual, i->relative_residual, i->error, sec)))
    return 1;
  cli_progress_end(&r->session);
  if (i->error >= 0)
    cli_info(&r->session, "iteration %4lld/%lld: residual %.6g (%.4g of ||b||), error %.4g, %.2f s\n",
             (long long)i->iteration, (long long)i->iterations, i->residual, i->relative_residual,
             i->error, i->seconds);
  else
    cli_info(&r->session, "iteration %4lld/%lld: residual %.6g (%.4g of ||b||), %.2f s\n",
             (long long)i->iteration, (long long)i->iterations, i->residual, i->relative_residual,
             i->seconds);
  return 0;
}

/* A resume refused for another slab size: the CLI's words for it. */
static void slab_hint(int resume) {
  const char *at = resume ? strstr(ctr_error_detail(), "its slab_slices is ") : NULL;
  long long n = 0;
  if (at && sscanf(at, "its slab_slices is %lld", &n) == 1)
    fprintf(stderr, "ctrecon iterate: the checkpoint was made with --max-slab-slices %lld (another "
            "slab size changes the result's last bits): repeat the command with --max-slab-slices "
            "%lld\n", n, n);
}

/* ---- Data ------------------------------------------------------------------------- */

/* A stack of images of exactly w x h x n float32 values (a raw file needs
 * the sizes: they come from the geometry). */
static int load_stack(const char *path, const char *option, int64_t w, int64_t h, int64_t n,
                      ctr_dtype raw_dtype, const char *what, float **out) {
  ctr_file_format fmt;
  int rc = cli_resolve_format("iterate", option, NULL, path, CTR_FORMAT_AUTO, &fmt);
  if (rc) return rc;
  const int raw = cli_format_needs_hint(fmt); /* the sizes come from the geometry */
  if (raw && (rc = cli_check_raw_size("iterate", option, path, w, h, n, raw_dtype,
                                                        0, what)))
    return rc;
  ctr_stack_info hint = CTR_STACK_INFO_INIT, info = CTR_STACK_INFO_INIT;
  hint.width = w, hint.height = h, hint.count = n, hint.dtype = raw_dtype;
  void *data = NULL;
  ctr_status st = ctr_stack_load(path, fmt, raw ? &hint : NULL,
                                 CTR_DTYPE_FLOAT32, &info, &data);
  if (st != CTR_OK) return cli_fail_file("iterate", st, path);
  if (info.width != w || info.height != h || info.count != n) {
    free(data);
    return cli_error("iterate", CLI_EXIT_INPUT, "'%s' (%s) holds %lld images of %lld x %lld, "
                     "expected %lld of %lld x %lld (%s)", path, option, (long long)info.count,
                     (long long)info.width, (long long)info.height, (long long)n, (long long)w,
                     (long long)h, what);
  }
  *out = data;
  return 0;
}

static int parallel_geometry(const it_args *a, int64_t nbins, int64_t nangles, int64_t nrows,
                             ctr_parallel_geometry **g) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.tilt_deg = a->tilt; /* laminography: rows of their own */
  if (a->tilt != 0.0) p.nrows = nrows;
  double *angles = NULL, *shifts = NULL;
  p.nbins = nbins;
  p.nangles = nangles;
  p.angle_start_deg = a->angle_start;
  p.angle_range_deg = a->angle_range;
  int rc = 0;
  rc = cli_parallel_angles("iterate", a->angles, a->angle_units, nangles, &angles,
                           &p.angle_start_deg, &p.angle_range_deg);
  if (!rc && a->shifts) rc = cli_read_numbers("iterate", a->shifts, "axis shift", nangles, &shifts);
  if (!rc) {
    p.angles_deg = angles;
    p.axis_shift = shifts;
    if (a->axis_given) p.axis = a->axis, cli_warn_axis("iterate", a->axis, nbins);
    if (a->size_given) p.nx = a->size[0], p.ny = a->size[1];
    p.voxel = a->voxel;
    p.pixel_size = a->pixel;
    ctr_status st = ctr_parallel_create(&p, g);
    if (st != CTR_OK) rc = cli_fail("iterate", st);
  }
  free(angles);
  free(shifts);
  return rc;
}

/* --sinograms with --geometry FILE: a parallel-beam geometry file for them. */
static int parallel_file(const it_args *a, int64_t nbins, int64_t nangles, int64_t nrows,
                         ctr_parallel_geometry **g) {
  const ctr_status st = ctr_parallel_load_json(a->geometry, g);
  if (st != CTR_OK) return cli_fail_file("iterate", st, a->geometry);
  const ctr_parallel_params *p = ctr_parallel_get_params(*g);
  if (p->nbins == nbins && p->nangles == nangles && (p->tilt_deg == 0.0 || p->nrows == nrows))
    return 0;
  return cli_error("iterate", CLI_EXIT_INPUT, "--geometry %s describes %lld bins x %lld angles%s, "
                   "and --sinograms %s holds %lld bins x %lld angles x %lld rows", a->geometry,
                   (long long)p->nbins, (long long)p->nangles,
                   p->tilt_deg != 0.0 ? " (tilted: one sinogram a detector row)" : "",
                   a->sinograms, (long long)nbins, (long long)nangles, (long long)nrows);
}

/* ---- The command ---------------------------------------------------------------------- */

/* After a failure past the start: what the checkpoint holds now (the
 * report says), and how to go on. */
static void checkpoint_advice(const it_args *a, const char *ckpath, const ctr_iterate_report *rep) {
  if (rep->checkpointed > 0)
    fprintf(stderr, "ctrecon iterate: '%s' was not written; the state after iteration %lld is in "
            "%s: repeat the command with --resume to continue%s\n", a->out,
            (long long)rep->checkpointed, ckpath,
            rep->checkpointed < rep->iterations ? " (the iterations after it are repeated)" : "");
  else
    fprintf(stderr, "ctrecon iterate: '%s' was not written, and no checkpoint was: %lld "
            "iterations finished and none was saved; repeat the command to start over\n", a->out,
            (long long)rep->iterations);
}

/* PWLS's options: with --algorithm pwls only, the weights from one source,
 * a penalty with its beta (and Huber's delta). */
static int check_pwls(const it_args *a, ctr_iterate_options *o) {
  const char *cmd = "iterate";
  if (o->algorithm != CTR_ITERATE_PWLS) {
    if (a->pwls_given || a->beta_given || a->delta_given)
      return cli_usage_error(cmd, "--weights, --i0, --penalty, --beta and --huber-delta apply to "
                             "--algorithm pwls");
    return 0;
  }
  if (a->weights && a->i0 > 0)
    return cli_usage_error(cmd, "--weights and --i0: the weights come from one of them (a file, "
                           "or the counts i0 exp(-b) of log data)");
  if (ctr_iterate_penalty_parse(a->penalty, &o->penalty) != CTR_OK)
    return cli_usage_error(cmd, "--penalty '%s': expected none, quadratic or huber", a->penalty);
  if (o->penalty == CTR_PENALTY_NONE && a->beta_given)
    return cli_usage_error(cmd, "--beta applies with --penalty quadratic or huber");
  if (o->penalty != CTR_PENALTY_NONE && !a->beta_given)
    return cli_usage_error(cmd, "--penalty %s needs --beta B > 0, the penalty's weight",
                           a->penalty);
  if (o->penalty != CTR_PENALTY_HUBER && a->delta_given)
    return cli_usage_error(cmd, "--huber-delta applies with --penalty huber");
  if (o->penalty == CTR_PENALTY_HUBER && !a->delta_given)
    return cli_usage_error(cmd, "--penalty huber needs --huber-delta D > 0 (in the volume's "
                           "units: the step between neighbours beyond which the penalty grows "
                           "linearly)");
  return 0;
}

static int check_args(it_args *a, const cli_opt *opts, ctr_iterate_options *o) {
  const char *cmd = "iterate";
  int rc = cli_require(cmd, opts, "--out", a->out);
  if (rc) return rc;
  if (!a->sinograms && !a->geometry)
    return cli_usage_error(cmd, "give --geometry FILE --projections FILE (cone beam) or "
                           "--sinograms FILE [--geometry PARALLEL.json] (parallel beam)");
  if (a->geometry && !a->projections && !a->sinograms)
    return cli_usage_error(cmd, "--geometry needs --projections FILE (cone beam) or --sinograms "
                           "FILE (a parallel-beam geometry file)");
  if (a->sinograms && a->projections)
    return cli_usage_error(cmd, "--projections goes with --geometry (cone beam); parallel-beam "
                           "data come as --sinograms");
  if (a->sinograms && a->geometry &&
      (a->parallel_given || a->axis_given || a->size_given || a->angle_units || a->tilt_given))
    return cli_usage_error(cmd, "--geometry %s gives the parallel-beam scan (angles, axis, shifts, "
                           "slice grid, pixel size, tilt): drop --angles, --angle-start, "
                           "--angle-range, --angle-units, --axis, --axis-shift, --size, --voxel, "
                           "--pixel-size and --tilt, or the file", a->geometry);
  if (a->projections && (a->parallel_given || a->axis_given || a->size_given || a->angle_units))
    return cli_usage_error(cmd, "--angles, --angle-start, --angle-range, --angle-units, --axis, "
                           "--axis-shift, "
                           "--size, --voxel and --pixel-size describe parallel beam "
                           "(--sinograms): the geometry file describes cone beam");
  if (a->sinograms && a->raw_given)
    return cli_usage_error(cmd, "--raw-dtype applies to raw cone-beam projections");
  if (a->projections && (a->tilt_given || a->tilt_slices))
    return cli_usage_error(cmd, "--tilt and --slices describe a tilted parallel-beam axis "
                           "(--sinograms): the geometry file describes cone beam");
  /* --slices with a geometry file: checked against its tilt when it is read */
  const int64_t slices = a->sinograms && a->geometry ? 0 : a->tilt_slices;
  if ((rc = cli_tilt(cmd, a->angle_units, &a->tilt, slices))) return rc;
  if (ctr_iterate_algorithm_parse(a->algorithm, &o->algorithm) != CTR_OK)
    return cli_usage_error(cmd, "--algorithm '%s': expected sirt, cgls, os-sart, fista-tv, "
                           "pdhg-tv or pwls", a->algorithm);
  int rc2 = check_pwls(a, o);
  if (rc2) return rc2;
  if (a->subsets_given && o->algorithm != CTR_ITERATE_OS_SART)
    return cli_usage_error(cmd, "--subsets applies to --algorithm os-sart");
  if (a->tv_given && o->algorithm != CTR_ITERATE_FISTA_TV && o->algorithm != CTR_ITERATE_PDHG_TV)
    return cli_usage_error(cmd, "--tv-weight applies to --algorithm fista-tv and pdhg-tv, "
                           "--tv-iterations to fista-tv");
  if (a->tv_iterations && o->algorithm == CTR_ITERATE_PDHG_TV)
    return cli_usage_error(cmd, "--tv-iterations %lld: pdhg-tv takes exact TV steps (no inner "
                           "iterations): drop --tv-iterations", (long long)a->tv_iterations);
  if (a->tv_iterations && !(a->tv_weight > 0))
    return cli_usage_error(cmd, "--tv-iterations %lld: the TV step runs only with --tv-weight W > 0 "
                           "(W = 0 is FISTA without TV): add --tv-weight or drop --tv-iterations",
                           (long long)a->tv_iterations);
  if (a->relax_given && o->algorithm != CTR_ITERATE_SIRT && o->algorithm != CTR_ITERATE_OS_SART)
    return cli_usage_error(cmd, "--relaxation applies to sirt and os-sart");
  if (a->relax_given && !(a->relaxation > 0 && a->relaxation < 2))
    return cli_usage_error(cmd, "--relaxation %g: expected 0 < L < 2", a->relaxation);
  if ((o->algorithm == CTR_ITERATE_CGLS || o->algorithm == CTR_ITERATE_PWLS) &&
      (a->nonneg || a->box_given))
    return cli_usage_error(cmd, "%s: %s is unconstrained (a projection would break its "
                           "conjugate directions); use sirt, os-sart, fista-tv or pdhg-tv for "
                           "constraints",
                           a->nonneg ? "--nonneg" : "--box", a->algorithm);
  if (a->resume && !a->checkpoint_every && a->every_given)
    return cli_usage_error(cmd, "--resume needs the checkpoint: drop --checkpoint-every 0");
  if (!a->checkpoint_every && (a->checkpoint || a->keep_checkpoint))
    return cli_usage_error(cmd, "%s: --checkpoint-every 0 writes no checkpoint: drop one of them",
                           a->checkpoint ? "--checkpoint" : "--keep-checkpoint");
  if (ctr_projector_pair_parse(a->pair, &(ctr_projector_pair){0}) != CTR_OK)
    return cli_usage_error(cmd, "--pair '%s': expected matched or fast", a->pair);
  return cli_resolve_format(cmd, "--out", "--out-format", a->out, a->out_format, &a->out_format);
}

/* The checkpoint's path and lock, the files' check, and a checkpoint that
 * is in use. */
static int check_checkpoint(const it_args *a, it_run *r) {
  const char *cmd = "iterate";
  int rc;
  r->checkpoints = a->checkpoint_every > 0;
  if (r->checkpoints) {
    if (a->checkpoint) snprintf(r->ckpath, sizeof r->ckpath, "%s", a->checkpoint);
    else if ((rc = cli_beside_output(cmd, a->out, "checkpoint", r->ckpath, sizeof r->ckpath)))
      return rc;
    snprintf(r->lockpath, sizeof r->lockpath, "%s.lock", r->ckpath); /* the library's run lock */
  }
  r->init_file = a->init && strcmp(a->init, "zero") && strcmp(a->init, "fdk");
  const cli_file in[] = {{"--geometry", a->geometry},  {"--projections", a->projections},
                         {"--sinograms", a->sinograms}, {"--truth", a->truth},
                         {"--angles", a->angles},      {"--axis-shift", a->shifts},
                         {"--init", r->init_file ? a->init : NULL}, {"--weights", a->weights},
                         {0}};
  const cli_output outf[] = {{"--out", a->out, CLI_OUT_DATA},
                           {"--plot", a->plot, CLI_OUT_FILE},
                           {"--residuals", a->residuals, CLI_OUT_FILE},
                           {"--preview", a->preview, CLI_OUT_PREVIEW},
                           {a->checkpoint ? "--checkpoint" : "the checkpoint",
                            r->checkpoints ? r->ckpath : NULL, CLI_OUT_UNCHECKED},
                           {"the checkpoint's lock", r->checkpoints ? r->lockpath : NULL,
                            CLI_OUT_UNCHECKED},
                           {0}};
  if ((rc = cli_check_files(cmd, in, outf, a->force))) return rc;
  /* a run still going, named before the data are read (the library's lock
     would refuse it too, once they are) */
  const long holder = r->checkpoints ? cli_lock_holder(r->lockpath) : 0;
  if (holder)
    return cli_error(cmd, CLI_EXIT_INPUT, "'%s' is in use by process %ld (another run with this "
                     "checkpoint, still going): wait for it to end, or give another --out or "
                     "--checkpoint", r->ckpath, holder);
  /* a checkpoint there without --resume, or none with it: the library's
     resume rules refuse them, in the words of fdk's and fbp's journals */
  return 0;
}

/* Cone beam: the geometry file and its projections. */
static int load_cone(const it_args *a, it_run *r) {
  int rc = cli_load_geometry("iterate", a->geometry, &r->g);
  if (rc) return rc;
  cli_warn_coverage("iterate", r->g);
  int64_t nu, nv;
  ctr_geometry_get_detector(r->g, &nu, &nv, NULL, NULL);
  if ((rc = load_stack(a->projections, "--projections", nu, nv, ctr_geometry_get_view_count(r->g),
                       a->raw_dtype, "views of the geometry", &r->proj)))
    return rc;
  const ctr_volume_geometry vg = ctr_geometry_get_volume(r->g);
  r->out_info = cli_volume_info(&vg, 0, vg.nz, CTR_DTYPE_FLOAT32);
  return 0;
}

/* Parallel beam: the sinograms, and the geometry of the options. */
static int load_parallel(const it_args *a, it_run *r) {
  const char *cmd = "iterate";
  ctr_file_format fmt;
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  void *data = NULL;
  int rc = cli_resolve_format(cmd, "--sinograms", NULL, a->sinograms, CTR_FORMAT_AUTO, &fmt);
  if (rc) return rc;
  if (cli_format_needs_hint(fmt)) {
    char sized[256];
    return cli_usage_error(cmd, "--sinograms: a %s file has no sizes; give a %s stack",
                           ctr_format_name(fmt),
                           cli_format_list(sized, sizeof sized, CLI_FORMAT_TITLES, 0, ", ", " or "));
  }
  ctr_status st = ctr_stack_load(a->sinograms, fmt, NULL, CTR_DTYPE_FLOAT32, &info, &data);
  if (st != CTR_OK) return cli_fail_file(cmd, st, a->sinograms);
  r->proj = data;
  r->nslices = info.count;
  if ((rc = a->geometry ? parallel_file(a, info.width, info.height, info.count, &r->pg)
                        : parallel_geometry(a, info.width, info.height, info.count, &r->pg)))
    return rc;
  const ctr_parallel_params *pp = ctr_parallel_get_params(r->pg);
  if (pp->tilt_deg != 0.0 && a->tilt_slices > 0) r->nslices = a->tilt_slices;
  if (pp->tilt_deg == 0.0 && a->tilt_slices > 0)
    return cli_usage_error(cmd, "--slices applies to a tilted axis, and --geometry %s has none",
                           a->geometry);
  r->out_info.width = pp->nx;
  r->out_info.height = pp->ny;
  r->out_info.count = r->nslices;
  r->out_info.dtype = CTR_DTYPE_FLOAT32;
  r->out_info.spacing[0] = r->out_info.spacing[1] = pp->voxel * pp->pixel_size;
  r->out_info.spacing[2] = pp->pixel_size;
  return 0;
}

/* The context and the projector of the data; the projections scaled. */
static int make_projector(const it_args *a, it_run *r) {
  int rc = cli_context_create(&r->session, "iterate", &a->common, &r->ctx);
  if (rc) return rc;
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  ctr_projector_pair_parse(a->pair, &po.pair);
  po.gpu_budget = a->gpu_mem;
  po.max_slab_slices = a->slab;
  po.workers = (int)a->workers;
  ctr_status st = r->g ? ctr_projector_create_cone(r->ctx, r->g, &po, &r->p)
                       : ctr_projector_create_parallel(r->ctx, r->pg, r->nslices, &po, &r->p);
  if (st != CTR_OK) return cli_fail("iterate", st);
  ctr_projector_get_volume_dims(r->p, r->vd);
  ctr_projector_get_projection_dims(r->p, r->pdims);
  if (a->input_scale != 1.0) {
    const float inv = (float)(1.0 / a->input_scale);
    for (int64_t i = 0, n = r->pdims[0] * r->pdims[1] * r->pdims[2]; i < n; i++) r->proj[i] *= inv;
  }
  return 0;
}

/* The volume (zero, or --init FILE), --truth, --weights (the projections'
 * shape and formats), and o.init. */
static int make_volume(const it_args *a, it_run *r) {
  const int64_t *vd = r->vd, nvol = vd[0] * vd[1] * vd[2], *pd = r->pdims;
  int rc = 0;
  if (a->weights && (rc = load_stack(a->weights, "--weights", pd[0], pd[1], pd[2],
                                     a->raw_dtype, r->g ? "the projections' views" :
                                     "the sinograms' shape", &r->weights)))
    return rc;
  r->vol = cli_alloc_floats("iterate", nvol, "the volume", &rc);
  if (!r->vol) return rc;
  memset(r->vol, 0, sizeof(float) * (size_t)nvol);
  if (a->truth && (rc = load_stack(a->truth, "--truth", vd[0], vd[1], vd[2], CTR_DTYPE_FLOAT32,
                                   "the volume", &r->truth)))
    return rc;
  r->o.init = CTR_ITERATE_INIT_ZERO;
  if (a->init && !strcmp(a->init, "fdk")) r->o.init = CTR_ITERATE_INIT_FDK;
  if (r->init_file) {
    float *x0 = NULL;
    if ((rc = load_stack(a->init, "--init", vd[0], vd[1], vd[2], CTR_DTYPE_FLOAT32, "the volume",
                         &x0)))
      return rc;
    memcpy(r->vol, x0, sizeof(float) * (size_t)nvol);
    free(x0);
    r->o.init = CTR_ITERATE_INIT_GIVEN;
  }
  return 0;
}

/* The options of the run (the algorithm is check_args's). */
static void fill_options(const it_args *a, it_run *r) {
  ctr_iterate_options *o = &r->o;
  o->iterations = a->iterations;
  o->tolerance = a->tolerance;
  o->subsets = a->subsets;
  if (a->relax_given) o->relaxation = a->relaxation;
  o->tv_weight = a->tv_weight;
  o->tv_iterations = a->tv_iterations;
  o->weights = r->weights;
  o->i0 = a->i0;
  o->beta = a->beta;
  o->huber_delta = a->huber_delta;
  o->nonneg = a->nonneg;
  if (a->box_given) o->box = 1, o->lower = a->box[0], o->upper = a->box[1];
  o->truth = r->truth;
  o->on_iteration = on_iteration;
  o->user = r;
  o->gpu_budget = a->gpu_mem;
  o->host_budget = a->host_mem;
  o->max_slab_slices = a->slab;
  o->strict = a->strict;
  if (r->checkpoints) {
    o->checkpoint = r->ckpath;
    o->checkpoint_every = a->checkpoint_every;
    o->resume = a->resume;
  }
}

/* The plan, up front: refused ones stop here, the others are printed. */
static int print_plan(const it_args *a, it_run *r) {
  uint64_t gb = a->gpu_mem, hb = a->host_mem, dg = 0, dh = 0;
  const ctr_device_kind dev = ctr_context_get_device(r->ctx);
  ctr_context_get_memory_budgets(r->ctx, dev == CTR_DEVICE_CUDA ? &dg : NULL, &dh);
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  ctr_status st = ctr_iterate_plan_compute(r->p, &r->o, dev, gb ? gb : dg, hb ? hb : dh, &plan);
  if (st != CTR_OK) return cli_fail("iterate", st);
  char text[512];
  const int64_t *pd = r->pdims, *vd = r->vd;
  /* saving the volume: the writer's own buffers beside it (an OME-Zarr
   * writer's rows of chunks), refused now rather than after the iterations */
  const uint64_t own = ctr_file_format_writer_bytes(a->out_format, r->out_info.width,
                                                    r->out_info.height, r->out_info.count,
                                                    CTR_DTYPE_FLOAT32);
  const uint64_t vol = (uint64_t)(r->out_info.width * r->out_info.height * r->out_info.count) * 4u;
  const uint64_t budget = hb ? hb : dh;
  if (own && budget && vol + own > budget) {
    char b1[32], b2[32], b3[32];
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    const char *title = ctr_file_format_get_info(a->out_format, &fi) == CTR_OK ? fi.title : "output";
    fprintf(stderr, "ctrecon iterate: error: '%s': saving the volume (%s) needs %s more for the "
            "%s writer's own buffers (rows of chunks), beyond the host memory budget of %s "
            "(--host-budget): raise --host-budget, or write another format (raw, NRRD or TIFF hold "
            "none)\n", a->out, cli_bytes((double)vol, b1, sizeof b1), cli_bytes((double)own, b2, sizeof b2),
            title, cli_bytes((double)budget, b3, sizeof b3));
    return 1;
  }
  ctr_iterate_plan_describe(&plan, text, sizeof text);
  cli_info(&r->session, "iterate: %s, %lld iterations, %s pair; %lld x %lld x %lld projections "
           "(input scale %g) -> %lld x %lld x %lld voxels\nplan: %s\n",
           ctr_iterate_algorithm_name(r->o.algorithm), (long long)r->o.iterations, a->pair,
           (long long)pd[0], (long long)pd[1], (long long)pd[2], a->input_scale, (long long)vd[0],
           (long long)vd[1], (long long)vd[2], text);
  return 0;
}

/* The iterations; a failure names the file it is about and, after some
 * progress, what the checkpoint holds. */
static int iterate(const it_args *a, it_run *r) {
  const char *cmd = "iterate";
  r->rep = (ctr_iterate_report)CTR_ITERATE_REPORT_INIT;
  const double t0 = cli_now();
  ctr_status st = ctr_iterate(r->p, &r->o, r->proj, r->vol, &r->rep);
  r->seconds = cli_now() - t0;
  cli_progress_end(&r->session);
  if (r->rc) return r->rc;
  if (st == CTR_OK) return 0;
  if (r->checkpoints && (r->rep.iterations > 0 || r->rep.checkpointed > 0) &&
      st != CTR_E_INVALID_ARGUMENT && st != CTR_E_FORMAT) {
    fprintf(stderr, "ctrecon iterate: error: %s\n",
            cli_status_text(st));
    checkpoint_advice(a, r->ckpath, &r->rep);
    return cli_exit_code(st);
  }
  /* the file the failure is about: the checkpoint, the start volume, or the data */
  const char *about = a->resume || (r->checkpoints && strstr(ctr_error_detail(), r->ckpath))
                          ? r->ckpath
                      : a->weights && !strcmp(ctr_error_get_field(), "ctr_iterate_options.weights")
                          ? a->weights
                      : r->init_file && strstr(ctr_error_detail(), "the initial volume") ? a->init
                      : a->sinograms ? a->sinograms : a->projections;
  /* a fault of the arithmetic (a non-finite residual) is not the file's */
  const int rc = st == CTR_E_INTERNAL ? cli_fail(cmd, st) : cli_fail_file(cmd, st, about);
  slab_hint(a->resume);
  return rc;
}

/* The convergence plot (--plot). */
static int write_plot(const it_args *a, const it_run *r) {
  char title[200];
  const char *name = ctr_iterate_algorithm_name(r->o.algorithm);
  if (r->base)
    snprintf(title, sizeof title, "%s, iterations %lld to %lld (numbered from 1)", name,
             (long long)(r->base + 1), (long long)(r->base + r->h.n));
  else
    snprintf(title, sizeof title, "%s, %lld iterations", name, (long long)r->h.n);
  ctr_status st = ctr_iterate_plot(a->plot, r->h.rel, r->truth ? r->h.err : NULL, r->h.n, title,
                                   a->force);
  return st != CTR_OK ? cli_fail_file("iterate", st, a->plot) : 0;
}

/* The volume, its previews, the plot and the table; the checkpoint of a
 * complete run goes unless kept. */
static int write_outputs(const it_args *a, it_run *r) {
  const char *cmd = "iterate";
  if (r->rep.resumed)
    cli_info(&r->session, "resumed after iteration %lld of '%s'\n", (long long)r->rep.resumed,
             r->ckpath);
  ctr_status st = ctr_stack_save(a->out, a->out_format, &r->out_info, CTR_DTYPE_FLOAT32, r->vol,
                                 a->force);
  if (st != CTR_OK) return cli_fail_file(cmd, st, a->out);
  int rc;
  if (a->preview && (rc = cli_preview_volume(cmd, a->preview, r->vol, r->vd[0], r->vd[1],
                                             r->vd[2], r->out_info.spacing, 0, 0, a->force)))
    return rc;
  if (a->plot && r->h.n > 0 && (rc = write_plot(a, r))) return rc;
  if (a->residuals && (rc = write_table(a->residuals, &r->h, r->base, a->force))) return rc;
  if (r->checkpoints && !a->keep_checkpoint) remove(r->ckpath);
  return 0;
}

static void print_summary(const it_args *a, it_run *r) {
  const ctr_iterate_report *rep = &r->rep;
  const int64_t done = rep->iterations - rep->resumed;
  const char *why = rep->stop == CTR_ITERATE_STOP_TOLERANCE   ? " (tolerance reached)"
                    : rep->stop == CTR_ITERATE_STOP_CONVERGED ? " (converged: the gradient vanished)"
                                                              : "";
  cli_info(&r->session, "%s: %lld iterations%s in %.2f s (%.3f s each; in all: setup %.3f s, "
           "forward %.3f s, adjoint %.3f s, vector work %.3f s); residual %.6g = %.4g of ||b||\n"
           "wrote %s", ctr_iterate_algorithm_name(r->o.algorithm), (long long)rep->iterations, why,
           r->seconds, done > 0 ? r->seconds / (double)done : 0.0, rep->seconds_setup,
           rep->seconds_forward, rep->seconds_adjoint, rep->seconds_vector, rep->residual,
           rep->norm_b > 0 ? rep->residual / rep->norm_b : 0.0, a->out);
  if (a->preview) cli_info(&r->session, ", %s_{xy,xz,yz}.png", a->preview);
  if (a->plot) cli_info(&r->session, ", %s", a->plot);
  if (a->residuals) cli_info(&r->session, ", %s", a->residuals);
  if (r->checkpoints && a->keep_checkpoint) cli_info(&r->session, ", %s", r->ckpath);
  cli_info(&r->session, "\n");
}

static int run(const it_args *a, it_run *r) {
  int rc = check_checkpoint(a, r);
  if (!rc) rc = a->projections ? load_cone(a, r) : load_parallel(a, r);
  if (!rc) rc = make_projector(a, r);
  if (!rc) rc = make_volume(a, r);
  if (rc) return rc;
  fill_options(a, r);
  rc = print_plan(a, r);
  if (!rc) rc = iterate(a, r);
  if (!rc) rc = write_outputs(a, r);
  if (!rc) print_summary(a, r);
  return rc;
}

static void free_run(it_run *r) {
  cli_progress_end(&r->session);
  free(r->h.res);
  ctr_projector_free(r->p);
  ctr_context_free(r->ctx);
  ctr_geometry_free(r->g);
  ctr_parallel_free(r->pg);
  free(r->proj);
  free(r->truth);
  free(r->weights);
  cli_free_floats(r->vol);
}

static void init_args(it_args *a) {
  memset(a, 0, sizeof *a);
  a->algorithm = "sirt";
  a->pair = "matched";
  a->penalty = "none";
  a->iterations = 10; /* ctr_iterate_options and Python iterate */
  a->angle_range = 180.0;
  a->checkpoint_every = 1;
  a->raw_dtype = CTR_DTYPE_FLOAT32;
  a->input_scale = 1.0;
  a->common = (cli_common)CLI_COMMON_INIT;
}

int cmd_iterate(int argc, char **argv) {
  it_args a;
  init_args(&a);
  const cli_opt opts[] = {
      {"--geometry", "FILE", "cone-beam geometry (JSON, ctrecon geometry), or with --sinograms a parallel-beam one (docs/parallel-beam.md)", cli_parse_string,
       &a.geometry, NULL},
      {"--projections", "FILE", "cone-beam projections, nu x nv x views line integrals",
       cli_parse_string, &a.projections, NULL},
      {"--raw-dtype", "float32|uint16", "element type of raw projections (default float32)",
       cli_parse_dtype, &a.raw_dtype, &a.raw_given},
      {"--sinograms", "FILE", "parallel-beam sinograms, nbins x nangles x slices",
       cli_parse_string, &a.sinograms, NULL},
      CLI_INPUT_SCALE_OPTION(&a.input_scale),
      {"--angles", "FILE", "parallel beam: angles in degrees, one per projection (default "
       "uniform)", cli_parse_string, &a.angles, &a.parallel_given},
      {"--angle-start", "DEG", "parallel beam: first angle of a uniform scan (default 0)",
       cli_parse_double, &a.angle_start, &a.parallel_given},
      {"--angle-range", "DEG", "parallel beam: range of a uniform scan (default 180)",
       cli_parse_double, &a.angle_range, &a.parallel_given},
      CLI_ANGLE_UNITS_OPTION(&a.angle_units),
      {"--axis", "BIN", "parallel beam: rotation axis in bins (default the detector centre)",
       cli_parse_double, &a.axis, &a.axis_given},
      {"--axis-shift", "FILE", "parallel beam: per-projection axis correction, bins (default "
       "none)", cli_parse_string, &a.shifts, &a.parallel_given},
      {"--size", "N|NXxNY", "parallel beam: slice size in pixels (default nbins)",
       cli_parse_size2, a.size, &a.size_given},
      {"--voxel", "BINS", "parallel beam: slice pixel in detector bins (default 1)",
       cli_parse_positive, &a.voxel, &a.parallel_given},
      {"--pixel-size", "MM", "parallel beam: detector bin size, mm (default 1)",
       cli_parse_positive, &a.pixel, &a.parallel_given},
      CLI_TILT_OPTIONS(&a.tilt, &a.tilt_given, &a.tilt_slices),
      {"--out", "FILE", "the volume: {endings} (required)",
       cli_parse_string, &a.out, NULL},
      {"--out-format", "{formats}", "volume file format (default: from the "
       "extension)", cli_parse_format, &a.out_format, NULL},
      {"--algorithm", "NAME", "sirt, cgls, os-sart, fista-tv, pdhg-tv or pwls (default sirt)",
       cli_parse_string,
       &a.algorithm, NULL},
      {"--iterations", "N", "iterations (default 10)", cli_parse_count, &a.iterations, NULL},
      {"--tolerance", "T", "stop early once ||b - A x|| <= T ||b|| (default 0: never)",
       cli_parse_nonneg, &a.tolerance, NULL},
      {"--subsets", "S", "os-sart: ordered subsets of interleaved views (default 10)",
       cli_parse_count, &a.subsets, &a.subsets_given},
      {"--relaxation", "L", "sirt, os-sart: step in (0, 2) (default 1)", cli_parse_positive,
       &a.relaxation, &a.relax_given},
      {"--tv-weight", "W", "fista-tv, pdhg-tv: TV weight in the volume's units; a FISTA "
       "iteration denoises by W (default 0: no TV)", cli_parse_nonneg, &a.tv_weight, &a.tv_given},
      {"--tv-iterations", "N", "fista-tv: inner iterations of the TV step (default 10)",
       cli_parse_count, &a.tv_iterations, &a.tv_given},
      {"--weights", "FILE", "pwls: the statistical weight of each ray (the projections' shape "
       "and formats; >= 0, 0 for a dead pixel): the raw detected counts of log data, or any "
       "inverse variance (default: from --i0, or 1)", cli_parse_string, &a.weights,
       &a.pwls_given},
      {"--i0", "COUNTS", "pwls: weights i0 exp(-b), the expected counts of line integrals b "
       "taken with COUNTS per unattenuated ray (default 0: off)", cli_parse_positive, &a.i0,
       &a.pwls_given},
      {"--penalty", "none|quadratic|huber", "pwls: roughness penalty over 6-neighbour pairs "
       "(default none)", cli_parse_string, &a.penalty, &a.pwls_given},
      {"--beta", "B", "pwls: the penalty's weight, in the weights' units times (projection / "
       "volume unit)^2; needed with a penalty (default 0)", cli_parse_nonneg, &a.beta,
       &a.beta_given},
      {"--huber-delta", "D", "pwls, --penalty huber: the neighbour step (volume units) beyond "
       "which the penalty grows linearly; needed with huber (default 0)", cli_parse_positive,
       &a.huber_delta, &a.delta_given},
      {"--nonneg", NULL, "keep the volume >= 0 (sirt, os-sart, fista-tv, pdhg-tv) (default: off)", cli_set_flag,
       &a.nonneg, NULL},
      {"--box", "LO:HI", "keep the volume in [LO, HI] (sirt, os-sart, fista-tv, pdhg-tv)", cli_parse_range, a.box,
       &a.box_given},
      {"--init", "zero|fdk|FILE", "start from 0, from FDK (cone) / FBP (parallel), or from a "
       "volume file (default zero)", cli_parse_string, &a.init, NULL},
      {"--pair", "matched|fast", "matched: A^T exact; fast: the FDK backprojector as an "
       "approximate, unmatched A^T (cone beam; default matched)", cli_parse_string, &a.pair, NULL},
      {"--workers", "N", "GPU projectors sharing each projection (views) and matched adjoint "
       "(slices), on --gpus in turn (several per GPU when N exceeds them); the result does not "
       "depend on N; 1 .. 16 (default: one per GPU, 1 on the CPU)", cli_parse_workers,
       &a.workers, NULL},
      {"--truth", "FILE", "a reference volume: each iteration reports the error against it",
       cli_parse_string, &a.truth, NULL},
      {"--plot", "PNG", "convergence plot: relative residual (and error) per iteration",
       cli_parse_string, &a.plot, NULL},
      {"--residuals", "CSV", "table of residual (and error) per iteration", cli_parse_string,
       &a.residuals, NULL},
      CLI_PREVIEW_OPTION(&a.preview),
      {"--checkpoint", "FILE", "the state after finished iterations (default OUT.checkpoint)",
       cli_parse_string, &a.checkpoint, NULL},
      {"--checkpoint-every", "N", "write the checkpoint every N iterations and after the last; "
       "0 = none (default 1)", cli_parse_offset, &a.checkpoint_every, &a.every_given},
      {"--resume", NULL, "continue the run of the checkpoint (same data and options) (default: off)",
       cli_set_flag, &a.resume, NULL},
      CLI_FORCE_OPTION(&a.force),
      {"--keep-checkpoint", NULL, "keep the checkpoint after a complete run (to continue it "
       "later with more --iterations)", cli_set_flag, &a.keep_checkpoint, NULL},
      CLI_GPU_BUDGET_OPTION(&a.gpu_mem, "GPU memory the run may use"),
      CLI_HOST_BUDGET_OPTION(&a.host_mem, "host memory the run may use"),
      {"--max-slab-slices", "N", "project the volume in slabs of at most N slices (default: as "
       "memory allows)", cli_parse_count, &a.slab, NULL},
      CLI_ALIAS("--slab-slices", "--max-slab-slices", "N", cli_parse_count, &a.slab, NULL),
      CLI_STRICT_OPTION(&a.strict),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_iterate, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  it_run r;
  memset(&r, 0, sizeof r);
  r.a = &a;
  r.o = (ctr_iterate_options)CTR_ITERATE_OPTIONS_INIT;
  r.out_info = (ctr_stack_info)CTR_STACK_INFO_INIT;
  rc = check_args(&a, opts, &r.o);
  if (!rc) rc = run(&a, &r);
  free_run(&r);
  return rc;
}
