/* `ctrecon fbp`: parallel-beam filtered back projection of sinograms, or of
 * projections with flat/dark correction (DXchange HDF5 included), slab of
 * slices by slab of slices. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_fbp = {
    "fbp",
    "parallel-beam filtered back projection (synchrotron)",
    "ctrecon fbp (--sinograms FILE | --projections FILE [--flat FILE] [--dark FILE]) --out FILE "
    "[options]",
    "Reconstructs slices from parallel-beam data: a stack of sinograms (nbins x\n"
    "nangles each), or projections (nbins x nrows each) with flat and dark fields,\n"
    "corrected, -log'ed and transposed into sinograms. A DXchange HDF5 file given as\n"
    "--projections scan.h5 reads /exchange/data, data_white, data_dark and theta. The\n"
    "slices are filtered (ramp with a window) and backprojected a batch at a time\n"
    "(--batch), so the output need not fit in memory. Angles come from --angles (a\n"
    "text file, degrees) or a uniform --angle-range. The rotation axis sits at\n"
    "--axis (bins, default the detector centre), optionally corrected per\n"
    "projection (--axis-shift FILE).",
    "  ctrecon fbp --sinograms sino.tif --out slices.nrrd --angle-range 180\n"
    "  ctrecon fbp --projections scan.h5 --rows 500:520 --out 'rec/s_%04d.tif' --axis 1021.5\n"
    "  ctrecon fbp --projections proj.tif --flat flat.tif --dark dark.tif --out rec.nrrd \\\n"
    "      --filter hann --bp-kernel tex --preview rec\n",
};

typedef struct fbp_args {
  const char *sinograms, *projections, *flat, *dark, *out, *angles, *shifts, *preview, *kernel;
  ctr_file_format out_format;
  double angle_start, angle_range, axis, voxel, pixel;
  int64_t size[2], rows[2], batch;
  int batch_given;
  int rows_given, axis_given, size_given, out_scale_given;
  ctr_fbp_options fbp;
  ctr_dtype out_dtype;
  double out_scale;
  cli_common common;
} fbp_args;

static int parse_rows(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b;
  int used = 0;
  if (sscanf(value, "%lld:%lld%n", &a, &b, &used) != 2 || value[used] || a < 0 || b <= a)
    return cli_usage_error(cmd, "%s '%s': expected R0:R1 with 0 <= R0 < R1", name, value);
  ((int64_t *)dst)[0] = a;
  ((int64_t *)dst)[1] = b;
  return 0;
}

static int parse_interp(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "linear")) *(ctr_fbp_interp *)dst = CTR_FBP_LINEAR;
  else if (!strcmp(value, "nearest")) *(ctr_fbp_interp *)dst = CTR_FBP_NEAREST;
  else return cli_usage_error(cmd, "%s '%s': expected linear or nearest", name, value);
  return 0;
}

static int parse_window(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_window_parse(value, (ctr_window *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected ram-lak, shepp-logan, cosine, hamming or hann",
                           name, value);
  return 0;
}

typedef struct fbp_run {
  ctr_context *ctx;
  cli_session session;
  ctr_stack_reader *in;
  ctr_stack_writer *out;
  ctr_parallel_geometry *g;
  int64_t nbins, nangles, nslices, row0;
  void *proj;    /* projections input: the current block of rows of every projection */
  float *flat, *dark, *sino, *slices, *xy, *xz, *yz;
  double *angles, *shifts;
  ctr_value_counts counts; /* bad data met (the data policy), reported once at the end */
} fbp_run;

/* A bare HDF5 file name (no ":/dataset" part): the DXchange layout. */
static int is_h5(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot && !strchr(dot, ':') &&
         (!strcmp(dot, ".h5") || !strcmp(dot, ".hdf5") || !strcmp(dot, ".nxs"));
}

static int open_input(const fbp_args *a, fbp_run *r) {
  const char *path = a->sinograms ? a->sinograms : a->projections;
  char buf[4200];
  if (a->projections && is_h5(path)) {
    snprintf(buf, sizeof buf, "%s:/exchange/data", path);
    path = buf;
  }
  ctr_status st = ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r->in);
  if (st != CTR_OK) return cli_fail_file("fbp", st, path);
  const ctr_stack_info *i = ctr_stack_reader_info(r->in);
  r->nbins = i->width;
  if (a->sinograms) {
    r->nangles = i->height;
    r->nslices = i->count;
    r->row0 = 0;
  } else {
    r->nangles = i->count;
    r->row0 = a->rows_given ? a->rows[0] : 0;
    const int64_t r1 = a->rows_given ? a->rows[1] : i->height;
    if (r1 > i->height)
      return cli_usage_error("fbp", "--rows %lld:%lld: '%s' has %lld rows", (long long)a->rows[0],
                             (long long)a->rows[1], path, (long long)i->height);
    r->nslices = r1 - r->row0;
  }
  return 0;
}

/* Flat and dark fields (stacks averaged). The projections themselves are
 * read a block of rows at a time (reconstruct). */
static int load_projections(const fbp_args *a, fbp_run *r) {
  const ctr_stack_info *i = ctr_stack_reader_info(r->in);
  const int64_t npix = i->width * i->height;
  int rc = 0;
  const char *names[2] = {a->flat, a->dark};
  float **dst[2] = {&r->flat, &r->dark};
  char buf[4200];
  const int h5 = is_h5(a->projections);
  for (int k = 0; k < 2; k++) {
    const char *path = names[k];
    if (!path && h5) {
      snprintf(buf, sizeof buf, "%s:/exchange/%s", a->projections, k ? "data_dark" : "data_white");
      path = buf;
    }
    if (!path) continue;
    ctr_stack_info info;
    void *data = NULL;
    ctr_status st = ctr_stack_load(path, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &data);
    if (st != CTR_OK) return cli_fail_file("fbp", st, path);
    if (info.width != i->width || info.height != i->height) {
      free(data);
      return cli_error("fbp", CLI_EXIT_INPUT, "'%s' holds images of %lld x %lld, the projections "
                       "are %lld x %lld", path, (long long)info.width, (long long)info.height,
                       (long long)i->width, (long long)i->height);
    }
    *dst[k] = cli_alloc_floats("fbp", npix, k ? "the dark field" : "the flat field", &rc);
    if (!rc) ctr_average_images(data, CTR_DTYPE_FLOAT32, npix, info.count, *dst[k]);
    free(data);
    if (rc) return rc;
  }
  if (!r->flat) {
    /* No flat field: the projections are taken as transmission already. */
    r->flat = cli_alloc_floats("fbp", npix, "the flat field", &rc);
    if (rc) return rc;
    for (int64_t p = 0; p < npix; p++) r->flat[p] = 1.0f;
    cli_warn("fbp", "no --flat given: projections are used as transmission (I / I0) directly");
  }
  return 0;
}

static int make_geometry(const fbp_args *a, fbp_run *r) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = r->nbins;
  p.nangles = r->nangles;
  p.angle_start_deg = a->angle_start;
  p.angle_range_deg = a->angle_range;
  int rc = 0;
  if (a->angles) {
    rc = cli_read_numbers("fbp", a->angles, "angles", r->nangles, &r->angles);
  } else if (a->projections && is_h5(a->projections)) {
    /* DXchange: the angles (degrees) come with the data. */
    int64_t n = 0;
    ctr_status st = ctr_hdf5_read_vector(a->projections, "/exchange/theta", &r->angles, &n);
    if (st != CTR_OK) return cli_fail_file("fbp", st, a->projections);
    if (n != r->nangles)
      return cli_error("fbp", CLI_EXIT_INPUT, "'%s': /exchange/theta holds %lld angles for %lld "
                       "projections", a->projections, (long long)n, (long long)r->nangles);
  }
  if (!rc && a->shifts) rc = cli_read_numbers("fbp", a->shifts, "axis shift", r->nangles, &r->shifts);
  if (rc) return rc;
  p.angles_deg = r->angles;
  p.axis_shift = r->shifts;
  if (a->axis_given) p.axis = a->axis;
  /* Unusual, not impossible: a warning. */
  if (a->axis_given && !(a->axis >= 0 && a->axis <= (double)(r->nbins - 1)))
    cli_warn("fbp", "--axis %g lies outside the detector's bins 0 .. %lld: the rotation axis is "
             "never seen; check --axis (bins, not mm)", a->axis, (long long)(r->nbins - 1));
  if (a->size_given) {
    p.nx = a->size[0];
    p.ny = a->size[1];
  }
  p.voxel = a->voxel;
  p.pixel_size = a->pixel;
  ctr_status st = ctr_parallel_create(&p, &r->g);
  return st == CTR_OK ? 0 : cli_fail("fbp", st);
}

static void keep_planes(fbp_run *r, int64_t s0, int64_t n) {
  const ctr_parallel_params *p = ctr_parallel_get(r->g);
  const int64_t nx = p->nx, ny = p->ny, plane = nx * ny;
  for (int64_t k = 0; k < n; k++) {
    const int64_t z = s0 + k;
    const float *s = r->slices + k * plane;
    if (z == r->nslices / 2) memcpy(r->xy, s, sizeof(float) * (size_t)plane);
    memcpy(r->xz + z * nx, s + (ny / 2) * nx, sizeof(float) * (size_t)nx);
    for (int64_t y = 0; y < ny; y++) r->yz[z * ny + y] = s[y * nx + nx / 2];
  }
}

/* One warning per kind of bad data the library met over every batch. */
static void report_counts(const fbp_args *a, const ctr_value_counts *c) {
  if (c->input)
    cli_warn("fbp", "'%s': %lld sinogram values NaN, infinite or beyond +-1e24 replaced by 0 "
             "(--strict makes this an error)", a->sinograms, (long long)c->input);
  if (c->calibration)
    cli_warn("fbp", "'%s' / '%s': %lld pixels with flat <= dark or a non-finite flat or dark: their "
             "sinogram values set to 0 (--strict makes this an error)",
             a->flat ? a->flat : a->projections, a->dark ? a->dark : "no dark (0)",
             (long long)c->calibration);
  if (c->clamped)
    cli_warn("fbp", "'%s': %lld transmissions (p - dark) / (flat - dark) below 1e-6 or NaN clamped "
             "to 1e-6 (--strict makes this an error)", a->projections, (long long)c->clamped);
  if (c->output)
    cli_warn("fbp", "'%s': %lld non-finite slice values stored as 0 (--strict makes this an error)",
             a->out, (long long)c->output);
}

static int reconstruct(const fbp_args *a, fbp_run *r, double *seconds) {
  const ctr_parallel_params *p = ctr_parallel_get(r->g);
  const int64_t plane = p->nx * p->ny, batch = a->batch < r->nslices ? a->batch : r->nslices;
  int rc = 0;
  if (a->sinograms) {
    r->sino = cli_alloc_floats("fbp", r->nbins * r->nangles * batch, "the sinograms", &rc);
  } else {
    const size_t bytes = (size_t)(r->nbins * r->nangles * batch) *
                         ctr_dtype_size(ctr_stack_reader_info(r->in)->dtype);
    r->proj = malloc(bytes);
    if (!r->proj) {
      char b[32];
      return cli_error("fbp", CLI_EXIT_RUNTIME, "out of memory for %lld rows of the projections "
                       "(%s); lower --batch", (long long)batch, cli_bytes((double)bytes, b, sizeof b));
    }
  }
  if (!rc) r->slices = cli_alloc_floats("fbp", plane * batch, "the slices", &rc);
  if (!rc && a->preview) {
    r->xy = cli_alloc_floats("fbp", plane, "the previews", &rc);
    if (!rc) r->xz = cli_alloc_floats("fbp", p->nx * r->nslices, "the previews", &rc);
    if (!rc) r->yz = cli_alloc_floats("fbp", p->ny * r->nslices, "the previews", &rc);
  }
  if (rc) return rc;
  ctr_stack_info info;
  memset(&info, 0, sizeof info);
  info.width = p->nx;
  info.height = p->ny;
  info.count = r->nslices;
  info.dtype = a->out_dtype;
  info.spacing[0] = info.spacing[1] = p->voxel * p->pixel_size;
  info.spacing[2] = p->pixel_size;
  ctr_status st = ctr_stack_create(a->out, a->out_format, &info, &r->out);
  if (st != CTR_OK) return cli_fail_file("fbp", st, a->out);
  if (r->session.direct_io < 0) ctr_stack_writer_set_direct_io(r->out, 0); /* --tune direct_io */
  const double t0 = cli_now();
  for (int64_t s0 = 0; s0 < r->nslices; s0 += batch) {
    const int64_t n = r->nslices - s0 < batch ? r->nslices - s0 : batch;
    if (cli_progress(&r->session, "fbp", (double)s0 / (double)r->nslices))
      return cli_fail("fbp", CTR_E_CANCELLED);
    const int64_t dims_v[3] = {p->nx, p->ny, n};
    ctr_array va = ctr_array_init(r->slices, CTR_DTYPE_FLOAT32, 3, dims_v);
    if (a->sinograms) {
      st = ctr_stack_read(r->in, s0, n, CTR_DTYPE_FLOAT32, r->sino);
      if (st != CTR_OK) return cli_fail_file("fbp", st, a->sinograms);
      const int64_t dims_s[3] = {r->nbins, r->nangles, n};
      const ctr_array sa = ctr_array_init(r->sino, CTR_DTYPE_FLOAT32, 3, dims_s);
      st = ctr_fbp(r->ctx, r->g, &a->fbp, &sa, &va);
    } else {
      /* Projections: this block of rows of every projection, then flat-field,
       * filter and backprojection in one call (on a GPU all on the device). */
      const ctr_stack_info *pi = ctr_stack_reader_info(r->in);
      st = ctr_stack_read_rows(r->in, 0, r->nangles, r->row0 + s0, n, pi->dtype, r->proj);
      if (st != CTR_OK) return cli_fail_file("fbp", st, a->projections);
      const int64_t dims_p[3] = {r->nbins, n, r->nangles};
      const ctr_array pa = ctr_array_init(r->proj, pi->dtype, 3, dims_p);
      const int64_t off = (r->row0 + s0) * r->nbins;
      st = ctr_fbp_projections(r->ctx, r->g, &a->fbp, &pa, r->flat + off,
                               r->dark ? r->dark + off : NULL, 0, &va);
    }
    /* The input named: bad values in it are the likely cause. */
    if (st != CTR_OK) return cli_fail_file("fbp", st, a->sinograms ? a->sinograms : a->projections);
    if (a->preview) keep_planes(r, s0, n);
    if (a->out_dtype == CTR_DTYPE_UINT16) {
      int64_t below = 0, above = 0;
      cli_scale_for_uint16(r->slices, plane * n, a->out_scale, &below, &above);
    }
    st = ctr_stack_write(r->out, s0, n, CTR_DTYPE_FLOAT32, r->slices);
    if (st != CTR_OK) return cli_fail_file("fbp", st, a->out);
  }
  cli_progress(&r->session, "fbp", 1.0);
  report_counts(a, &r->counts);
  st = ctr_stack_commit(r->out);
  r->out = NULL;
  if (st != CTR_OK) return cli_fail_file("fbp", st, a->out);
  *seconds = cli_now() - t0;
  return 0;
}

int cmd_fbp(int argc, char **argv) {
  fbp_args a;
  memset(&a, 0, sizeof a);
  a.angle_range = 180.0;
  a.batch = 16;
  a.fbp = (ctr_fbp_options)CTR_FBP_OPTIONS_INIT;
  a.out_dtype = CTR_DTYPE_FLOAT32;
  a.out_scale = 1000.0;
  a.common = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--sinograms", "FILE", "stack of sinograms, nbins x nangles each (this or --projections)",
       cli_parse_string, &a.sinograms, NULL},
      {"--projections", "FILE", "stack of projections, nbins x nrows each, or a DXchange .h5 "
       "(this or --sinograms)", cli_parse_string, &a.projections, NULL},
      {"--flat", "FILE", "flat (white) fields, averaged (default: DXchange's, else none)",
       cli_parse_string, &a.flat, NULL},
      {"--dark", "FILE", "dark fields, averaged (default: DXchange's, else 0)", cli_parse_string,
       &a.dark, NULL},
      {"--rows", "R0:R1", "projection rows to reconstruct (default: all)", parse_rows, a.rows,
       &a.rows_given},
      {"--out", "FILE", "slices to write: .raw, .nrrd, .tif, a %04d TIFF stack or file.h5[:/dataset] "
       "(required)", cli_parse_string, &a.out, NULL},
      {"--out-format", "raw|tiff|tiff-stack|nrrd|hdf5", "slice file format (default: from the "
       "extension)", cli_parse_format, &a.out_format, NULL},
      {"--out-dtype", "float32|uint16", "slice data type (default float32)", cli_parse_dtype,
       &a.out_dtype, NULL},
      {"--out-scale", "F", "uint16 stores value x F, clamped (default 1000)", cli_parse_positive,
       &a.out_scale, &a.out_scale_given},
      {"--angles", "FILE", "projection angles in degrees, one per projection (default: uniform)",
       cli_parse_string, &a.angles, NULL},
      {"--angle-start", "DEG", "first angle of a uniform scan (default 0)", cli_parse_double,
       &a.angle_start, NULL},
      {"--angle-range", "DEG", "range of a uniform scan (default 180)", cli_parse_double,
       &a.angle_range, NULL},
      {"--axis", "BIN", "rotation axis position in bins (default: the detector centre)",
       cli_parse_double, &a.axis, &a.axis_given},
      {"--axis-shift", "FILE", "per-projection axis correction in bins (default none)",
       cli_parse_string, &a.shifts, NULL},
      {"--size", "N|NXxNY", "slice size in pixels (default nbins x nbins)", cli_parse_size2, a.size,
       &a.size_given},
      {"--voxel", "BINS", "slice pixel size in detector bins (default 1)", cli_parse_positive,
       &a.voxel, NULL},
      {"--pixel-size", "MM", "detector bin size; slices come out per mm (default 1)",
       cli_parse_positive, &a.pixel, NULL},
      {"--filter", "NAME", "ram-lak, shepp-logan, cosine, hamming, hann (default ram-lak)",
       parse_window, &a.fbp.window, NULL},
      {"--interp", "linear|nearest", "interpolation between bins (default linear)", parse_interp,
       &a.fbp.interp, NULL},
      {"--bp-kernel", "NAME",
       "GPU kernel: auto, tex, tex2, tex-mp, tex4h, alu, alu2, alu2-h, alu-os, alu2-os, hybrid "
       "(default auto: the fastest exact one, tuned on first use and cached; docs/parallel-beam.md)", cli_parse_string, &a.kernel, NULL},
      {"--batch", "N", "slices filtered and backprojected at a time (default 16 on the CPU, 64 "
       "per GPU)", cli_parse_count, &a.batch, &a.batch_given},
      {"--preview", "PREFIX", "write PREFIX_{xy,xz,yz}.png: the central planes", cli_parse_string,
       &a.preview, NULL},
      CLI_STRICT_OPTION(&a.fbp.strict),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_fbp, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  a.fbp.kernel = a.kernel;
  if (!a.sinograms == !a.projections)
    return cli_usage_error("fbp", "give exactly one of --sinograms and --projections");
  /* Options that would do nothing are errors, not silently ignored. */
  if (a.sinograms && (a.rows_given || a.flat || a.dark))
    return cli_usage_error("fbp", "%s applies to --projections only (sinograms are already "
                           "flat-fielded, one per row): drop it, or give --projections",
                           a.rows_given ? "--rows" : a.flat ? "--flat" : "--dark");
  if (a.out_scale_given && a.out_dtype != CTR_DTYPE_UINT16)
    return cli_usage_error("fbp", "--out-scale applies to --out-dtype uint16 only (float32 stores "
                           "the values as they are): drop it, or add --out-dtype uint16");
  rc = cli_require("fbp", opts, "--out", a.out);
  if (!rc) rc = cli_resolve_format("fbp", "--out", "--out-format", a.out, a.out_format, &a.out_format);
  const cli_file in[] = {{"--sinograms", a.sinograms}, {"--projections", a.projections},
                         {"--flat", a.flat},           {"--dark", a.dark},
                         {"--angles", a.angles},       {"--axis-shift", a.shifts},
                         {0}};
  const cli_file out[] = {{"--out", a.out}, {"--preview", a.preview}, {0}};
  if (!rc) rc = cli_check_files("fbp", in, out);
  if (rc) return rc;
  fbp_run r;
  memset(&r, 0, sizeof r);
  double seconds = 0;
  rc = open_input(&a, &r);
  if (!rc && a.projections) rc = load_projections(&a, &r);
  if (!rc) rc = make_geometry(&a, &r);
  if (!rc) rc = cli_context_create(&r.session, "fbp", &a.common, &r.ctx);
  if (!rc && r.session.direct_io < 0) ctr_stack_reader_set_direct_io(r.in, 0); /* --tune direct_io */
  if (!rc && a.kernel && ctr_context_device(r.ctx) != CTR_DEVICE_CUDA)
    rc = cli_usage_error("fbp", "--bp-kernel %s chooses a GPU kernel, and this run uses the CPU "
                         "(no usable GPU or --device cpu): drop --bp-kernel or run on a GPU",
                         a.kernel);
  a.fbp.counts = &r.counts;
  /* several GPUs share each batch's chunks: give each enough */
  if (!rc && !a.batch_given && ctr_context_device(r.ctx) == CTR_DEVICE_CUDA)
    a.batch = 64 * (int64_t)(ctr_context_device_count(r.ctx) > 0 ? ctr_context_device_count(r.ctx) : 1);
  if (!rc) rc = reconstruct(&a, &r, &seconds);
  cli_progress_end(&r.session);
  if (!rc && a.preview) {
    const ctr_parallel_params *p = ctr_parallel_get(r.g);
    ctr_status st = ctr_png_preview_planes(a.preview, r.xy, r.xz, r.yz, p->nx, p->ny, r.nslices, 0, 0);
    if (st != CTR_OK) rc = cli_fail_file("fbp", st, a.preview);
  }
  if (!rc) {
    const ctr_parallel_params *p = ctr_parallel_get(r.g);
    const double ups = (double)r.nangles * (double)(p->nx * p->ny) * (double)r.nslices;
    cli_info(&r.session, "fbp: %lld slices of %lld x %lld from %lld angles x %lld bins, %.2f s "
             "(%.1f GUPS, I/O included)\nwrote %s\n", (long long)r.nslices, (long long)p->nx,
             (long long)p->ny, (long long)r.nangles, (long long)r.nbins, seconds,
             ups / (seconds > 1e-9 ? seconds : 1e-9) / 1e9, a.out);
  }
  ctr_stack_abort(r.out);
  ctr_stack_close(r.in);
  ctr_parallel_free(r.g);
  ctr_context_free(r.ctx);
  free(r.proj);
  cli_free_floats(r.flat);
  cli_free_floats(r.dark);
  cli_free_floats(r.sino);
  cli_free_floats(r.slices);
  cli_free_floats(r.xy);
  cli_free_floats(r.xz);
  cli_free_floats(r.yz);
  free(r.angles);
  free(r.shifts);
  return rc;
}
