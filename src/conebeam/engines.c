/* The backend table of cone-beam reconstruction (engine.h): every backend
 * this library knows, found by device kind. */
#include "conebeam/engine.h"

static const ctr__engine_backend *const backends[] = {&ctr__engine_backend_cpu,
                                                      &ctr__engine_backend_cuda};

const ctr__engine_backend *ctr__engine_backend_find(ctr_device_kind kind) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (backends[i]->kind == kind) return backends[i];
  return NULL;
}

ctr_status ctr__engine_backend_of(const ctr_context *ctx, const ctr__engine_backend **out) {
  const ctr_device_kind kind = ctr_context_get_device(ctx);
  const ctr__engine_backend *be = ctr__engine_backend_find(kind);
  if (!be || !be->create)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend is not part of this build",
             be ? be->name : "requested");
  *out = be;
  return CTR_OK;
}

void ctr__engine_free(ctr__engine *e) {
  if (!e) return;
  e->ops->destroy(e);
  free(e);
}
