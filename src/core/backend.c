/* The lookup every backend registry shares (conebeam/engines.c,
 * iterative/backends.c, parbeam/backends.c, pet/backends.c): a table by the
 * context's device kind. */
#include "core/internal.h"

ctr_status ctr__backend_pick(const ctr_context *ctx, const ctr__backend_head *const *all, int n,
                             const ctr__backend_head **out) {
  const ctr_device_kind kind = ctr_context_get_device(ctx); /* NULL: the CPU */
  for (int i = 0; i < n; i++)
    if (all[i]->kind == kind && all[i]->built) {
      *out = all[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_UNSUPPORTED, "the %s backend is not part of this build",
           kind == CTR_DEVICE_CUDA ? "cuda" : kind == CTR_DEVICE_CPU ? "cpu" : "requested");
}
