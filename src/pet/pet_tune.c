/* ctr_tune_pet (pet.h): the autotuning of the PET projectors run on
 * request, through the backend's `tune` (backend.h; the CUDA one in
 * cuda/pet_cuda.cu). */
#include "core/autotune.h"
#include "pet/backend.h"

ctr_status ctr_tune_pet(ctr_context *ctx, ctr_pet_system *s, int force, ctr_tune_report *report) {
  if (!ctx || !s || !report)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tune_pet: ctx, s and report are required");
  ctr_tune_report *r;
  CTR_CHECK(ctr__tune_report_begin(report, &r));
  const ctr__pet_backend *be = NULL;
  ctr_status st = ctr__pet_backend_of(ctx, &be);
  if (st == CTR_OK && !be->tune)
    st = ctr__error_set(CTR_E_UNSUPPORTED, "ctr_tune_pet: the %s backend has no launch "
                        "parameters to tune (create the context for a CUDA device)", be->head.name);
  if (st == CTR_OK) st = be->tune(ctx, ctr__context_gpu(ctx, 0), s, force, r);
  return ctr__tune_report_end(report, r, st);
}
