/* ctr_tune_pet (pet.h): the autotuning of the PET projectors run on
 * request, through the backend's `tune` (backend.h; the CUDA one in
 * cuda/pet_cuda.cu). */
#include "pet/backend.h"

#include <string.h>

ctr_status ctr_tune_pet(ctr_context *ctx, ctr_pet_system *s, int force, ctr_tune_report *report) {
  if (!ctx || !s || !report)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tune_pet: ctx, s and report are required");
  memset(report, 0, sizeof *report);
  const ctr__pet_backend *be;
  CTR_CHECK(ctr__pet_backend_of(ctx, &be));
  if (!be->tune)
    CTR_FAIL(CTR_E_UNSUPPORTED, "ctr_tune_pet: the %s backend has no launch parameters to tune "
             "(create the context for a CUDA device)", be->head.name);
  return be->tune(ctx, ctr__context_gpu(ctx, 0), s, force, report);
}
