/* Built against an installed ctrecon (tests/install/run.sh): a Shepp-Logan
 * head projected, reconstructed by FDK on the CPU and compared with the
 * voxelised phantom. Uses the public API only, the way a binding would: the
 * structs are filled by their init functions. Exits 0 when the
 * reconstruction is right, 1 on any failure. */
#include <ctrecon.h>

#include <stdio.h>
#include <stdlib.h>

#define N 48

static int fail(const char *what, ctr_status st) {
  fprintf(stderr, "fdk_check: %s: %s: %s\n", what, ctr_status_name(st), ctr_error_detail());
  return 1;
}

int main(void) {
  ctr_context_options co;
  ctr_circular_params cp;
  ctr_fdk_options fo;
  ctr_volume_error err;
  ctr_status st;
  if ((st = ctr_context_options_init(&co, CTR_CONTEXT_OPTIONS_VERSION)) != CTR_OK ||
      (st = ctr_circular_params_init(&cp, CTR_CIRCULAR_PARAMS_VERSION)) != CTR_OK ||
      (st = ctr_fdk_options_init(&fo, CTR_FDK_OPTIONS_VERSION)) != CTR_OK ||
      (st = ctr_volume_error_init(&err, CTR_VOLUME_ERROR_VERSION)) != CTR_OK)
    return fail("init", st);
  co.device = CTR_DEVICE_CPU;
  cp.sid = 4.0 * N;
  cp.sdd = 6.0 * N;
  cp.nu = cp.nv = 80;
  cp.du = cp.dv = 1.5 * N / 80 * 1.35;
  cp.nviews = 120;
  fo.window = CTR_WINDOW_HANN;
  const ctr_volume_geometry vol = {N, N, N, 1.0, 1.0, 1.0, 0, 0, 0};

  ctr_context *ctx = NULL;
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  const size_t nproj = (size_t)cp.nu * cp.nv * cp.nviews, nvox = (size_t)N * N * N;
  float *proj = malloc(nproj * sizeof(float)), *rec = malloc(nvox * sizeof(float)),
        *truth = malloc(nvox * sizeof(float));
  int rc = 1;
  if (!proj || !rec || !truth) {
    fprintf(stderr, "fdk_check: out of memory\n");
    goto done;
  }
  const int64_t pd[3] = {cp.nu, cp.nv, cp.nviews}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ra = ctr_array_make(rec, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ta = ctr_array_make(truth, CTR_DTYPE_FLOAT32, 3, vd);
  if ((st = ctr_context_create(&co, &ctx)) != CTR_OK) {
    fail("context", st);
    goto done;
  }
  if ((st = ctr_geometry_create_circular(&cp, &vol, &g)) != CTR_OK ||
      (st = ctr_phantom_shepp_logan(0.5 * N * 0.95, 1.0, &ph)) != CTR_OK ||
      (st = ctr_phantom_project(ctx, ph, g, 1, &pa)) != CTR_OK ||
      (st = ctr_fdk(ctx, g, &fo, &pa, &ra)) != CTR_OK ||
      (st = ctr_phantom_voxelize(ctx, ph, &vol, 2, 0, &ta)) != CTR_OK ||
      (st = ctr_volume_compare(rec, truth, N, N, N, N / 5, &err)) != CTR_OK) {
    fail("FDK", st);
    goto done;
  }
  printf("fdk_check: ctrecon %s, %s, RMSE %.4f away from edges (%lld voxels), %.4f over the head\n",
         ctr_version_string(), ctr_context_get_device(ctx) == CTR_DEVICE_CPU ? "cpu" : "cuda",
         err.rmse_flat, (long long)err.n_flat, err.rmse_object);
  /* the same bounds as tests/test_fdk.c's Shepp-Logan (96^3 there: these
   * hold with room at 48^3) */
  if (err.n_flat < 1000 || !(err.rmse_flat < 0.01) || !(err.rmse_object < 0.12)) {
    fprintf(stderr, "fdk_check: the reconstruction is wrong\n");
    goto done;
  }
  rc = 0;
done:
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_context_free(ctx);
  free(proj);
  free(rec);
  free(truth);
  return rc;
}
