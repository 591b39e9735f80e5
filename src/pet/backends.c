/* The backend table of TOF-PET DIRECT (backend.h): every backend this
 * library knows, found by device kind. */
#include "pet/backend.h"

static const ctr__pet_backend *const backends[] = {&ctr__pet_backend_cpu,
                                                   &ctr__pet_backend_cuda};

ctr_status ctr__pet_backend_of(const ctr_context *ctx, const ctr__pet_backend **out) {
  const ctr_device_kind kind = ctr_context_get_device(ctx); /* NULL: the CPU */
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (backends[i]->kind == kind && backends[i]->built) {
      *out = backends[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend is not part of this build",
           kind == CTR_DEVICE_CUDA ? "cuda" : "requested");
}
