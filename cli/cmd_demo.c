/* `ctrecon demo`: the end-to-end run. Exact projections of the Shepp-Logan
 * head, FDK, comparison with the voxelised phantom, files to look at. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The physical setup is fixed; --size, --det only change the sampling. */
#define DEMO_SID 1000.0
#define DEMO_SDD 1500.0
#define DEMO_EXTENT 256.0   /* mm: volume edge and detector (x 1.75) */
#define DEMO_PITCH_256 1.75 /* mm: detector pitch at 256 pixels */
#define DEMO_RADIUS (0.95 * 128.0)
/* Preview grey window: the Shepp-Logan brain is 0.2 (skull 1), so 0..0.5
 * shows its low-contrast details; the skull saturates. */
#define DEMO_WINDOW_LO 0.0f
#define DEMO_WINDOW_HI 0.5f

const cli_command cli_cmd_demo = {
    "demo",
    "end-to-end run: phantom, projections, FDK, accuracy, previews",
    "ctrecon demo [options]",
    "Simulates a 360-degree cone-beam scan of the 3D Shepp-Logan head (radius\n"
    "121.6 mm) with exact line integrals, reconstructs it with FDK (hann window)\n"
    "and compares the result with the voxelised phantom, away from the top and\n"
    "bottom fifths where cone-beam FDK is approximate. Geometry: source 1000 mm\n"
    "from the axis, detector 1500 mm from the source, det x det pixels of\n"
    "1.75 x 256/det mm, a size^3 volume of 256 mm. Writes geometry.json,\n"
    "recon.nrrd and PNG previews of the central slices (recon_*.png, truth_*.png,\n"
    "grey window 0..0.5) to the output directory.",
    "  ctrecon demo\n"
    "  ctrecon demo --size 128 --views 180 --det 128 --out-dir small\n"
    "  ctrecon demo --size 512 --views 720 --det 512 --no-volume\n",
};

typedef struct demo_args {
  int64_t size, views, det;
  const char *out_dir;
  int no_volume;
  int parallel;
  int64_t slices;
  ctr_interp interp;
  cli_common common;
  int pet;
  int force; /* --force: replace an earlier run's files, write into an --out-dir that holds
                other files */
  double tilt; /* --parallel --tilt DEG: laminography (cmd_demo_lamino.c) */
} demo_args;

typedef struct demo_run {
  ctr_geometry *g;
  ctr_phantom *ph;
  ctr_context *ctx;
  cli_session session;
  float *proj, *rec, *truth;
  double t_proj, t_fdk, t_truth, t_compare;
  ctr_volume_error err;
  char path[4096];
} demo_run;

/* The files each demo writes: a folder holding others (another demo's, or
 * files not ours) is refused unless --force, so that two demos never mix
 * their files in one folder (recon.nrrd, recon_xy.png are in both CT demos);
 * so is one holding an earlier run's, which --force replaces. */
static const char *const CONE_FILES[] = {
    "geometry.json", "recon.nrrd",   "recon_xy.png", "recon_xz.png", "recon_yz.png",
    "truth_xy.png",  "truth_xz.png", "truth_yz.png", NULL};
static const char *const PARALLEL_FILES[] = {
    "projections.tif", "flat.tif",     "dark.tif", "sinograms.tif",
    "recon.nrrd",      "recon_xy.png", "truth_xy.png", "recon_xz.png", NULL};
static const char *const PET_FILES[] = {
    "pet_image.nrrd",    "pet_image_xy.png",  "pet_image_xz.png", "pet_image_yz.png",
    "pet_truth_xy.png",  "pet_truth_xz.png",  "pet_truth_yz.png", "pet_crc.csv",
    "pet_crc.png",       NULL};

/* One of the demo's files, or a temporary of one (NAME.tmp.PID.N, left by a
 * killed run: removed by cli_check_files) or the writability probe. */
static int demo_file(const char *name, const char *const *files) {
  if (!strncmp(name, ".ctrecon-probe.", 15)) return 1;
  for (const char *const *f = files; *f; f++) {
    const size_t n = strlen(*f);
    if (!strncmp(name, *f, n) && (!name[n] || !strncmp(name + n, ".tmp.", 5))) return 1;
  }
  return 0;
}

/* An earlier run's files (its temporaries aside): replaced only with --force. */
static int check_earlier_run(const char *dir, const char *const *files, const char *kind) {
  for (const char *const *f = files; *f; f++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, *f);
    struct stat st;
    if (stat(path, &st) == 0)
      return cli_usage_error("demo", "--out-dir '%s' holds the files of an earlier run of %s, e.g. "
                             "'%s': add --force to replace them, or give a new --out-dir", dir,
                             kind, *f);
  }
  return 0;
}

static int check_own_dir(const char *dir, const char *const *files, const char *kind) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char other[256] = "";
  int n = 0;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || demo_file(e->d_name, files))
      continue;
    if (!n++) snprintf(other, sizeof other, "%s", e->d_name);
  }
  closedir(d);
  if (!n) return check_earlier_run(dir, files, kind);
  const char *whose = demo_file(other, CONE_FILES)       ? " (of `ctrecon demo`)"
                      : demo_file(other, PARALLEL_FILES) ? " (of `ctrecon demo --parallel`)"
                      : demo_file(other, PET_FILES)      ? " (of `ctrecon demo --pet`)"
                                                         : "";
  return cli_usage_error("demo", "--out-dir '%s' holds %d file%s that %s does not write, e.g. "
                         "'%s'%s: give an empty or new --out-dir, or add --force to write there "
                         "anyway", dir, n, n == 1 ? "" : "s", kind, other, whose);
}

/* mkdir -p: the output directory and its missing parents. */
static int make_dirs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
    return cli_error("demo", CLI_EXIT_RUNTIME, "--out-dir '%s': path too long", dir);
  for (char *c = p + 1;; c++) {
    const int end = *c == '\0';
    if (*c == '/' || end) {
      *c = '\0';
      struct stat st;
      if (stat(p, &st) != 0 && mkdir(p, 0777) != 0 && errno != EEXIST)
        return cli_error("demo", CLI_EXIT_RUNTIME, "cannot create directory '%s': %s", p,
                         strerror(errno));
      if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_error("demo", CLI_EXIT_RUNTIME,
                         "cannot use '%s' as output directory: "
                         "'%s' is not a directory",
                         dir, p);
      if (end) {
        /* It must take files too (before minutes of computing). */
        snprintf(p, sizeof p, "%s/", dir);
        const cli_output out[] = {{"--out-dir", p, CLI_OUT_UNCHECKED}, {0}};
        return cli_check_files("demo", NULL, out, 0);
      }
      *c = '/';
    }
  }
}

static const char *out_path(demo_run *r, const demo_args *a, const char *name) {
  snprintf(r->path, sizeof r->path, "%s/%s", a->out_dir, name);
  return r->path;
}

static ctr_status make_geometry(const demo_args *a, ctr_geometry **out) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = DEMO_SID;
  p.sdd = DEMO_SDD;
  p.nu = p.nv = a->det;
  p.du = p.dv = DEMO_PITCH_256 * 256.0 / (double)a->det;
  p.nviews = a->views;
  p.angle_range_deg = 360.0;
  const double voxel = DEMO_EXTENT / (double)a->size;
  const ctr_volume_geometry vol = {a->size, a->size, a->size, voxel, voxel, voxel, 0, 0, 0};
  return ctr_geometry_create_circular(&p, &vol, out);
}

/* ---- Steps ----------------------------------------------------------------- */

static int step_project(const demo_args *a, demo_run *r) {
  int rc = 0;
  const int64_t dims[3] = {a->det, a->det, a->views};
  r->proj = cli_alloc_floats("demo", a->det * a->det * a->views, "the projections", &rc);
  if (!r->proj) return rc;
  ctr_array arr = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, dims);
  const double t0 = cli_now();
  ctr_status st = ctr_phantom_project(r->ctx, r->ph, r->g, 1, &arr);
  r->t_proj = cli_now() - t0;
  return st == CTR_OK ? 0 : cli_fail("demo", st);
}

static int step_fdk(const demo_args *a, demo_run *r) {
  int rc = 0;
  const int64_t n = a->size, pdims[3] = {a->det, a->det, a->views}, vdims[3] = {n, n, n};
  r->rec = cli_alloc_floats("demo", n * n * n, "the reconstruction", &rc);
  if (!r->rec) return rc;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  o.interp = a->interp;
  const ctr_array proj = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pdims);
  ctr_array vol = ctr_array_make(r->rec, CTR_DTYPE_FLOAT32, 3, vdims);
  const double t0 = cli_now();
  ctr_status st = ctr_fdk(r->ctx, r->g, &o, &proj, &vol);
  r->t_fdk = cli_now() - t0;
  cli_free_floats(r->proj); /* no longer needed: keep the peak memory down */
  r->proj = NULL;
  return st == CTR_OK ? 0 : cli_fail("demo", st);
}

static int step_truth(const demo_args *a, demo_run *r) {
  int rc = 0;
  const int64_t n = a->size, dims[3] = {n, n, n};
  r->truth = cli_alloc_floats("demo", n * n * n, "the truth volume", &rc);
  if (!r->truth) return rc;
  ctr_array arr = ctr_array_make(r->truth, CTR_DTYPE_FLOAT32, 3, dims);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  double t0 = cli_now();
  ctr_status st = ctr_phantom_voxelize(r->ctx, r->ph, &vol, 2, 0, &arr);
  r->t_truth = cli_now() - t0;
  if (st != CTR_OK) return cli_fail("demo", st);
  t0 = cli_now();
  r->err = (ctr_volume_error)CTR_VOLUME_ERROR_INIT;
  st = ctr_volume_compare(r->rec, r->truth, n, n, n, n / 5, &r->err);
  r->t_compare = cli_now() - t0;
  return st == CTR_OK ? 0 : cli_fail("demo", st);
}

static int step_write(const demo_args *a, demo_run *r) {
  const int64_t n = a->size;
  ctr_status st;
  if (!a->no_volume) {
    const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
    const ctr_stack_info info = cli_volume_info(&vol, 0, n, CTR_DTYPE_FLOAT32);
    st = ctr_stack_save(out_path(r, a, "recon.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32,
                        r->rec, a->force);
    if (st != CTR_OK) return cli_fail_file("demo", st, r->path);
  }
  const ctr_volume_geometry vol = ctr_geometry_get_volume(r->g);
  const double voxel[3] = {vol.voxel_x, vol.voxel_y, vol.voxel_z};
  const int rc = cli_preview_volume("demo", out_path(r, a, "recon"), r->rec, n, n, n, voxel,
                                    DEMO_WINDOW_LO, DEMO_WINDOW_HI, a->force);
  if (rc) return rc;
  return cli_preview_volume("demo", out_path(r, a, "truth"), r->truth, n, n, n, voxel,
                            DEMO_WINDOW_LO, DEMO_WINDOW_HI, a->force);
}

/* ---- Report ------------------------------------------------------------------ */

/* Printed before the context exists, hence not through cli_info. */
static void print_header(const demo_args *a) {
  if (a->common.quiet) return;
  printf("demo: Shepp-Logan head (radius %.1f mm) on a %lld^3 grid of %.4g mm voxels,\n",
         DEMO_RADIUS, (long long)a->size, DEMO_EXTENT / (double)a->size);
  printf("      %lld views over 360 deg of %lld x %lld pixels (%.4g mm), sid %g mm, sdd %g mm\n",
         (long long)a->views, (long long)a->det, (long long)a->det,
         DEMO_PITCH_256 * 256.0 / (double)a->det, DEMO_SID, DEMO_SDD);
}

static void print_report(const demo_args *a, const demo_run *r) {
  const cli_session *s = &r->session;
  const int64_t n = a->size, m = n / 5;
  const double t_fdk = r->t_fdk > 1e-9 ? r->t_fdk : 1e-9; /* coarse clocks */
  const double gups = (double)a->views * (double)(n * n * n) / t_fdk / 1e9;
  cli_info(s, "steps:\n");
  cli_info(s, "  exact projections      %8.2f s\n", r->t_proj);
  cli_info(s, "  fdk (hann)             %8.2f s\n", r->t_fdk);
  cli_info(s, "  truth (voxelised, 2^3) %8.2f s\n", r->t_truth);
  cli_info(s, "  compare                %8.2f s\n", r->t_compare);
  cli_info(s, "accuracy (slices %lld..%lld; %lld slices at each end left out):\n", (long long)m,
           (long long)(n - 1 - m), (long long)m);
  cli_info(s, "  RMSE away from edges   %10.5f   (%lld voxels)\n", r->err.rmse_flat,
           (long long)r->err.n_flat);
  cli_info(s, "  RMSE over the object   %10.5f   (%lld voxels)\n", r->err.rmse_object,
           (long long)r->err.n_object);
  cli_info(s, "  max error              %10.5f   (skull 1.0, brain 0.2)\n", r->err.max_abs);
  cli_info(s, "performance:\n");
  cli_info(s, "  FDK                    %8.2f s, %.2f GUPS (views x voxels / s / 1e9)\n", r->t_fdk,
           gups);
  cli_info(s, "files:\n");
  cli_info(s, "  %s/geometry.json\n", a->out_dir);
  if (!a->no_volume) {
    char size[32];
    cli_info(s, "  %s/recon.nrrd (%s)\n", a->out_dir,
             cli_bytes(4.0 * (double)(n * n * n), size, sizeof size));
  }
  cli_info(s, "  %s/recon_{xy,xz,yz}.png  %s/truth_{xy,xz,yz}.png (grey window %g..%g)\n",
           a->out_dir, a->out_dir, DEMO_WINDOW_LO, DEMO_WINDOW_HI);
}

static int run(const demo_args *a, demo_run *r) {
  int rc = make_dirs(a->out_dir);
  if (rc) return rc;
  ctr_status st = make_geometry(a, &r->g);
  if (st != CTR_OK) return cli_fail("demo", st);
  st = ctr_geometry_save_json(r->g, out_path(r, a, "geometry.json"), a->force);
  if (st != CTR_OK) return cli_fail_file("demo", st, r->path);
  st = ctr_phantom_shepp_logan(DEMO_RADIUS, 1.0, &r->ph);
  if (st != CTR_OK) return cli_fail("demo", st);
  print_header(a);
  cli_warn_coverage("demo", r->g);
  rc = cli_context_create(&r->session, "demo", &a->common, &r->ctx);
  if (!rc) rc = step_project(a, r);
  if (!rc) rc = step_fdk(a, r);
  if (!rc) rc = step_truth(a, r);
  cli_progress_end(&r->session);
  if (!rc) rc = step_write(a, r);
  if (!rc) print_report(a, r);
  return rc;
}

int cmd_demo(int argc, char **argv) {
  demo_args a = {256, 360, 256, NULL, 0, 0, 16, CTR_INTERP_DEFAULT, CLI_COMMON_INIT, 0, 0, 0.0};
  const cli_opt opts[] = {
      {"--size", "N", "volume size N^3 over 256 mm (default 256)", cli_parse_count, &a.size, NULL},
      {"--views", "N", "projections over 360 deg (default 360)", cli_parse_count, &a.views, NULL},
      {"--det", "N", "detector N x N pixels over 448 mm (default 256)", cli_parse_count, &a.det,
       NULL},
      {"--out-dir", "DIR",
       "where files go; created if missing (default: demo-out, demo-parallel-out with "
       "--parallel, demo-pet-out with --pet)",
       cli_parse_string, &a.out_dir, NULL},
      {"--no-volume", NULL, "do not write recon.nrrd (previews only)", cli_set_flag, &a.no_volume,
       NULL},
      {"--force", NULL, "replace an existing output file: the files of an earlier run in "
       "--out-dir, and write into one that holds files this demo does not write (another demo's: "
       "the names they share are replaced) (default: refused)", cli_set_flag, &a.force, NULL},
      {"--interp", "MODE",
       "backprojection interpolation: auto, exact, precise or texture (default auto: texture on "
       "a GPU, exact on the CPU)",
       cli_parse_interp, &a.interp, NULL},
      {"--parallel", NULL,
       "the parallel-beam (synchrotron) case instead: --slices central slices of size^2 from "
       "--views angles over 180 deg, FBP (default off)", cli_set_flag, &a.parallel, NULL},
      {"--slices", "N", "slices of the parallel-beam case (default 16)", cli_parse_count,
       &a.slices, NULL},
      {"--tilt", "DEG", "with --parallel: laminography instead, the rotation axis tilted by DEG "
       "(0 < |DEG| < 90): a stack of three thin disks from --views angles over 360 deg, FBP, "
       "each disk's mean against its density and FBP's missing-cone limit (default 0: off)",
       cli_parse_double, &a.tilt, NULL},
      {"--pet", NULL,
       "the TOF-PET case instead: Ha et al. 2013's sphere phantom simulated, block-RAMLA, CRC and "
       "noise per iteration (full size on a GPU, reduced on the CPU; default off)",
       cli_set_flag, &a.pet, NULL},
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_demo, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.pet && a.parallel) return cli_usage_error("demo", "give --parallel or --pet, not both");
  if (a.tilt != 0.0 && !a.parallel)
    return cli_usage_error("demo", "--tilt applies to --parallel (laminography is parallel beam)");
  /* One folder per demo: their files share names (recon.nrrd, recon_xy.png). */
  if (!a.out_dir) a.out_dir = a.pet ? "demo-pet-out" : a.parallel ? "demo-parallel-out" : "demo-out";
  if (!a.force &&
      (rc = check_own_dir(a.out_dir, a.pet ? PET_FILES : a.parallel ? PARALLEL_FILES : CONE_FILES,
                          a.pet ? "demo --pet" : a.parallel ? "demo --parallel" : "demo")))
    return rc;
  if (a.pet) {
    rc = make_dirs(a.out_dir);
    return rc ? rc : cmd_demo_pet(a.out_dir, a.no_volume, a.force, &a.common);
  }
  if (a.parallel) {
    if (a.size > 16384 || a.views > 100000 || a.slices > 4096)
      return cli_usage_error("demo", "--size <= 16384, --views <= 100000 and --slices <= 4096, please");
    if (a.tilt != 0.0 && !(fabs(a.tilt) < 90.0))
      return cli_usage_error("demo", "--tilt %g: expected degrees in (-90, 90)", a.tilt);
    rc = make_dirs(a.out_dir);
    if (!rc && a.tilt != 0.0)
      return cmd_demo_lamino(a.size, a.views, a.slices, a.tilt, a.out_dir, a.force, &a.common);
    return rc ? rc : cmd_demo_parallel(a.size, a.views, a.slices, a.out_dir, a.no_volume,
                                       a.force, &a.common);
  }
  if (a.size > 4096 || a.det > 16384 || a.views > 100000)
    return cli_usage_error("demo", "--size <= 4096, --det <= 16384 and --views <= 100000, please");
  demo_run r;
  memset(&r, 0, sizeof r);
  rc = run(&a, &r);
  cli_progress_end(&r.session);
  cli_free_floats(r.proj);
  cli_free_floats(r.rec);
  cli_free_floats(r.truth);
  ctr_context_free(r.ctx);
  ctr_phantom_free(r.ph);
  ctr_geometry_free(r.g);
  return rc;
}
