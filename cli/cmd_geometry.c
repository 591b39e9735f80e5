/* `ctrecon geometry`: writes a circular cone-beam geometry file, or with
 * --check loads one and summarises it. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

const cli_command cli_cmd_geometry = {
    "geometry",
    "write a circular or vector cone-beam geometry file, or check one",
    "ctrecon geometry --out FILE [options]\n"
    "       ctrecon geometry --out FILE --from-vectors TEXT --nu N --nv N [volume options]\n"
    "       ctrecon geometry --check FILE [--vectors-out TEXT]",
    "Writes the JSON description (docs/geometry.md) of a circular cone-beam scan:\n"
    "source orbit, flat or cylindrical (--detector) detector, projection angles and\n"
    "the volume grid. With\n"
    "--from-vectors, the views are read from a text file of ASTRA cone_vec rows,\n"
    "12 numbers a line (srcX srcY srcZ dX dY dZ uX uY uZ vX vY vZ, mm; spaces or\n"
    "commas; '#' comments) and written as a \"vectors\" geometry (docs/geometry.md,\n"
    "\"Vector geometries\"); --nu and --nv give the detector's size. With\n"
    "--check, loads a geometry file and prints a summary: views, angular coverage,\n"
    "detector, volume and how much of the volume's field of view the detector sees.\n"
    "--vectors-out writes the geometry's views (the one written or checked) as ASTRA\n"
    "cone_vec rows in the --from-vectors layout, for ASTRA, TIGRE or LEAP users.\n"
    "--pitch makes the orbit a helix (docs/geometry.md, \"Helical orbits\"): the source\n"
    "and detector climb --pitch mm along z per turn from --z0, over --angle-range\n"
    "degrees (any number of turns); fdk reconstructs it with its redundancy window\n"
    "(--helix-window).",
    "  ctrecon geometry --out geom.json\n"
    "  ctrecon geometry --out small.json --nu 128 --nv 128 --du 3.5 --dv 3.5 \\\n"
    "      --views 180 --volume 128 --voxel 2\n"
    "  ctrecon geometry --out short.json --angle-range 220    # short scan\n"
    "  ctrecon geometry --out vec.json --from-vectors views.txt --nu 512 --nv 384 \\\n"
    "      --volume 256 --voxel 0.5\n"
    "  ctrecon geometry --out helix.json --pitch 40 --angle-range 1440 --views 1440 \\\n"
    "      --volume 256,256,64   # a helix of four turns\n"
    "  ctrecon geometry --check geom.json\n"
    "  ctrecon geometry --check geom.json --vectors-out views.txt\n",
};

/* One of two names: *out = 0 for `a`, 1 for `b`; a usage error otherwise. */
static int parse_one_of(const char *cmd, const char *name, const char *value, const char *a,
                        const char *b, int *out) {
  if (strcmp(value, a) && strcmp(value, b))
    return cli_usage_error(cmd, "%s '%s': expected %s or %s", name, value, a, b);
  *out = strcmp(value, a) != 0;
  return 0;
}

static int parse_direction(const char *cmd, const char *name, const char *value, void *dst) {
  int k = 0;
  const int rc = parse_one_of(cmd, name, value, "ccw", "cw", &k);
  if (!rc) *(ctr_rotation *)dst = k ? CTR_ROTATION_CW : CTR_ROTATION_CCW;
  return rc;
}

static int parse_detector(const char *cmd, const char *name, const char *value, void *dst) {
  int k = 0;
  const int rc = parse_one_of(cmd, name, value, "flat", "cylindrical", &k);
  if (!rc) *(ctr_detector_shape *)dst = k ? CTR_DETECTOR_CYLINDRICAL : CTR_DETECTOR_FLAT;
  return rc;
}

/* ---- Summary (--check, and after writing) -------------------------------- */

/* Total angle swept by the source about the z axis, unwrapped view to view,
 * plus one mean step (n views of a full circle are 360 deg, not 359). */
static double angular_coverage(const ctr_geometry *g, double *step_out, int *dir_out) {
  const int64_t n = ctr_geometry_get_view_count(g);
  double s[3], prev, sum = 0.0;
  ctr_geometry_get_source(g, 0, s);
  prev = atan2(s[1], s[0]);
  for (int64_t i = 1; i < n; i++) {
    ctr_geometry_get_source(g, i, s);
    const double a = atan2(s[1], s[0]);
    double d = a - prev;
    d -= 2.0 * PI * floor((d + PI) / (2.0 * PI)); /* into [-pi, pi) */
    sum += d;
    prev = a;
  }
  const double span = fabs(sum) * 180.0 / PI, step = n > 1 ? span / (double)(n - 1) : 0.0;
  *step_out = step;
  *dir_out = sum < 0 ? -1 : 1;
  return span + step;
}

/* Source-isocentre distance, magnification and fan angle of a circular
 * geometry from view 0's matrix: the public API keeps only the matrices.
 * Along the detector u axis e_u = (-sin t, cos t, 0) through the isocentre,
 * du/ds = (P0.e_u c - a P2.e_u) / c^2 pixels per mm. */
typedef struct orbit {
  double sid, sdd, fan_deg, fov_radius;
} orbit;

static int circular_orbit(const ctr_geometry *g, orbit *o) {
  int64_t nu, nv;
  double du, dv, P[12], s[3];
  ctr_geometry_get_detector(g, &nu, &nv, &du, &dv);
  if (!ctr_geometry_is_circular(g) || !(du > 0)) return 0;
  ctr_geometry_get_matrix(g, 0, P);
  ctr_geometry_get_source(g, 0, s);
  const double t = atan2(s[1], s[0]), eu[3] = {-sin(t), cos(t), 0.0};
  const double a = P[3], c = P[11];
  if (!(c > 0)) return 0;
  const double p0 = P[0] * eu[0] + P[1] * eu[1], p2 = P[8] * eu[0] + P[9] * eu[1];
  const double dudx = fabs((p0 * c - a * p2) / (c * c)); /* pixels per mm */
  o->sid = hypot(s[0], s[1]);
  o->sdd = o->sid * dudx * du;
  const double u0 = a / c; /* where the isocentre projects */
  const double left = (u0 + 0.5) * du, right = ((double)nu - 0.5 - u0) * du;
  /* a cylindrical detector's columns are arcs of du at sdd: angles du / sdd */
  const int arc = ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL;
  const double al = arc ? left / o->sdd : atan(left / o->sdd);
  const double ar = arc ? right / o->sdd : atan(right / o->sdd);
  o->fan_deg = (al + ar) * 180.0 / PI;
  /* A centred ray cone of half-angle h covers a disc of radius sid sin h. */
  const double half = al < ar ? al : ar;
  o->fov_radius = o->sid * sin(half);
  return 1;
}

static void print_scan_kind(const char *cmd, double coverage_deg, double step, int have_orbit,
                            const orbit *o, int warn, int offset) {
  if (coverage_deg >= 360.0 - 0.5 * step) {
    printf("  scan           full circle%s\n",
           offset ? ", offset (half-fan) detector: fdk applies Wang weights (--offset-weight "
                    "auto) and extends the filtered rows beyond the narrow edge (on the CPU; "
                    "the GPU refuses such runs for now)" : "");
  } else if (!have_orbit || coverage_deg >= 180.0 + o->fan_deg - 0.5 * step) {
    printf("  scan           short scan: fdk applies Parker weights (--short-scan auto)\n");
  } else {
    printf("  scan           incomplete: less than a short scan (180 + fan %.1f = %.1f deg)\n",
           o->fan_deg, 180.0 + o->fan_deg);
    if (warn)
      cli_warn(cmd,
               "the orbit covers %.1f deg, less than a short scan (%.1f deg): expect "
               "limited-angle artifacts",
               coverage_deg, 180.0 + o->fan_deg);
  }
}

/* Prints the summary; returns the field-of-view coverage (computed once: it
 * visits the views). */
static double print_summary(const char *cmd, const char *path, const ctr_geometry *g, int warn) {
  int64_t nu, nv;
  double du, dv, step;
  int dir;
  ctr_geometry_get_detector(g, &nu, &nv, &du, &dv);
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t n = ctr_geometry_get_view_count(g);
  orbit o = {0, 0, 0, 0};
  const int have_orbit = circular_orbit(g, &o);
  const double cov_deg = angular_coverage(g, &step, &dir);
  ctr_helical_params h;
  const int helix = ctr_geometry_get_helical(g, &h);
  printf("%s: %s cone-beam geometry%s\n", path,
         helix                         ? "helical"
         : ctr_geometry_is_circular(g) ? "circular"
                                       : "general (per-view matrices)",
         ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL
             ? ", cylindrical (curved) detector" : "");
  printf("  views          %lld over %.1f deg (%s, step %.3f deg)\n", (long long)n, cov_deg,
         dir < 0 ? "cw" : "ccw", step);
  if (helix) {
    int automatic = 0;
    const double window = ctr_geometry_get_helix_window(g, &automatic);
    char wtext[96];
    if (window < 0)
      snprintf(wtext, sizeof wtext, "none fits (the pitch exceeds the detector's height)");
    else
      snprintf(wtext, sizeof wtext, "%.4g deg%s", window,
               automatic ? " (automatic: the widest up to 10 the pitch allows)" : "");
    printf("  helix          pitch %g mm a turn (%.3f of the detector's height at the axis), "
           "source z from %g mm; fdk's window %s\n", h.pitch_mm,
           h.pitch_mm / ((double)nv * dv * h.sid / h.sdd), h.z0_mm, wtext);
  } else
    print_scan_kind(cmd, cov_deg, step, have_orbit, &o, warn, ctr_geometry_offset_detector(g));
  if (have_orbit)
    printf(
        "  source         %g mm from the axis, detector %g mm from the source "
        "(magnification %.3f)\n",
        o.sid, o.sdd, o.sdd / o.sid);
  printf("  detector       %lld x %lld pixels of %g x %g mm (%.1f x %.1f mm)\n", (long long)nu,
         (long long)nv, du, dv, (double)nu * du, (double)nv * dv);
  printf(
      "  volume         %lld x %lld x %lld voxels of %g x %g x %g mm (%.1f x %.1f x %.1f mm), "
      "centre (%g, %g, %g) mm\n",
      (long long)v.nx, (long long)v.ny, (long long)v.nz, v.voxel_x, v.voxel_y, v.voxel_z,
      (double)v.nx * v.voxel_x, (double)v.ny * v.voxel_y, (double)v.nz * v.voxel_z, v.offset_x,
      v.offset_y, v.offset_z);
  if (have_orbit)
    printf(
        "  fan            %.1f deg; field-of-view radius %.1f mm at the isocentre "
        "(volume half-width %.1f mm)\n",
        o.fan_deg, o.fov_radius, 0.5 * fmin((double)v.nx * v.voxel_x, (double)v.ny * v.voxel_y));
  const double coverage = ctr_geometry_coverage(g);
  printf("  coverage       %.1f %% of the volume's field of view is seen in every view\n",
         100.0 * coverage);
  return coverage;
}

/* A cylindrical detector has no cone_vec rows: a usage error before
 * anything is written. */
static int vectors_possible(const char *path, const ctr_geometry *g) {
  if (path && ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL)
    return cli_usage_error("geometry", "--vectors-out %s: a cylindrical (curved) detector has no "
                           "cone_vec rows (they describe flat detectors)", path);
  return 0;
}

/* --vectors-out: every view of g as a cone_vec row (ctr_geometry_get_vectors),
 * the layout --from-vectors reads, written atomically. */
static int write_vectors(const char *path, const ctr_geometry *g, int force) {
  int rc = vectors_possible(path, g);
  if (rc) return rc;
  char tmp[4200];
  FILE *f = NULL;
  rc = cli_text_create("geometry", path, tmp, sizeof tmp, &f);
  if (rc) return rc;
  const int64_t n = ctr_geometry_get_view_count(g);
  fprintf(f, "# %lld views as ASTRA cone_vec rows (mm): srcX srcY srcZ dX dY dZ uX uY uZ vX vY "
          "vZ\n", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    double v[12];
    ctr_geometry_get_vectors(g, i, v);
    for (int k = 0; k < 12; k++) fprintf(f, "%.17g%c", v[k], k == 11 ? '\n' : ' ');
  }
  return cli_text_commit("geometry", f, tmp, path, force);
}

static int run_check(const char *path, const char *vectors_out, int force) {
  ctr_geometry *g = NULL;
  int rc = cli_load_geometry("geometry", path, &g);
  if (rc) return rc;
  const cli_file in[] = {{"--check", path}, {0}};
  const cli_output out[] = {{"--vectors-out", vectors_out, CLI_OUT_FILE}, {0}};
  rc = cli_check_files("geometry", in, out, force);
  if (!rc) cli_warn_coverage_of("geometry", g, print_summary("geometry", path, g, 1));
  if (!rc && vectors_out) rc = write_vectors(vectors_out, g, force);
  ctr_geometry_free(g);
  return rc;
}

/* ---- Writing ------------------------------------------------------------- */

typedef struct geometry_args {
  const char *out, *check;
  ctr_circular_params p;
  int64_t size[3];
  double voxel[3], offset[3];
  const char *vectors; /* --from-vectors */
  const char *vectors_out; /* --vectors-out */
  int quiet, force;
  int write_opts; /* set by any option that only matters when writing */
  int orbit_opts; /* set by an option of the circular orbit (not with --from-vectors) */
  double pitch, z0, window; /* --pitch, --z0, --helix-window: a helix */
  int helix_opts; /* set by an option of the helix */
} geometry_args;

/* --from-vectors: 12 numbers a line (spaces or commas), '#' comments and
 * blank lines skipped; errors name the file and line. *out is malloc'ed. */
static int read_vectors(const char *path, double **out, int64_t *n) {
  FILE *f = fopen(path, "r");
  if (!f) return cli_usage_error("geometry", "--from-vectors %s: cannot open: %s", path,
                                 strerror(errno));
  double *v = NULL;
  int64_t cap = 0, count = 0, line_no = 0;
  int rc = 0;
  char line[4096];
  while (!rc && fgets(line, sizeof line, f)) {
    line_no++;
    char *hash = strchr(line, '#'), *p = line;
    if (hash) *hash = '\0';
    for (char *c = line; *c; c++)
      if (*c == ',') *c = ' ';
    double row[12];
    int k = 0;
    for (char *end; k <= 12; p = end) {
      const double x = strtod(p, &end);
      if (end == p) break;
      if (k < 12) row[k] = x;
      k++;
    }
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (k == 0 && !*p) continue;
    if (k != 12 || *p) {
      rc = cli_usage_error("geometry", "--from-vectors %s:%lld: expected 12 numbers (srcX srcY "
                           "srcZ dX dY dZ uX uY uZ vX vY vZ)", path, (long long)line_no);
      break;
    }
    if (count == cap) {
      cap = cap ? 2 * cap : 256;
      double *w = realloc(v, sizeof(double) * 12 * (size_t)cap);
      if (!w) {
        rc = cli_fail("geometry", CTR_E_OUT_OF_MEMORY);
        break;
      }
      v = w;
    }
    memcpy(v + 12 * count++, row, sizeof row);
  }
  fclose(f);
  if (!rc && count == 0)
    rc = cli_usage_error("geometry", "--from-vectors %s: no views (expected a line of 12 "
                         "numbers a view)", path);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}

static int run_write(const geometry_args *a) {
  const ctr_volume_geometry vol = {a->size[0],   a->size[1],   a->size[2],
                                   a->voxel[0],  a->voxel[1],  a->voxel[2],
                                   a->offset[0], a->offset[1], a->offset[2]};
  ctr_geometry *g = NULL;
  ctr_status st;
  if (a->vectors) {
    double *v = NULL;
    int64_t n = 0;
    int rc = read_vectors(a->vectors, &v, &n);
    if (rc) return rc;
    st = ctr_geometry_create_vectors(a->p.nu, a->p.nv, n, v, &vol, &g);
    free(v);
    if (st != CTR_OK) return cli_fail_file("geometry", st, a->vectors);
  } else if (a->helix_opts) {
    ctr_helical_params h = CTR_HELICAL_PARAMS_INIT;
    h.sid = a->p.sid;
    h.sdd = a->p.sdd;
    h.nu = a->p.nu;
    h.nv = a->p.nv;
    h.du = a->p.du;
    h.dv = a->p.dv;
    h.offset_u = a->p.offset_u;
    h.offset_v = a->p.offset_v;
    h.nviews = a->p.nviews;
    h.angle_start_deg = a->p.angle_start_deg;
    h.angle_range_deg = a->p.angle_range_deg;
    h.direction = a->p.direction;
    h.pitch_mm = a->pitch;
    h.z0_mm = a->z0;
    h.detector = a->p.detector;
    h.window_deg = isnan(a->window) ? CTR_HELIX_WINDOW_AUTO : a->window;
    st = ctr_geometry_create_helical(&h, &vol, &g);
    if (st != CTR_OK) return cli_fail("geometry", st);
  } else {
    st = ctr_geometry_create_circular(&a->p, &vol, &g);
    if (st != CTR_OK) return cli_fail("geometry", st);
  }
  double span = 0;
  if (!a->vectors && !a->helix_opts &&
      ctr_angles_look_like_radians(NULL, a->p.nviews, a->p.angle_range_deg, &span))
    cli_warn("geometry", "--angle-range %g: the %lld views span only %.4g degrees: this looks like "
             "radians, and --angle-range takes degrees (360 for a full turn)", a->p.angle_range_deg,
             (long long)a->p.nviews, span);
  const cli_output out[] = {{"--out", a->out, CLI_OUT_FILE},
                            {"--vectors-out", a->vectors_out, CLI_OUT_FILE}, {0}};
  int rc = cli_check_files("geometry", NULL, out, a->force);
  if (!rc) rc = vectors_possible(a->vectors_out, g);
  if (!rc) {
    st = ctr_geometry_save_json(g, a->out, a->force);
    if (st != CTR_OK) rc = cli_fail_file("geometry", st, a->out);
  }
  if (!rc && a->vectors_out) rc = write_vectors(a->vectors_out, g, a->force);
  if (!rc) {
    if (!a->quiet) {
      printf("wrote ");
      cli_warn_coverage_of("geometry", g, print_summary("geometry", a->out, g, 1));
    } else {
      cli_warn_coverage("geometry", g);
    }
  }
  ctr_geometry_free(g);
  return rc;
}

int cmd_geometry(int argc, char **argv) {
  geometry_args a = {NULL, NULL, CTR_CIRCULAR_PARAMS_INIT, {256, 256, 256}, {1, 1, 1}, {0, 0, 0},
                     NULL, NULL, 0,    0,    0, 0, 0.0, 0.0, NAN, 0};
  a.p.sid = 1000;
  a.p.sdd = 1500;
  a.p.nu = a.p.nv = 256;
  a.p.du = a.p.dv = 1.75;
  a.p.nviews = 360;
  const cli_opt opts[] = {
      {"--out", "FILE", "geometry file to write (JSON; required unless --check)", cli_parse_string,
       &a.out, NULL},
      {"--check", "FILE", "load FILE and print a summary instead of writing", cli_parse_string,
       &a.check, NULL},
      {"--sid", "MM", "source to rotation axis distance (default 1000)", cli_parse_positive,
       &a.p.sid, &a.orbit_opts},
      {"--sdd", "MM", "source to detector distance (default 1500)", cli_parse_positive, &a.p.sdd,
       &a.orbit_opts},
      {"--nu", "N", "detector columns (default 256)", cli_parse_count, &a.p.nu, &a.write_opts},
      {"--nv", "N", "detector rows (default 256)", cli_parse_count, &a.p.nv, &a.write_opts},
      {"--du", "MM", "column pitch (default 1.75)", cli_parse_positive, &a.p.du, &a.orbit_opts},
      {"--dv", "MM", "row pitch (default 1.75)", cli_parse_positive, &a.p.dv, &a.orbit_opts},
      {"--offset-u", "MM", "detector shift along u (default 0)", cli_parse_double, &a.p.offset_u,
       &a.orbit_opts},
      {"--offset-v", "MM", "detector shift along v (default 0)", cli_parse_double, &a.p.offset_v,
       &a.orbit_opts},
      {"--views", "N", "number of projections (default 360)", cli_parse_count, &a.p.nviews,
       &a.orbit_opts},
      {"--angle-start", "DEG", "angle of the first view (default 0)", cli_parse_double,
       &a.p.angle_start_deg, &a.orbit_opts},
      CLI_ALIAS("--start", "--angle-start", "DEG", cli_parse_double, &a.p.angle_start_deg,
                &a.orbit_opts),
      {"--angle-range", "DEG", "angle covered by the views, 0 < range <= 720 (a helix: any, "
       "default 360)",
       cli_parse_positive, &a.p.angle_range_deg, &a.orbit_opts},
      CLI_ALIAS("--range", "--angle-range", "DEG", cli_parse_positive, &a.p.angle_range_deg,
                &a.orbit_opts),
      {"--direction", "ccw|cw", "rotation direction seen from +z (default ccw)", parse_direction,
       &a.p.direction, &a.orbit_opts},
      {"--pitch", "MM", "a helical orbit: the source climbs MM along z per turn (either sign; "
       "default: a circular orbit)", cli_parse_double, &a.pitch, &a.helix_opts},
      {"--z0", "MM", "helix: the source's height at the first view (default 0)", cli_parse_double,
       &a.z0, &a.helix_opts},
      {"--helix-window", "DEG",
       "helix: fdk's redundancy window smoothing width, 0 .. 90 (default: the widest up to 10 "
       "that the pitch allows)", cli_parse_double,
       &a.window, &a.helix_opts},
      {"--detector", "flat|cylindrical",
       "detector shape; cylindrical: columns on an arc of radius sdd about the source, du "
       "their arc length (default flat)", parse_detector, &a.p.detector, &a.orbit_opts},
      {"--volume", "N[,N,N]", "volume size in voxels (default 256)", cli_parse_size3, a.size,
       &a.write_opts},
      {"--voxel", "MM[,MM,MM]", "voxel size (default 1)", cli_parse_voxel3, a.voxel, &a.write_opts},
      {"--vol-offset", "X,Y,Z", "volume centre in mm (default 0,0,0)", cli_parse_vec3, a.offset,
       &a.write_opts},
      {"--from-vectors", "TEXT",
       "views as ASTRA cone_vec rows, 12 numbers a line (default: the circular orbit)",
       cli_parse_string, &a.vectors, &a.write_opts},
      {"--vectors-out", "TEXT",
       "also write the views as ASTRA cone_vec rows (the --from-vectors layout; default: none)",
       cli_parse_string, &a.vectors_out, NULL},
      {"--quiet", NULL, "print nothing but errors and warnings", cli_set_flag, &a.quiet, NULL},
      {"--force", NULL, CLI_FORCE_HELP, cli_set_flag, &a.force, NULL},
      {0},
  };
  int rc = cli_parse(&cli_cmd_geometry, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.check && a.out) return cli_usage_error("geometry", "--check and --out exclude each other");
  if (a.vectors && a.orbit_opts)
    return cli_usage_error("geometry", "--from-vectors takes the views from its file: the orbit's "
                           "options (--sid, --sdd, --du, --dv, --offset-u, --offset-v, --views, "
                           "--start, --range, --direction, --detector) do not apply");
  if (a.vectors && a.helix_opts)
    return cli_usage_error("geometry", "--from-vectors takes the views from its file: the "
                           "helix's options (--pitch, --z0, --helix-window) do not apply");
  if (a.helix_opts && a.pitch == 0.0)
    return cli_usage_error("geometry", "--z0 and --helix-window describe a helix: give its "
                           "--pitch (mm a turn, not 0; without it the orbit is circular)");
  if (a.window < 0.0) /* NAN (not given) compares false */
    return cli_usage_error("geometry", "--helix-window %g: expected 0 .. 90 degrees (leave it "
                           "out for the widest window the pitch allows, up to 10)", a.window);
  if (a.check && (a.write_opts || a.orbit_opts || a.helix_opts))
    return cli_usage_error("geometry", "--check takes no geometry options (they apply to --out)");
  if (a.check) return run_check(a.check, a.vectors_out, a.force);
  rc = cli_require("geometry", opts, "--out", a.out);
  return rc ? rc : run_write(&a);
}
