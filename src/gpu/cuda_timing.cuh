/* Median device time of a repeated piece of GPU work (benchmark hooks). */
#ifndef CTR_CUDA_TIMING_CUH
#define CTR_CUDA_TIMING_CUH

#include "gpu/cuda_util.h"

#include <stdlib.h>

/* Runs work(arg) once to warm up, then `reps` times between events on
 * `stream`; *ms = the median. */
static inline ctr_status ctr__cuda_median_ms(cudaStream_t stream, int reps,
                                             ctr_status (*work)(void *), void *arg, double *ms) {
  ctr_status st = CTR_OK;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float *t = (float *)malloc((size_t)(reps > 0 ? reps : 1) * sizeof(float));
  if (!t || reps < 1) {
    free(t);
    return ctr__error_set(CTR_E_INVALID_ARGUMENT, "timing: %d repeats, expected >= 1", reps);
  }
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  CTR_CHECK_GOTO(st, work(arg));
  for (int r = 0; r < reps; r++) {
    CU(cudaEventRecord(e0, stream));
    CTR_CHECK_GOTO(st, work(arg));
    CU(cudaEventRecord(e1, stream));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&t[r], e0, e1));
  }
  for (int i = 1; i < reps; i++) /* insertion sort: reps is small */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      float x = t[j];
      t[j] = t[j - 1], t[j - 1] = x;
    }
  *ms = t[reps / 2];
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  free(t);
  return st;
}

#endif
