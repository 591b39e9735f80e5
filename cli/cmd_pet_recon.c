/* `ctrecon pet recon`: DIRECT TOF-PET reconstruction of a histo-image file
 * (block-RAMLA, OSEM or MLEM) with the spatially variant system-response
 * kernels, per-iteration images, CRC/noise per iteration as CSV and plot. */
#include "cli_pet.h"
#include "cmd_pet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_pet_recon = {
    "pet recon",
    "reconstruct a TOF-PET image from histo-images",
    "ctrecon pet recon --data FILE --out IMAGE [options]",
    "Reconstructs the activity from the histo-images of --data (written by 'pet\n"
    "simulate') with block-RAMLA (one view per sub-iteration, relaxation\n"
    "lambda_k = LAMBDA0 / (1 + DECAY k)), OSEM (one view per subset) or MLEM. The\n"
    "projectors apply each view's system-response kernels: TOF along the view\n"
    "direction (--tof-ps; default the data's), LOR-radial (--radial-fwhm, varying\n"
    "linearly from the axis to --edge-radius, or through --radial-table) and\n"
    "LOR-axial (--axial-fwhm), optionally asymmetric (--asymmetric), cut at\n"
    "--kernel-cut sigma. The image goes to IMAGE\n"
    "({titles}; raw as float32,\n"
    "with the voxel size and origin in NRRD). --every N writes the image every N\n"
    "iterations; --metrics/--plot record the CRC of the phantom's spheres and the\n"
    "noise after every iteration (as 'pet metrics' computes them) into a CSV\n"
    "(iteration,noise,crc,crc_sphere1..n; noise as a fraction) and a CRC-versus-\n"
    "noise plot (PNG).",
    "  ctrecon pet recon --data data.json --out image.nrrd\n"
    "  ctrecon pet recon --data data.json --out image.nrrd --iterations 20 --metrics crc.csv \\\n"
    "      --plot crc.png --preview image\n"
    "  ctrecon pet recon --data data.h5 --out image.nrrd --algorithm osem --iterations 3 \\\n"
    "      --radial-fwhm 5.8:10 --every 1 --timings\n",
};

typedef struct recon_args {
  const char *data, *out, *radial_table, *iter_prefix, *metrics, *plot, *preview;
  ctr_file_format out_format;
  ctr_pet_algorithm algorithm;
  int iterations, every, asymmetric, timings, force;
  pet_pair relax, radial;
  double tof_ps, axial, edge_radius, asym_weight, asym_shift, cut, epsilon, contrast;
  int tof_given;
  pet_phantom_kind phantom;
  cli_common common;
  int strict; /* --strict: the data policy's bad values are errors */
  char prefix[4200]; /* --iter-prefix's default */
} recon_args;

/* State of the per-iteration callback. */
typedef struct recon_run {
  const recon_args *a;
  const ctr_pet_params *p;
  cli_session session;
  ctr_pet_phantom ph;
  int want_metrics;
  pet_curve curve;
  char ext[16]; /* extension of the per-iteration images */
  int rc;       /* an error inside the callback (exit code) */
  double t_start; /* cli_now() when the iterations began */
  /* the data, the system of its kernels, the projector and the image */
  ctr_pet_histo *h;
  ctr_pet_kernel_params k;
  ctr_pet_system *s;
  ctr_pet_projector *proj;
  ctr_context *ctx;
  double *table; /* --radial-table's (radius, FWHM) pairs */
  int table_n;
  float *image;
  double t_load, t_recon;
  ctr_pet_recon_timings t;
} recon_run;

static int parse_algorithm(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_pet_algorithm_parse(value, (ctr_pet_algorithm *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected ramla, osem or mlem", name, value);
  return 0;
}

/* --radial-table: lines "radius_mm, fwhm_mm" (comma or blanks), '#'
 * comments, an optional header line; radii ascending, FWHM > 0. */
static int read_radial_table(const char *cmd, const char *path, double **out, int *n_out) {
  FILE *f = fopen(path, "r");
  if (!f)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "--radial-table '%s': cannot open: %s", path,
                     strerror(errno));
  int n = 0, cap = 16, line_no = 0, rc = 0;
  double *v = malloc(sizeof(double) * 2 * (size_t)cap);
  char line[1024];
  while (v && fgets(line, sizeof line, f)) {
    line_no++;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    if (*s == '\0' || *s == '\n' || *s == '\r') continue;
    double r, w;
    char *end;
    r = strtod(s, &end);
    if (end == s) {
      if (n == 0 && line_no == 1) continue; /* a header such as "radius_mm,fwhm_mm" */
      rc = cli_error(cmd, CLI_EXIT_INPUT, "--radial-table '%s' line %d: expected RADIUS_MM, "
                     "FWHM_MM", path, line_no);
      break;
    }
    s = end;
    while (*s == ' ' || *s == '\t' || *s == ',' || *s == ';') s++;
    w = strtod(s, &end);
    int ok = end != s;
    for (s = end; ok && *s; s++) ok = *s == ' ' || *s == '\t' || *s == '\r' || *s == '\n';
    if (!ok || !isfinite(r) || !isfinite(w) || r < 0 || !(w > 0)) {
      rc = cli_error(cmd, CLI_EXIT_INPUT, "--radial-table '%s' line %d: expected RADIUS_MM, "
                     "FWHM_MM with radius >= 0 and FWHM > 0", path, line_no);
      break;
    }
    if (n > 0 && !(r > v[2 * (n - 1)])) {
      rc = cli_error(cmd, CLI_EXIT_INPUT, "--radial-table '%s' line %d: radius %g after %g: "
                     "radii must ascend", path, line_no, r, v[2 * (n - 1)]);
      break;
    }
    if (n == cap) {
      double *w2 = realloc(v, sizeof(double) * 4 * (size_t)cap);
      if (!w2) {
        free(v);
        v = NULL;
        break;
      }
      v = w2;
      cap *= 2;
    }
    v[2 * n] = r;
    v[2 * n + 1] = w;
    n++;
  }
  fclose(f);
  if (!v) return cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory reading '%s'", path);
  if (!rc && n == 0)
    rc = cli_error(cmd, CLI_EXIT_INPUT, "--radial-table '%s' holds no (radius, FWHM) pair", path);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *n_out = n;
  return 0;
}

/* Image file of iteration `it`: PREFIX_iterNNN.EXT. */
static const char *iter_path(const recon_run *r, int it, char *buf, size_t n) {
  snprintf(buf, n, "%s_iter%03d%s", r->a->iter_prefix, it, r->ext);
  return buf;
}

static int on_iteration(void *user, int it, const float *image) {
  recon_run *r = user;
  const recon_args *a = r->a;
  if (a->every && (it % a->every == 0 || it == a->iterations)) {
    char path[4200];
    const ctr_stack_info info = pet_image_info(r->p);
    ctr_status st = ctr_stack_save(iter_path(r, it, path, sizeof path), a->out_format, &info,
                                   CTR_DTYPE_FLOAT32, image, a->force);
    if (st != CTR_OK) {
      cli_progress_end(&r->session);
      r->rc = cli_fail_file(r->session.cmd, st, path);
      return 1;
    }
  }
  if (r->want_metrics) {
    ctr_pet_metrics m = CTR_PET_METRICS_INIT;
    ctr_status st = ctr_pet_metrics_compute(r->p, &r->ph, image, &m);
    cli_progress_end(&r->session);
    if (st != CTR_OK) {
      r->rc = cli_fail(r->session.cmd, st);
      return 1;
    }
    if ((r->rc = pet_curve_add(r->session.cmd, &r->curve, it, &m))) return 1;
    cli_info(&r->session, "iteration %3d: CRC %.4f, noise %.2f %%\n", it, m.crc, 100.0 * m.noise);
  } else {
    cli_progress_end(&r->session);
    cli_info(&r->session, "iteration %3d of %d, %.1f s\n", it, a->iterations,
             cli_now() - r->t_start);
  }
  return 0;
}

/* Every output's folder takes files and no output is an input (before
 * minutes of computing). */
static int check_outputs(const char *cmd, const recon_args *a) {
  const cli_file in[] = {{"--data", a->data}, {"--radial-table", a->radial_table}, {0}};
  const cli_output out[] = {{"--out", a->out, CLI_OUT_DATA},
                          {"--metrics", a->metrics, CLI_OUT_FILE},
                          {"--plot", a->plot, CLI_OUT_FILE},
                          {"--preview", a->preview, CLI_OUT_PREVIEW},
                          {"--iter-prefix", a->iter_prefix, CLI_OUT_UNCHECKED}, {0}};
  return cli_check_files(cmd, in, out, a->force);
}

/* The per-iteration images --every writes (before the run). */
static int check_iterations(const char *cmd, const recon_args *a, const recon_run *r) {
  for (int it = 1; a->every && it <= a->iterations; it++) {
    char path[4200];
    if (it % a->every && it != a->iterations) continue;
    const int rc = cli_check_new(cmd, "--iter-prefix", iter_path(r, it, path, sizeof path),
                                 CLI_OUT_DATA, a->force);
    if (rc) return rc;
  }
  return 0;
}

static int check_args(const char *cmd, recon_args *a, const cli_opt *opts) {
  int rc = cli_require(cmd, opts, "--data", a->data);
  if (!rc) rc = cli_require(cmd, opts, "--out", a->out);
  if (!rc)
    rc = cli_resolve_format(cmd, "--out", "--out-format", a->out, a->out_format, &a->out_format);
  if (rc) return rc;
  if (a->iter_prefix && !a->every)
    return cli_usage_error(cmd, "--iter-prefix needs --every N");
  if ((a->metrics || a->plot) && a->phantom != PET_PHANTOM_SPHERES)
    return cli_usage_error(cmd, "--metrics/--plot need --phantom spheres (CRC is measured on "
                           "spheres)");
  if (cli_format_is_stack(a->out_format) && a->every) /* the format table's stack_of_files */
    return cli_usage_error(cmd, "--every: per-iteration images need a single-file --out, not "
                           "'%s' (%s: one file per image)", a->out, ctr_format_name(a->out_format));
  if (a->every && !a->iter_prefix)
    a->iter_prefix = pet_replace_ext(a->out, "", a->prefix, sizeof a->prefix);
  return check_outputs(cmd, a);
}

/* --radial-table, and the histo-images under the data policy for what
 * loading replaced (docs/cli.md, "Bad values"). */
static int load_data(const char *cmd, const recon_args *a, recon_run *r) {
  if (a->radial_table) {
    int rc = read_radial_table(cmd, a->radial_table, &r->table, &r->table_n);
    if (rc) return rc;
  }
  const double t_load0 = cli_now();
  ctr_status st = ctr_pet_histo_load(a->data, &r->h);
  r->t_load = cli_now() - t_load0;
  if (st != CTR_OK) return cli_fail_file(cmd, st, a->data);
  const ctr_pet_histo *h = r->h;
  if (h->replaced && a->strict)
    return cli_error(cmd, CLI_EXIT_INPUT, "'%s': %lld counts or factors NaN, infinite, negative "
                     "or beyond 1e24: expected none (--strict); fix the data, or drop --strict to "
                     "use them as 0", a->data, (long long)h->replaced);
  if (h->replaced)
    cli_warn(cmd, "'%s': %lld counts or factors NaN, infinite, negative or beyond 1e24 used as 0 "
             "(--strict makes this an error)", a->data, (long long)h->replaced);
  r->p = &h->params;
  return 0;
}

/* The kernels of the options (TOF: the data's unless --tof-ps) and their
 * system; the phantom --metrics measures. */
static int make_system(const char *cmd, const recon_args *a, recon_run *r) {
  ctr_pet_kernel_params *k = &r->k;
  *k = (ctr_pet_kernel_params)CTR_PET_KERNEL_PARAMS_INIT;
  k->tof_fwhm_ps = a->tof_given || !(r->h->tof_fwhm_ps > 0) ? a->tof_ps : r->h->tof_fwhm_ps;
  k->radial_fwhm_center_mm = a->radial.a;
  k->radial_fwhm_edge_mm = a->radial.b;
  k->edge_radius_mm = a->edge_radius;
  k->radial_table = r->table;
  k->radial_table_n = r->table_n;
  k->axial_fwhm_mm = a->axial;
  k->asymmetric = a->asymmetric;
  k->asym_weight = a->asym_weight;
  k->asym_shift_sigma = a->asym_shift;
  k->cut_k = a->cut;
  k->epsilon_mm = a->epsilon;
  ctr_status st = ctr_pet_system_create(&r->h->params, k, &r->s);
  if (st != CTR_OK) return cli_fail(cmd, st);
  if (a->metrics || a->plot) {
    r->want_metrics = 1;
    pet_make_phantom(a->phantom, a->contrast, &r->ph);
  }
  return 0;
}

/* The data, the kernels and, up front, the work ahead (Ha et al.'s size on
 * two CPU cores: minutes). */
static void print_setup(const recon_args *a, recon_run *r) {
  const ctr_pet_params *p = r->p;
  const ctr_pet_kernel_params *k = &r->k;
  const ctr_pet_histo *h = r->h;
  char radial[200];
  if (a->radial_table)
    snprintf(radial, sizeof radial, "from '%s' (%d points)", a->radial_table, r->table_n);
  else if (k->radial_fwhm_edge_mm == k->radial_fwhm_center_mm)
    snprintf(radial, sizeof radial, "%g mm", k->radial_fwhm_center_mm);
  else
    snprintf(radial, sizeof radial, "%g mm at the axis to %g mm at %g mm",
             k->radial_fwhm_center_mm, k->radial_fwhm_edge_mm,
             k->edge_radius_mm > 0 ? k->edge_radius_mm : 0.5 * (double)p->nx * p->voxel);
  cli_info(&r->session,
           "%s: %lld views (%d x %d, +-%g deg) of %lld x %lld x %lld voxels of %g mm, %.0f "
           "events\nkernels (FWHM): TOF %g ps%s, radial %s, axial %g mm%s, cut at %g sigma\n",
           a->data, (long long)h->nviews, p->n_azimuth, p->n_copolar, p->acceptance_deg,
           (long long)p->nx, (long long)p->ny, (long long)p->nz, p->voxel, h->events,
           k->tof_fwhm_ps, a->tof_given || !(h->tof_fwhm_ps > 0) ? "" : " (the data's)", radial,
           k->axial_fwhm_mm, a->asymmetric ? ", asymmetric" : "", k->cut_k);
  const int gpu = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA;
  cli_info(&r->session, "%d iterations over %lld views on the %s: %s; each iteration is reported\n",
           a->iterations, (long long)h->nviews, gpu ? "GPU" : "CPU",
           gpu ? "seconds"
               : "minutes at the default sizes on a few cores (fewer --iterations are quicker)");
}

/* The context, the image (0: the library's uniform start), and the
 * iterations. */
static int reconstruct(const char *cmd, const recon_args *a, recon_run *r) {
  int rc = cli_context_create(&r->session, cmd, &a->common, &r->ctx);
  r->session.debug_log = a->timings;
  if (rc) return rc;
  const ctr_pet_params *p = r->p;
  const int64_t nvox = p->nx * p->ny * p->nz;
  r->image = cli_alloc_floats(cmd, nvox, "the image", &rc);
  if (!r->image) return rc;
  memset(r->image, 0, sizeof(float) * (size_t)nvox);
  print_setup(a, r);
  r->t_start = cli_now();
  const double t0 = cli_now();
  ctr_status st = ctr_pet_projector_create(r->ctx, r->s, &r->proj);
  if (st != CTR_OK) {
    cli_progress_end(&r->session);
    return cli_fail(cmd, st);
  }
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  o.algorithm = a->algorithm;
  o.iterations = a->iterations;
  o.relax0 = a->relax.a;
  if (a->relax.has_b) o.relax_decay = a->relax.b;
  o.on_iteration = on_iteration;
  o.user = r;
  o.strict = a->strict;
  r->t = (ctr_pet_recon_timings)CTR_PET_RECON_TIMINGS_INIT;
  st = ctr_pet_reconstruct(r->proj, r->h, &o, r->image, &r->t);
  r->t_recon = cli_now() - t0;
  cli_progress_end(&r->session);
  if (r->rc) return r->rc;
  if (st != CTR_OK) return cli_fail(cmd, st);
  if (cli_interrupted()) return cli_fail(cmd, CTR_E_CANCELLED);
  return 0;
}

/* The CRC-versus-noise plot (--plot). */
static int write_plot(const char *cmd, const recon_args *a, const recon_run *r) {
  char title[160], name[16];
  snprintf(name, sizeof name, "%s", ctr_pet_algorithm_name(a->algorithm));
  for (char *c = name; *c; c++)
    if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
  snprintf(title, sizeof title, "%s, %d x %d views, TOF %g ps: CRC vs noise", name,
           r->p->n_azimuth, r->p->n_copolar, r->k.tof_fwhm_ps);
  ctr_status st = ctr_pet_plot_crc_noise(a->plot, r->curve.noise, r->curve.crc, r->curve.n, title,
                                         a->force);
  return st != CTR_OK ? cli_fail_file(cmd, st, a->plot) : 0;
}

static int write_outputs(const char *cmd, const recon_args *a, const recon_run *r) {
  const ctr_pet_params *p = r->p;
  const ctr_stack_info info = pet_image_info(p);
  ctr_status st = ctr_stack_save(a->out, a->out_format, &info, CTR_DTYPE_FLOAT32, r->image,
                                 a->force);
  if (st != CTR_OK) return cli_fail_file(cmd, st, a->out);
  int rc;
  if (a->preview && (rc = cli_preview_volume(cmd, a->preview, r->image, p->nx, p->ny, p->nz,
                                             info.spacing, 0, 0, a->force)))
    return rc;
  if (a->metrics && (rc = pet_curve_write_csv(cmd, &r->curve, a->metrics, a->force))) return rc;
  return a->plot ? write_plot(cmd, a, r) : 0;
}

static void print_summary(const recon_args *a, recon_run *r) {
  const ctr_pet_recon_timings *t = &r->t;
  cli_info(&r->session, "%s: %d iterations of %lld views, %.2f s (%.3f s per iteration)\n",
           ctr_pet_algorithm_name(a->algorithm), a->iterations, (long long)r->h->nviews,
           r->t_recon, r->t_recon / a->iterations);
  if (a->timings)
    cli_info(&r->session,
             "timings (s): load %.3f, forward %.3f, back %.3f (sensitivity included), "
             "discrepancy %.3f, update %.3f, upload %.3f, download %.3f, total %.3f\n",
             r->t_load, t->forward, t->back, t->discrepancy, t->update, t->upload, t->download,
             t->total);
  cli_info(&r->session, "wrote %s", a->out);
  if (a->preview) cli_info(&r->session, ", %s_{xy,xz,yz}.png", a->preview);
  if (a->metrics) cli_info(&r->session, ", %s", a->metrics);
  if (a->plot) cli_info(&r->session, ", %s", a->plot);
  if (a->every) cli_info(&r->session, ", %s_iterNNN%s", a->iter_prefix, r->ext);
  cli_info(&r->session, "\n");
}

static int run(const char *cmd, const recon_args *a, recon_run *r) {
  const char *slash = strrchr(a->out, '/'), *dot = strrchr(a->out, '.');
  if (dot && (!slash || dot > slash) && strlen(dot) < sizeof r->ext) strcpy(r->ext, dot);
  int rc = check_iterations(cmd, a, r);
  if (!rc) rc = load_data(cmd, a, r);
  if (!rc) rc = make_system(cmd, a, r);
  if (!rc) rc = reconstruct(cmd, a, r);
  if (!rc) rc = write_outputs(cmd, a, r);
  if (!rc) print_summary(a, r);
  return rc;
}

static void init_args(recon_args *a) {
  const ctr_pet_kernel_params kd = CTR_PET_KERNEL_PARAMS_INIT;
  const ctr_pet_recon_options od = CTR_PET_RECON_OPTIONS_INIT;
  memset(a, 0, sizeof *a);
  a->algorithm = od.algorithm;
  a->iterations = od.iterations;
  a->relax = (pet_pair){od.relax0, od.relax_decay, 1};
  a->tof_ps = kd.tof_fwhm_ps;
  a->radial = (pet_pair){kd.radial_fwhm_center_mm, kd.radial_fwhm_edge_mm, 0};
  a->axial = kd.axial_fwhm_mm;
  a->edge_radius = kd.edge_radius_mm;
  a->asym_weight = kd.asym_weight;
  a->asym_shift = kd.asym_shift_sigma;
  a->cut = kd.cut_k;
  a->epsilon = kd.epsilon_mm;
  a->contrast = 4.0;
  a->phantom = PET_PHANTOM_SPHERES;
  a->common = (cli_common)CLI_COMMON_INIT;
}

int cmd_pet_recon(int argc, char **argv) {
  const char *cmd = "pet recon";
  recon_args a;
  init_args(&a);
  const cli_opt opts[] = {
      {"--data", "FILE", "histo-images from 'pet simulate' (.json or .h5; required)",
       cli_parse_string, &a.data, NULL},
      {"--out", "FILE", "reconstructed image: {endings} (required)", cli_parse_string,
       &a.out, NULL},
      {"--out-format", "{formats}", "image file format (default: from the extension)",
       cli_parse_format, &a.out_format, NULL},
      {"--algorithm", "ramla|osem|mlem", "block-RAMLA, OSEM (one view per subset) or MLEM "
       "(default ramla)", parse_algorithm, &a.algorithm, NULL},
      {"--iterations", "N", "full passes over the views (default 10)", pet_parse_int,
       &a.iterations, NULL},
      {"--relax", "L0[:DECAY]", "RAMLA relaxation lambda_k = L0 / (1 + DECAY k) (default 0.1:0.1)",
       pet_parse_relax, &a.relax, NULL},
      {"--tof-ps", "PS", "TOF resolution FWHM of the kernels (default: the data's, else 400)",
       cli_parse_positive, &a.tof_ps, &a.tof_given},
      {"--radial-fwhm", "C[:E]", "LOR-radial FWHM in mm at the axis [and at the edge radius] "
       "(default 5.8)", pet_parse_fwhm_pair, &a.radial, NULL},
      {"--edge-radius", "MM", "radius where the radial FWHM reaches E (default 0: half the "
       "lattice width)", cli_parse_nonneg, &a.edge_radius, NULL},
      {"--radial-table", "FILE", "CSV of 'radius_mm,fwhm_mm' lines, radii ascending: radial FWHM "
       "piecewise linear (replaces --radial-fwhm)", cli_parse_string, &a.radial_table, NULL},
      {"--axial-fwhm", "MM", "LOR-axial FWHM (default 5.8)", cli_parse_positive, &a.axial, NULL},
      {"--asymmetric", NULL, "asymmetric kernels: a second Gaussian twice as wide, shifted "
       "towards the axis (default off)", cli_set_flag, &a.asymmetric, NULL},
      {"--asym-weight", "W", "weight of the wide Gaussian (default 0.5)", cli_parse_nonneg,
       &a.asym_weight, NULL},
      {"--asym-shift", "S", "its shift towards the axis, in narrow sigmas (default 1)",
       cli_parse_nonneg, &a.asym_shift, NULL},
      {"--kernel-cut", "K", "kernel support: K sigma in each direction (default 3)",
       cli_parse_positive, &a.cut, NULL},
      {"--epsilon", "MM", "LORmap step of the kernels' radial position (default 2)",
       cli_parse_positive, &a.epsilon, NULL},
      {"--every", "N", "also write the image every N iterations (and after the last)",
       pet_parse_int, &a.every, NULL},
      {"--iter-prefix", "P", "per-iteration images P_iterNNN.EXT (default: --out without its "
       "extension)", cli_parse_string, &a.iter_prefix, NULL},
      {"--metrics", "CSV", "CRC and noise after every iteration: iteration,noise,crc,"
       "crc_sphere1..n", cli_parse_string, &a.metrics, NULL},
      {"--plot", "PNG", "CRC-versus-noise plot over the iterations", cli_parse_string, &a.plot,
       NULL},
      {"--phantom", "spheres", "phantom whose spheres --metrics measures (default spheres)",
       pet_parse_phantom, &a.phantom, NULL},
      {"--contrast", "C", "its sphere activity / background (default 4)", cli_parse_positive,
       &a.contrast, NULL},
      CLI_PREVIEW_OPTION(&a.preview),
      {"--timings", NULL, "print the time of each reconstruction step", cli_set_flag, &a.timings,
       NULL},
      CLI_FORCE_OPTION(&a.force),
      CLI_STRICT_OPTION(&a.strict),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_pet_recon, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if ((rc = check_args(cmd, &a, opts))) return rc;
  recon_run r;
  memset(&r, 0, sizeof r);
  r.a = &a;
  rc = run(cmd, &a, &r);
  cli_progress_end(&r.session);
  pet_curve_free(&r.curve);
  cli_free_floats(r.image);
  ctr_pet_projector_free(r.proj);
  ctr_pet_system_free(r.s);
  ctr_pet_histo_free(r.h);
  ctr_context_free(r.ctx);
  free(r.table);
  return rc;
}
