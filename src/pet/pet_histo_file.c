/* The public load and save of histo-image sets: the arguments checked, then
 * the file form chosen by the name (.h5 / .hdf5: pet_histo_hdf5.c; anything
 * else: the JSON description with raw arrays, pet_histo.c). Only calls down
 * into those two files. */
#include "pet/pet_data.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Validates a histo-image set given to save. */
static ctr_status check_histo(const ctr_pet_histo *h, const char *path) {
  if (!h) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_save('%s'): histo is NULL", path);
  ctr_pet_params pc;
  CTR_CHECK(ctr__pet_params_check(&h->params, "ctr_pet_histo_save", &pc));
  const int64_t expect = (int64_t)h->params.n_azimuth * h->params.n_copolar;
  if (h->nviews != expect)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_histo_save('%s'): nviews is %lld, expected n_azimuth x n_copolar = %d x %d "
             "= %lld",
             path, (long long)h->nviews, h->params.n_azimuth, h->params.n_copolar,
             (long long)expect);
  if (!h->counts)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_save('%s'): counts is NULL", path);
  if (!isfinite(h->tof_fwhm_ps) || h->tof_fwhm_ps < 0 || !isfinite(h->events) || h->events < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_histo_save('%s'): tof_fwhm_ps %g / events %g: expected finite values >= 0",
             path, h->tof_fwhm_ps, h->events);
  if (ctr__pet_histo_check_values(h, path) != CTR_OK) {
    char why[768];
    snprintf(why, sizeof why, "%s", ctr_error_detail());
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_save: %s", why);
  }
  return CTR_OK;
}

ctr_status ctr_pet_histo_save(const char *path, const ctr_pet_histo *h, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_save: path is empty");
  CTR_CHECK(check_histo(h, path));
  if (ctr__pet_histo_is_hdf5(path)) return ctr__pet_histo_save_hdf5(path, h, overwrite);
  return ctr__pet_histo_save_json(path, h, overwrite);
}

ctr_status ctr_pet_histo_load(const char *path, ctr_pet_histo **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_load: out is NULL");
  *out = NULL;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_load: path is empty");
  if (ctr__pet_histo_is_hdf5(path)) return ctr__pet_histo_load_hdf5(path, out);
  return ctr__pet_histo_load_json(path, out);
}
