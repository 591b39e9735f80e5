/* Internal pieces shared by the FDK driver and the incremental
 * backprojector. */
#ifndef CTR_PIPELINE_H
#define CTR_PIPELINE_H

#include "geometry/geometry_internal.h"

/* Validates opts (NULL: defaults) against g and resolves nz = 0 to the whole
 * volume. */
ctr_status ctr__fdk_options_resolve(const ctr_geometry *g, const ctr_fdk_options *opts,
                                    ctr_fdk_options *o);
/* Copies n contiguous views (float32 or uint16) into zero-bordered padded
 * images (projmath.h layout). */
void ctr__fill_padded(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                      float *dst);

#endif
