/* `ctrecon phantom`: exact cone-beam projections of an analytic phantom for
 * a geometry file, and optionally the voxelised phantom as ground truth. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_phantom = {
    "phantom",
    "exact projections of an analytic phantom (and its voxelised truth)",
    "ctrecon phantom --geometry FILE --out FILE [options]",
    "Computes the exact line integrals of an ellipsoid phantom (the 3D modified\n"
    "Shepp-Logan head, or a JSON list of ellipsoids, docs/phantoms.md) through\n"
    "every detector pixel of every view of the geometry, and writes them as a\n"
    "projection stack (nu x nv x views). The output format follows the extension\n"
    "({endings}) or --format.",
    "  ctrecon phantom --geometry geom.json --out proj.nrrd\n"
    "  ctrecon phantom --geometry geom.json --out proj.tif --dtype uint16 --uint16-scale 1000\n"
    "  ctrecon phantom --geometry geom.json --out views/p_%04d.tif --truth truth.nrrd\n",
};

typedef struct phantom_args {
  const char *geometry, *out, *phantom, *truth;
  ctr_file_format format;
  double radius, scale, u16_scale;
  int supersample, truth_supersample;
  ctr_dtype dtype;
  int radius_given, force;
  cli_common common;
} phantom_args;

/* Shepp-Logan, or a JSON phantom whose densities are multiplied by scale. */
static ctr_status make_phantom(const phantom_args *a, const ctr_volume_geometry *vol,
                               double *radius_used, ctr_phantom **out) {
  if (!strcmp(a->phantom, "shepp-logan")) {
    /* Default: the head fills 95 % of the volume's smaller transverse extent. */
    const double ex = (double)vol->nx * vol->voxel_x, ey = (double)vol->ny * vol->voxel_y;
    *radius_used = a->radius_given ? a->radius : 0.95 * 0.5 * (ex < ey ? ex : ey);
    return ctr_phantom_shepp_logan(*radius_used, a->scale, out);
  }
  ctr_phantom *p = NULL;
  ctr_status st = ctr_phantom_load_json(a->phantom, &p);
  if (st != CTR_OK || a->scale == 1.0) {
    *out = p;
    return st;
  }
  const int64_t n = ctr_phantom_get_ellipsoid_count(p);
  ctr_ellipsoid *e = malloc((size_t)n * sizeof *e);
  if (!e) {
    ctr_phantom_free(p);
    return CTR_E_OUT_OF_MEMORY;
  }
  memcpy(e, ctr_phantom_get_ellipsoids(p), (size_t)n * sizeof *e);
  for (int64_t i = 0; i < n; i++) e[i].density *= a->scale;
  st = ctr_phantom_from_ellipsoids(e, n, out);
  free(e);
  ctr_phantom_free(p);
  return st;
}

/* Creates a writer and writes all of `data`; on failure aborts it. */
static int write_stack(const char *cmd, const char *path, ctr_file_format fmt,
                       const ctr_stack_info *info, const float *data, int force,
                       ctr_stack_writer **out) {
  ctr_status st = ctr_stack_create(path, fmt, info, force, out);
  if (st == CTR_OK) st = ctr_stack_write(*out, 0, info->count, CTR_DTYPE_FLOAT32, data);
  if (st == CTR_OK) return 0;
  const int rc = cli_fail_file(cmd, st, path);
  ctr_stack_abort(*out);
  *out = NULL;
  return rc;
}

/* Voxelises the phantom on the geometry's grid (whole volume at once). */
static float *voxelize(ctr_context *ctx, const ctr_phantom *ph, const ctr_volume_geometry *vol,
                       int supersample, int *rc) {
  const int64_t dims[3] = {vol->nx, vol->ny, vol->nz};
  float *v = cli_alloc_floats("phantom", vol->nx * vol->ny * vol->nz, "the truth volume", rc);
  if (!v) return NULL;
  ctr_array arr = ctr_array_make(v, CTR_DTYPE_FLOAT32, 3, dims);
  ctr_status st = ctr_phantom_voxelize(ctx, ph, vol, supersample, 0, &arr);
  if (st != CTR_OK) {
    *rc = cli_fail("phantom", st);
    cli_free_floats(v);
    return NULL;
  }
  return v;
}

typedef struct phantom_run {
  ctr_geometry *g;
  ctr_phantom *ph;
  ctr_context *ctx;
  cli_session session;
  float *proj, *truth;
  ctr_stack_writer *wp, *wt;
  ctr_file_format fmt, truth_fmt;
} phantom_run;

static int compute(const phantom_args *a, phantom_run *r, int64_t nu, int64_t nv, int64_t nviews) {
  int rc = 0;
  const int64_t dims[3] = {nu, nv, nviews};
  r->proj = cli_alloc_floats("phantom", nu * nv * nviews, "the projections", &rc);
  if (!r->proj) return rc;
  ctr_array arr = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, dims);
  ctr_status st = ctr_phantom_project(r->ctx, r->ph, r->g, a->supersample, &arr);
  if (st != CTR_OK) return cli_fail("phantom", st);
  if (a->truth) {
    const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
    r->truth = voxelize(r->ctx, r->ph, &vol, a->truth_supersample, &rc);
  }
  return rc;
}

/* Writes both outputs, then commits both, so that a failure on the second
 * leaves neither behind. */
static int write_outputs(const phantom_args *a, phantom_run *r, int64_t nu, int64_t nv,
                         int64_t nviews) {
  double du, dv;
  int64_t n_u, n_v;
  ctr_geometry_get_detector(r->g, &n_u, &n_v, &du, &dv);
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = nu;
  info.height = nv;
  info.count = nviews;
  info.dtype = a->dtype;
  info.spacing[0] = du;
  info.spacing[1] = dv;
  int rc = write_stack("phantom", a->out, r->fmt, &info, r->proj, a->force, &r->wp);
  if (!rc && r->truth) {
    const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
    const ctr_stack_info ti = cli_volume_info(&vol, 0, vol.nz, CTR_DTYPE_FLOAT32);
    rc = write_stack("phantom", a->truth, r->truth_fmt, &ti, r->truth, a->force, &r->wt);
  }
  if (rc) return rc;
  ctr_status st = ctr_stack_commit(r->wp);
  r->wp = NULL;
  if (st != CTR_OK) return cli_fail_file("phantom", st, a->out);
  if (r->wt) {
    st = ctr_stack_commit(r->wt);
    r->wt = NULL;
    if (st != CTR_OK) return cli_fail_file("phantom", st, a->truth);
  }
  return 0;
}

static void print_summary(const phantom_args *a, const phantom_run *r, int64_t nu, int64_t nv,
                          int64_t nviews, float lo, float hi, double seconds, double radius) {
  const cli_session *s = &r->session;
  if (!strcmp(a->phantom, "shepp-logan"))
    cli_info(s, "phantom: Shepp-Logan, radius %.1f mm, scale %g\n", radius, a->scale);
  else
    cli_info(s, "phantom: %s (%lld ellipsoids), scale %g\n", a->phantom,
             (long long)ctr_phantom_get_ellipsoid_count(r->ph), a->scale);
  cli_info(s, "projections: %lld views of %lld x %lld pixels, values %.4g .. %.4g, %.2f s\n",
           (long long)nviews, (long long)nu, (long long)nv, lo, hi, seconds);
  if (a->dtype == CTR_DTYPE_UINT16)
    cli_info(s, "wrote %s (%s, uint16 = value x %g; read back with fdk --input-scale %g)\n", a->out,
             ctr_format_name(r->fmt), a->u16_scale, a->u16_scale);
  else
    cli_info(s, "wrote %s (%s, float32)\n", a->out, ctr_format_name(r->fmt));
  if (a->truth)
    cli_info(s, "wrote %s (%s, float32 truth, supersample %d)\n", a->truth,
             ctr_format_name(r->truth_fmt), a->truth_supersample);
}

static int run(const phantom_args *a, phantom_run *r) {
  int rc = cli_load_geometry("phantom", a->geometry, &r->g);
  if (rc) return rc;
  cli_warn_coverage("phantom", r->g);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  double radius = 0.0;
  ctr_status st = make_phantom(a, &vol, &radius, &r->ph);
  if (st != CTR_OK)
    return cli_fail_file("phantom", st, strcmp(a->phantom, "shepp-logan") ? a->phantom : NULL);
  rc = cli_context_create(&r->session, "phantom", &a->common, &r->ctx);
  if (rc) return rc;
  int64_t nu, nv;
  double du, dv;
  ctr_geometry_get_detector(r->g, &nu, &nv, &du, &dv);
  const int64_t nviews = ctr_geometry_get_view_count(r->g);
  const double t0 = cli_now();
  rc = compute(a, r, nu, nv, nviews);
  cli_progress_end(&r->session);
  if (rc) return rc;
  const double seconds = cli_now() - t0;
  float lo, hi;
  int64_t nonfinite = 0;
  cli_range(r->proj, nu * nv * nviews, &lo, &hi, &nonfinite);
  /* Output check before anything gets a name: densities whose line integrals
   * overflow float give no usable projections. */
  if (nonfinite)
    return cli_error("phantom", CLI_EXIT_INPUT, "'%s': %lld projection values are not finite "
                     "(line integrals beyond float's 3.4e38): expected densities of a sane size; "
                     "lower them", a->phantom, (long long)nonfinite);
  if (a->dtype == CTR_DTYPE_UINT16) {
    int64_t below = 0, above = 0;
    cli_scale_for_uint16(r->proj, nu * nv * nviews, a->u16_scale, &below, &above);
    if (below + above)
      cli_warn("phantom",
               "%lld values clamped to 0 .. 65535 in uint16 (values %.4g .. %.4g x "
               "--uint16-scale %g = %.4g .. %.4g); lower --uint16-scale",
               (long long)(below + above), lo, hi, a->u16_scale, lo * a->u16_scale,
               hi * a->u16_scale);
  }
  rc = write_outputs(a, r, nu, nv, nviews);
  if (!rc) print_summary(a, r, nu, nv, nviews, lo, hi, seconds, radius);
  return rc;
}

/* Option checks that need no file: formats, output directories. */
static int check_args(phantom_args *a, const cli_opt *opts, phantom_run *r) {
  int rc = cli_require("phantom", opts, "--geometry", a->geometry);
  if (!rc) rc = cli_require("phantom", opts, "--out", a->out);
  if (!rc) rc = cli_resolve_format("phantom", "--out", "--format", a->out, a->format, &r->fmt);
  if (!rc && a->truth)
    rc = cli_resolve_format("phantom", "--truth", NULL, a->truth, CTR_FORMAT_AUTO, &r->truth_fmt);
  if (!rc && a->radius_given && strcmp(a->phantom, "shepp-logan"))
    cli_warn("phantom", "--radius applies to --phantom shepp-logan only; ignored for '%s'",
             a->phantom);
  const cli_file in[] = {{"--geometry", a->geometry}, {"--phantom", a->phantom}, {0}};
  const cli_output out[] = {{"--out", a->out, CLI_OUT_DATA}, {"--truth", a->truth, CLI_OUT_DATA},
                          {0}};
  if (!rc) rc = cli_check_files("phantom", in, out, a->force);
  return rc;
}

int cmd_phantom(int argc, char **argv) {
  phantom_args a = {NULL, NULL, "shepp-logan",     NULL, CTR_FORMAT_AUTO, 0.0, 1.0, 1000.0,
                    1,    2,    CTR_DTYPE_FLOAT32, 0,    0,               CLI_COMMON_INIT};
  const cli_opt opts[] = {
      {"--geometry", "FILE", "geometry file (required)", cli_parse_string, &a.geometry, NULL},
      {"--out", "FILE", "projection stack to write (required)", cli_parse_string, &a.out, NULL},
      {"--format", "{formats}", "output format (default: from the extension)",
       cli_parse_format, &a.format, NULL},
      {"--phantom", "shepp-logan|FILE.json", "phantom (default shepp-logan)", cli_parse_string,
       &a.phantom, NULL},
      {"--radius", "MM", "Shepp-Logan radius (default 0.95 x min(x, y extent of the volume) / 2)",
       cli_parse_positive, &a.radius, &a.radius_given},
      {"--scale", "S", "density scale (default 1)", cli_parse_double, &a.scale, NULL},
      {"--supersample", "N", "rays per pixel along u and v, averaged (default 1)",
       cli_parse_supersample, &a.supersample, NULL},
      {"--dtype", "float32|uint16", "output data type (default float32)", cli_parse_dtype, &a.dtype,
       NULL},
      {"--uint16-scale", "F", "uint16 stores value x F, clamped to 0..65535 (default 1000)",
       cli_parse_positive, &a.u16_scale, NULL},
      {"--truth", "FILE", "also write the voxelised phantom (float32, on the volume grid)",
       cli_parse_string, &a.truth, NULL},
      {"--truth-supersample", "N", "samples per voxel and axis for --truth (default 2)",
       cli_parse_supersample, &a.truth_supersample, NULL},
      CLI_FORCE_OPTION(&a.force),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_phantom, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  phantom_run r;
  memset(&r, 0, sizeof r);
  rc = check_args(&a, opts, &r);
  if (!rc) rc = run(&a, &r);
  ctr_stack_abort(r.wp);
  ctr_stack_abort(r.wt);
  cli_free_floats(r.proj);
  cli_free_floats(r.truth);
  ctr_context_free(r.ctx);
  ctr_phantom_free(r.ph);
  ctr_geometry_free(r.g);
  return rc;
}
