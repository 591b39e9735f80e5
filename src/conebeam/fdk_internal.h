/* Internal pieces shared by the cone-beam entry points and backends: option
 * and array validation (fdk_options.c), the output's value policy and
 * conversion (slab_values.c). */
#ifndef CTR_FDK_INTERNAL_H
#define CTR_FDK_INTERNAL_H

#include "geometry/geometry_internal.h"

/* A report's helical window (ctr_fdk_stream_report version 2): g's, or -1
 * when g is not a helix. */
static inline void ctr__fdk_report_helix(const ctr_geometry *g, ctr_fdk_stream_report *rep) {
  int automatic = 0;
  const double w = ctr_geometry_get_helix_window(g, &automatic);
  rep->helix_window_deg = w == w ? w : -1.0;
  rep->helix_window_auto = automatic;
}

/* Validates opts (NULL: defaults) against g and resolves nz = 0 to the whole
 * volume. */
ctr_status ctr__fdk_options_resolve(const ctr_geometry *g, const ctr_fdk_options *opts,
                                    ctr_fdk_options *o);
/* Checks the volume array of an FDK run (float32, nx x ny x o->nz). */
ctr_status ctr__check_fdk_volume(const ctr_geometry *g, const ctr_fdk_options *o,
                                 const ctr_array *vol);
/* Checks the projection (float32 or uint16) and volume arrays of an FDK run. */
ctr_status ctr__check_fdk_arrays(const ctr_geometry *g, const ctr_fdk_options *o,
                                 const ctr_array *proj, const ctr_array *vol);
/* Smallest and largest value of n floats, merged into *mn, *mx, after
 * replacing each bad value (NaN, infinite, beyond CTR__VALUE_LIMIT) by 0;
 * returns how many were replaced. */
int64_t ctr__slab_stats(float *v, int64_t n, float *mn, float *mx);
/* float -> uint16 of value x scale: rounds, clamps, NaN -> 0; counts clamps. */
void ctr__to_u16(const float *v, int64_t n, double scale, uint16_t *out, int64_t *below,
                 int64_t *above);

#endif
