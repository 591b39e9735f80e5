/* The backend table of iterative reconstruction (backend.h): every backend
 * this library knows, found by device kind. */
#include "iterative/backend.h"

ctr_status ctr__it_backend_of(const ctr_context *ctx, const ctr__it_backend **out) {
  static const ctr__backend_head *const all[] = {&ctr__it_backend_cpu.head,
                                                 &ctr__it_backend_cuda.head};
  const ctr__backend_head *h;
  CTR_CHECK(ctr__backend_pick(ctx, all, (int)(sizeof all / sizeof all[0]), &h));
  *out = (const ctr__it_backend *)h; /* the head is the table's first member */
  return CTR_OK;
}
