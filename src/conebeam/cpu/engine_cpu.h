/* The CPU backend's entries in the backend table (engine.h): the engine
 * (engine_cpu.c) and the incremental backprojector (backprojector_cpu.c). */
#ifndef CTR_ENGINE_CPU_H
#define CTR_ENGINE_CPU_H

#include "conebeam/engine.h"

ctr_status ctr__cpu_bpj_create(ctr_context *ctx, int device, const ctr_geometry *g,
                               const ctr_fdk_options *o, void **out);
ctr_status ctr__cpu_bpj_add(void *b, int64_t n, const int64_t *views, const float *const *images,
                            const float *weights);
ctr_status ctr__cpu_bpj_read(void *b, float *vol);
ctr_status ctr__cpu_bpj_reset(void *b);
void ctr__cpu_bpj_free(void *b);
ctr_status ctr__cpu_bpj_slab(void *b, int64_t z0, int64_t nz);
ctr_status ctr__cpu_reference(ctr_context *ctx, int device, const ctr_geometry *g, int64_t n,
                              const int64_t *views, const float *const *images,
                              const double *weights, double *vol, int64_t z0, int64_t nzs);

#endif
