/* `ctrecon rabbitct-make`: writes a RabbitCT-format data file. A simulated
 * C-arm short scan of the 3D Shepp-Logan head (exact projections, optionally
 * perturbed per view like a real C-arm's calibrated matrices), FDK-filtered
 * and weighted as RabbitCT's views are, with double-precision reference
 * volumes in 12-bit HU. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define MK_PI 3.14159265358979323846
#define MK_EXTENT 256.0          /* mm: RabbitCT's volume edge, for every L */
#define MK_RADIUS (0.95 * 128.0) /* mm: Shepp-Logan head */
#define MK_DENSITY 0.02          /* per mm: water-like */
#define MK_HU0 50000.0f          /* HU = round(hu0 f + hu1): 0.02/mm -> 1024 */
#define MK_HU1 24.0f
#define MK_HU_MAX 4095
#define MK_PROJ_VOXELS 64  /* the projection geometry's grid: any size works */
#define MK_FILTER_BATCH 32 /* views per ctr_fdk_filter call: bounds its scratch */
#define MK_MAX_SIZES 8     /* ctr_rabbitct_header.ref_sizes */
/* Perturbation bounds (uniform in [-max, max], translation length in [0, max]). */
#define MK_WORLD_ROT_DEG 0.1
#define MK_WORLD_SHIFT_MM 0.5
#define MK_DET_SHIFT_PX 0.5
#define MK_DET_ROT_DEG 0.05

const cli_command cli_cmd_rabbitct_make = {
    "rabbitct-make",
    "write a RabbitCT-format file: simulated C-arm scan + reference volumes",
    "ctrecon rabbitct-make --out FILE [options]",
    "Simulates a C-arm short scan of the 3D Shepp-Logan head (radius 121.6 mm,\n"
    "density 0.02/mm, water-like) and writes it as a RabbitCT data file: per view\n"
    "a 3x4 matrix A (RabbitCT order, third row scaled so that w is the depth in\n"
    "mm) and the FDK-filtered projection (window --window, cosine and Parker\n"
    "weights, ramp filter) divided by RabbitCT's weight, so that RabbitCT's sum of\n"
    "Q / w^2 gives the phantom's values; then, per --sizes L, the reference\n"
    "volume of that sum computed in double precision (ctr_fdk_backproject_reference,\n"
    "FP64 on a GPU with --device cuda), L^3 voxels of 256/L mm, in HU =\n"
    "round(50000 f + 24) for f > 0 (water 0.02/mm -> 1024), else 0, clipped to\n"
    "0..4095. With --perturb 1 each view's matrix deviates from the ideal orbit\n"
    "like a calibrated C-arm's: a rigid motion of the world (rotation up to\n"
    "0.1 deg, shift up to 0.5 mm) and a detector-plane shift (up to 0.5 px) and\n"
    "rotation (up to 0.05 deg), reproducible from --seed.\n"
    "Memory: every filtered view stays in memory (views x width x height x 4\n"
    "bytes: 2.4 GB at the defaults) plus 10 bytes per voxel of the reference\n"
    "being computed (L = 256: 168 MB, L = 1024: 10.7 GB). The file is written\n"
    "under a temporary name and renamed when complete.",
    "  ctrecon rabbitct-make --out shepp.rct\n"
    "  ctrecon rabbitct-make --out small.rct --views 120 --width 312 --height 240 \\\n"
    "      --sizes 64,128 --device cpu\n"
    "  ctrecon rabbitct-make --out ideal.rct --perturb 0 --sizes 128,256,512\n",
};

typedef struct make_args {
  const char *out;
  int64_t views, width, height;
  double range, sid, sdd, pitch;
  int pitch_given, perturb, force;
  uint64_t seed;
  int64_t sizes[MK_MAX_SIZES];
  int nsizes;
  ctr_window window;
  cli_common common;
} make_args;

typedef struct make_run {
  ctr_geometry *ideal, *proj_g;
  ctr_phantom *ph;
  ctr_context *ctx;
  cli_session session;
  ctr_rabbitct_writer *writer;
  double *A;    /* nviews x 12, RabbitCT order (column-major) */
  double *rows; /* nviews x 12, the same matrices row-major */
  float *views; /* nviews x width x height: projections, then the stored views */
  double t_project, t_filter, t_write, t_ref[MK_MAX_SIZES];
} make_run;

/* ---- Option parsers ------------------------------------------------------- */

static int parse_window(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_window_parse(value, (ctr_window *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected ram-lak, shepp-logan, cosine, hamming or hann",
                           name, value);
  return 0;
}

static int parse_perturb(const char *cmd, const char *name, const char *value, void *dst) {
  if (strcmp(value, "0") && strcmp(value, "1"))
    return cli_usage_error(cmd, "%s '%s': expected 0 (ideal orbit) or 1 (perturbed)", name, value);
  *(int *)dst = value[0] == '1';
  return 0;
}

static int parse_seed(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(value, &end, 10);
  if (end == value || *end || errno || value[0] < '0' || value[0] > '9')
    return cli_usage_error(cmd, "%s '%s': expected an integer >= 0", name, value);
  *(uint64_t *)dst = (uint64_t)v;
  return 0;
}

static int parse_range_deg(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  double v = strtod(value, &end);
  if (end == value || *end || !(v > 0.0 && v <= 360.0))
    return cli_usage_error(cmd, "%s '%s': expected 0 < DEG <= 360", name, value);
  *(double *)dst = v;
  return 0;
}

/* "128,256": ascending sizes, each twice the one before, starting at 16, 32,
 * 64 or 128, at most 1024 -- the only lists a reader can tell from the file
 * size, as the RabbitCT header does not list them. "none": no references. */
static int parse_sizes(const char *cmd, const char *name, const char *value, void *dst) {
  make_args *a = dst;
  if (!strcmp(value, "none")) {
    a->nsizes = 0;
    return 0;
  }
  int n = 0;
  const char *p = value;
  for (;;) {
    char *end;
    long long L = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ',') || L < 16 || L > 1024 || n == MK_MAX_SIZES) break;
    if (n == 0 ? (L != 16 && L != 32 && L != 64 && L != 128) : L != 2 * a->sizes[n - 1]) break;
    a->sizes[n++] = L;
    if (!*end) {
      a->nsizes = n;
      return 0;
    }
    p = end + 1;
  }
  return cli_usage_error(cmd,
                         "%s '%s': expected sizes L in 16..1024, each twice the one before, "
                         "starting at 16, 32, 64 or 128 (e.g. 128,256 or 16,32), or none",
                         name, value);
}

/* ---- Random perturbation of the orbit ------------------------------------- */

/* splitmix64: the same numbers on every platform for a given --seed. */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; } /* [0,1) */
static double rng_sym(uint64_t *s) { return 2.0 * rng_unit(s) - 1.0; }                  /* [-1,1) */

/* A unit vector uniform on the sphere. */
static void rng_direction(uint64_t *s, double d[3]) {
  const double z = rng_sym(s), phi = 2.0 * MK_PI * rng_unit(s), r = sqrt(fmax(0.0, 1.0 - z * z));
  d[0] = r * cos(phi);
  d[1] = r * sin(phi);
  d[2] = z;
}

/* P' = H P T (P row-major 3x4): T a small rigid motion of the world
 * (rotation about a random axis, translation), H a small detector-plane
 * homography (rotation about the detector centre, shift). */
static void perturb(const make_args *a, uint64_t *rng, const double P[12], double out[12]) {
  double axis[3], dir[3];
  rng_direction(rng, axis);
  const double ang = rng_sym(rng) * MK_WORLD_ROT_DEG * MK_PI / 180.0;
  rng_direction(rng, dir);
  const double len = rng_unit(rng) * MK_WORLD_SHIFT_MM;
  const double su = rng_sym(rng) * MK_DET_SHIFT_PX, sv = rng_sym(rng) * MK_DET_SHIFT_PX;
  const double th = rng_sym(rng) * MK_DET_ROT_DEG * MK_PI / 180.0;
  /* Rodrigues: R = cos I + sin [k]x + (1 - cos) k k^T. */
  const double c = cos(ang), s = sin(ang), t = 1.0 - c;
  const double x = axis[0], y = axis[1], z = axis[2];
  const double R[3][3] = {{c + t * x * x, t * x * y - s * z, t * x * z + s * y},
                          {t * x * y + s * z, c + t * y * y, t * y * z - s * x},
                          {t * x * z - s * y, t * y * z + s * x, c + t * z * z}};
  const double tr[3] = {len * dir[0], len * dir[1], len * dir[2]};
  double M[3][4]; /* P T */
  for (int r = 0; r < 3; r++) {
    for (int col = 0; col < 3; col++)
      M[r][col] = P[r * 4] * R[0][col] + P[r * 4 + 1] * R[1][col] + P[r * 4 + 2] * R[2][col];
    M[r][3] = P[r * 4] * tr[0] + P[r * 4 + 1] * tr[1] + P[r * 4 + 2] * tr[2] + P[r * 4 + 3];
  }
  /* H = shift(centre + s) rot(th) shift(-centre). */
  const double cu = 0.5 * (double)(a->width - 1), cv = 0.5 * (double)(a->height - 1);
  const double ch = cos(th), sh = sin(th);
  const double H[3][3] = {{ch, -sh, cu + su - (ch * cu - sh * cv)},
                          {sh, ch, cv + sv - (sh * cu + ch * cv)},
                          {0.0, 0.0, 1.0}};
  for (int r = 0; r < 3; r++)
    for (int col = 0; col < 4; col++)
      out[r * 4 + col] = H[r][0] * M[0][col] + H[r][1] * M[1][col] + H[r][2] * M[2][col];
}

/* ---- Steps ----------------------------------------------------------------- */

/* The ideal circular orbit, then per view the (perturbed) matrix scaled to
 * RabbitCT's convention, and the projection geometry built from those. */
static int make_geometry(const make_args *a, make_run *r) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = a->sid;
  p.sdd = a->sdd;
  p.nu = a->width;
  p.nv = a->height;
  p.du = p.dv = a->pitch;
  p.nviews = a->views;
  p.angle_start_deg = 0.0;
  p.angle_range_deg = a->range;
  p.direction = CTR_ROTATION_CCW;
  const double vox = MK_EXTENT / MK_PROJ_VOXELS;
  const ctr_volume_geometry vol = {
      MK_PROJ_VOXELS, MK_PROJ_VOXELS, MK_PROJ_VOXELS, vox, vox, vox, 0, 0, 0};
  ctr_status st = ctr_geometry_create_circular(&p, &vol, &r->ideal);
  if (st != CTR_OK) return cli_fail("rabbitct-make", st);
  r->A = malloc((size_t)a->views * 12 * sizeof(double));
  r->rows = malloc((size_t)a->views * 12 * sizeof(double));
  if (!r->A || !r->rows)
    return cli_error("rabbitct-make", CLI_EXIT_RUNTIME, "out of memory for %lld matrices",
                     (long long)a->views);
  uint64_t rng = a->seed;
  for (int64_t i = 0; i < a->views; i++) {
    double P[12], Q[12];
    ctr_geometry_get_matrix(r->ideal, i, P);
    if (a->perturb)
      perturb(a, &rng, P, Q);
    else
      memcpy(Q, P, sizeof Q);
    /* Third row's direction part of unit length: w is the depth in mm,
     * positive in front of the source (the origin is). */
    double s = 1.0 / sqrt(Q[8] * Q[8] + Q[9] * Q[9] + Q[10] * Q[10]);
    if (Q[11] * s < 0.0) s = -s;
    for (int row = 0; row < 3; row++)
      for (int col = 0; col < 4; col++) {
        r->rows[i * 12 + row * 4 + col] = s * Q[row * 4 + col];
        r->A[i * 12 + col * 3 + row] = s * Q[row * 4 + col];
      }
  }
  st = ctr_geometry_create_matrices(a->width, a->height, a->pitch, a->pitch, a->views, r->rows,
                                    &vol, &r->proj_g);
  return st == CTR_OK ? 0 : cli_fail("rabbitct-make", st);
}

static int step_project(const make_args *a, make_run *r) {
  int rc = 0;
  const int64_t dims[3] = {a->width, a->height, a->views};
  r->views = cli_alloc_floats("rabbitct-make", a->width * a->height * a->views, "the views", &rc);
  if (!r->views) return rc;
  ctr_status st = ctr_phantom_shepp_logan(MK_RADIUS, MK_DENSITY, &r->ph);
  if (st != CTR_OK) return cli_fail("rabbitct-make", st);
  ctr_array arr = ctr_array_make(r->views, CTR_DTYPE_FLOAT32, 3, dims);
  const double t0 = cli_now();
  st = ctr_phantom_project(r->ctx, r->ph, r->proj_g, 1, &arr);
  r->t_project = cli_now() - t0;
  cli_progress_end(&r->session);
  return st == CTR_OK ? 0 : cli_fail("rabbitct-make", st);
}

/* FDK filtering in batches, then 1 / ctr_rabbitct_weight(A) per view: the
 * library's backprojection sums Q / c^2 with c = w / w(origin); RabbitCT sums
 * Q' / w^2, so Q' = Q w(origin)^2. */
static int step_filter(const make_args *a, make_run *r) {
  const int64_t per_view = a->width * a->height;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = a->window;
  o.short_scan = CTR_SHORT_SCAN_AUTO;
  const double t0 = cli_now();
  for (int64_t v0 = 0; v0 < a->views; v0 += MK_FILTER_BATCH) {
    if (cli_progress(&r->session, "filtering", (double)v0 / (double)a->views))
      return cli_fail("rabbitct-make", CTR_E_CANCELLED);
    const int64_t n = a->views - v0 < MK_FILTER_BATCH ? a->views - v0 : MK_FILTER_BATCH;
    ctr_status st = ctr_fdk_filter(r->ctx, r->proj_g, &o, v0, n, r->views + v0 * per_view);
    if (st != CTR_OK) {
      cli_progress_end(&r->session);
      return cli_fail("rabbitct-make", st);
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < a->views; v++) {
    const float scale = (float)(1.0 / ctr_rabbitct_weight(r->A + v * 12));
    float *img = r->views + v * per_view;
    for (int64_t k = 0; k < per_view; k++) img[k] *= scale;
  }
  cli_progress(&r->session, "filtering", 1.0);
  r->t_filter = cli_now() - t0;
  return 0;
}

static int step_write_views(const make_args *a, make_run *r) {
  ctr_rabbitct_header h;
  memset(&h, 0, sizeof h);
  h.version = 0; /* the writer's default */
  h.width = a->width;
  h.height = a->height;
  h.nviews = a->views;
  h.hu0 = MK_HU0;
  h.hu1 = MK_HU1;
  h.nref = a->nsizes;
  for (int k = 0; k < a->nsizes; k++) h.ref_sizes[k] = a->sizes[k];
  ctr_status st = ctr_rabbitct_create(a->out, &h, a->force, &r->writer);
  if (st != CTR_OK) return cli_fail_file("rabbitct-make", st, a->out);
  const int64_t per_view = a->width * a->height;
  const double t0 = cli_now();
  for (int64_t v = 0; v < a->views && st == CTR_OK; v++) {
    if (cli_progress(&r->session, "writing views", (double)v / (double)a->views)) {
      st = CTR_E_CANCELLED;
      break;
    }
    st = ctr_rabbitct_write_view(r->writer, r->A + v * 12, r->views + v * per_view);
  }
  if (st == CTR_OK) cli_progress(&r->session, "writing views", 1.0);
  cli_progress_end(&r->session);
  r->t_write += cli_now() - t0;
  return st == CTR_OK ? 0 : cli_fail_file("rabbitct-make", st, a->out);
}

/* HU in double, the rule of ctr_rabbitct_to_hu: round(hu0 f + hu1) for
 * f > 0, else 0, clipped to 0..4095. */
static void to_hu(const double *f, int64_t n, uint16_t *out) {
  const double hu0 = MK_HU0, hu1 = MK_HU1;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const double v = f[i] > 0.0 ? hu0 * f[i] + hu1 : 0.0;
    out[i] = !(v > 0.0) ? 0 : v >= MK_HU_MAX ? MK_HU_MAX : (uint16_t)round(v);
  }
}

static int step_reference(const make_args *a, make_run *r, int k) {
  const int64_t L = a->sizes[k], nvox = L * L * L;
  const double R_L = MK_EXTENT / (double)L, O_L = -0.5 * (double)(L - 1) * R_L;
  ctr_geometry *g = NULL;
  const double **mats = malloc((size_t)a->views * sizeof *mats);
  const float **imgs = malloc((size_t)a->views * sizeof *imgs);
  int64_t *idx = malloc((size_t)a->views * sizeof *idx);
  double *w = malloc((size_t)a->views * sizeof *w);
  double *vol = calloc((size_t)nvox, sizeof *vol);
  uint16_t *hu = malloc((size_t)nvox * sizeof *hu);
  int rc = 0;
  if (!mats || !imgs || !idx || !w || !vol || !hu) {
    char b[32];
    rc = cli_error("rabbitct-make", CLI_EXIT_RUNTIME,
                   "out of memory for the %lld^3 reference volume (needs %s)", (long long)L,
                   cli_bytes(10.0 * (double)nvox, b, sizeof b));
    goto done;
  }
  for (int64_t v = 0; v < a->views; v++) {
    mats[v] = r->A + v * 12;
    imgs[v] = r->views + v * a->width * a->height;
    idx[v] = v;
    w[v] = ctr_rabbitct_weight(r->A + v * 12);
  }
  ctr_status st = ctr_geometry_create_rabbitct(a->width, a->height, a->views,
                                             (const double *const *)mats, L, R_L, O_L, &g);
  const double t0 = cli_now();
  if (st == CTR_OK)
    st = ctr_fdk_backproject_reference(r->ctx, g, a->views, idx, (const float *const *)imgs, w, vol);
  r->t_ref[k] = cli_now() - t0;
  cli_progress_end(&r->session);
  if (st != CTR_OK) {
    rc = cli_fail("rabbitct-make", st);
    goto done;
  }
  if (cli_interrupted()) {
    rc = cli_fail("rabbitct-make", CTR_E_CANCELLED);
    goto done;
  }
  to_hu(vol, nvox, hu);
  const double t1 = cli_now();
  st = ctr_rabbitct_write_reference(r->writer, L, hu);
  r->t_write += cli_now() - t1;
  if (st != CTR_OK) rc = cli_fail_file("rabbitct-make", st, a->out);
  if (!rc)
    cli_info(&r->session, "reference %4lld^3 (voxel %g mm): %.2f s\n", (long long)L, R_L,
             r->t_ref[k]);
done:
  ctr_geometry_free(g);
  free(mats);
  free(imgs);
  free(idx);
  free(w);
  free(vol);
  free(hu);
  return rc;
}

static void print_header(const make_args *a) {
  if (a->common.quiet) return;
  printf(
      "rabbitct-make: %lld views over %g deg (%s), %lld x %lld pixels of %.4g mm, "
      "sid %g mm, sdd %g mm\n",
      (long long)a->views, a->range, a->range < 360.0 ? "short scan" : "full circle",
      (long long)a->width, (long long)a->height, a->pitch, a->sid, a->sdd);
  if (a->perturb)
    printf("      orbit perturbed (seed %llu); ", (unsigned long long)a->seed);
  else
    printf("      ideal orbit; ");
  printf("Shepp-Logan head, radius %.1f mm, %g/mm; %s window\n", MK_RADIUS, MK_DENSITY,
         ctr_window_name(a->window));
  /* Up front: how much it writes, and what takes the time. */
  double bytes = (double)a->views * (double)(a->width * a->height) * sizeof(float);
  for (int k = 0; k < a->nsizes; k++)
    bytes += (double)a->sizes[k] * (double)a->sizes[k] * (double)a->sizes[k] * sizeof(uint16_t);
  char b[32];
  printf("      writes about %s to %s; projecting and filtering %lld views of %lld x %lld takes "
         "seconds on a GPU, minutes on a few CPU cores (the defaults: about 2 minutes on 2; "
         "--views, --width, --height make it smaller)\n",
         cli_bytes(bytes, b, sizeof b), a->out, (long long)a->views, (long long)a->width,
         (long long)a->height);
}

static void print_summary(const make_args *a, const make_run *r, double total) {
  char sizes[128] = "none", fsize[32] = "?";
  size_t used = 0;
  for (int k = 0; k < a->nsizes && used < sizeof sizes; k++) {
    int m = snprintf(sizes + used, sizeof sizes - used, "%s%lld", k ? ", " : "",
                     (long long)a->sizes[k]);
    if (m > 0) used += (size_t)m;
  }
  struct stat st;
  if (stat(a->out, &st) == 0) cli_bytes((double)st.st_size, fsize, sizeof fsize);
  const cli_session *s = &r->session;
  cli_info(s,
           "wrote %s: %lld views of %lld x %lld, %g deg, references %s (HU = 50000 f + 24), "
           "%s, %.2f s (writing %.2f s)\n",
           a->out, (long long)a->views, (long long)a->width, (long long)a->height, a->range, sizes,
           fsize, total, r->t_write);
}

static int run(const make_args *a, make_run *r) {
  const double t0 = cli_now();
  const cli_output out[] = {{"--out", a->out, CLI_OUT_FILE}, {0}};
  int rc = cli_check_files("rabbitct-make", NULL, out, a->force);
  if (!rc) rc = make_geometry(a, r);
  if (rc) return rc;
  print_header(a);
  rc = cli_context_create(&r->session, "rabbitct-make", &a->common, &r->ctx);
  if (!rc) rc = step_project(a, r);
  if (!rc) rc = step_filter(a, r);
  if (!rc) cli_info(&r->session, "projections %.2f s, filter %.2f s\n", r->t_project, r->t_filter);
  if (!rc) rc = step_write_views(a, r);
  for (int k = 0; !rc && k < a->nsizes; k++) rc = step_reference(a, r, k);
  if (rc) return rc;
  ctr_status st = ctr_rabbitct_commit(r->writer);
  r->writer = NULL; /* commit frees it, whatever the outcome */
  if (st != CTR_OK) return cli_fail_file("rabbitct-make", st, a->out);
  print_summary(a, r, cli_now() - t0);
  return 0;
}

int cmd_rabbitct_make(int argc, char **argv) {
  make_args a;
  memset(&a, 0, sizeof a);
  a.views = 496;
  a.width = 1248;
  a.height = 960;
  a.range = 200.0;
  a.sid = 750.0;
  a.sdd = 1200.0;
  a.perturb = 1;
  a.seed = 1;
  a.sizes[0] = 128;
  a.sizes[1] = 256;
  a.nsizes = 2;
  a.window = CTR_WINDOW_SHEPP_LOGAN;
  a.common = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--out", "FILE", "RabbitCT file to write (required)", cli_parse_string, &a.out, NULL},
      {"--views", "N", "projections (default 496)", cli_parse_count, &a.views, NULL},
      {"--width", "N", "detector columns S_x (default 1248)", cli_parse_count, &a.width, NULL},
      {"--height", "N", "detector rows S_y (default 960)", cli_parse_count, &a.height, NULL},
      {"--angle-range", "DEG",
       "angle covered, 0 < DEG <= 360; < 360 is a short scan (default 200)", parse_range_deg,
       &a.range, NULL},
      CLI_ALIAS("--range", "--angle-range", "DEG", parse_range_deg, &a.range, NULL),
      {"--sid", "MM", "source to rotation axis (default 750)", cli_parse_positive, &a.sid, NULL},
      {"--sdd", "MM", "source to detector (default 1200)", cli_parse_positive, &a.sdd, NULL},
      {"--pitch", "MM",
       "detector pixel pitch (default 0.32 x 1248 / width: the detector keeps its size)",
       cli_parse_positive, &a.pitch, &a.pitch_given},
      {"--perturb", "0|1", "1: small random deviations from the ideal orbit; 0: ideal (default 1)",
       parse_perturb, &a.perturb, NULL},
      {"--seed", "N", "seed of the perturbation (default 1)", parse_seed, &a.seed, NULL},
      {"--sizes", "LIST",
       "reference volume sizes L, doubling from 16, 32, 64 or 128 up to 1024, or none "
       "(default 128,256)",
       parse_sizes, &a, NULL},
      {"--window", "NAME", "ram-lak, shepp-logan, cosine, hamming, hann (default shepp-logan)",
       parse_window, &a.window, NULL},
      CLI_FORCE_OPTION(&a.force),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_rabbitct_make, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  rc = cli_require("rabbitct-make", opts, "--out", a.out);
  if (rc) return rc;
  if (a.width > 16384 || a.height > 16384 || a.views > 100000)
    return cli_usage_error("rabbitct-make",
                           "--width, --height <= 16384 and --views <= 100000, please");
  if (!a.pitch_given) a.pitch = 0.32 * 1248.0 / (double)a.width;
  if (!(a.sdd > a.sid))
    return cli_usage_error("rabbitct-make", "--sdd %g must exceed --sid %g", a.sdd, a.sid);
  /* FDK of a short scan (Parker weights) needs 180 deg + the fan angle; fail
   * now rather than after the projections. Between 180 and that the library
   * warns and goes on. */
  const double fan = 2.0 * atan(0.5 * (double)a.width * a.pitch / a.sdd) * 180.0 / MK_PI;
  if (a.range < 180.0)
    return cli_usage_error("rabbitct-make",
                           "--angle-range %g: a short scan needs at least 180 deg + the fan angle "
                           "(%.1f deg for this detector)",
                           a.range, 180.0 + fan);
#ifdef _OPENMP
  if (a.common.threads > 0) omp_set_num_threads(a.common.threads); /* the tool's own loops */
#endif
  make_run r;
  memset(&r, 0, sizeof r);
  r.session.cmd = "rabbitct-make"; /* until cli_context_create fills it */
  r.session.common = a.common;
  rc = run(&a, &r);
  cli_progress_end(&r.session);
  ctr_rabbitct_abort(r.writer);
  cli_free_floats(r.views);
  free(r.A);
  free(r.rows);
  ctr_context_free(r.ctx);
  ctr_phantom_free(r.ph);
  ctr_geometry_free(r.proj_g);
  ctr_geometry_free(r.ideal);
  return rc;
}
