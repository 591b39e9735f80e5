/* The streamed executor's own buffers (stream.c), which the planner adds to
 * each backend's memory model (the backend's `cost`, engine.h). */
#ifndef CTR_PLAN_COSTS_H
#define CTR_PLAN_COSTS_H

#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host buffers between the reader thread and the backend. */
#define CTR__READ_BUFFERS 3
/* Host buffers between the backend and the writer thread, each holding a
 * chunk of a subvolume of about CTR__CHUNK_BYTES. */
#define CTR__HOST_SLAB_BUFFERS 2
#define CTR__CHUNK_BYTES ((uint64_t)1 << 30)

/* A volume split with several workers and filtered views resident on each
 * device passes each filtered subset from its filtering worker to the others
 * through a ring of this many pinned host buffers of one subset (a worker
 * can be at most one subset ahead of the slowest: stream.c). */
#define CTR__TRANSIT_SLOTS(workers) (2 * (workers) + 2)

/* Bytes of one projection of nu x nv pixels of element size e. */
static inline uint64_t ctr__view_bytes(const ctr_geometry *g, uint64_t e) {
  return (uint64_t)g->nu * (uint64_t)g->nv * e;
}

#ifdef __cplusplus
}
#endif
#endif
