/* Validation of the FDK options and arrays shared by every cone-beam entry
 * point. */
#include "conebeam/fdk_internal.h"

ctr_status ctr__fdk_options_resolve(const ctr_geometry *g, const ctr_fdk_options *opts,
                                   ctr_fdk_options *o) {
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, o, opts));
  if (o->nz == 0) {
    if (o->z0 != 0)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "z0 = %lld with nz = 0: give nz for a slab", (long long)o->z0);
    o->nz = g->vol.nz;
  }
  if (o->z0 < 0 || o->nz < 0 || o->z0 + o->nz > g->vol.nz)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices [%lld, %lld): expected a range inside [0, %lld)",
             (long long)o->z0, (long long)(o->z0 + o->nz), (long long)g->vol.nz);
  if (o->views_per_batch < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views_per_batch = %lld: expected >= 0 (0 = automatic)",
             (long long)o->views_per_batch);
  if (o->interp != CTR_INTERP_DEFAULT && o->interp != CTR_INTERP_EXACT &&
      o->interp != CTR_INTERP_TEXTURE && o->interp != CTR_INTERP_PRECISE)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "interp = %d: expected default, exact, texture or precise",
             (int)o->interp);
  return CTR_OK;
}

static ctr_status check_array(const ctr_array *a, const char *what, int64_t d0, int64_t d1,
                              int64_t d2, int allow_u16) {
  if (!a || !a->data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: no data", what);
  if (a->dtype != CTR_DTYPE_FLOAT32 && !(allow_u16 && a->dtype == CTR_DTYPE_UINT16))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: dtype %s, expected float32%s", what,
             ctr_dtype_name(a->dtype), allow_u16 ? " or uint16" : "");
  if (a->ndim != 3 || a->dims[0] != d0 || a->dims[1] != d1 || a->dims[2] != d2)
    CTR_FAIL(CTR_E_SIZE_MISMATCH, "%s: dims %lld x %lld x %lld, expected %lld x %lld x %lld", what,
             (long long)(a->ndim > 0 ? a->dims[0] : 0), (long long)(a->ndim > 1 ? a->dims[1] : 0),
             (long long)(a->ndim > 2 ? a->dims[2] : 0), (long long)d0, (long long)d1, (long long)d2);
  return CTR_OK;
}

ctr_status ctr__check_fdk_volume(const ctr_geometry *g, const ctr_fdk_options *o,
                                 const ctr_array *vol) {
  return check_array(vol, "volume", g->vol.nx, g->vol.ny, o->nz, 0);
}

ctr_status ctr__check_fdk_arrays(const ctr_geometry *g, const ctr_fdk_options *o,
                                 const ctr_array *proj, const ctr_array *vol) {
  CTR_CHECK(check_array(proj, "projections", g->nu, g->nv, g->nviews, 1));
  return ctr__check_fdk_volume(g, o, vol);
}

