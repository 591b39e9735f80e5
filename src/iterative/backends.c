/* The backend table of iterative reconstruction (backend.h): every backend
 * this library knows, found by device kind. */
#include "iterative/backend.h"

static const ctr__it_backend *const backends[] = {&ctr__it_backend_cpu, &ctr__it_backend_cuda};

const ctr__it_backend *ctr__it_backend_find(ctr_device_kind kind) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (backends[i]->kind == kind) return backends[i];
  return NULL;
}

ctr_status ctr__it_backend_of(const ctr_context *ctx, const ctr__it_backend **out) {
  const ctr__it_backend *be = ctr__it_backend_find(ctr_context_get_device(ctx));
  if (!be || !be->built)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend is not part of this build",
             be ? be->name : "requested");
  *out = be;
  return CTR_OK;
}
