/* `ctrecon pet simulate`: list-mode TOF-PET simulation of a phantom (Ha et
 * al. 2013's spheres or point sources, or a voxel activity file) into the
 * histo-images of every view, saved as JSON + raw or HDF5. */
#include "cli_pet.h"
#include "cmd_pet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_pet_simulate = {
    "pet simulate",
    "simulate TOF-PET histo-images of a phantom",
    "ctrecon pet simulate --out FILE.json|FILE.h5 [options]",
    "Simulates a TOF-PET acquisition event by event: a Poisson number of events\n"
    "(--events on average), each emitted from the phantom along a random LOR\n"
    "within the axial acceptance, with a Gaussian TOF error (FWHM --tof-ps; as a\n"
    "distance c * dt / 2) and detector blur across the LOR (--radial-fwhm,\n"
    "--axial-fwhm), optionally attenuated by the phantom's water cylinder. Each\n"
    "event is deposited into the nearest voxel of its view's histo-image. The\n"
    "phantom 'spheres' is Ha et al. 2013's: a 350 mm cylinder of activity 1 with six\n"
    "10 mm spheres of activity --contrast at 75 mm radius in the central slice;\n"
    "'points' is three point sources at y = 0, 60, 120 mm. --activity replaces\n"
    "the analytic phantom by a voxel image on the lattice (attenuation still uses\n"
    "the phantom's cylinder). The output is FILE.json with FILE.counts.raw (and\n"
    "FILE.factors.raw with --attenuation), or one HDF5 file (.h5, if built with\n"
    "HDF5); the same seed gives the same data.",
    "  ctrecon pet simulate --out data.json\n"
    "  ctrecon pet simulate --out data.h5 --events 5e7 --attenuation --seed 7\n"
    "  ctrecon pet simulate --out small.json --lattice 96x96x24 --views 20x3 --events 5e6\n"
    "  ctrecon pet simulate --out pts.json --phantom points --radial-fwhm 5.8:10\n",
};

typedef struct sim_args {
  const char *out, *activity;
  pet_phantom_kind phantom;
  double contrast, events, tof_ps, axial, voxel, acceptance, edge_radius;
  pet_pair radial;
  int64_t lattice[3];
  int views[2];
  int attenuation, no_blur, force;
  uint64_t seed;
  cli_common common;
} sim_args;

/* The voxel activity file: nx x ny x nz float32 values >= 0 on the lattice. */
static int load_activity(const char *cmd, const char *path, const ctr_pet_params *p,
                         float **out) {
  ctr_file_format fmt;
  int rc = cli_resolve_format(cmd, "--activity", NULL, path, CTR_FORMAT_AUTO, &fmt);
  if (!rc && cli_format_needs_hint(fmt)) /* no sizes in the file: the lattice's */
    rc = pet_check_raw_size(cmd, "--activity", path, p->nx, p->ny, p->nz);
  if (rc) return rc;
  ctr_stack_info hint = CTR_STACK_INFO_INIT, info = CTR_STACK_INFO_INIT;
  hint.width = p->nx;
  hint.height = p->ny;
  hint.count = p->nz;
  hint.dtype = CTR_DTYPE_FLOAT32;
  void *data = NULL;
  ctr_status st = ctr_stack_load(path, fmt, &hint, CTR_DTYPE_FLOAT32, &info, &data);
  if (st != CTR_OK) return cli_fail_file(cmd, st, path);
  if (info.width != p->nx || info.height != p->ny || info.count != p->nz) {
    free(data);
    return cli_error(cmd, CLI_EXIT_INPUT, "--activity '%s' holds %lld x %lld x %lld voxels, the "
                     "lattice is %lld x %lld x %lld (--lattice)", path, (long long)info.width,
                     (long long)info.height, (long long)info.count, (long long)p->nx,
                     (long long)p->ny, (long long)p->nz);
  }
  const float *a = data;
  for (int64_t i = 0; i < p->nx * p->ny * p->nz; i++)
    if (!(a[i] >= 0.0f) || isinf(a[i])) {
      const int64_t x = i % p->nx, y = i / p->nx % p->ny, z = i / (p->nx * p->ny);
      rc = cli_error(cmd, CLI_EXIT_INPUT, "--activity '%s': voxel (%lld, %lld, %lld) is %g, "
                     "expected finite activities >= 0", path, (long long)x, (long long)y,
                     (long long)z, (double)a[i]);
      free(data); /* after the message, which reads a[i] */
      return rc;
    }
  *out = data;
  return 0;
}

/* State of one run: the lattice and kernels of the options, their system,
 * the context, the activity and the histo-images. */
typedef struct sim_run {
  cli_session session;
  ctr_pet_params p;
  ctr_pet_kernel_params k;
  ctr_pet_system *s;
  ctr_pet_histo *h;
  ctr_context *ctx;
  float *activity;
  double t_sim;
} sim_run;

static void init_args(sim_args *a) {
  const ctr_pet_params pd = CTR_PET_PARAMS_INIT;
  const ctr_pet_kernel_params kd = CTR_PET_KERNEL_PARAMS_INIT;
  const ctr_pet_sim_options sd = CTR_PET_SIM_OPTIONS_INIT;
  memset(a, 0, sizeof *a);
  a->phantom = PET_PHANTOM_SPHERES;
  a->contrast = 4.0;
  a->events = sd.events;
  a->tof_ps = kd.tof_fwhm_ps;
  a->radial = (pet_pair){kd.radial_fwhm_center_mm, kd.radial_fwhm_edge_mm, 0};
  a->axial = kd.axial_fwhm_mm;
  a->edge_radius = kd.edge_radius_mm;
  a->lattice[0] = pd.nx;
  a->lattice[1] = pd.ny;
  a->lattice[2] = pd.nz;
  a->voxel = pd.voxel;
  a->views[0] = pd.n_azimuth;
  a->views[1] = pd.n_copolar;
  a->acceptance = pd.acceptance_deg;
  a->seed = sd.seed;
  a->common = (cli_common)CLI_COMMON_INIT;
}

/* --out is given, a .json (or .h5 with HDF5) whose folder takes files, no
 * output is an input, and the acceptance is an angle below 90 degrees. */
static int check_args(const char *cmd, const sim_args *a, const cli_opt *opts) {
  int rc = cli_require(cmd, opts, "--out", a->out);
  const cli_file in[] = {{"--activity", a->activity}, {0}};
  const cli_output out[] = {{"--out", a->out, CLI_OUT_FILE}, {0}};
  if (!rc) rc = cli_check_files(cmd, in, out, a->force);
  if (rc) return rc;
  const char *dot = strrchr(a->out, '.');
  const int h5 = dot && (!strcmp(dot, ".h5") || !strcmp(dot, ".hdf5"));
  if (h5 && !(ctr_features() & CTR_FEATURE_HDF5))
    return cli_error(cmd, CLI_EXIT_UNSUPPORTED, "--out '%s': this ctrecon is built without HDF5; "
                     "write FILE.json instead", a->out);
  if (!h5 && !(dot && !strcmp(dot, ".json")))
    return cli_usage_error(cmd, "--out '%s': expected a name ending in .json or .h5", a->out);
  for (int k = 0; !h5 && k < 1 + (a->attenuation != 0); k++) { /* FILE.json's data files */
    char data[4200];
    pet_replace_ext(a->out, k ? ".factors.raw" : ".counts.raw", data, sizeof data);
    if ((rc = cli_check_new(cmd, "--out", data, CLI_OUT_FILE, a->force))) return rc;
  }
  if (a->acceptance >= 90)
    return cli_usage_error(cmd, "--acceptance %g: expected an angle in 0 .. 90 degrees",
                           a->acceptance);
  return 0;
}

/* The lattice and kernels of the options and their system. */
static int make_system(const char *cmd, const sim_args *a, sim_run *r) {
  ctr_pet_params *p = &r->p;
  *p = (ctr_pet_params)CTR_PET_PARAMS_INIT;
  p->nx = a->lattice[0];
  p->ny = a->lattice[1];
  p->nz = a->lattice[2];
  p->voxel = a->voxel;
  p->n_azimuth = a->views[0];
  p->n_copolar = a->views[1];
  p->acceptance_deg = a->acceptance;
  ctr_pet_kernel_params *k = &r->k;
  *k = (ctr_pet_kernel_params)CTR_PET_KERNEL_PARAMS_INIT;
  k->tof_fwhm_ps = a->tof_ps;
  k->radial_fwhm_center_mm = a->radial.a;
  k->radial_fwhm_edge_mm = a->radial.b;
  k->edge_radius_mm = a->edge_radius;
  k->axial_fwhm_mm = a->axial;
  ctr_status st = ctr_pet_system_create(p, k, &r->s);
  return st != CTR_OK ? cli_fail(cmd, st) : 0;
}

/* Up front: what it writes and what takes the time (1e8 events at the
 * default sizes: about 40 s on 2 CPU cores). */
static void print_work(const sim_args *a, sim_run *r) {
  const ctr_pet_params *p = &r->p;
  char b[32];
  const double nviews = (double)p->n_azimuth * (double)p->n_copolar;
  cli_info(&r->session, "simulating %g events into %.0f views of %lld x %lld x %lld voxels: "
           "writes about %s; the time grows with --events (about 0.4 s per 1e6 on a CPU "
           "core)\n", a->events, nviews, (long long)p->nx, (long long)p->ny, (long long)p->nz,
           cli_bytes(4.0 * (double)(p->nx * p->ny * p->nz) * nviews * (a->attenuation ? 2.0 : 1.0),
                     b, sizeof b));
}

/* The activity (--activity), the context, and the events. */
static int simulate(const char *cmd, const sim_args *a, sim_run *r) {
  int rc = 0;
  if (a->activity) rc = load_activity(cmd, a->activity, &r->p, &r->activity);
  if (!rc) rc = cli_context_create(&r->session, cmd, &a->common, &r->ctx);
  if (rc) return rc;
  ctr_pet_phantom ph;
  pet_make_phantom(a->phantom, a->contrast, &ph);
  ctr_pet_sim_options o = CTR_PET_SIM_OPTIONS_INIT;
  o.events = a->events;
  o.attenuation = a->attenuation;
  o.detector_blur = !a->no_blur;
  o.seed = a->seed;
  o.activity = r->activity;
  o.with_factors = a->attenuation;
  print_work(a, r);
  const double t0 = cli_now();
  ctr_status st = ctr_pet_simulate(r->ctx, r->s, &ph, &o, &r->h);
  r->t_sim = cli_now() - t0;
  cli_progress_end(&r->session);
  return st != CTR_OK ? cli_fail(cmd, st) : 0;
}

static int write_outputs(const char *cmd, const sim_args *a, const sim_run *r) {
  ctr_status st = ctr_pet_histo_save(a->out, r->h, a->force);
  return st != CTR_OK ? cli_fail_file(cmd, st, a->out) : 0;
}

static void print_summary(const sim_args *a, sim_run *r) {
  const ctr_pet_params *p = &r->p;
  const ctr_pet_histo *h = r->h;
  char size[32];
  const double bytes = 4.0 * (double)(p->nx * p->ny * p->nz) * (double)h->nviews *
                       (h->factors ? 2.0 : 1.0);
  cli_info(&r->session,
           "simulated %g events (expected) of the %s, %.0f deposited on the lattice, into %lld "
           "views (%d x %d, +-%g deg) of %lld x %lld x %lld voxels of %g mm, TOF %g ps, %.2f s\n"
           "wrote %s (%s of histo-images%s)\n",
           a->events, a->activity ? a->activity : pet_phantom_name(a->phantom), h->events,
           (long long)h->nviews, p->n_azimuth, p->n_copolar, p->acceptance_deg, (long long)p->nx,
           (long long)p->ny, (long long)p->nz, p->voxel, r->k.tof_fwhm_ps, r->t_sim, a->out,
           cli_bytes(bytes, size, sizeof size), h->factors ? " and factors" : "");
}

static int run(const char *cmd, const sim_args *a, sim_run *r) {
  int rc = make_system(cmd, a, r);
  if (!rc) rc = simulate(cmd, a, r);
  if (!rc) rc = write_outputs(cmd, a, r);
  if (!rc) print_summary(a, r);
  return rc;
}

int cmd_pet_simulate(int argc, char **argv) {
  const char *cmd = "pet simulate";
  sim_args a;
  init_args(&a);
  const cli_opt opts[] = {
      {"--out", "FILE", "histo-image file: FILE.json (+ raw data files) or FILE.h5 (required)",
       cli_parse_string, &a.out, NULL},
      {"--phantom", "spheres|points", "analytic phantom (default spheres)", pet_parse_phantom,
       &a.phantom, NULL},
      {"--contrast", "C", "sphere activity / background of the spheres phantom (default 4)",
       cli_parse_positive, &a.contrast, NULL},
      {"--activity", "FILE", "voxel activity on the lattice instead ({titles}; raw as float32)",
       cli_parse_string, &a.activity, NULL},
      {"--events", "N", "expected number of emitted events (attenuation and the lattice's "
       "edges remove some), e.g. 2e7 (default 2e7)",
       cli_parse_positive, &a.events, NULL},
      {"--tof-ps", "PS", "TOF resolution, FWHM in ps (default 400)", cli_parse_positive,
       &a.tof_ps, NULL},
      {"--radial-fwhm", "C[:E]", "LOR-radial detector blur FWHM in mm at the axis [and at the "
       "edge radius] (default 5.8)", pet_parse_fwhm_pair, &a.radial, NULL},
      {"--edge-radius", "MM", "radius where the radial FWHM reaches E (default 0: half the "
       "lattice width)", cli_parse_nonneg, &a.edge_radius, NULL},
      {"--axial-fwhm", "MM", "LOR-axial detector blur FWHM (default 5.8)", cli_parse_positive,
       &a.axial, NULL},
      {"--no-blur", NULL, "no detector blur (TOF error only)", cli_set_flag, &a.no_blur, NULL},
      {"--attenuation", NULL, "attenuate by the phantom's water cylinder and store the "
       "attenuation factors (default off)", cli_set_flag, &a.attenuation, NULL},
      {"--lattice", "NXxNYxNZ", "image lattice (default 144x144x48)", pet_parse_lattice,
       a.lattice, NULL},
      {"--voxel", "MM", "cubic voxel size (default 4)", cli_parse_positive, &a.voxel, NULL},
      {"--views", "NAxNC", "azimuthal x co-polar view intervals (default 40x3)", pet_parse_views,
       a.views, NULL},
      {"--acceptance", "DEG", "axial acceptance half-angle (default 10)", cli_parse_nonneg,
       &a.acceptance, NULL},
      {"--seed", "N", "random seed: the same seed gives the same data (default 1)",
       pet_parse_seed, &a.seed, NULL},
      CLI_FORCE_OPTION(&a.force),
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  int rc = cli_parse(&cli_cmd_pet_simulate, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if ((rc = check_args(cmd, &a, opts))) return rc;
  sim_run r;
  memset(&r, 0, sizeof r);
  rc = run(cmd, &a, &r);
  cli_progress_end(&r.session);
  free(r.activity);
  ctr_pet_histo_free(r.h);
  ctr_pet_system_free(r.s);
  ctr_context_free(r.ctx);
  return rc;
}
