/* The problem of the iterative checkpoint target (fuzz_it_checkpoint.c) and
 * of its seeds (make_corpus.c): a CPU projector of a 4^3 volume from 4 views
 * of 8 x 6 pixels, a state of two volume vectors, and a fixed fingerprint
 * (the seeds carry it, so that mutations reach the vectors, the history and
 * the CRC). */
#ifndef CTR_FUZZ_CHECKPOINT_H
#define CTR_FUZZ_CHECKPOINT_H

#include <ctrecon.h>

#include "iterative/iterative.h"

#define FZ_CK_NVEC 2

static ctr__it_fingerprint fz_ck_fingerprint(void) {
  ctr__it_fingerprint f;
  memset(&f, 0, sizeof f);
  f.algorithm = CTR_ITERATE_CGLS;
  f.n[0] = f.n[1] = f.n[2] = 4;
  f.nu = 8, f.nv = 6, f.nviews = 4;
  f.geometry = 0x1234, f.data = 0x5678;
  return f;
}

/* The projector (made once, kept for the process) and the state's vectors
 * allocated on it; NULL when it cannot be made. */
static ctr_projector *fz_ck_projector(ctr__it_state *s, ctr__vec *v) {
  static ctr_context *ctx;
  static ctr_geometry *g;
  static ctr_projector *p;
  if (!p) {
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.device = CTR_DEVICE_CPU;
    co.num_threads = 1;
    ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
    cp.sid = 200, cp.sdd = 300, cp.nu = 8, cp.nv = 6, cp.du = 2, cp.dv = 2, cp.nviews = 4;
    const ctr_volume_geometry vol = {4, 4, 4, 2, 2, 2, 0, 0, 0};
    ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
    if (ctr_context_create(&co, &ctx) != CTR_OK ||
        ctr_geometry_create_circular(&cp, &vol, &g) != CTR_OK ||
        ctr_projector_create_cone(ctx, g, &po, &p) != CTR_OK)
      return NULL;
  }
  memset(s, 0, sizeof *s);
  s->nvec = FZ_CK_NVEC;
  for (int i = 0; i < FZ_CK_NVEC; i++) {
    if (ctr__vec_alloc(p, 64, 0, &v[i]) != CTR_OK) return NULL;
    s->vec[i] = &v[i];
  }
  return p;
}

#endif
