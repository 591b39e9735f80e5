/* The backend table of cone-beam reconstruction (engine.h): every backend
 * this library knows, found by device kind. */
#include "conebeam/engine.h"

static const ctr__engine_backend *const backends[] = {&ctr__engine_backend_cpu,
                                                      &ctr__engine_backend_cuda};

const ctr__engine_backend *ctr__engine_backend_find(ctr_device_kind kind) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (backends[i]->head.kind == kind) return backends[i];
  return NULL;
}

ctr_status ctr__engine_backend_of(const ctr_context *ctx, const ctr__engine_backend **out) {
  static const ctr__backend_head *const all[] = {&ctr__engine_backend_cpu.head,
                                                 &ctr__engine_backend_cuda.head};
  const ctr__backend_head *h;
  CTR_CHECK(ctr__backend_pick(ctx, all, (int)(sizeof all / sizeof all[0]), &h));
  *out = (const ctr__engine_backend *)h; /* the head is the table's first member */
  return CTR_OK;
}

void ctr__engine_free(ctr__engine *e) {
  if (!e) return;
  e->ops->destroy(e);
  free(e);
}
