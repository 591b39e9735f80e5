/* `ctrecon demo --parallel --tilt DEG`: laminography end to end. Exact
 * projections of the stack of three thin disks (ctr_phantom_disk_stack)
 * with the rotation axis tilted by DEG, over a full turn; FBP; each disk's
 * core mean against its density and against FBP's missing-cone limit
 * (docs/geometry.md, "Laminography"); the sinograms for `ctrecon fbp
 * --tilt` and `ctrecon iterate --tilt`. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAM_EXTENT 256.0 /* mm across the slices */

/* Core means (r < R / 2, the slice nearest each disk's centre) of the
 * three disks and of the two gaps between them. */
static void core_means(const float *v, int64_t n, int64_t nz, double ps, double R, double step,
                       double out[5]) {
  double sum[5] = {0}, cnt[5] = {0};
  for (int m = 0; m < 5; m++) {
    const int64_t k = (int64_t)lround((m - 2) * 0.5 * step / ps + 0.5 * (double)(nz - 1));
    if (k < 0 || k >= nz) continue;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        const double x = ((double)i - 0.5 * (double)(n - 1)) * ps;
        const double y = ((double)j - 0.5 * (double)(n - 1)) * ps;
        if (x * x + y * y >= 0.25 * R * R) continue;
        sum[m] += v[(k * n + j) * n + i];
        cnt[m] += 1;
      }
  }
  for (int m = 0; m < 5; m++) out[m] = cnt[m] > 0 ? sum[m] / cnt[m] : NAN;
}

int cmd_demo_lamino(int64_t size, int64_t views, int64_t slices, double tilt, const char *out_dir,
                    int force, const cli_common *common) {
  int rc = 0;
  ctr_context *ctx = NULL;
  cli_session session;
  memset(&session, 0, sizeof session);
  ctr_parallel_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  float *sino = NULL, *rec = NULL;
  char path[4200];
  const double ps = LAM_EXTENT / (double)size, ph_tilt = tilt * M_PI / 180.0;
  /* the disks: thickness = gap = slices / 6 voxels, radius 8 % of the extent (wider
   * disks lose more to the missing cone: docs/geometry.md) */
  const double T = (double)slices / 6.0 * ps, R = 0.08 * LAM_EXTENT;
  /* rows enough for every voxel's projection */
  const int64_t nrows = (int64_t)ceil((double)size * sqrt(2.0) * fabs(sin(ph_tilt)) +
                                      (double)slices * cos(ph_tilt)) + 2;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = (int64_t)ceil((double)size * sqrt(2.0));
  p.nangles = views;
  p.angle_range_deg = 360.0;
  p.nx = p.ny = size;
  p.pixel_size = ps;
  p.tilt_deg = tilt;
  p.nrows = nrows;
  ctr_status st = ctr_parallel_create(&p, &g);
  if (st == CTR_OK) st = ctr_phantom_disk_stack(R, T, T, 1.0, &ph);
  if (st != CTR_OK) return cli_fail("demo", st);
  rc = cli_context_create(&session, "demo", common, &ctx);
  const int64_t nb = p.nbins, plane = size * size;
  if (!rc) sino = cli_alloc_floats("demo", nb * views * nrows, "the sinograms", &rc);
  if (!rc) rec = cli_alloc_floats("demo", plane * slices, "the slices", &rc);
  if (rc) goto cleanup;
  cli_info(&session, "laminography demo: tilt %g deg, %lld slices of %lld^2 (%.3g mm voxels) from "
           "%lld angles over 360 deg x %lld bins x %lld rows; three disks of radius %.3g mm, "
           "%.3g mm thick, %.3g mm apart\n", tilt, (long long)slices, (long long)size, ps,
           (long long)views, (long long)nb, (long long)nrows, R, T, T);
  double t0 = cli_now();
  st = ctr_phantom_sinogram(ph, g, nrows, NULL, 1, sino);
  const double t_sino = cli_now() - t0;
  const int64_t sd[3] = {nb, views, nrows}, vd[3] = {size, size, slices};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(rec, CTR_DTYPE_FLOAT32, 3, vd);
  t0 = cli_now();
  if (st == CTR_OK) st = ctr_fbp(ctx, g, NULL, &sa, &va);
  const double t_fbp = cli_now() - t0;
  cli_progress_end(&session);
  if (st != CTR_OK) {
    rc = cli_fail("demo", st);
    goto cleanup;
  }
  const ctr_stack_info si = {CTR_STACK_INFO_VERSION, nb, views, nrows, CTR_DTYPE_FLOAT32,
                             {ps, 360.0 / (double)views, ps}, {0, 0, 0}};
  snprintf(path, sizeof path, "%s/sinograms.tif", out_dir);
  st = ctr_stack_save(path, CTR_FORMAT_TIFF, &si, CTR_DTYPE_FLOAT32, sino, force);
  if (st == CTR_OK) {
    const ctr_stack_info vi = {CTR_STACK_INFO_VERSION, size, size, slices, CTR_DTYPE_FLOAT32,
                               {ps, ps, ps}, {0, 0, 0}};
    snprintf(path, sizeof path, "%s/recon.nrrd", out_dir);
    st = ctr_stack_save(path, CTR_FORMAT_NRRD, &vi, CTR_DTYPE_FLOAT32, rec, force);
  }
  if (st == CTR_OK) { /* the xz plane through the axis: the layers */
    float *xz = malloc(sizeof(float) * (size_t)(size * slices));
    if (!xz) st = CTR_E_OUT_OF_MEMORY;
    for (int64_t k = 0; xz && k < slices; k++)
      memcpy(xz + k * size, rec + (k * size + size / 2) * size, sizeof(float) * (size_t)size);
    snprintf(path, sizeof path, "%s/recon_xz.png", out_dir);
    if (xz) st = ctr_png_write_gray(path, xz, size, slices, 0.0f, 1.0f, force);
    free(xz);
  }
  if (st != CTR_OK) {
    rc = cli_fail_file("demo", st, path);
    goto cleanup;
  }
  double m[5];
  core_means(rec, size, slices, ps, R, 2.0 * T, m);
  const double kappa = 1.0 / sqrt(1.0 + pow(R * tan(ph_tilt) / (0.5 * T), 2.0));
  cli_info(&session,
           "  sinograms (exact)  %8.2f s\n  fbp (ram-lak, %s) %8.2f s\n"
           "disk core means: %.4f %.4f %.4f (densities 1 0.5 0.75; FBP's missing-cone limit "
           "%.4f %.4f %.4f)\nbetween the disks: %.4f %.4f\n"
           "wrote %s/sinograms.tif (for fbp/iterate --tilt %g --angle-range 360 --pixel-size "
           "%.17g), recon.nrrd, recon_xz.png (window 0..1)\n",
           t_sino, ctr_context_get_device(ctx) == CTR_DEVICE_CUDA ? "GPU" : "CPU", t_fbp, m[0], m[2], m[4], kappa, 0.5 * kappa, 0.75 * kappa, m[1], m[3], out_dir,
           tilt, ps);
cleanup:
  cli_progress_end(&session);
  cli_free_floats(sino);
  cli_free_floats(rec);
  ctr_context_free(ctx);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
  return rc;
}
