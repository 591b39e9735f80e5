/* The cost model of a multi-worker FDK run (plan_split.c): how long a plan
 * takes, per split scheme, in the spirit of Okitsu et al. 2010, Table 1. */
#ifndef CTR_PLAN_SPLIT_H
#define CTR_PLAN_SPLIT_H

#include "geometry/geometry_internal.h"

/* The rates the model uses for a request: its own, zeros replaced by the
 * built-in figures of its device kind. */
ctr_fdk_split_rates ctr__split_rates(const ctr_fdk_plan_request *r);
/* Estimated seconds of plan p (made for request r: its workers, split,
 * interpolation) on one worker, the slowest: transfers overlap the
 * filtering and backprojection; a projection split's reduction does not. */
double ctr__plan_seconds(const ctr_geometry *g, const ctr_fdk_plan_request *r, const ctr_fdk_plan *p);

/* The GPU budget of each of `workers` engines placed on ndevices devices in
 * turn (worker i on device i mod ndevices), device d offering device_budget[d]
 * bytes shared by the workers on it: the smallest share (every engine runs
 * the same plan). 0 when there is no device. */
uint64_t ctr__split_gpu_budget(const uint64_t *device_budget, int ndevices, int workers);

#endif
