/* ctr_fbp_projections on the CPU: the same bytes as flat-field correction
 * (ctr_flatfield_sinograms) followed by ctr_fbp, for uint16 and float32
 * projections, a row range, with and without dark fields; argument errors. */
#include "harness.h"

int main(void) {
  const int64_t nb = 40, nrows = 9, na = 50, row0 = 3, ns = 4;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  if (!g) return th_finish("test_fbp_projections");
  const int64_t npix = nb * nrows, plane = nb * nb;
  uint16_t *p16 = malloc(sizeof(uint16_t) * (size_t)(npix * na));
  float *p32 = malloc(sizeof(float) * (size_t)(npix * na));
  float *flat = malloc(sizeof(float) * (size_t)npix), *dark = malloc(sizeof(float) * (size_t)npix);
  float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
  float *a = malloc(sizeof(float) * (size_t)(plane * ns)), *b = malloc(sizeof(float) * (size_t)(plane * ns));
  for (int64_t i = 0; i < npix; i++) {
    flat[i] = (float)th_uniform(9000, 10000);
    dark[i] = (float)th_uniform(50, 60);
  }
  for (int64_t i = 0; i < npix * na; i++) {
    p16[i] = (uint16_t)th_uniform(1000, 9000);
    p32[i] = (float)th_uniform(1000, 9000);
  }
  const int64_t pd[3] = {nb, nrows, na}, sd[3] = {nb, na, ns}, vd[3] = {nb, nb, ns};
  ctr_array va = ctr_array_make(a, CTR_DTYPE_FLOAT32, 3, vd), vb = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, vd);
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  for (int dt = 0; dt < 2; dt++)
    for (int with_dark = 0; with_dark < 2; with_dark++) {
      const ctr_dtype t = dt ? CTR_DTYPE_FLOAT32 : CTR_DTYPE_UINT16;
      const void *src = dt ? (const void *)p32 : (const void *)p16;
      const ctr_array pa = ctr_array_make((void *)src, t, 3, pd);
      const float *d = with_dark ? dark : NULL;
      CHECK_OK(ctr_fbp_projections(NULL, g, NULL, &pa, flat, d, row0, &va));
      CHECK_OK(ctr_flatfield_sinograms(src, t, nb, nrows, na, flat, d, row0, ns, sino, NULL));
      CHECK_OK(ctr_fbp(NULL, g, NULL, &sa, &vb));
      CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)(plane * ns)) == 0,
                "dtype %d dark %d: ctr_fbp_projections differs from flat-field + ctr_fbp", dt, with_dark);
    }
  /* Errors: rows beyond the projections, no flat, wrong dims. */
  const ctr_array pa = ctr_array_make(p16, CTR_DTYPE_UINT16, 3, pd);
  CHECK(ctr_fbp_projections(NULL, g, NULL, &pa, flat, dark, nrows - 2, &va) == CTR_E_INVALID_ARGUMENT);
  CHECK(strstr(ctr_error_detail(), "rows") != NULL);
  CHECK(ctr_fbp_projections(NULL, g, NULL, &pa, NULL, dark, 0, &va) == CTR_E_INVALID_ARGUMENT);
  const int64_t bad[3] = {nb + 1, nrows, na};
  const ctr_array pb = ctr_array_make(p16, CTR_DTYPE_UINT16, 3, bad);
  CHECK(ctr_fbp_projections(NULL, g, NULL, &pb, flat, dark, 0, &va) == CTR_E_SIZE_MISMATCH);
  free(p16);
  free(p32);
  free(flat);
  free(dark);
  free(sino);
  free(a);
  free(b);
  ctr_parallel_free(g);
  return th_finish("test_fbp_projections");
}
