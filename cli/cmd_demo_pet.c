/* `ctrecon demo --pet`: the TOF-PET end-to-end run. The seed's sphere
 * phantom simulated into histo-images, reconstructed with block-RAMLA, CRC
 * and noise after every iteration (seed 002 Fig. 9), files to look at. On a
 * GPU the seed's full size; on the CPU a smaller lattice and fewer views and
 * events (same 4 mm voxels and kernels) so that it runs in about half a
 * minute on two cores. */
#include "cmd_pet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct demo_pet_size {
  int64_t nx, ny, nz;
  int n_azimuth, n_copolar;
  double events;
  int iterations;
} demo_pet_size;

/* Seed 002 section 6.1: 144 x 144 x 48 of 4 mm, 40 x 3 views. */
static const demo_pet_size g_full = {144, 144, 48, 40, 3, 1e8, 20};
static const demo_pet_size g_cpu = {96, 96, 24, 20, 3, 2e7, 6};

#define DEMO_CONTRAST 4.0
/* RAMLA relaxation: the library's default lambda_k = 0.1 / (1 + 0.1 k). */

typedef struct demo_pet_run {
  cli_session session;
  ctr_pet_params p;
  ctr_pet_phantom ph;
  pet_curve curve;
  int rc;
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

int cmd_demo_pet(const char *out_dir, int no_volume, const cli_common *common) {
  int rc = 0;
  demo_pet_run r;
  memset(&r, 0, sizeof r);
  ctr_context *ctx = NULL;
  ctr_pet_system *s = NULL;
  ctr_pet_histo *h = NULL;
  ctr_pet_projector *proj = NULL;
  float *image = NULL, *truth = NULL;
  char path[4200];
  ctr_status st = CTR_OK;
  rc = cli_context_create(&r.session, "demo", common, &ctx);
  if (rc) goto cleanup;
  const int gpu = ctr_context_get_device(ctx) == CTR_DEVICE_CUDA;
  const demo_pet_size *z = gpu ? &g_full : &g_cpu;
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = z->nx;
  p.ny = z->ny;
  p.nz = z->nz;
  p.n_azimuth = z->n_azimuth;
  p.n_copolar = z->n_copolar;
  r.p = p;
  const ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_phantom_spheres(&r.ph, DEMO_CONTRAST);
  cli_info(&r.session,
           "TOF-PET demo (%s): the seed's phantom (350 mm cylinder, six 10 mm spheres of "
           "contrast %g:1 at 75 mm),\n      %lld x %lld x %lld voxels of %g mm, %d x %d views "
           "(+-%g deg), %.3g events, TOF %g ps, LOR FWHM %g mm\n",
           gpu ? "seed size" : "reduced size for the CPU", DEMO_CONTRAST, (long long)p.nx,
           (long long)p.ny, (long long)p.nz, p.voxel, p.n_azimuth, p.n_copolar,
           p.acceptance_deg, z->events, k.tof_fwhm_ps, k.radial_fwhm_center_mm);
  st = ctr_pet_system_create(&p, &k, &s);
  if (st != CTR_OK) goto fail;
  ctr_pet_sim_options so = CTR_PET_SIM_OPTIONS_INIT;
  so.events = z->events;
  double t0 = cli_now();
  st = ctr_pet_simulate(ctx, s, &r.ph, &so, &h);
  const double t_sim = cli_now() - t0;
  cli_progress_end(&r.session);
  if (st != CTR_OK) goto fail;
  const int64_t nvox = p.nx * p.ny * p.nz;
  image = cli_alloc_floats("demo", nvox, "the image", &rc);
  if (!rc) truth = cli_alloc_floats("demo", nvox, "the phantom image", &rc);
  if (rc) goto cleanup;
  memset(image, 0, sizeof(float) * (size_t)nvox);
  st = ctr_pet_phantom_voxelize(&r.ph, &p, 2, truth);
  if (st != CTR_OK) goto fail;
  ctr_pet_metrics mt = CTR_PET_METRICS_INIT;
  st = ctr_pet_metrics_compute(&p, &r.ph, truth, &mt);
  if (st != CTR_OK) goto fail;
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  cli_info(&r.session, "simulated %.0f events in %.2f s; CRC of the voxelised phantom itself "
           "(partial volume): %.4f\nblock-RAMLA, %d iterations of %lld views, relaxation %g / (1 + "
           "%g k):\n", h->events, t_sim, mt.crc, z->iterations, (long long)h->nviews,
           o.relax0, o.relax_decay);
  t0 = cli_now();
  st = ctr_pet_projector_create(ctx, s, &proj);
  if (st != CTR_OK) goto fail;
  o.algorithm = CTR_PET_RAMLA;
  o.iterations = z->iterations;
  o.on_iteration = on_iteration;
  o.user = &r;
  ctr_pet_recon_timings t = CTR_PET_RECON_TIMINGS_INIT;
  st = ctr_pet_reconstruct(proj, h, &o, image, &t);
  const double t_rec = cli_now() - t0;
  cli_progress_end(&r.session);
  if (r.rc) {
    rc = r.rc;
    goto cleanup;
  }
  if (st != CTR_OK) goto fail;
  if (cli_interrupted()) {
    st = CTR_E_CANCELLED;
    goto fail;
  }
  /* Files. */
  const ctr_stack_info info = pet_image_info(&p);
  if (!no_volume) {
    snprintf(path, sizeof path, "%s/pet_image.nrrd", out_dir);
    st = ctr_stack_save(path, CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32, image);
    if (st != CTR_OK) goto fail_file;
  }
  const float hi = (float)(1.5 * DEMO_CONTRAST); /* spheres saturate a little: noise shows */
  snprintf(path, sizeof path, "%s/pet_image", out_dir);
  st = ctr_png_preview(path, image, p.nx, p.ny, p.nz, 0.0f, hi);
  if (st != CTR_OK) goto fail_file;
  snprintf(path, sizeof path, "%s/pet_truth", out_dir);
  st = ctr_png_preview(path, truth, p.nx, p.ny, p.nz, 0.0f, hi);
  if (st != CTR_OK) goto fail_file;
  snprintf(path, sizeof path, "%s/pet_crc.csv", out_dir);
  rc = pet_curve_write_csv("demo", &r.curve, path);
  if (rc) goto cleanup;
  snprintf(path, sizeof path, "%s/pet_crc.png", out_dir);
  char title[128];
  snprintf(title, sizeof title, "RAMLA, %d x %d views, TOF %g ps: CRC vs noise", p.n_azimuth,
           p.n_copolar, k.tof_fwhm_ps);
  st = ctr_pet_plot_crc_noise(path, r.curve.noise, r.curve.crc, r.curve.n, title);
  if (st != CTR_OK) goto fail_file;
  cli_info(&r.session,
           "steps:\n  simulate        %8.2f s\n  reconstruct     %8.2f s (%.3f s per iteration: "
           "forward %.2f s, back %.2f s in all)\n",
           t_sim, t_rec, t_rec / z->iterations, t.forward, t.back);
  cli_info(&r.session, "files:\n");
  if (!no_volume) cli_info(&r.session, "  %s/pet_image.nrrd\n", out_dir);
  cli_info(&r.session,
           "  %s/pet_image_{xy,xz,yz}.png  %s/pet_truth_{xy,xz,yz}.png (grey window 0..%g)\n"
           "  %s/pet_crc.csv  %s/pet_crc.png (CRC vs noise over the iterations)\n",
           out_dir, out_dir, (double)hi, out_dir, out_dir);
  goto cleanup;
fail_file:
  rc = cli_fail_file("demo", st, path);
  goto cleanup;
fail:
  cli_progress_end(&r.session);
  rc = cli_fail("demo", st);
cleanup:
  cli_progress_end(&r.session);
  pet_curve_free(&r.curve);
  cli_free_floats(image);
  cli_free_floats(truth);
  ctr_pet_projector_free(proj);
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
  ctr_context_free(ctx);
  return rc;
}
