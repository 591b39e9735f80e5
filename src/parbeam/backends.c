/* The backend table of parallel-beam reconstruction and the corrections
 * (backend.h): every backend this library knows, found by device kind. */
#include "parbeam/backend.h"

static const ctr__par_backend *const backends[] = {&ctr__par_backend_cpu,
                                                   &ctr__par_backend_cuda};

ctr_status ctr__par_backend_of(const ctr_context *ctx, const ctr__par_backend **out) {
  const ctr_device_kind kind = ctr_context_get_device(ctx); /* NULL: the CPU */
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (backends[i]->kind == kind && backends[i]->built) {
      *out = backends[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend is not part of this build",
           kind == CTR_DEVICE_CUDA ? "cuda" : "requested");
}
