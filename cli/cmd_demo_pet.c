/* `ctrecon demo --pet`: the TOF-PET end-to-end run. Ha et al. 2013's
 * sphere phantom simulated into histo-images, reconstructed with block-RAMLA, CRC
 * and noise after every iteration (Ha et al. 2013, Fig. 9), files to look at. On a
 * GPU the paper's full size; on the CPU a smaller lattice and fewer views and
 * events (same 4 mm voxels and kernels) so that it runs in about half a
 * minute on two cores. */
#include "cli_pet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct demo_pet_size {
  int64_t nx, ny, nz;
  int n_azimuth, n_copolar;
  double events;
  int iterations;
} demo_pet_size;

/* Ha et al. 2013, section 6.1: 144 x 144 x 48 of 4 mm, 40 x 3 views. */
static const demo_pet_size g_full = {144, 144, 48, 40, 3, 1e8, 20};
static const demo_pet_size g_cpu = {96, 96, 24, 20, 3, 2e7, 6};

#define DEMO_CONTRAST 4.0
/* RAMLA relaxation: the library's default lambda_k = 0.1 / (1 + 0.1 k). */

/* Grey window of the previews: the spheres saturate a little, so noise shows. */
#define DEMO_HI ((float)(1.5 * DEMO_CONTRAST))

typedef struct demo_pet_run {
  cli_session session;
  ctr_pet_params p;
  ctr_pet_phantom ph;
  pet_curve curve;
  int rc;
  /* the size, the kernels, and what the run makes */
  const demo_pet_size *z;
  ctr_pet_kernel_params k;
  ctr_context *ctx;
  ctr_pet_system *s;
  ctr_pet_histo *h;
  ctr_pet_projector *proj;
  float *image, *truth;
  double t_sim, t_rec, crc_truth;
  ctr_pet_recon_timings t;
} demo_pet_run;

static int on_iteration(void *user, int it, const float *image) {
  demo_pet_run *r = user;
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  ctr_status st = ctr_pet_metrics_compute(&r->p, &r->ph, image, &m);
  cli_progress_end(&r->session);
  if (st != CTR_OK) {
    r->rc = cli_fail("demo", st);
    return 1;
  }
  if ((r->rc = pet_curve_add("demo", &r->curve, it, &m))) return 1;
  cli_info(&r->session, "  iteration %3d   CRC %.4f   noise %6.2f %%\n", it, m.crc,
           100.0 * m.noise);
  return 0;
}

/* A library error while computing. */
static int fail(demo_pet_run *r, ctr_status st) {
  cli_progress_end(&r->session);
  return cli_fail("demo", st);
}

/* The context, the size for its device, the phantom, and what the demo does. */
static int setup(demo_pet_run *r, const cli_common *common) {
  int rc = cli_context_create(&r->session, "demo", common, &r->ctx);
  if (rc) return rc;
  const int gpu = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA;
  const demo_pet_size *z = r->z = gpu ? &g_full : &g_cpu;
  ctr_pet_params *p = &r->p;
  *p = (ctr_pet_params)CTR_PET_PARAMS_INIT;
  p->nx = z->nx;
  p->ny = z->ny;
  p->nz = z->nz;
  p->n_azimuth = z->n_azimuth;
  p->n_copolar = z->n_copolar;
  r->k = (ctr_pet_kernel_params)CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_phantom_spheres(&r->ph, DEMO_CONTRAST);
  cli_info(&r->session,
           "TOF-PET demo (%s): Ha et al. 2013's phantom (350 mm cylinder, six 10 mm spheres of "
           "contrast %g:1 at 75 mm),\n      %lld x %lld x %lld voxels of %g mm, %d x %d views "
           "(+-%g deg), %.3g events, TOF %g ps, LOR FWHM %g mm\n",
           gpu ? "full size" : "reduced size for the CPU", DEMO_CONTRAST, (long long)p->nx,
           (long long)p->ny, (long long)p->nz, p->voxel, p->n_azimuth, p->n_copolar,
           p->acceptance_deg, z->events, r->k.tof_fwhm_ps, r->k.radial_fwhm_center_mm);
  return 0;
}

/* The system and the histo-images of the phantom. */
static int simulate(demo_pet_run *r) {
  ctr_status st = ctr_pet_system_create(&r->p, &r->k, &r->s);
  if (st != CTR_OK) return fail(r, st);
  ctr_pet_sim_options so = CTR_PET_SIM_OPTIONS_INIT;
  so.events = r->z->events;
  const double t0 = cli_now();
  st = ctr_pet_simulate(r->ctx, r->s, &r->ph, &so, &r->h);
  r->t_sim = cli_now() - t0;
  cli_progress_end(&r->session);
  return st != CTR_OK ? fail(r, st) : 0;
}

/* The image (0: the library's uniform start), the voxelised phantom and its
 * own CRC (partial volume). */
static int make_images(demo_pet_run *r) {
  const ctr_pet_params *p = &r->p;
  const int64_t nvox = p->nx * p->ny * p->nz;
  int rc = 0;
  r->image = cli_alloc_floats("demo", nvox, "the image", &rc);
  if (!rc) r->truth = cli_alloc_floats("demo", nvox, "the phantom image", &rc);
  if (rc) return rc;
  memset(r->image, 0, sizeof(float) * (size_t)nvox);
  ctr_status st = ctr_pet_phantom_voxelize(&r->ph, p, 2, r->truth);
  if (st != CTR_OK) return fail(r, st);
  ctr_pet_metrics mt = CTR_PET_METRICS_INIT;
  st = ctr_pet_metrics_compute(p, &r->ph, r->truth, &mt);
  if (st != CTR_OK) return fail(r, st);
  r->crc_truth = mt.crc;
  return 0;
}

/* Block-RAMLA with CRC and noise after every iteration. */
static int reconstruct(demo_pet_run *r) {
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  cli_info(&r->session, "simulated %.0f events in %.2f s; CRC of the voxelised phantom itself "
           "(partial volume): %.4f\nblock-RAMLA, %d iterations of %lld views, relaxation %g / (1 + "
           "%g k):\n", r->h->events, r->t_sim, r->crc_truth, r->z->iterations,
           (long long)r->h->nviews, o.relax0, o.relax_decay);
  const double t0 = cli_now();
  ctr_status st = ctr_pet_projector_create(r->ctx, r->s, &r->proj);
  if (st != CTR_OK) return fail(r, st);
  o.algorithm = CTR_PET_RAMLA;
  o.iterations = r->z->iterations;
  o.on_iteration = on_iteration;
  o.user = r;
  r->t = (ctr_pet_recon_timings)CTR_PET_RECON_TIMINGS_INIT;
  st = ctr_pet_reconstruct(r->proj, r->h, &o, r->image, &r->t);
  r->t_rec = cli_now() - t0;
  cli_progress_end(&r->session);
  if (r->rc) return r->rc;
  if (st != CTR_OK) return fail(r, st);
  if (cli_interrupted()) return fail(r, CTR_E_CANCELLED);
  return 0;
}

/* The image (NRRD unless no_volume), the previews, the CRC curve and plot. */
static int write_files(const demo_pet_run *r, const char *out_dir, int no_volume, int force) {
  const ctr_pet_params *p = &r->p;
  char path[4200];
  ctr_status st = CTR_OK;
  const ctr_stack_info info = pet_image_info(p);
  if (!no_volume) {
    snprintf(path, sizeof path, "%s/pet_image.nrrd", out_dir);
    st = ctr_stack_save(path, CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32, r->image, force);
    if (st != CTR_OK) return cli_fail_file("demo", st, path);
  }
  snprintf(path, sizeof path, "%s/pet_image", out_dir);
  int rc = cli_preview_volume("demo", path, r->image, p->nx, p->ny, p->nz, info.spacing, 0.0,
                              DEMO_HI, force);
  if (rc) return rc;
  snprintf(path, sizeof path, "%s/pet_truth", out_dir);
  rc = cli_preview_volume("demo", path, r->truth, p->nx, p->ny, p->nz, info.spacing, 0.0, DEMO_HI,
                          force);
  if (rc) return rc;
  snprintf(path, sizeof path, "%s/pet_crc.csv", out_dir);
  rc = pet_curve_write_csv("demo", &r->curve, path, force);
  if (rc) return rc;
  snprintf(path, sizeof path, "%s/pet_crc.png", out_dir);
  char title[128];
  snprintf(title, sizeof title, "RAMLA, %d x %d views, TOF %g ps: CRC vs noise", p->n_azimuth,
           p->n_copolar, r->k.tof_fwhm_ps);
  st = ctr_pet_plot_crc_noise(path, r->curve.noise, r->curve.crc, r->curve.n, title, force);
  return st != CTR_OK ? cli_fail_file("demo", st, path) : 0;
}

static void print_summary(demo_pet_run *r, const char *out_dir, int no_volume) {
  cli_info(&r->session,
           "steps:\n  simulate        %8.2f s\n  reconstruct     %8.2f s (%.3f s per iteration: "
           "forward %.2f s, back %.2f s in all)\n",
           r->t_sim, r->t_rec, r->t_rec / r->z->iterations, r->t.forward, r->t.back);
  cli_info(&r->session, "files:\n");
  if (!no_volume) cli_info(&r->session, "  %s/pet_image.nrrd\n", out_dir);
  cli_info(&r->session,
           "  %s/pet_image_{xy,xz,yz}.png  %s/pet_truth_{xy,xz,yz}.png (grey window 0..%g)\n"
           "  %s/pet_crc.csv  %s/pet_crc.png (CRC vs noise over the iterations)\n",
           out_dir, out_dir, (double)DEMO_HI, out_dir, out_dir);
}

int cmd_demo_pet(const char *out_dir, int no_volume, int force, const cli_common *common) {
  demo_pet_run r;
  memset(&r, 0, sizeof r);
  int rc = setup(&r, common);
  if (!rc) rc = simulate(&r);
  if (!rc) rc = make_images(&r);
  if (!rc) rc = reconstruct(&r);
  if (!rc) rc = write_files(&r, out_dir, no_volume, force);
  if (!rc) print_summary(&r, out_dir, no_volume);
  cli_progress_end(&r.session);
  pet_curve_free(&r.curve);
  cli_free_floats(r.image);
  cli_free_floats(r.truth);
  ctr_pet_projector_free(r.proj);
  ctr_pet_histo_free(r.h);
  ctr_pet_system_free(r.s);
  ctr_context_free(r.ctx);
  return rc;
}
