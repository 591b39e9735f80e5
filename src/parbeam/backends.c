/* The backend table of parallel-beam reconstruction and the corrections
 * (backend.h): every backend this library knows, found by device kind. */
#include "parbeam/backend.h"

ctr_status ctr__par_backend_of(const ctr_context *ctx, const ctr__par_backend **out) {
  static const ctr__backend_head *const all[] = {&ctr__par_backend_cpu.head,
                                                 &ctr__par_backend_cuda.head};
  const ctr__backend_head *h;
  CTR_CHECK(ctr__backend_pick(ctx, all, (int)(sizeof all / sizeof all[0]), &h));
  *out = (const ctr__par_backend *)h; /* the head is the table's first member */
  return CTR_OK;
}
