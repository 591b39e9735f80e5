/* `ctrecon demo --parallel`: the parallel-beam (synchrotron) end-to-end run.
 * Exact sinograms of the Shepp-Logan head through a stack of central slices,
 * FBP, comparison with the phantom's slices, files to look at (the
 * sinograms too, as input for `ctrecon fbp`). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAR_EXTENT 256.0           /* mm across the detector */
#define PAR_RADIUS (0.95 * 128.0)  /* the head's scale, mm */
#define PAR_MU 0.01                /* attenuation per unit of density, 1/mm (skull 0.01/mm) */

int cmd_demo_parallel(int64_t size, int64_t views, int64_t slices, const char *out_dir,
                      int no_volume, int force, const cli_common *common) {
  int rc = 0;
  ctr_context *ctx = NULL;
  cli_session session;
  memset(&session, 0, sizeof session);
  ctr_parallel_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  float *sino = NULL, *rec = NULL, *truth = NULL;
  double *z = NULL;
  char path[4200];
  const double pixel = PAR_EXTENT / (double)size;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = size;
  p.nangles = views;
  p.pixel_size = pixel;
  ctr_status st = ctr_parallel_create(&p, &g);
  if (st == CTR_OK) st = ctr_phantom_shepp_logan(PAR_RADIUS, 1.0, &ph);
  if (st != CTR_OK) return cli_fail("demo", st);
  rc = cli_context_create(&session, "demo", common, &ctx);
  const int64_t plane = size * size;
  if (!rc) sino = cli_alloc_floats("demo", size * views * slices, "the sinograms", &rc);
  if (!rc) rec = cli_alloc_floats("demo", plane * slices, "the slices", &rc);
  if (!rc) truth = cli_alloc_floats("demo", plane * slices, "the phantom's slices", &rc);
  z = malloc(sizeof(double) * (size_t)slices);
  if (!rc && !z) rc = cli_error("demo", CLI_EXIT_RUNTIME, "out of memory");
  if (rc) goto cleanup;
  cli_info(&session, "parallel-beam demo: %lld slices of %lld^2 (%.3g mm pixels) from %lld angles "
           "over 180 deg x %lld bins\n", (long long)slices, (long long)size, pixel,
           (long long)views, (long long)size);
  /* Central slices, one pixel apart, through the head's middle. */
  for (int64_t s = 0; s < slices; s++) z[s] = ((double)s - 0.5 * (double)(slices - 1)) * pixel;
  double t0 = cli_now();
  st = ctr_phantom_sinogram(ph, g, slices, z, 1, sino);
  const double t_sino = cli_now() - t0;
  for (int64_t s = 0; st == CTR_OK && s < slices; s++)
    st = ctr_phantom_slice(ph, g, z[s], 2, truth + s * plane);
  if (st != CTR_OK) {
    rc = cli_fail("demo", st);
    goto cleanup;
  }
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  const int64_t sd[3] = {size, views, slices}, vd[3] = {size, size, slices};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(rec, CTR_DTYPE_FLOAT32, 3, vd);
  t0 = cli_now();
  st = ctr_fbp(ctx, g, &o, &sa, &va);
  const double t_fbp = cli_now() - t0;
  cli_progress_end(&session);
  if (st != CTR_OK) {
    rc = cli_fail("demo", st);
    goto cleanup;
  }
  ctr_volume_error err = CTR_VOLUME_ERROR_INIT, err_p = CTR_VOLUME_ERROR_INIT;
  st = ctr_volume_compare(rec, truth, size, size, slices, 0, &err);
  /* The beamline's data: uint16 projections (I0 = 40000 counts over a dark
   * of 100) of the head at a realistic attenuation (PAR_MU per unit of
   * density and mm), with flat and dark fields, through ctr_fbp_projections;
   * the result divided by PAR_MU compares with the phantom. */
  uint16_t *proj = malloc(sizeof(uint16_t) * (size_t)(size * slices * views));
  float *flat = malloc(sizeof(float) * (size_t)(size * slices)), *dark = malloc(sizeof(float) * (size_t)(size * slices));
  float *rec_p = malloc(sizeof(float) * (size_t)(plane * slices));
  double t_proj = 0;
  if (st == CTR_OK && (!proj || !flat || !dark || !rec_p)) st = CTR_E_OUT_OF_MEMORY;
  if (st == CTR_OK) {
    for (int64_t i = 0; i < size * slices; i++) {
      flat[i] = 40000.0f;
      dark[i] = 100.0f;
    }
    for (int64_t a = 0; a < views; a++)
      for (int64_t s = 0; s < slices; s++)
        for (int64_t b = 0; b < size; b++) {
          const double v = 100.0 + 39900.0 * exp(-PAR_MU * (double)sino[(s * views + a) * size + b]);
          proj[(a * slices + s) * size + b] = (uint16_t)lrint(v);
        }
    const int64_t pd[3] = {size, slices, views};
    const ctr_array pa = ctr_array_make(proj, CTR_DTYPE_UINT16, 3, pd);
    ctr_array vp = ctr_array_make(rec_p, CTR_DTYPE_FLOAT32, 3, vd);
    t0 = cli_now();
    st = ctr_fbp_projections(ctx, g, &o, &pa, flat, dark, 0, &vp);
    t_proj = cli_now() - t0;
    cli_progress_end(&session);
  }
  if (st == CTR_OK) {
    for (int64_t i = 0; i < plane * slices; i++) rec_p[i] /= (float)PAR_MU;
    st = ctr_volume_compare(rec_p, truth, size, size, slices, 0, &err_p);
  }
  if (st == CTR_OK) {
    const ctr_stack_info pi = {CTR_STACK_INFO_VERSION, size, slices, views, CTR_DTYPE_UINT16, {pixel, pixel, 1}, {0, 0, 0}};
    const ctr_stack_info fi = {CTR_STACK_INFO_VERSION, size, slices, 1, CTR_DTYPE_FLOAT32, {pixel, pixel, 1}, {0, 0, 0}};
    snprintf(path, sizeof path, "%s/projections.tif", out_dir);
    st = ctr_stack_save(path, CTR_FORMAT_TIFF, &pi, CTR_DTYPE_UINT16, proj, force);
    if (st == CTR_OK) {
      snprintf(path, sizeof path, "%s/flat.tif", out_dir);
      st = ctr_stack_save(path, CTR_FORMAT_TIFF, &fi, CTR_DTYPE_FLOAT32, flat, force);
    }
    if (st == CTR_OK) {
      snprintf(path, sizeof path, "%s/dark.tif", out_dir);
      st = ctr_stack_save(path, CTR_FORMAT_TIFF, &fi, CTR_DTYPE_FLOAT32, dark, force);
    }
  }
  free(proj);
  free(flat);
  free(dark);
  free(rec_p);
  if (st != CTR_OK) {
    rc = cli_fail("demo", st);
    goto cleanup;
  }
  /* Files: the sinograms (input for `ctrecon fbp`), the slices, previews. */
  const ctr_stack_info si = {CTR_STACK_INFO_VERSION, size, views, slices, CTR_DTYPE_FLOAT32, {pixel, 180.0 / (double)views, pixel}, {0, 0, 0}};
  snprintf(path, sizeof path, "%s/sinograms.tif", out_dir);
  st = ctr_stack_save(path, CTR_FORMAT_TIFF, &si, CTR_DTYPE_FLOAT32, sino, force);
  if (st == CTR_OK && !no_volume) {
    const ctr_stack_info vi = {CTR_STACK_INFO_VERSION, size, size, slices, CTR_DTYPE_FLOAT32, {pixel, pixel, pixel}, {0, 0, 0}};
    snprintf(path, sizeof path, "%s/recon.nrrd", out_dir);
    st = ctr_stack_save(path, CTR_FORMAT_NRRD, &vi, CTR_DTYPE_FLOAT32, rec, force);
  }
  if (st == CTR_OK) {
    snprintf(path, sizeof path, "%s/recon_xy.png", out_dir);
    st = ctr_png_write_gray(path, rec + (slices / 2) * plane, size, size, 0.0f, 0.5f, force);
  }
  if (st == CTR_OK) {
    snprintf(path, sizeof path, "%s/truth_xy.png", out_dir);
    st = ctr_png_write_gray(path, truth + (slices / 2) * plane, size, size, 0.0f, 0.5f, force);
  }
  if (st != CTR_OK) {
    rc = cli_fail_file("demo", st, path);
    goto cleanup;
  }
  const double ups = (double)views * (double)plane * (double)slices;
  cli_info(&session,
           "  sinograms (exact)  %8.2f s\n  fbp (hann)         %8.2f s  %.2f GUPS\n"
           "  from uint16 projections with flat/dark %8.2f s\n"
           "RMSE vs the phantom: %.5f away from edges (%lld px), %.5f over the head, max %.3f\n"
           "RMSE from the uint16 projections: %.5f away from edges\n"
           "wrote %s/sinograms.tif, projections.tif, flat.tif, dark.tif%s, recon_xy.png, "
           "truth_xy.png (window 0..0.5)\n",
           t_sino, t_fbp, ups / (t_fbp > 1e-9 ? t_fbp : 1e-9) / 1e9, t_proj, err.rmse_flat,
           (long long)err.n_flat, err.rmse_object, err.max_abs, err_p.rmse_flat, out_dir,
           no_volume ? "" : ", recon.nrrd");
cleanup:
  cli_progress_end(&session);
  free(z);
  cli_free_floats(sino);
  cli_free_floats(rec);
  cli_free_floats(truth);
  ctr_context_free(ctx);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
  return rc;
}
