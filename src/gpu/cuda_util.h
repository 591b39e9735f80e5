/* CUDA error handling for the backend: every runtime call and launch is
 * checked and mapped to a ctr_status with the CUDA message. */
#ifndef CTR_CUDA_UTIL_H
#define CTR_CUDA_UTIL_H

#include <cuda_runtime.h>
#include <cufft.h>

#include "core/internal.h"

/* Maps a CUDA error to CTR_E_DEVICE_OUT_OF_MEMORY or CTR_E_DEVICE with the
 * failing call and CUDA's message in the detail. */
static inline ctr_status ctr__cuda_status(cudaError_t e, const char *call) {
  if (e == cudaErrorMemoryAllocation)
    return ctr__error_set(CTR_E_DEVICE_OUT_OF_MEMORY, "%s: %s", call, cudaGetErrorString(e));
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    return ctr__error_set(CTR_E_NO_DEVICE, "%s: %s", call, cudaGetErrorString(e));
  return ctr__error_set(CTR_E_DEVICE, "%s: %s (%s)", call, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

/* In functions with a `ctr_status st` and a `cleanup:` label. */
/* Makes GPU `dev` current, or returns the error (before any cleanup label:
 * the first statement of an operation that owns a device). */
#define CU_DEVICE(dev)                                                      \
  do {                                                                      \
    const cudaError_t ctr__e = cudaSetDevice(dev);                          \
    if (ctr__e != cudaSuccess) return ctr__cuda_status(ctr__e, "cudaSetDevice"); \
  } while (0)

#define CU(call)                                       \
  do {                                                 \
    cudaError_t ctr__e = (call);                       \
    if (ctr__e != cudaSuccess) {                       \
      st = ctr__cuda_status(ctr__e, #call);            \
      goto cleanup;                                    \
    }                                                  \
  } while (0)

/* After a kernel launch. */
#define CU_LAUNCHED(what) CU(cudaGetLastError())

#define CUFFT(call)                                                            \
  do {                                                                         \
    cufftResult ctr__r = (call);                                               \
    if (ctr__r != CUFFT_SUCCESS) {                                             \
      st = ctr__error_set(ctr__r == CUFFT_ALLOC_FAILED ? CTR_E_DEVICE_OUT_OF_MEMORY : CTR_E_FFT, \
                          "%s: cuFFT error %d", #call, (int)ctr__r);           \
      goto cleanup;                                                            \
    }                                                                          \
  } while (0)

/* The data policy on the device (src/core/values.c): each of v's n values
 * that is NaN, infinite or beyond CTR__VALUE_LIMIT becomes 0 and is added to
 * *d_count (device memory), on stream s. One read of v; writes only where a
 * value is bad. */
ctr_status ctr__gpu_sanitize(float *v, long long n, unsigned long long *d_count, cudaStream_t s);

#endif
