/* `ctrecon fdk`: FDK reconstruction of a projection stack for a geometry
 * file; writes the volume (or a slab of it) and optional PNG previews. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define READ_CHUNK_VIEWS 16  /* views per read: progress and Ctrl-C between them */
#define WRITE_SLAB_SLICES 16 /* slices per write, through a scratch buffer */

const cli_command cli_cmd_fdk = {
    "fdk",
    "FDK reconstruction of a projection stack",
    "ctrecon fdk --geometry FILE --projections FILE --out FILE [options]",
    "Reconstructs a volume from cone-beam projections (line integrals, nu x nv x\n"
    "views as described by the geometry file) with the Feldkamp-Davis-Kress\n"
    "algorithm: cosine weighting, ramp filter with a smoothing window (hann by\n"
    "default: it keeps noise and ringing down at a small cost in sharpness; use\n"
    "--filter ram-lak for the sharpest result), Parker weights for short scans and\n"
    "voxel-driven backprojection. The volume grid comes from the geometry; NRRD\n"
    "output records its spacing and origin. Formats follow the extensions (.raw,\n"
    ".tif, .nrrd, or a %04d pattern for one TIFF per image) unless --format or\n"
    "--out-format say otherwise.",
    "  ctrecon fdk --geometry geom.json --projections proj.nrrd --out recon.nrrd\n"
    "  ctrecon fdk --geometry geom.json --projections proj.raw --raw-dtype uint16 \\\n"
    "      --input-scale 1000 --out recon.tif --filter ram-lak --preview recon\n"
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
  int slices_given, window_given, raw_given;
  cli_common common;
} fdk_args;

/* ---- Option parsers ------------------------------------------------------- */

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

static int parse_range(const char *cmd, const char *name, const char *value, void *dst) {
  double lo, hi;
  int used = 0;
  if (sscanf(value, "%lf:%lf%n", &lo, &hi, &used) != 2 || value[used] || !isfinite(lo) ||
      !isfinite(hi) || !(lo < hi))
    return cli_usage_error(cmd, "%s '%s': expected LO:HI with LO < HI", name, value);
  ((double *)dst)[0] = lo;
  ((double *)dst)[1] = hi;
  return 0;
}

/* ---- Reading the projections ---------------------------------------------- */

typedef struct fdk_run {
  ctr_geometry *g;
  ctr_context *ctx;
  cli_session session;
  ctr_stack_reader *reader;
  ctr_stack_writer *writer;
  float *proj, *vol;
  ctr_file_format fmt, out_fmt;
  int64_t nu, nv, nviews, nz_out;
  int64_t below, above; /* voxels clamped to 0 and 65535 in a uint16 output */
} fdk_run;

/* A raw file must hold exactly the geometry's projections: a longer one
 * usually means the wrong --raw-dtype (float32 read as uint16). */
static int check_raw_size(const fdk_args *a, const fdk_run *r) {
  struct stat st;
  if (stat(a->projections, &st) != 0)
    return cli_error("fdk", CLI_EXIT_RUNTIME, "cannot open '%s': %s", a->projections,
                     strerror(errno));
  const int64_t need =
      a->raw_offset + r->nu * r->nv * r->nviews * (int64_t)ctr_dtype_size(a->raw_dtype);
  if ((int64_t)st.st_size == need) return 0;
  return cli_error("fdk", CLI_EXIT_INPUT,
                   "'%s' holds %lld bytes, expected %lld for %lld x %lld x %lld %s (nu x nv x "
                   "views of '%s') + %lld offset bytes; check --raw-dtype and the geometry",
                   a->projections, (long long)st.st_size, (long long)need, (long long)r->nu,
                   (long long)r->nv, (long long)r->nviews, ctr_dtype_name(a->raw_dtype),
                   a->geometry, (long long)a->raw_offset);
}

/* Header-described files: compare their dims with the geometry ourselves so
 * that the message speaks of views and the geometry file. */
static int check_dims(const fdk_args *a, const fdk_run *r) {
  const ctr_stack_info *i = ctr_stack_reader_info(r->reader);
  if (i->width == r->nu && i->height == r->nv && i->count == r->nviews) return 0;
  return cli_error("fdk", CLI_EXIT_INPUT,
                   "'%s' holds %lld images of %lld x %lld pixels, expected %lld views of %lld x "
                   "%lld (nu x nv) for the geometry '%s'",
                   a->projections, (long long)i->count, (long long)i->width, (long long)i->height,
                   (long long)r->nviews, (long long)r->nu, (long long)r->nv, a->geometry);
}

static int open_projections(const fdk_args *a, fdk_run *r) {
  ctr_stack_info hint;
  memset(&hint, 0, sizeof hint);
  const int raw = r->fmt == CTR_FORMAT_RAW;
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

/* Reads every view as float32 in chunks (progress, Ctrl-C), then applies
 * --input-scale and zeroes non-finite values, which the ramp filter would
 * otherwise spread over whole detector rows. */
static int read_projections(const fdk_args *a, fdk_run *r) {
  int rc = 0;
  const int64_t per_view = r->nu * r->nv;
  r->proj = cli_alloc_floats("fdk", per_view * r->nviews, "the projections", &rc);
  if (!r->proj) return rc;
  for (int64_t v = 0; v < r->nviews; v += READ_CHUNK_VIEWS) {
    if (cli_progress(&r->session, "reading", (double)v / (double)r->nviews))
      return cli_fail("fdk", CTR_E_CANCELLED);
    const int64_t n = r->nviews - v < READ_CHUNK_VIEWS ? r->nviews - v : READ_CHUNK_VIEWS;
    ctr_status st = ctr_stack_read(r->reader, v, n, CTR_DTYPE_FLOAT32, r->proj + v * per_view);
    if (st != CTR_OK) return cli_fail_file("fdk", st, a->projections);
  }
  cli_progress(&r->session, "reading", 1.0);
  const int64_t total = per_view * r->nviews;
  int64_t bad = 0;
  const float inv = (float)(1.0 / a->input_scale);
  for (int64_t i = 0; i < total; i++) {
    if (!isfinite(r->proj[i])) {
      r->proj[i] = 0.0f;
      bad++;
    } else if (a->input_scale != 1.0) {
      r->proj[i] *= inv;
    }
  }
  if (bad)
    cli_warn("fdk", "'%s': %lld non-finite values (NaN/Inf) replaced by 0", a->projections,
             (long long)bad);
  return 0;
}

/* ---- Reconstruction and output --------------------------------------------- */

static int reconstruct(const fdk_args *a, fdk_run *r, double *seconds) {
  int rc = 0;
  const ctr_volume_geometry vol = ctr_geometry_volume(r->g);
  const int64_t pdims[3] = {r->nu, r->nv, r->nviews}, vdims[3] = {vol.nx, vol.ny, r->nz_out};
  r->vol = cli_alloc_floats("fdk", vol.nx * vol.ny * r->nz_out, "the volume", &rc);
  if (!r->vol) return rc;
  const ctr_array proj = ctr_array_init(r->proj, CTR_DTYPE_FLOAT32, 3, pdims);
  ctr_array out = ctr_array_init(r->vol, CTR_DTYPE_FLOAT32, 3, vdims);
  const double t0 = cli_now();
  ctr_status st = ctr_fdk(r->ctx, r->g, &a->fdk, &proj, &out);
  *seconds = cli_now() - t0;
  cli_progress_end(&r->session);
  return st == CTR_OK ? 0 : cli_fail("fdk", st);
}

/* Writes the volume a slab of slices at a time through a scratch buffer,
 * which applies the uint16 scale without touching the float volume (the
 * previews still need it). */
static ctr_status write_slabs(const fdk_args *a, fdk_run *r, int64_t slice, int64_t *below,
                              int64_t *above) {
  const int64_t nslab = WRITE_SLAB_SLICES < r->nz_out ? WRITE_SLAB_SLICES : r->nz_out;
  float *buf = malloc((size_t)(slice * nslab) * sizeof(float));
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  for (int64_t z = 0; z < r->nz_out && st == CTR_OK; z += nslab) {
    if (cli_progress(&r->session, "writing", (double)z / (double)r->nz_out)) {
      st = CTR_E_CANCELLED;
      break;
    }
    const int64_t n = r->nz_out - z < nslab ? r->nz_out - z : nslab;
    memcpy(buf, r->vol + z * slice, (size_t)(n * slice) * sizeof(float));
    if (a->out_dtype == CTR_DTYPE_UINT16)
      cli_scale_for_uint16(buf, n * slice, a->out_scale, below, above);
    st = ctr_stack_write(r->writer, z, n, CTR_DTYPE_FLOAT32, buf);
  }
  if (st == CTR_OK) cli_progress(&r->session, "writing", 1.0);
  free(buf);
  return st;
}

static int write_volume(const fdk_args *a, fdk_run *r) {
  const ctr_volume_geometry vol = ctr_geometry_volume(r->g);
  const ctr_stack_info info = cli_volume_info(&vol, a->fdk.z0, r->nz_out, a->out_dtype);
  ctr_status st = ctr_stack_create(a->out, r->out_fmt, &info, &r->writer);
  if (st == CTR_OK) st = write_slabs(a, r, vol.nx * vol.ny, &r->below, &r->above);
  cli_progress_end(&r->session);
  if (st == CTR_OK) {
    st = ctr_stack_commit(r->writer);
    r->writer = NULL; /* commit frees it, whatever the outcome */
  }
  if (st == CTR_E_OUT_OF_MEMORY && !*ctr_error_detail())
    return cli_error("fdk", CLI_EXIT_RUNTIME, "out of memory for the output buffer of '%s'",
                     a->out);
  if (st != CTR_OK) return cli_fail_file("fdk", st, a->out);
  /* FDK undershoots below 0 near edges: routine, so only overflow warns. */
  if (r->above)
    cli_warn("fdk",
             "%lld voxels above 65535 clamped in uint16 (value x --out-scale %g); "
             "lower --out-scale",
             (long long)r->above, a->out_scale);
  return 0;
}

static int write_previews(const fdk_args *a, const fdk_run *r) {
  const ctr_volume_geometry vol = ctr_geometry_volume(r->g);
  /* lo == hi asks the library for the 0.5 / 99.5 % percentiles. */
  const float lo = a->window_given ? (float)a->window[0] : 0.0f;
  const float hi = a->window_given ? (float)a->window[1] : 0.0f;
  ctr_status st = ctr_png_preview(a->preview, r->vol, vol.nx, vol.ny, r->nz_out, lo, hi);
  return st == CTR_OK ? 0 : cli_fail_file("fdk", st, a->preview);
}

static void print_summary(const fdk_args *a, const fdk_run *r, double seconds, float lo, float hi) {
  const ctr_volume_geometry vol = ctr_geometry_volume(r->g);
  const double voxels = (double)vol.nx * (double)vol.ny * (double)r->nz_out;
  seconds = seconds > 1e-9 ? seconds : 1e-9; /* a tiny volume on a coarse clock */
  char size[32];
  const cli_session *s = &r->session;
  cli_info(s, "fdk: %lld views -> %lld x %lld x %lld voxels", (long long)r->nviews,
           (long long)vol.nx, (long long)vol.ny, (long long)r->nz_out);
  if (a->slices_given)
    cli_info(s, " (slices %lld..%lld of %lld)", (long long)a->slices[0],
             (long long)a->slices[1] - 1, (long long)vol.nz);
  cli_info(s, ", %s filter (cutoff %g), %.2f s, %.2f GUPS\n", ctr_window_name(a->fdk.window),
           a->fdk.cutoff, seconds, (double)r->nviews * voxels / seconds / 1e9);
  cli_info(s, "values %.4g .. %.4g\n", lo, hi);
  cli_bytes(voxels * (double)ctr_dtype_size(a->out_dtype), size, sizeof size);
  if (a->out_dtype == CTR_DTYPE_UINT16)
    cli_info(s, "wrote %s (%s, uint16 = value x %g, %lld negative voxels stored as 0, %s)\n",
             a->out, ctr_format_name(r->out_fmt), a->out_scale, (long long)r->below, size);
  else
    cli_info(s, "wrote %s (%s, float32, %s)\n", a->out, ctr_format_name(r->out_fmt), size);
  if (a->preview)
    cli_info(s, "wrote previews %s_xy.png, %s_xz.png, %s_yz.png\n", a->preview, a->preview,
             a->preview);
}

static int run(fdk_args *a, fdk_run *r) {
  int rc = cli_load_geometry("fdk", a->geometry, &r->g);
  if (rc) return rc;
  cli_warn_coverage("fdk", r->g);
  double du, dv;
  ctr_geometry_detector(r->g, &r->nu, &r->nv, &du, &dv);
  r->nviews = ctr_geometry_nviews(r->g);
  const ctr_volume_geometry vol = ctr_geometry_volume(r->g);
  if (a->slices_given && a->slices[1] > vol.nz)
    return cli_usage_error(
        "fdk", "--slices %lld:%lld: expected Z1 <= %lld, the volume's nz in '%s'",
        (long long)a->slices[0], (long long)a->slices[1], (long long)vol.nz, a->geometry);
  a->fdk.z0 = a->slices_given ? a->slices[0] : 0;
  a->fdk.nz = a->slices_given ? a->slices[1] - a->slices[0] : 0;
  r->nz_out = a->slices_given ? a->fdk.nz : vol.nz;
  rc = open_projections(a, r);
  if (!rc) rc = cli_context_create(&r->session, "fdk", &a->common, &r->ctx);
  if (!rc) rc = read_projections(a, r);
  ctr_stack_close(r->reader);
  r->reader = NULL;
  double seconds = 0.0;
  if (!rc) rc = reconstruct(a, r, &seconds);
  if (rc) return rc;
  cli_free_floats(r->proj); /* before allocating output buffers */
  r->proj = NULL;
  float lo, hi;
  cli_range(r->vol, vol.nx * vol.ny * r->nz_out, &lo, &hi, NULL);
  rc = write_volume(a, r);
  if (!rc && a->preview) rc = write_previews(a, r);
  if (!rc) print_summary(a, r, seconds, lo, hi);
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
  if (!rc) rc = cli_check_output_dir("fdk", a->out);
  if (!rc && a->preview) rc = cli_check_output_dir("fdk", a->preview);
  return rc;
}

int cmd_fdk(int argc, char **argv) {
  fdk_args a;
  memset(&a, 0, sizeof a);
  a.raw_dtype = a.out_dtype = CTR_DTYPE_FLOAT32;
  a.input_scale = 1.0;
  a.out_scale = 1000.0;
  a.fdk = (ctr_fdk_options)CTR_FDK_OPTIONS_INIT;
  a.fdk.window = CTR_WINDOW_HANN;
  a.common = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--geometry", "FILE", "geometry file (required)", cli_parse_string, &a.geometry, NULL},
      {"--projections", "FILE", "projection stack, nu x nv x views (required)", cli_parse_string,
       &a.projections, NULL},
      {"--out", "FILE", "volume to write (required)", cli_parse_string, &a.out, NULL},
      {"--format", "raw|tiff|tiff-stack|nrrd",
       "projection file format (default: from the extension)", cli_parse_format, &a.format, NULL},
      {"--raw-dtype", "float32|uint16", "data type of raw projections (default float32)",
       cli_parse_dtype, &a.raw_dtype, &a.raw_given},
      {"--raw-offset", "BYTES", "header bytes to skip in raw projections (default 0)",
       cli_parse_offset, &a.raw_offset, &a.raw_given},
      {"--input-scale", "F", "divide projection values by F, e.g. a uint16 scale (default 1)",
       cli_parse_positive, &a.input_scale, NULL},
      {"--filter", "NAME", "ram-lak, shepp-logan, cosine, hamming, hann (default hann)",
       parse_window, &a.fdk.window, NULL},
      {"--cutoff", "F", "filter cut-off as a fraction of Nyquist, 0 < F <= 1 (default 1)",
       parse_cutoff, &a.fdk.cutoff, NULL},
      {"--short-scan", "auto|off|parker",
       "Parker weights; auto: if the orbit is < 360 deg (default auto)", parse_short_scan,
       &a.fdk.short_scan, NULL},
      {"--interp", "MODE",
       "backprojection interpolation: auto, texture (GPU hardware, ~1e-3), exact (fp32, "
       "~1e-6) or precise (double positions on the GPU, ~1e-7); auto is texture on a GPU, exact "
       "on the CPU (default auto)",
       cli_parse_interp, &a.fdk.interp, NULL},
      {"--slices", "Z0:Z1", "reconstruct slices Z0 .. Z1-1 only (default: all)", parse_slices,
       a.slices, &a.slices_given},
      {"--out-format", "raw|tiff|tiff-stack|nrrd",
       "volume file format (default: from the extension)", cli_parse_format, &a.out_format, NULL},
      {"--out-dtype", "float32|uint16", "volume data type (default float32)", cli_parse_dtype,
       &a.out_dtype, NULL},
      {"--out-scale", "F", "uint16 stores value x F, clamped to 0..65535 (default 1000)",
       cli_parse_positive, &a.out_scale, NULL},
      {"--preview", "PREFIX", "write PREFIX_{xy,xz,yz}.png: the central slices", cli_parse_string,
       &a.preview, NULL},
      {"--preview-window", "LO:HI", "previews' grey window (default: 0.5 / 99.5 % percentiles)",
       parse_range, a.window, &a.window_given},
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_fdk, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  fdk_run r;
  memset(&r, 0, sizeof r);
  rc = check_args(&a, opts, &r);
  if (!rc) rc = run(&a, &r);
  cli_progress_end(&r.session);
  ctr_stack_close(r.reader);
  ctr_stack_abort(r.writer);
  cli_free_floats(r.proj);
  cli_free_floats(r.vol);
  ctr_context_free(r.ctx);
  ctr_geometry_free(r.g);
  return rc;
}
