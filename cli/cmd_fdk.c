/* `ctrecon fdk`: FDK reconstruction of a projection stack for a geometry
 * file; writes the volume (or a slab of it) and optional PNG previews. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


const cli_command cli_cmd_fdk = {
    "fdk",
    "FDK reconstruction of a projection stack",
    "ctrecon fdk --geometry FILE --projections FILE --out FILE [options]",
    "Reconstructs a volume from cone-beam projections (line integrals, nu x nv x\n"
    "views as described by the geometry file) with the Feldkamp-Davis-Kress\n"
    "algorithm: cosine weighting, ramp filter (ram-lak by default, the sharpest, as\n"
    "in fbp, Python and the C library; --window hann keeps noise and ringing down\n"
    "at a small cost in sharpness), Parker weights for short scans and\n"
    "voxel-driven backprojection. The volume grid comes from the geometry; NRRD\n"
    "output records its spacing and origin. Formats follow the extensions\n"
    "({endings}) unless --format or\n"
    "--out-format say otherwise.",
    "  ctrecon fdk --geometry geom.json --projections proj.nrrd --out recon.nrrd\n"
    "  ctrecon fdk --geometry geom.json --projections proj.raw --raw-dtype uint16 \\\n"
    "      --input-scale 1000 --out recon.tif --window hann --preview recon\n"
    "  ctrecon fdk --geometry geom.json --projections 'views/p_%04d.tif' --slices 100:140 \\\n"
    "      --out slab.nrrd --out-dtype uint16 --out-scale 1000\n",
};

typedef struct fdk_args {
  const char *geometry, *projections, *out, *preview;
  ctr_file_format format, out_format;
  ctr_dtype raw_dtype, out_dtype;
  int64_t raw_offset;
  double input_scale, out_scale;
  ctr_fdk_options fdk;
  int64_t slices[2];
  double window[2];
  int slices_given, window_given, raw_given, out_scale_given;
  uint64_t gpu_mem, host_mem;
  int64_t max_slab;
  ctr_fdk_store store;
  const char *scratch_dir;
  int resume, timings, force;
  ctr_fdk_split split;
  int64_t workers;
  double rank_timeout;
  cli_common common;
} fdk_args;

/* ---- Option parsers ------------------------------------------------------- */

static int parse_split(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_fdk_split_parse(value, (ctr_fdk_split *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected auto, volume or projections", name, value);
  return 0;
}

static int parse_window(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_window_parse(value, (ctr_window *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected ram-lak, shepp-logan, cosine, hamming or hann",
                           name, value);
  return 0;
}

static int parse_cutoff(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  double v = strtod(value, &end);
  if (end == value || *end || !(v > 0.0 && v <= 1.0))
    return cli_usage_error(cmd, "%s '%s': expected 0 < cutoff <= 1 (fraction of Nyquist)", name,
                           value);
  *(double *)dst = v;
  return 0;
}

static int parse_short_scan(const char *cmd, const char *name, const char *value, void *dst) {
  ctr_short_scan *s = dst;
  if (!strcmp(value, "auto"))
    *s = CTR_SHORT_SCAN_AUTO;
  else if (!strcmp(value, "off"))
    *s = CTR_SHORT_SCAN_OFF;
  else if (!strcmp(value, "parker"))
    *s = CTR_SHORT_SCAN_PARKER;
  else
    return cli_usage_error(cmd, "%s '%s': expected auto, off or parker", name, value);
  return 0;
}

static int parse_offset_weight(const char *cmd, const char *name, const char *value, void *dst) {
  ctr_offset_weight *s = dst;
  if (!strcmp(value, "auto"))
    *s = CTR_OFFSET_WEIGHT_AUTO;
  else if (!strcmp(value, "off"))
    *s = CTR_OFFSET_WEIGHT_OFF;
  else if (!strcmp(value, "wang"))
    *s = CTR_OFFSET_WEIGHT_WANG;
  else
    return cli_usage_error(cmd, "%s '%s': expected auto, off or wang", name, value);
  return 0;
}

static int parse_slices(const char *cmd, const char *name, const char *value, void *dst) {
  long long z0, z1;
  int used = 0;
  if (sscanf(value, "%lld:%lld%n", &z0, &z1, &used) != 2 || value[used] || z0 < 0 || z1 <= z0)
    return cli_usage_error(cmd, "%s '%s': expected Z0:Z1 with 0 <= Z0 < Z1 (slices Z0 .. Z1-1)",
                           name, value);
  ((int64_t *)dst)[0] = z0;
  ((int64_t *)dst)[1] = z1;
  return 0;
}

static int parse_store(const char *cmd, const char *name, const char *value, void *dst) {
  static const char *names[] = {"auto", "device", "host", "scratch"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(value, names[i])) {
      *(ctr_fdk_store *)dst = (ctr_fdk_store)i;
      return 0;
    }
  return cli_usage_error(cmd, "%s '%s': expected auto, device, host or scratch", name, value);
}

/* ---- Reading the projections ---------------------------------------------- */

typedef struct fdk_run {
  ctr_geometry *g;
  ctr_context *ctx;
  cli_session session;
  ctr_stack_reader *reader;
  ctr_file_format fmt, out_fmt;
  int64_t nu, nv, nviews, nz_out;
  float *xy, *xz, *yz; /* preview planes, filled as subvolumes finish */
  int64_t nx, ny, mid_z;
  ctr_fdk_stream_report report;
  ctr_cluster *cluster; /* under mpirun or srun with several ranks */
} fdk_run;

/* A raw file must hold exactly the geometry's projections. */
static int check_raw_size(const fdk_args *a, const fdk_run *r) {
  char dims[4200];
  snprintf(dims, sizeof dims, "nu x nv x views of '%s'", a->geometry);
  return cli_check_raw_size("fdk", "--projections", a->projections, r->nu, r->nv, r->nviews,
                            a->raw_dtype, a->raw_offset, dims);
}

/* Header-described files: compare their dims with the geometry ourselves so
 * that the message speaks of views and the geometry file. */
static int check_dims(const fdk_args *a, const fdk_run *r) {
  const ctr_stack_info *i = ctr_stack_reader_get_info(r->reader);
  if (i->width == r->nu && i->height == r->nv && i->count == r->nviews) return 0;
  return cli_error("fdk", CLI_EXIT_INPUT,
                   "'%s' holds %lld images of %lld x %lld pixels, expected %lld views of %lld x "
                   "%lld (nu x nv) for the geometry '%s'",
                   a->projections, (long long)i->count, (long long)i->width, (long long)i->height,
                   (long long)r->nviews, (long long)r->nu, (long long)r->nv, a->geometry);
}

static int open_projections(const fdk_args *a, fdk_run *r) {
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  const int raw = cli_format_needs_hint(r->fmt); /* the sizes come from the geometry */
  if (raw) {
    int rc = check_raw_size(a, r);
    if (rc) return rc;
    hint.width = r->nu;
    hint.height = r->nv;
    hint.count = r->nviews;
    hint.dtype = a->raw_dtype;
  } else if (a->raw_given) {
    cli_warn("fdk", "--raw-dtype and --raw-offset apply to raw files only; ignored for %s",
             ctr_format_name(r->fmt));
  }
  ctr_status st = ctr_stack_open(a->projections, r->fmt, raw ? &hint : NULL,
                                 raw ? a->raw_offset : 0, &r->reader);
  if (st != CTR_OK) return cli_fail_file("fdk", st, a->projections);
  return raw ? 0 : check_dims(a, r);
}

/* ---- Reconstruction --------------------------------------------------------- */

/* Keeps the three central planes of each finished subvolume for the
 * previews (writer thread; subvolumes never overlap). */
static void collect_planes(void *user, int64_t z0, int64_t nz, const float *slab) {
  fdk_run *r = user;
  const int64_t nx = r->nx, ny = r->ny, plane = nx * ny;
  const int64_t first = z0 - (r->mid_z - r->nz_out / 2); /* slices relative to the output */
  for (int64_t k = 0; k < nz; k++) {
    const int64_t z = first + k;
    const float *s = slab + k * plane;
    if (z == r->nz_out / 2) memcpy(r->xy, s, (size_t)plane * sizeof(float));
    memcpy(r->xz + z * nx, s + (ny / 2) * nx, (size_t)nx * sizeof(float));
    for (int64_t y = 0; y < ny; y++) r->yz[z * ny + y] = s[y * nx + nx / 2];
  }
}

static int reconstruct(fdk_args *a, fdk_run *r, double *seconds) {
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.fdk = a->fdk;
  so.gpu_budget = a->gpu_mem;
  so.host_budget = a->host_mem;
  so.max_slab_slices = a->max_slab;
  so.store = a->store;
  so.scratch_dir = a->scratch_dir;
  so.input_scale = a->input_scale;
  so.out_dtype = a->out_dtype;
  so.out_scale = a->out_dtype == CTR_DTYPE_UINT16 ? a->out_scale : 1.0;
  so.resume = a->resume;
  so.overwrite = a->force;
  so.split = a->split;
  so.workers = (int)a->workers;
  so.cluster = r->cluster;
  if (a->preview) {
    int rc = 0;
    r->xy = cli_alloc_floats("fdk", r->nx * r->ny, "the xy preview", &rc);
    if (!rc) r->xz = cli_alloc_floats("fdk", r->nx * r->nz_out, "the xz preview", &rc);
    if (!rc) r->yz = cli_alloc_floats("fdk", r->ny * r->nz_out, "the yz preview", &rc);
    if (rc) return rc;
    so.on_slab = collect_planes;
    so.user = r;
  }
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  const double bytes = (double)(r->nu * r->nv * r->nviews) *
                           (double)ctr_dtype_size(ctr_stack_reader_get_info(r->reader)->dtype) +
                       (double)(vol.nx * vol.ny * r->nz_out) * (double)ctr_dtype_size(a->out_dtype);
  r->session.rate_total = bytes / 1e9; /* file bytes in and out */
  r->session.rate_unit = "GB";
  const double t0 = cli_now();
  r->report = (ctr_fdk_stream_report)CTR_FDK_STREAM_REPORT_INIT;
  ctr_status st = ctr_fdk_stream(r->ctx, r->g, &so, r->reader, a->out, r->out_fmt, &r->report);
  *seconds = cli_now() - t0;
  cli_cluster_settle(r->cluster);
  cli_progress_end(&r->session);
  if (st != CTR_OK) {
    /* A journal left behind means finished subvolumes wait for --resume,
     * unless this was a resume that found them unusable: then --resume
     * cannot help. A refusal (CTR_E_INVALID_ARGUMENT: an interrupted run
     * there, another run's journal, a run still going) says what to do
     * itself, as fbp's does. */
    const char *journal = r->report.journal;
    if (*journal && !r->report.resumable && st != CTR_E_INVALID_ARGUMENT) {
      cli_progress_end(&r->session);
      fprintf(stderr, "ctrecon fdk: error: %s; delete %s.partial%s and %s and run without "
              "--resume to start over\n", cli_detail(), a->out,
              cli_format_is_stack(r->out_fmt) ? " files" : "", journal);
      return cli_exit_code(st);
    }
    if (r->report.resumable && st != CTR_E_INVALID_ARGUMENT) {
      const int rc = cli_exit_code(st);
      cli_progress_end(&r->session);
      fprintf(stderr, "ctrecon fdk: error: %s\n",
              cli_status_text(st));
      fprintf(stderr, "ctrecon fdk: '%s' was not written; its finished subvolumes are kept in "
              "%s.partial%s (journal %s): repeat the command with --resume to continue\n",
              a->out, a->out, cli_format_is_stack(r->out_fmt) ? " files" : "", journal);
      return rc;
    }
  }
  /* Bad values name the projections (cli_fail_file adds a name only when
   * the detail lacks it). */
  if (st != CTR_OK && r->cluster) return cli_fail("fdk", st); /* it names the rank */
  if (st == CTR_E_GEOMETRY) return cli_fail_file("fdk", st, a->geometry); /* --strict */
  if (st != CTR_OK)
    return cli_fail_file("fdk", st,
                         strstr(cli_detail(), a->projections) ? a->projections : a->out);
  /* FDK undershoots below 0 near edges: routine, so only overflow warns. */
  if (r->report.above)
    cli_warn("fdk",
             "%lld voxels above 65535 clamped in uint16 (value x --out-scale %g); "
             "lower --out-scale",
             (long long)r->report.above, a->out_scale);
  return 0;
}

static int write_previews(const fdk_args *a, const fdk_run *r) {
  /* lo == hi asks the library for the 0.5 / 99.5 % percentiles. */
  const double lo = a->window_given ? a->window[0] : 0.0, hi = a->window_given ? a->window[1] : 0.0;
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  const double voxel[3] = {vol.voxel_x, vol.voxel_y, vol.voxel_z};
  return cli_preview("fdk", a->preview, r->xy, r->xz, r->yz, r->nx, r->ny, r->nz_out, voxel, lo, hi,
                     a->force);
}

/* The plan, each step's busy time and, with several workers, each one's (the
 * breakdown of Okitsu et al. 2010, Fig. 4). */
static void print_timings(const fdk_run *r) {
  const ctr_fdk_stream_timings *t = &r->report.timings;
  char plan[512];
  ctr_fdk_plan_describe(&r->report.plan, plan, sizeof plan);
  fprintf(stderr,
          "plan: %s\n"
          "step (Lu et al. 2016, Fig. 3)            busy s\n"
          "(1) storage -> host (read)             %9.3f\n"
          "(2) host -> device (raw projections)   %9.3f\n"
          "(3) weighting + ramp filter            %9.3f\n"
          "(4) filtered -> host / scratch         %9.3f\n"
          "(5) filtered host / scratch -> device  %9.3f\n"
          "(6) backprojection                     %9.3f\n"
          "(7) subvolume device -> host           %9.3f\n"
          "(8) host -> storage (write + flush)    %9.3f\n"
          "(9) reduction of partial sums          %9.3f\n"
          "setup (allocations, plans)             %9.3f\n"
          "total, overlapped (wall)               %9.3f\n",
          plan, t->read, t->upload, t->filter, t->store, t->reload, t->backproject, t->download,
          t->write, t->reduce, t->setup, t->total);
  const ctr_fdk_stream_report *rep = &r->report;
  if (rep->workers <= 1) return;
  fprintf(stderr, "per worker, busy s (%s split):\n"
          "worker device   upload   filter    store   reload  backproj download   reduce     wait\n",
          ctr_fdk_split_name(rep->plan.split));
  for (int i = 0; i < rep->workers && i < CTR_MAX_WORKERS; i++) {
    const ctr_fdk_stream_timings *w = &rep->worker_timings[i];
    char dev[16];
    if (rep->worker_device[i] >= 0) snprintf(dev, sizeof dev, "cuda:%d", rep->worker_device[i]);
    else snprintf(dev, sizeof dev, "cpu");
    fprintf(stderr, "%6d %-7s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", i, dev,
            w->upload, w->filter, w->store, w->reload, w->backproject, w->download, w->reduce,
            w->wait);
  }
}

static void print_summary(const fdk_args *a, const fdk_run *r, double seconds) {
  const float lo = r->report.min, hi = r->report.max;
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  const double voxels = (double)vol.nx * (double)vol.ny * (double)r->nz_out;
  seconds = seconds > 1e-9 ? seconds : 1e-9; /* a tiny volume on a coarse clock */
  char size[32];
  const cli_session *s = &r->session;
  cli_info(s, "fdk: %lld views -> %lld x %lld x %lld voxels", (long long)r->nviews,
           (long long)vol.nx, (long long)vol.ny, (long long)r->nz_out);
  if (a->slices_given)
    cli_info(s, " (slices %lld..%lld of %lld)", (long long)a->slices[0],
             (long long)a->slices[1] - 1, (long long)vol.nz);
  cli_info(s, ", %s filter (cutoff %g), input scale %g", ctr_window_name(a->fdk.window),
           a->fdk.cutoff, a->input_scale);
  /* After --resume the time is this run's, and so is the work it is set
   * against; the value range is the whole output's. */
  const int64_t resumed = r->report.slices_resumed;
  const double computed = voxels * (double)(r->nz_out - resumed) / (double)r->nz_out;
  if (resumed)
    cli_info(s, "\nresumed: %lld of %lld slices were done and unchanged on disk; this run "
             "computed %lld slices in %.2f s, %.2f GUPS\n", (long long)resumed,
             (long long)r->nz_out, (long long)(r->nz_out - resumed), seconds,
             (double)r->nviews * computed / seconds / 1e9);
  else
    cli_info(s, ", %.2f s, %.2f GUPS\n", seconds, (double)r->nviews * voxels / seconds / 1e9);
  cli_info(s, "values %.4g .. %.4g%s\n", lo, hi, resumed ? " (the whole volume)" : "");
  cli_bytes(voxels * (double)ctr_dtype_size(a->out_dtype), size, sizeof size);
  if (a->out_dtype == CTR_DTYPE_UINT16)
    cli_info(s, "wrote %s (%s, uint16 = value x %g, %lld negative voxels stored as 0, %s)\n",
             a->out, ctr_format_name(r->out_fmt), a->out_scale, (long long)r->report.below, size);
  else
    cli_info(s, "wrote %s (%s, float32, %s)\n", a->out, ctr_format_name(r->out_fmt), size);
  if (a->preview)
    cli_info(s, "wrote previews %s_xy.png, %s_xz.png, %s_yz.png\n", a->preview, a->preview,
             a->preview);
}

/* Everything before the reconstruction: the geometry, the projections, the
 * context (under a launcher, every rank does this itself). */
static int prepare(fdk_args *a, fdk_run *r) {
  if (r->cluster && a->preview)
    return cli_usage_error("fdk", "--preview needs the whole volume in one process: make the "
                           "previews from the output of a distributed run");
  int rc = cli_load_geometry("fdk", a->geometry, &r->g);
  if (rc) return rc;
  cli_warn_coverage("fdk", r->g);
  double du, dv;
  ctr_geometry_get_detector(r->g, &r->nu, &r->nv, &du, &dv);
  r->nviews = ctr_geometry_get_view_count(r->g);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  if (a->slices_given && a->slices[1] > vol.nz)
    return cli_usage_error(
        "fdk", "--slices %lld:%lld: expected Z1 <= %lld, the volume's nz in '%s'",
        (long long)a->slices[0], (long long)a->slices[1], (long long)vol.nz, a->geometry);
  a->fdk.z0 = a->slices_given ? a->slices[0] : 0;
  a->fdk.nz = a->slices_given ? a->slices[1] - a->slices[0] : 0;
  r->nz_out = a->slices_given ? a->fdk.nz : vol.nz;
  r->nx = vol.nx;
  r->ny = vol.ny;
  r->mid_z = a->fdk.z0 + r->nz_out / 2;
  rc = open_projections(a, r);
  if (!rc) rc = cli_context_create(&r->session, "fdk", &a->common, &r->ctx);
  r->session.debug_log = a->timings;
  return rc;
}

static int run(fdk_args *a, fdk_run *r) {
  int rc = cli_cluster_create("fdk", a->rank_timeout, &r->cluster);
  if (rc) return rc;
  rc = cli_cluster_agree("fdk", r->cluster, prepare(a, r));
  double seconds = 0.0;
  if (!rc) rc = reconstruct(a, r, &seconds);
  if (a->timings && r->report.plan.nslabs > 0) print_timings(r);
  if (rc) return rc;
  if (a->preview) rc = write_previews(a, r);
  if (!rc) print_summary(a, r, seconds);
  return rc;
}

static int check_args(const fdk_args *a, const cli_opt *opts, fdk_run *r) {
  int rc = cli_require("fdk", opts, "--geometry", a->geometry);
  if (!rc) rc = cli_require("fdk", opts, "--projections", a->projections);
  if (!rc) rc = cli_require("fdk", opts, "--out", a->out);
  if (!rc)
    rc = cli_resolve_format("fdk", "--projections", "--format", a->projections, a->format, &r->fmt);
  if (!rc)
    rc = cli_resolve_format("fdk", "--out", "--out-format", a->out, a->out_format, &r->out_fmt);
  const cli_file in[] = {{"--geometry", a->geometry}, {"--projections", a->projections}, {0}};
  const cli_output out[] = {{"--out", a->out, CLI_OUT_DATA},
                          {"--preview", a->preview, CLI_OUT_PREVIEW}, {0}};
  if (!rc) rc = cli_check_files("fdk", in, out, a->force);
  /* Options that would do nothing are errors, not silently ignored. */
  if (!rc && a->out_scale_given && a->out_dtype != CTR_DTYPE_UINT16)
    rc = cli_usage_error("fdk", "--out-scale applies to --out-dtype uint16 only (float32 stores "
                         "the values as they are): drop it, or add --out-dtype uint16");
  if (!rc && a->window_given && !a->preview)
    rc = cli_usage_error("fdk", "--preview-window applies to --preview only: drop it, or add "
                         "--preview PREFIX");
  return rc;
}

int cmd_fdk(int argc, char **argv) {
  fdk_args a;
  memset(&a, 0, sizeof a);
  a.raw_dtype = a.out_dtype = CTR_DTYPE_FLOAT32;
  a.input_scale = 1.0;
  a.out_scale = 1000.0;
  a.fdk = (ctr_fdk_options)CTR_FDK_OPTIONS_INIT; /* ram-lak, as Python's and fbp's */
  a.common = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--geometry", "FILE", "geometry file (required)", cli_parse_string, &a.geometry, NULL},
      {"--projections", "FILE", "projection stack, nu x nv x views (required)", cli_parse_string,
       &a.projections, NULL},
      {"--out", "FILE", "volume to write (required)", cli_parse_string, &a.out, NULL},
      {"--format", "{formats}",
       "projection file format (default: from the extension)", cli_parse_format, &a.format, NULL},
      {"--raw-dtype", "float32|uint16", "data type of raw projections (default float32)",
       cli_parse_dtype, &a.raw_dtype, &a.raw_given},
      {"--raw-offset", "BYTES", "header bytes to skip in raw projections (default 0)",
       cli_parse_offset, &a.raw_offset, &a.raw_given},
      CLI_INPUT_SCALE_OPTION(&a.input_scale),
      {"--window", "NAME", "the ramp filter's window: ram-lak, shepp-logan, cosine, hamming, "
       "hann (default ram-lak)", parse_window, &a.fdk.window, NULL},
      CLI_ALIAS("--filter", "--window", "NAME", parse_window, &a.fdk.window, NULL),
      {"--cutoff", "F", "filter cut-off as a fraction of Nyquist, 0 < F <= 1 (default 1)",
       parse_cutoff, &a.fdk.cutoff, NULL},
      {"--short-scan", "auto|off|parker",
       "Parker weights; auto: if the orbit is < 360 deg (default auto)", parse_short_scan,
       &a.fdk.short_scan, NULL},
      {"--offset-weight", "auto|off|wang",
       "offset (half-fan) detector weights (Wang 2002); auto: on a full turn whose detector's "
       "narrow side misses the field of view (default auto)",
       parse_offset_weight, &a.fdk.offset_weight, NULL},
      {"--offset-overlap", "COLUMNS",
       "width of the offset weights' transition, detector columns about the principal point "
       "(default: the whole overlap)",
       cli_parse_positive, &a.fdk.offset_overlap, NULL},
      {"--interp", "MODE",
       "backprojection interpolation: auto, texture (GPU hardware, ~1e-3), exact (fp32, "
       "~1e-6) or precise (double positions on the GPU, ~1e-7); auto is texture on a GPU, exact "
       "on the CPU (default auto)",
       cli_parse_interp, &a.fdk.interp, NULL},
      {"--slices", "Z0:Z1", "reconstruct slices Z0 .. Z1-1 only (default: all)", parse_slices,
       a.slices, &a.slices_given},
      {"--out-format", "{formats}",
       "volume file format (default: from the extension)", cli_parse_format, &a.out_format, NULL},
      {"--out-dtype", "float32|uint16", "volume data type (default float32)", cli_parse_dtype,
       &a.out_dtype, NULL},
      {"--out-scale", "F", "uint16 stores value x F, clamped to 0..65535 (default 1000)",
       cli_parse_positive, &a.out_scale, &a.out_scale_given},
      CLI_PREVIEW_OPTION(&a.preview),
      {"--preview-window", "LO:HI", "previews' grey window (default: 0.5 / 99.5 % percentiles)",
       cli_parse_range, a.window, &a.window_given},
      CLI_GPU_BUDGET_OPTION(&a.gpu_mem, "GPU memory the run may use"),
      CLI_HOST_BUDGET_OPTION(&a.host_mem, "host memory the run may use"),
      {"--max-slab-slices", "N",
       "at most N slices per subvolume (slab) (default: as many as the memory budgets allow)",
       cli_parse_count, &a.max_slab, NULL},
      CLI_ALIAS("--subvolume-slices", "--max-slab-slices", "N", cli_parse_count, &a.max_slab,
                NULL),
      {"--views-per-batch", "N",
       "projections filtered and backprojected per batch, N' (default: 64 on a GPU, 32 on "
       "the CPU, fewer when memory is short)", cli_parse_count, &a.fdk.views_per_batch, NULL},
      {"--store", "auto|device|host|scratch",
       "where filtered projections wait between subvolumes (default auto: the fastest that "
       "fits)", parse_store, &a.store, NULL},
      {"--scratch-dir", "DIR",
       "directory of the scratch file when filtered projections spill to disk (default: beside "
       "--out)", cli_parse_string, &a.scratch_dir, NULL},
      {"--resume", NULL,
       "continue an interrupted run from OUT.partial and its journal; the result is "
       "bit-identical to an uninterrupted run (default: off)", cli_set_flag, &a.resume, NULL},
      CLI_FORCE_OPTION(&a.force),
      {"--timings", NULL, "print the plan and each pipeline step's busy time on stderr, per "
       "worker too with several (default: off)", cli_set_flag, &a.timings, NULL},
      {"--split", "auto|volume|projections",
       "how several GPUs share the run: each reconstructs whole subvolumes (volume; the result "
       "does not depend on the GPU count) or a share of the views that are then added "
       "(projections); auto = the cheaper by the planner's cost model (default auto)",
       parse_split, &a.split, NULL},
      {"--workers", "N",
       "engines sharing the run: on GPUs, spread over --gpus in turn (several per GPU when N "
       "exceeds them); on the CPU, engines sharing the cores; 1 .. 16 (default: one per GPU, 1 "
       "on the CPU)", cli_parse_workers, &a.workers, NULL},
      {"--strict", NULL,
       CLI_STRICT_HELP "; so is a geometry FDK cannot reconstruct (not a circular orbit, less "
       "than a short scan, an offset detector: default a warning; docs/geometry.md)",
       cli_set_flag, &a.fdk.strict, NULL},
      CLI_RANK_TIMEOUT_OPTION(&a.rank_timeout),
      CLI_ZARR_SHARD_OPTION(&a.common),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_fdk, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  fdk_run r;
  memset(&r, 0, sizeof r);
  rc = cli_launch_early_error("fdk", check_args(&a, opts, &r));
  if (!rc) rc = run(&a, &r);
  cli_progress_end(&r.session);
  ctr_stack_close(r.reader);
  cli_free_floats(r.xy);
  cli_free_floats(r.xz);
  cli_free_floats(r.yz);
  ctr_context_free(r.ctx);
  ctr_geometry_free(r.g);
  ctr_cluster_free(r.cluster);
  return rc;
}
