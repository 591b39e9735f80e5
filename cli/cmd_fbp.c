/* `ctrecon fbp`: parallel-beam filtered back projection of sinograms, or of
 * projections with flat/dark correction (DXchange HDF5 included), with the
 * synchrotron corrections: a thin caller of ctr_fbp_stream (the band loop,
 * the reader and writer threads, the journal are the library's). */
#include "cmd_fbp.h"

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
    "slices are reconstructed a band of --batch slices at a time, streamed: a reader\n"
    "thread reads each band's rows of every projection once, the GPU (or CPU)\n"
    "corrects and reconstructs, a writer thread writes (OUT.partial with a journal:\n"
    "--resume continues an interrupted run). Angles come from --angles (a text\n"
    "file, degrees) or a uniform --angle-range. The rotation axis is found from the\n"
    "data and printed unless --axis gives it (bins). Corrections (docs/synchrotron.md):\n"
    "--dezinger, --stripe (stripe removal), --paganin-delta-beta (phase retrieval),\n"
    "--stitch-360 (360-degree scans with the axis near the detector's edge), --bin,\n"
    "--angle-subset.",
    "  ctrecon fbp --sinograms sino.tif --out slices.nrrd --angle-range 180\n"
    "  ctrecon fbp --projections scan.h5 --rows 500:520 --out 'rec/s_%04d.tif' --axis 1021.5\n"
    "  ctrecon fbp --projections scan.h5 --out rec.h5 --stripe sorting \\\n"
    "      --paganin-delta-beta 200 \\\n"
    "      --energy 25 --distance 150 --pixel-size 0.00065 --out-dtype float16\n"
    "  ctrecon fbp --projections proj.tif --flat flat.tif --dark dark.tif --out rec.nrrd \\\n"
    "      --window hann --bp-kernel tex --preview rec\n"
    "  ctrecon fbp --sinograms lamino.nrrd --tilt 20 --slices 24 --angle-range 360 \\\n"
    "      --axis 31.5 --out layers.nrrd --device cpu\n",
};


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

static int parse_accumulate(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "off")) *(int *)dst = CTR_LIVE_ACCUMULATE_OFF;
  else if (!strcmp(value, "on")) *(int *)dst = CTR_LIVE_ACCUMULATE_ON;
  else if (!strcmp(value, "auto")) *(int *)dst = CTR_LIVE_ACCUMULATE_AUTO;
  else return cli_usage_error(cmd, "%s '%s': expected off, on or auto", name, value);
  return 0;
}

static int parse_window(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_window_parse(value, (ctr_window *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected ram-lak, shepp-logan, cosine, hamming or hann",
                           name, value);
  return 0;
}

/* --axis BIN or auto */
static int parse_axis(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "auto")) {
    *(double *)dst = CTR_AXIS_AUTO;
    return 0;
  }
  return cli_parse_double(cmd, name, value, dst);
}

static int parse_center_method(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "auto")) *(ctr_center_method *)dst = CTR_CENTER_AUTO;
  else if (!strcmp(value, "vo")) *(ctr_center_method *)dst = CTR_CENTER_VO;
  else if (!strcmp(value, "correlation")) *(ctr_center_method *)dst = CTR_CENTER_CORRELATION;
  else return cli_usage_error(cmd, "%s '%s': expected auto, vo or correlation", name, value);
  return 0;
}

static int parse_rings(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "none")) *(ctr_stripe_method *)dst = CTR_STRIPE_NONE;
  else if (!strcmp(value, "sorting")) *(ctr_stripe_method *)dst = CTR_STRIPE_SORTING;
  else if (!strcmp(value, "wavelet")) *(ctr_stripe_method *)dst = CTR_STRIPE_WAVELET;
  else return cli_usage_error(cmd, "%s '%s': expected none, sorting or wavelet", name, value);
  return 0;
}

static int parse_int(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  const long v = strtol(value, &end, 10);
  /* 0 would select the library's default: each of these is documented from 1 */
  if (*end || end == value || v < 1 || v > 100000)
    return cli_usage_error(cmd, "%s '%s': expected a whole number >= 1", name, value);
  *(int *)dst = (int)v;
  return 0;
}


/* --angle-subset A0:A1[:STEP] */
static int parse_subset(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b, step = 1;
  int used = 0;
  int64_t *d = dst;
  if ((sscanf(value, "%lld:%lld:%lld%n", &a, &b, &step, &used) == 3 ||
       (used = 0, sscanf(value, "%lld:%lld%n", &a, &b, &used) == 2)) &&
      !value[used] && a >= 0 && b > a && step >= 1) {
    d[0] = a;
    d[1] = b;
    d[2] = step;
    return 0;
  }
  return cli_usage_error(cmd, "%s '%s': expected A0:A1 or A0:A1:STEP with 0 <= A0 < A1, STEP >= 1",
                         name, value);
}

typedef struct fbp_run {
  ctr_context *ctx;
  cli_session session;
  ctr_stack_reader *in;
  int64_t nbins, nangles, height;
  float *flat, *dark, *xy, *xz, *yz;
  int64_t nx, ny, nslices;
  double *angles, *shifts;
  ctr_fbp_stream_report report;
  ctr_cluster *cluster; /* under mpirun or srun with several ranks */
  double seconds;       /* the run's */
  double t_start, t_open, t_input, t_context; /* cli_now() before and after the steps before it */
} fbp_run;

/* A bare HDF5 file name (no ":/dataset" part): the DXchange layout. */
static int is_h5(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot && !strchr(dot, ':') &&
         (!strcmp(dot, ".h5") || !strcmp(dot, ".hdf5") || !strcmp(dot, ".nxs"));
}

/* DXchange's angles: 1 and the angles (degrees) of /exchange/theta in *out
 * when `path` holds it, 0 when it has none (nothing kept), -1 (printed)
 * when it cannot be read. */
static int dxchange_theta(const char *path, double **out, int64_t *n, int *said) {
  ctr_status st = ctr_hdf5_read_angles(path, "/exchange/theta", out, n, said);
  if (st == CTR_OK) return 1;
  if (st == CTR_E_FORMAT && strstr(ctr_error_detail(), "has no dataset")) return 0;
  cli_fail_file("fbp", st, path);
  return -1;
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
  const ctr_stack_info *i = ctr_stack_reader_get_info(r->in);
  r->nbins = i->width;
  r->nangles = a->sinograms ? i->height : i->count;
  r->height = a->sinograms ? i->count : i->height;
  if (a->rows_given && a->rows[1] > r->height)
    return cli_usage_error("fbp", "--rows %lld:%lld: '%s' has %lld rows", (long long)a->rows[0],
                           (long long)a->rows[1], path, (long long)r->height);
  if (a->subset_given && a->subset[1] > r->nangles)
    return cli_usage_error("fbp", "--angle-subset %lld:%lld: '%s' has %lld projections",
                           (long long)a->subset[0], (long long)a->subset[1], path,
                           (long long)r->nangles);
  if (a->subset_given && (a->subset[1] - a->subset[0] + a->subset[2] - 1) / a->subset[2] < 2)
    return cli_usage_error("fbp", "--angle-subset %lld:%lld:%lld selects 1 projection of the "
                           "%lld: a reconstruction needs at least 2", (long long)a->subset[0],
                           (long long)a->subset[1], (long long)a->subset[2],
                           (long long)r->nangles);
  return 0;
}

/* Flat and dark fields (stacks averaged). The projections themselves are
 * read by the library, a band of rows at a time. */
static int load_projections(const fbp_args *a, fbp_run *r) {
  const ctr_stack_info *i = ctr_stack_reader_get_info(r->in);
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
    ctr_stack_info info = CTR_STACK_INFO_INIT;
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
    if (!rc) ctr_flatfield_average(data, CTR_DTYPE_FLOAT32, npix, info.count, *dst[k]);
    free(data);
    if (rc) return rc;
  }
  if (!r->flat)
    cli_warn("fbp", "no --flat given: projections are used as transmission (I / I0) directly");
  return 0;
}

/* The parameters of the input as read (the library derives the slices'
 * geometry from them and the corrections). */
/* The parameters of --geometry FILE for data of r's bins and angles. */
static int file_params(const fbp_args *a, const fbp_run *r, ctr_parallel_params *p) {
  *p = *ctr_parallel_get_params(a->pgeom);
  if (p->nbins != r->nbins || p->nangles != r->nangles)
    return cli_error("fbp", CLI_EXIT_INPUT, "--geometry %s describes %lld bins x %lld angles, and "
                     "the %s have %lld bins x %lld angles", a->geometry, (long long)p->nbins,
                     (long long)p->nangles, a->sinograms ? "sinograms" : "projections",
                     (long long)r->nbins, (long long)r->nangles);
  if (p->tilt_deg != 0.0 && p->nrows != r->height)
    return cli_error("fbp", CLI_EXIT_INPUT, "--geometry %s: a tilted axis with nrows %lld, and "
                     "the sinograms hold %lld detector rows", a->geometry, (long long)p->nrows,
                     (long long)r->height);
  return 0;
}

static int make_params(const fbp_args *a, fbp_run *r, ctr_parallel_params *p) {
  if (a->pgeom) return file_params(a, r, p);
  *p = (ctr_parallel_params)CTR_PARALLEL_PARAMS_INIT;
  p->nbins = r->nbins;
  p->nangles = r->nangles;
  p->angle_start_deg = a->angle_start;
  p->angle_range_deg = a->angle_range;
  int rc = 0;
  if (a->angles || !a->projections || !is_h5(a->projections)) {
    rc = cli_parallel_angles("fbp", a->angles, a->angle_units, r->nangles, &r->angles,
                             &p->angle_start_deg, &p->angle_range_deg);
  } else {
    /* DXchange: the angles come with the data, where it has them, in the
     * units of theta's units attribute (else --angle-units, else degrees). */
    int64_t n = 0;
    int said = 0;
    const int has = dxchange_theta(a->projections, &r->angles, &n, &said);
    if (has < 0) return CLI_EXIT_INPUT;
    if (!has && !a->uniform_given)
      return cli_error("fbp", CLI_EXIT_INPUT, "'%s' has no /exchange/theta: give the angles with "
                       "--angles FILE, or --angle-start and --angle-range for a uniform scan",
                       a->projections);
    if (!has) {
      rc = cli_parallel_angles("fbp", NULL, a->angle_units, r->nangles, &r->angles,
                               &p->angle_start_deg, &p->angle_range_deg);
    } else {
      if (n != r->nangles)
        return cli_error("fbp", CLI_EXIT_INPUT, "'%s': /exchange/theta holds %lld angles for %lld "
                         "projections", a->projections, (long long)n, (long long)r->nangles);
      char from[4200];
      snprintf(from, sizeof from, "/exchange/theta of '%s', without a units attribute: "
               "units=\"rad\" or \"deg\" there says which", a->projections);
      cli_angles_in_degrees("fbp", said ? CLI_ANGLES_DEG : a->angle_units, said, r->angles, n,
                            NULL, NULL, from);
    }
  }
  if (!rc && a->shifts) rc = cli_read_numbers("fbp", a->shifts, "axis shift", r->nangles, &r->shifts);
  if (rc) return rc;
  p->angles_deg = r->angles;
  p->axis_shift = r->shifts;
  p->axis = a->axis_given ? a->axis : CTR_AXIS_AUTO;
  /* Unusual, not impossible: a warning. */
  if (a->axis_given && a->axis != CTR_AXIS_AUTO) cli_warn_axis("fbp", a->axis, r->nbins);
  if (a->size_given) {
    p->nx = a->size[0];
    p->ny = a->size[1];
  }
  p->voxel = a->voxel;
  p->pixel_size = a->pixel;
  return 0;
}

/* The central planes for the previews, as bands pass. */
static void keep_planes(void *user, int64_t z0, int64_t n, int64_t nx, int64_t ny,
                        const float *slices) {
  fbp_run *r = user;
  if (!r->xy) {
    r->nx = nx;
    r->ny = ny;
    r->xy = calloc((size_t)(nx * ny), sizeof(float));
    r->xz = calloc((size_t)(nx * r->nslices), sizeof(float));
    r->yz = calloc((size_t)(ny * r->nslices), sizeof(float));
  }
  if (!r->xy || !r->xz || !r->yz) return;
  const int64_t plane = nx * ny;
  for (int64_t k = 0; k < n; k++) {
    const int64_t z = z0 + k;
    const float *s = slices + k * plane;
    if (z == r->nslices / 2) memcpy(r->xy, s, sizeof(float) * (size_t)plane);
    memcpy(r->xz + z * nx, s + (ny / 2) * nx, sizeof(float) * (size_t)nx);
    for (int64_t y = 0; y < ny; y++) r->yz[z * ny + y] = s[y * nx + nx / 2];
  }
}

static const char *method_name(ctr_center_method m) {
  return m == CTR_CENTER_VO ? "Vo et al. 2014's double-wedge metric"
         : m == CTR_CENTER_CORRELATION ? "the correlation of opposite projections"
                                       : "auto";
}

/* A tilted axis (--tilt, laminography): every slice needs every detector
 * row, so the sinograms (nbins x nangles x nrows) are loaded whole and
 * reconstructed in memory by ctr_fbp on the context's device (ctr_fbp_stream's bands of
 * rows refuse a tilt); the axis is given, not searched for. */
static int reconstruct_lamino(fbp_args *a, fbp_run *r, double *seconds) {
  ctr_parallel_params p;
  int rc = make_params(a, r, &p);
  if (rc) return rc;
  if (p.axis == CTR_AXIS_AUTO) {
    p.axis = CTR_AXIS_CENTER;
    cli_warn("fbp", "--tilt: the axis is not searched for (the search works on untilted slices): "
             "the detector's centre, bin %.1f; give --axis BIN for another",
             0.5 * (double)(r->nbins - 1));
  }
  p.tilt_deg = a->tilt;
  p.nrows = r->height;
  ctr_parallel_geometry *g = NULL;
  ctr_status st = ctr_parallel_create(&p, &g);
  if (st != CTR_OK) return cli_fail("fbp", st);
  const ctr_parallel_params *q = ctr_parallel_get_params(g);
  const int64_t nx = q->nx, ny = q->ny, nz = a->tilt_slices ? a->tilt_slices : r->height;
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  void *data = NULL;
  float *vol = NULL;
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  const double t0 = cli_now();
  st = ctr_stack_load(a->sinograms, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &data);
  if (st != CTR_OK) {
    rc = cli_fail_file("fbp", st, a->sinograms);
    goto done;
  }
  float *sino = data;
  if (a->input_scale != 1.0)
    for (int64_t i = 0, n = info.width * info.height * info.count; i < n; i++)
      sino[i] = (float)(sino[i] / a->input_scale);
  vol = cli_alloc_floats("fbp", nx * ny * nz, "the slices", &rc);
  if (rc) goto done;
  const int64_t sd[3] = {info.width, info.height, info.count}, vd[3] = {nx, ny, nz};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  a->fbp.counts = &counts;
  st = ctr_fbp(r->ctx, g, &a->fbp, &sa, &va);
  a->fbp.counts = NULL;
  cli_progress_end(&r->session);
  if (st != CTR_OK) {
    rc = cli_fail_file("fbp", st, a->sinograms);
    goto done;
  }
  const double pitch = q->pixel_size;
  const ctr_stack_info oi = {CTR_STACK_INFO_VERSION, nx, ny, nz, CTR_DTYPE_FLOAT32,
                             {q->voxel * pitch, q->voxel * pitch, pitch}, {0, 0, 0}};
  st = ctr_stack_save(a->out, a->out_format, &oi, CTR_DTYPE_FLOAT32, vol, a->force);
  if (st != CTR_OK) {
    rc = cli_fail_file("fbp", st, a->out);
    goto done;
  }
  r->nslices = nz;
  if (a->preview) keep_planes(r, 0, nz, nx, ny, vol);
  ctr_fbp_stream_report *rep = &r->report;
  *rep = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  rep->axis = q->axis;
  rep->nbins = q->nbins, rep->nangles = q->nangles;
  rep->nslices = nz, rep->nx = nx, rep->ny = ny;
  rep->bad_input = counts.input, rep->bad_output = counts.output;
done:
  *seconds = cli_now() - t0;
  free(data);
  cli_free_floats(vol);
  ctr_parallel_free(g);
  return rc;
}

static int reconstruct(fbp_args *a, fbp_run *r, double *seconds) {
  if (a->tilt != 0.0) return reconstruct_lamino(a, r, seconds);
  ctr_parallel_params p;
  int rc = make_params(a, r, &p);
  if (rc) return rc;
  ctr_fbp_stream_options so;
  fbp_stream_options(a, &so);
  so.cluster = r->cluster;
  const int64_t rows = so.nrows ? so.nrows : r->height - so.row0;
  r->nslices = rows / (a->corr.bin_y > 1 ? a->corr.bin_y : 1);
  if (a->preview) {
    so.on_slices = keep_planes;
    so.user = r;
  }
  r->report = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  /* the counts come back in the report: the library says nothing, report_counts names
   * the files once */
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  a->fbp.counts = &counts;
  const double t0 = cli_now();
  ctr_status st = ctr_fbp_stream(r->ctx, &p, &so, r->in, r->flat, r->dark, a->out, a->out_format,
                                 &r->report);
  a->fbp.counts = NULL;
  *seconds = cli_now() - t0;
  cli_cluster_settle(r->cluster);
  cli_progress_end(&r->session);
  if (st == CTR_OK) return 0;
  /* a refusal (an interrupted run there, another run's journal) says what to do itself */
  if (r->report.resumable && st != CTR_E_INVALID_ARGUMENT) {
    const int code = cli_exit_code(st);
    fprintf(stderr, "ctrecon fbp: error: %s\n",
            cli_status_text(st));
    fprintf(stderr, "ctrecon fbp: '%s' was not written; its finished bands are kept in %s.partial "
            "(journal %s.partial.journal): repeat the command with --resume to continue\n",
            a->out, a->out, a->out);
    return code;
  }
  /* the input named: bad values in it are the likely cause (a distributed
   * run's message names the rank and what failed there) */
  const int blank = strstr(ctr_error_detail(), "no rotation axis can be found") != NULL;
  const int code = r->cluster ? cli_fail("fbp", st)
                              : cli_fail_file("fbp", st, a->sinograms ? a->sinograms : a->projections);
  if (blank)
    fprintf(stderr, "ctrecon fbp: the rotation axis cannot be found from these data: give it with "
            "--axis BIN (or check the input and its --rows / --center-row)\n");
  return code;
}

/* The inputs and outputs: options that would do nothing are errors, not
 * silently ignored. */
/* --tilt: what the in-memory laminography path does not do is an error. */
static int check_tilt(fbp_args *a) {
  int rc = cli_tilt("fbp", a->angle_units, &a->tilt, a->tilt_slices);
  if (rc || a->tilt == 0.0) return rc;
  const char *what = a->follow || a->input ? "--follow / --input (the live mode)"
                     : a->projections ? "--projections (make sinograms of every row: --tilt takes "
                                      "--sinograms, nbins x nangles x rows)"
                     : a->rows_given ? "--rows (every slice needs every row; --slices sets the "
                                       "slices)"
                     : a->subset_given ? "--angle-subset"
                     : a->resume ? "--resume"
                     : a->kernel ? "--bp-kernel (laminography has one backprojector)"
                     : a->out_dtype != CTR_DTYPE_FLOAT32 ? "--out-dtype other than float32"
                     : a->corr.dezinger > 0 || a->corr.stripe != CTR_STRIPE_NONE ||
                             a->corr.stitch_360 || a->corr.paganin_delta_beta > 0
                         ? "the corrections (--dezinger, --stripe, --paganin-delta-beta, "
                           "--stitch-360)"
                     : a->center_row_given || a->center_range_given ||
                             a->corr.center_method != CTR_CENTER_AUTO
                         ? "the axis search (--center-*): give --axis BIN"
                         : NULL;
  if (what)
    return cli_usage_error("fbp", "--tilt %g (laminography) reconstructs whole sinograms in "
                           "memory and does not take %s", a->tilt, what);
  return 0;
}

int fbp_check_inputs(fbp_args *a) {
  const int live = a->follow || a->input;
  if (live && a->sinograms)
    return cli_usage_error("fbp", "--follow reconstructs projections as they arrive: drop "
                           "--sinograms");
  if (live && !a->input == !a->projections)
    return cli_usage_error("fbp", "--follow takes --projections FILE.h5 (a DXchange file that "
                           "grows) or --input tcp://HOST:PORT (a socket): give one");
  if (live && a->uniform_given)
    return cli_usage_error("fbp", "--angle-start and --angle-range: the live mode takes the "
                           "angles from the source (theta, the frames' headers) or --angles FILE");
  if (live && a->subset_given)
    return cli_usage_error("fbp", "--angle-subset: the live mode reconstructs every projection "
                           "of the scan");
  if (!live && !a->sinograms == !a->projections)
    return cli_usage_error("fbp", "give exactly one of --sinograms and --projections");
  int rc = check_tilt(a);
  if (rc) return rc;
  /* Options that would do nothing are errors, not silently ignored. */
  if (a->sinograms && (a->flat || a->dark || a->corr.paganin_delta_beta > 0 || (a->bin_given && a->bin[1] > 1)))
    return cli_usage_error("fbp", "%s applies to --projections only (sinograms are already "
                           "flat-fielded, one per row): drop it, or give --projections",
                           a->flat ? "--flat" : a->dark ? "--dark" : a->corr.paganin_delta_beta > 0
                           ? "--paganin-delta-beta" : "--bin NXxNY with NY > 1");
  if ((a->out_scale_given || a->out_range_given) && a->out_dtype != CTR_DTYPE_UINT16)
    return cli_usage_error("fbp", "--out-scale, --out-offset and --out-range apply to --out-dtype "
                           "uint16 only (float32 and float16 store the values as they are): drop "
                           "them, or add --out-dtype uint16");
  if (a->input_scale != 1.0 && !a->sinograms)
    return cli_usage_error("fbp", "--input-scale applies to --sinograms: the flat-field "
                           "correction of --projections cancels their scale");
  if (a->out_range_given && a->out_scale_given)
    return cli_usage_error("fbp", "--out-range sets --out-scale and --out-offset: give one or the "
                           "others");
  if (a->out_range_given) {
    a->out_offset = a->out_range[0];
    a->out_scale = 65535.0 / (a->out_range[1] - a->out_range[0]);
  }
  if (a->corr.paganin_delta_beta > 0 && (!(a->corr.energy_kev > 0) || !(a->corr.distance_mm > 0) ||
                                        !(a->pixel > 0)))
    return cli_usage_error("fbp", "--paganin-delta-beta needs --energy KEV, --distance MM and "
                           "--pixel-size MM (the detector pixel)");
  if ((a->corr.energy_kev > 0 || a->corr.distance_mm > 0) && !(a->corr.paganin_delta_beta > 0))
    return cli_usage_error("fbp", "--energy and --distance apply to --paganin-delta-beta only: "
                           "add --paganin-delta-beta DELTA/BETA or drop them");
  if (a->uniform_given && a->angles)
    return cli_usage_error("fbp", "--angle-start and --angle-range describe a uniform scan; the "
                           "angles come from --angles: drop them");
  if (a->uniform_given && a->projections && is_h5(a->projections) && !live) {
    double *theta = NULL;
    int64_t n = 0;
    const int has = dxchange_theta(a->projections, &theta, &n, NULL);
    free(theta);
    if (has < 0) return CLI_EXIT_INPUT;
    if (has)
      return cli_usage_error("fbp", "--angle-start and --angle-range describe a uniform scan; "
                             "the angles come from '%s':/exchange/theta: drop them",
                             a->projections);
  }
  return 0;
}

/* The corrections' options, each with what it applies to; their values
 * into a->corr. */
int fbp_check_corrections(fbp_args *a) {
  if (a->dezinger_size_given && !(a->corr.dezinger > 0))
    return cli_usage_error("fbp", "--dezinger-size applies to --dezinger T: add it or drop "
                           "--dezinger-size");
  if (a->ring_size_given && a->corr.stripe != CTR_STRIPE_SORTING)
    return cli_usage_error("fbp", "--stripe-size applies to --stripe sorting");
  if ((a->ring_level_given || a->ring_sigma_given || a->ring_wavelet_given) &&
      a->corr.stripe != CTR_STRIPE_WAVELET)
    return cli_usage_error("fbp", "%s applies to --stripe wavelet", a->ring_level_given ?
                           "--stripe-level" : a->ring_sigma_given ? "--stripe-sigma" :
                           "--stripe-wavelet");
  if (a->center_row_given && a->axis_given && a->axis != CTR_AXIS_AUTO)
    return cli_usage_error("fbp", "--center-row chooses the row the axis is found in; --axis %g "
                           "gives it: drop one", a->axis);
  if (a->center_range_given) {
    a->corr.center_min = a->center_range[0];
    a->corr.center_max = a->center_range[1];
  }
  if ((a->center_range_given || a->corr.center_method != CTR_CENTER_AUTO) && a->axis_given &&
      a->axis != CTR_AXIS_AUTO)
    return cli_usage_error("fbp", "--center-method and --center-range choose how the axis is found; "
                           "--axis %g gives it: drop one", a->axis);
  if (a->bin_given) {
    a->corr.bin_x = (int)a->bin[0];
    a->corr.bin_y = (int)a->bin[1];
  }
  return 0;
}

static int check_files(fbp_args *a, const cli_opt *opts) {
  int rc = cli_require("fbp", opts, "--out", a->out);
  if (!rc)
    rc = cli_resolve_format("fbp", "--out", "--out-format", a->out, a->out_format,
                            &a->out_format);
  const cli_file in[] = {{"--sinograms", a->sinograms}, {"--projections", a->projections},
                         {"--flat", a->flat},           {"--dark", a->dark},
                         {"--angles", a->angles},       {"--axis-shift", a->shifts},
                         {0}};
  const cli_output out[] = {{"--out", a->out, CLI_OUT_DATA},
                          {"--preview", a->preview, CLI_OUT_PREVIEW}, {0}};
  if (!rc) rc = cli_check_files("fbp", in, out, a->force);
  return rc;
}

/* The input, flats and darks, the context, each rank's agreement that it
 * prepared its part; then the run. */
static int run(fbp_args *a, fbp_run *r) {
  int rc = cli_cluster_create("fbp", a->rank_timeout, &r->cluster);
  if (rc) return rc;
  if (r->cluster && a->preview)
    rc = cli_usage_error("fbp", "--preview needs every slice in one process: make the previews "
                         "from the output of a distributed run");
  r->t_start = cli_now();
  if (!rc) rc = open_input(a, r);
  r->t_open = cli_now();
  if (!rc && a->projections) rc = load_projections(a, r);
  r->t_input = cli_now();
  if (!rc) rc = cli_context_create(&r->session, "fbp", &a->common, &r->ctx);
  r->session.debug_log = a->timings;
  r->t_context = cli_now();
  if (!rc && r->cluster && a->tilt != 0.0)
    rc = cli_usage_error("fbp", "--tilt reconstructs in one process: run it without mpirun");
  if (!rc && a->kernel && ctr_context_get_device(r->ctx) != CTR_DEVICE_CUDA)
    rc = cli_usage_error("fbp", "--bp-kernel %s chooses a GPU kernel, and this run uses the CPU "
                         "(no usable GPU or --device cpu): drop --bp-kernel or run on a GPU",
                         a->kernel);
  rc = cli_cluster_agree("fbp", r->cluster, rc); /* every rank prepared its part */
  if (!rc) rc = reconstruct(a, r, &r->seconds);
  cli_progress_end(&r->session);
  return rc;
}

/* After a run: the values replaced, the previews, the axis found, the
 * timings and the summary. */
static int finish(const fbp_args *a, fbp_run *r) {
  const ctr_fbp_stream_report *rep = &r->report;
  fbp_report_counts(a, rep);
  if (a->preview && r->xy) {
    /* the output's spacing: slice pixels of --voxel binned bins, slices a binned row apart */
    const double bx = a->bin_given ? (double)a->bin[0] : 1.0, by = a->bin_given ? (double)a->bin[1] : 1.0;
    const double v = a->voxel > 0 ? a->voxel : 1.0, d = a->pixel > 0 ? a->pixel : 1.0;
    const double voxel[3] = {v * d * bx, v * d * bx, d * by};
    const int rc = cli_preview("fbp", a->preview, r->xy, r->xz, r->yz, r->nx, r->ny, r->nslices,
                               voxel, 0, 0, a->force);
    if (rc) return rc;
  }
  if (rep->axis_found)
    cli_info(&r->session, "rotation axis: %.2f bins (found by %s)\n", rep->axis,
             method_name(rep->center_method));
  if (a->timings)
    fprintf(stderr, "fbp: %lld bands of %lld slices%s; busy: read %.3f s, compute %.3f s, write "
            "%.3f s; setup %.3f s, total %.3f s; before it: opening the input %.3f s, flats and "
            "darks %.3f s, context %.3f s\n",
            (long long)rep->bands, (long long)rep->band_slices,
            rep->bands_resumed ? " (some resumed)" : "", rep->seconds_read, rep->seconds_compute,
            rep->seconds_write, rep->seconds_setup, rep->seconds_total, r->t_open - r->t_start,
            r->t_input - r->t_open, r->t_context - r->t_input);
  const double seconds = r->seconds;
  const double ups = (double)rep->nangles * (double)(rep->nx * rep->ny) * (double)rep->nslices;
  cli_info(&r->session, "fbp: %lld slices of %lld x %lld from %lld angles x %lld bins (input scale "
           "%g), %.2f s (%.1f GUPS, I/O included)\nwrote %s\n", (long long)rep->nslices,
           (long long)rep->nx, (long long)rep->ny, (long long)rep->nangles, (long long)rep->nbins,
           a->input_scale, seconds, ups / (seconds > 1e-9 ? seconds : 1e-9) / 1e9, a->out);
  return 0;
}

static void free_run(const fbp_args *a, fbp_run *r, int rc) {
  const double t_end = cli_now();
  ctr_stack_close(r->in);
  ctr_context_free(r->ctx);
  if (!rc && a->timings)
    fprintf(stderr, "fbp: after it: %.3f s (closing the input and the context)\n",
            cli_now() - t_end);
  cli_free_floats(r->flat);
  cli_free_floats(r->dark);
  free(r->xy);
  free(r->xz);
  free(r->yz);
  free(r->angles);
  free(r->shifts);
  ctr_cluster_free(r->cluster);
}

/* The corrections of the projections or sinograms (ctr_corrections), rows of
 * cmd_fbp's option table; a: the fbp_args. */
#define FBP_CORRECTION_OPTIONS(a) \
  {"--dezinger", "T", "replace sinogram values that differ from their neighbourhood's median "  \
   "by more than T (-log units) (default: off)", cli_parse_nonneg, &(a)->corr.dezinger, NULL},  \
  {"--dezinger-size", "N", "the neighbourhood, N x N, odd (default 3)", parse_int,              \
   &(a)->corr.dezinger_size, &(a)->dezinger_size_given},                                        \
  {"--stripe", "none|sorting|wavelet", "stripe (ring) removal: Vo et al. 2018's sorting "       \
   "filter or Muench et al. 2009's wavelet-FFT filter (default none)", parse_rings,             \
   &(a)->corr.stripe, NULL},                                                                    \
  {"--stripe-size", "N", "sorting: median width across bins, odd (default 21)", parse_int,      \
   &(a)->corr.stripe_size, &(a)->ring_size_given},                                              \
  {"--stripe-level", "N", "wavelet: decomposition levels (default 3)", parse_int,               \
   &(a)->corr.stripe_level, &(a)->ring_level_given},                                            \
  {"--stripe-sigma", "S", "wavelet: damping width (default 1)", cli_parse_positive,             \
   &(a)->corr.stripe_sigma, &(a)->ring_sigma_given},                                            \
  {"--stripe-wavelet", "N", "wavelet: Daubechies order 1 .. 10 (default 5)", parse_int,         \
   &(a)->corr.stripe_wavelet, &(a)->ring_wavelet_given},                                        \
  {"--paganin-delta-beta", "DELTA/BETA", "Paganin et al. 2002 phase retrieval with this "       \
   "delta / beta (needs --energy, --distance, --pixel-size) (default: off)", cli_parse_nonneg,  \
   &(a)->corr.paganin_delta_beta, NULL},                                                        \
  {"--energy", "KEV", "photon energy for --paganin-delta-beta", cli_parse_positive,             \
   &(a)->corr.energy_kev, NULL},                                                                \
  {"--distance", "MM", "sample to detector distance for --paganin-delta-beta",                  \
   cli_parse_positive, &(a)->corr.distance_mm, NULL},                                           \
  /* the names before issue 46 made them the C and Python ones (docs/vocabulary.md) */          \
  CLI_ALIAS("--rings", "--stripe", "METHOD", parse_rings, &(a)->corr.stripe, NULL),             \
  CLI_ALIAS("--ring-size", "--stripe-size", "N", parse_int, &(a)->corr.stripe_size,             \
            &(a)->ring_size_given),                                                             \
  CLI_ALIAS("--ring-level", "--stripe-level", "N", parse_int, &(a)->corr.stripe_level,          \
            &(a)->ring_level_given),                                                            \
  CLI_ALIAS("--ring-sigma", "--stripe-sigma", "S", cli_parse_positive, &(a)->corr.stripe_sigma, \
            &(a)->ring_sigma_given),                                                            \
  CLI_ALIAS("--ring-wavelet", "--stripe-wavelet", "N", parse_int, &(a)->corr.stripe_wavelet,    \
            &(a)->ring_wavelet_given),                                                          \
  CLI_ALIAS("--paganin", "--paganin-delta-beta", "DELTA/BETA", cli_parse_nonneg,                \
            &(a)->corr.paganin_delta_beta, NULL),                                               \
  {"--stitch-360", NULL, "a 360-degree scan with the axis off centre: join opposite "           \
   "projections into a doubled field of view (default: off)", cli_set_flag,                     \
   &(a)->corr.stitch_360, NULL},                                                                \
  {"--bin", "N|NXxNY", "detector binning: NX columns x NY rows averaged (default 1)",           \
   cli_parse_size2, (a)->bin, &(a)->bin_given}

/* The live mode's options without --follow: errors, not silently ignored. */
static int live_options_alone(const fbp_args *a) {
  const char *opt = a->bind ? "--bind" : a->live_preview ? "--live-preview"
                    : a->preview_rows_text ? "--preview-rows" : a->preview_every ? "--preview-every"
                    : a->preview_seconds > 0 ? "--preview-seconds"
                    : a->follow_timeout > 0 ? "--follow-timeout" : a->count ? "--count"
                    : a->spool ? "--spool" : a->accumulate_given ? "--accumulate" : NULL;
  if (opt)
    return cli_usage_error("fbp", "%s applies to the live mode: add --follow (or --input "
                           "tcp://...), or drop it", opt);
  return 0;
}

/* --geometry FILE: loaded before the checks (its tilt selects laminography);
 * the options it replaces are errors, not silently overridden. */
static int load_geometry(fbp_args *a) {
  const char *clash = a->angles         ? "--angles"
                      : a->uniform_given ? "--angle-start / --angle-range"
                      : a->axis_given    ? "--axis"
                      : a->shifts        ? "--axis-shift"
                      : a->size_given    ? "--size"
                      : a->pixel_given   ? "--voxel / --pixel-size"
                      : a->tilt_given    ? "--tilt"
                      : a->angle_units != CLI_ANGLES_UNSAID ? "--angle-units (the file is in degrees)"
                      : a->follow || a->input ? "--follow / --input (the live mode takes the "
                                                "angles from the source)"
                                              : NULL;
  if (clash)
    return cli_usage_error("fbp", "--geometry %s gives the angles, axis, axis shifts, slice grid, "
                           "pixel size and tilt: drop %s, or the file", a->geometry, clash);
  const ctr_status st = ctr_parallel_load_json(a->geometry, &a->pgeom);
  if (st != CTR_OK) return cli_fail_file("fbp", st, a->geometry);
  a->tilt = ctr_parallel_get_params(a->pgeom)->tilt_deg;
  a->angle_units = CLI_ANGLES_DEG;
  return 0;
}

static void init_args(fbp_args *a) {
  memset(a, 0, sizeof *a);
  a->angle_range = 180.0;
  a->fbp = (ctr_fbp_options)CTR_FBP_OPTIONS_INIT;
  a->corr = (ctr_corrections)CTR_CORRECTIONS_INIT;
  a->out_dtype = CTR_DTYPE_FLOAT32;
  a->out_scale = 1000.0;
  a->input_scale = 1.0;
  a->center_row = -1;
  a->common = (cli_common)CLI_COMMON_INIT;
}

static int fbp_checked(fbp_args *a, const cli_opt *opts);

int cmd_fbp(int argc, char **argv) {
  fbp_args a;
  init_args(&a);
  const cli_opt opts[] = {
      {"--sinograms", "FILE", "stack of sinograms, nbins x nangles each (this or --projections)",
       cli_parse_string, &a.sinograms, NULL},
      {"--projections", "FILE", "stack of projections, nbins x nrows each, or a DXchange .h5 "
       "(this or --sinograms)", cli_parse_string, &a.projections, NULL},
      CLI_INPUT_SCALE_OPTION(&a.input_scale),
      {"--flat", "FILE", "flat (white) fields, averaged (default: DXchange's, else none)",
       cli_parse_string, &a.flat, NULL},
      {"--dark", "FILE", "dark fields, averaged (default: DXchange's, else 0)", cli_parse_string,
       &a.dark, NULL},
      {"--rows", "R0:R1", "projection rows (or sinograms) to reconstruct (default: all)", parse_rows,
       a.rows, &a.rows_given},
      {"--angle-subset", "A0:A1[:STEP]", "use projections A0, A0 + STEP, ... below A1 (default: all)",
       parse_subset, a.subset, &a.subset_given},
      {"--out", "FILE", "slices to write: {endings} (required)", cli_parse_string, &a.out, NULL},
      {"--out-format", "{formats}", "slice file format (default: from the "
       "extension)", cli_parse_format, &a.out_format, NULL},
      {"--out-dtype", "float32|float16|uint16", "slice data type (default float32)", cli_parse_dtype,
       &a.out_dtype, NULL},
      {"--out-scale", "F", "uint16 stores round((value - offset) x F), clamped to 0..65535 "
       "(default 1000)", cli_parse_positive, &a.out_scale, &a.out_scale_given},
      {"--out-offset", "V", "uint16: the value stored as 0 (default 0)", cli_parse_double,
       &a.out_offset, &a.out_scale_given},
      {"--out-range", "LO:HI", "uint16: LO stored as 0, HI as 65535 (sets --out-scale and "
       "--out-offset)", cli_parse_range, a.out_range, &a.out_range_given},
      {"--angles", "FILE", "projection angles in degrees, one per projection (default: uniform)",
       cli_parse_string, &a.angles, NULL},
      {"--angle-start", "DEG", "first angle of a uniform scan (default 0)", cli_parse_double,
       &a.angle_start, &a.uniform_given},
      {"--angle-range", "DEG", "range of a uniform scan (default 180)", cli_parse_double,
       &a.angle_range, &a.uniform_given},
      CLI_ANGLE_UNITS_OPTION(&a.angle_units),
      {"--axis", "BIN|auto", "rotation axis position in bins of the projections (default auto: "
       "found from the data and printed)", parse_axis, &a.axis, &a.axis_given},
      {"--center-method", "auto|vo|correlation", "how auto finds the axis: Vo et al. 2014, or "
       "opposite projections (default auto: correlation when the scan has projections 180 "
       "degrees apart, else vo)", parse_center_method, &a.corr.center_method, NULL},
      {"--center-range", "LO:HI", "bins the axis is searched in (default: the whole detector; vo: "
       "its middle half)", cli_parse_range, a.center_range, &a.center_range_given},
      {"--center-row", "R", "the detector row whose band finds the axis (default: the middle "
       "one)", cli_parse_offset, &a.center_row, &a.center_row_given},
      {"--axis-shift", "FILE", "per-projection axis correction in bins (default none)",
       cli_parse_string, &a.shifts, NULL},
      FBP_CORRECTION_OPTIONS(&a),
      {"--size", "N|NXxNY", "slice size in pixels (default: the sinograms' bins)", cli_parse_size2,
       a.size, &a.size_given},
      {"--voxel", "BINS", "slice pixel size in detector bins (default 1)", cli_parse_positive,
       &a.voxel, &a.pixel_given},
      {"--pixel-size", "MM", "detector bin size; slices come out per mm (default 1)",
       cli_parse_positive, &a.pixel, &a.pixel_given},
      {"--geometry", "FILE", "a parallel-beam geometry file (JSON, docs/parallel-beam.md "
       "\"Geometry files\"): the angles, axis, axis shifts, slice grid, pixel size and tilt, "
       "instead of their options (default: from the options)", cli_parse_string, &a.geometry,
       NULL},
      CLI_TILT_OPTIONS(&a.tilt, &a.tilt_given, &a.tilt_slices),
      {"--window", "NAME", "the ramp filter's window: ram-lak, shepp-logan, cosine, hamming, "
       "hann (default ram-lak)", parse_window, &a.fbp.window, NULL},
      CLI_ALIAS("--filter", "--window", "NAME", parse_window, &a.fbp.window, NULL),
      {"--cutoff", "F", "filter cut-off as a fraction of Nyquist, 0 < F <= 1 (default 1)",
       cli_parse_positive, &a.fbp.cutoff, NULL},
      {"--interp", "linear|nearest", "interpolation between bins (default linear)", parse_interp,
       &a.fbp.interp, NULL},
      {"--bp-kernel", "NAME",
       "GPU kernel: auto, tex, tex2, tex-mp, tex4h, alu, alu2, alu2-h, alu-os, alu2-os, hybrid "
       "(default auto: the fastest exact one, tuned on first use and cached; docs/parallel-beam.md)", cli_parse_string, &a.kernel, NULL},
      {"--batch", "N", "slices per band (default 16 on the CPU, 64 per GPU)", cli_parse_count,
       &a.batch, &a.batch_given},
      {"--read-ahead", "N", "bands the reader may hold ahead of the one being reconstructed, 1 "
       "to 16, a band buffer each (default 2)", cli_parse_count, &a.read_ahead, NULL},
      CLI_HOST_BUDGET_OPTION(&a.host_mem, "host memory for the band buffers"),
      CLI_GPU_BUDGET_OPTION(&a.gpu_mem, "GPU memory each GPU's pipeline may use"),
      {"--resume", NULL, "continue an interrupted run from OUT.partial and its journal; with "
       "--input, a stopped live run from its spool; the result is bit-identical to an "
       "uninterrupted run (default: off)", cli_set_flag, &a.resume, NULL},
      CLI_FORCE_OPTION(&a.force),
      {"--timings", NULL, "print the reader's, computation's and writer's busy times and the "
       "time before and after the run on stderr (default: off)", cli_set_flag, &a.timings, NULL},
      CLI_PREVIEW_OPTION(&a.preview),
      CLI_STRICT_OPTION(&a.fbp.strict),
      {"--follow", NULL, "live mode: reconstruct while the scan is acquired (--projections "
       "FILE.h5 followed as it grows, under SWMR, or --input): previews as projections arrive, "
       "the volume when the scan ends (docs/synchrotron.md) (default: off)", cli_set_flag,
       &a.follow, NULL},
      {"--input", "tcp://HOST:PORT", "live mode: receive the projections on a ZeroMQ socket "
       "(implies --follow)", cli_parse_string, &a.input, NULL},
      {"--bind", NULL, "--input: bind the socket (PORT 0: a free one, printed) instead of "
       "connecting to a sender that binds (default: connect)", cli_set_flag, &a.bind, NULL},
      {"--live-preview", "PREFIX", "live mode: write PREFIX_rowNNNNN.png and PREFIX.h5 "
       "(PREFIX.zarr without HDF5), rewritten as projections arrive", cli_parse_string,
       &a.live_preview, NULL},
      {"--preview-rows", "R,R,...", "live mode: the detector rows previewed (default: the "
       "first, middle and last of the rows reconstructed)", cli_parse_string,
       &a.preview_rows_text, NULL},
      {"--preview-every", "N", "live mode: write the previews every N projections (default 16)",
       cli_parse_count, &a.preview_every, NULL},
      {"--preview-seconds", "T", "live mode: or every T seconds (default 1)", cli_parse_positive,
       &a.preview_seconds, NULL},
      {"--follow-timeout", "S", "live mode: the scan stopped when no frame came for S seconds "
       "(default 30)", cli_parse_positive, &a.follow_timeout, NULL},
      {"--count", "N", "live mode: projections in the scan where the source does not say "
       "(default: /exchange/theta's length, or the frames' count)", cli_parse_count, &a.count,
       NULL},
      {"--accumulate", "off|on|auto", "live mode: sum the full volume in memory as the "
       "projections arrive, so that it is written moments after the last (the same bytes; on: "
       "refused where the run cannot: a GPU, --axis auto, corrections, angles not known before "
       "the projections, memory; auto: where it can) (default off)", parse_accumulate,
       &a.accumulate, &a.accumulate_given},
      {"--spool", "FILE", "--input: keep the received projections in FILE (and its state, "
       "FILE.index and FILE.cal) for the final run, removed once the volume is written, kept "
       "for --resume when the scan stopped early (default: OUT.spool)", cli_parse_string,
       &a.spool, NULL},
      CLI_RANK_TIMEOUT_OPTION(&a.rank_timeout),
      CLI_ZARR_SHARD_OPTION(&a.common),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_fbp, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.geometry && (rc = load_geometry(&a))) return rc;
  rc = fbp_checked(&a, opts);
  ctr_parallel_free(a.pgeom);
  return rc;
}

/* cmd_fbp after the parse and --geometry: the checks, then the run. */
static int fbp_checked(fbp_args *a, const cli_opt *opts) {
  int rc;
  a->fbp.kernel = a->kernel;
  if (!(a->follow || a->input) && (rc = live_options_alone(a))) return rc;
  if ((rc = fbp_check_inputs(a)) || (rc = fbp_check_corrections(a))) return rc;
  if (a->follow || a->input) return fbp_follow(a, opts);
  if ((rc = check_files(a, opts))) return cli_launch_early_error("fbp", rc);
  fbp_run r;
  memset(&r, 0, sizeof r);
  rc = run(a, &r);
  if (!rc) rc = finish(a, &r);
  free_run(a, &r, rc);
  return rc;
}
