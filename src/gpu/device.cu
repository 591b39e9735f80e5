/* CUDA device discovery for the context and `ctrecon info`; the device side
 * of the data policy. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/projmath.h"
#include "gpu/cuda_util.h"

__global__ void sanitize_kernel(float *__restrict__ v, long long n, unsigned long long *count) {
  unsigned int bad = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    if (!ctr__value_ok(v[i])) {
      v[i] = 0.0f;
      bad++;
    }
  for (int s = 16; s > 0; s >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, s);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(count, (unsigned long long)bad);
}

ctr_status ctr__gpu_sanitize(float *v, long long n, unsigned long long *d_count, cudaStream_t s) {
  ctr_status st = CTR_OK;
  if (n <= 0) return CTR_OK;
  const long long blocks = (n + 255) / 256;
  sanitize_kernel<<<(unsigned)(blocks < 2048 ? blocks : 2048), 256, 0, s>>>(v, n, d_count);
  CU_LAUNCHED("sanitize_kernel");
cleanup:
  return st;
}

extern "C" int ctr__cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky "no driver" error */
    return 0;
  }
  return n;
}

extern "C" int ctr_cuda_get_device_count(void) { return ctr__cuda_device_count(); }

extern "C" void ctr__cuda_why_none(char *why, size_t n) {
  int count = 0, driver = 0, runtime = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = CUDART_VERSION;
  cudaGetLastError();
  const int probe = e == cudaSuccess                   ? CTR__CUDA_PROBE_NONE
                    : e == cudaErrorNoDevice           ? CTR__CUDA_PROBE_NO_DEVICE
                    : e == cudaErrorInsufficientDriver ? CTR__CUDA_PROBE_OLD_DRIVER
                                                       : CTR__CUDA_PROBE_ERROR;
  ctr__cuda_reason(why, n, probe, driver, runtime, cudaGetErrorString(e));
}

extern "C" int ctr__gpu_memory_device(const void *p) {
  if (!p || ctr__cuda_device_count() < 1) return -1;
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* a host pointer may leave an error behind */
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

extern "C" ctr_status ctr__gpu_wait_for(int device) {
  ctr_status st = CTR_OK;
  int prev = 0;
  CU(cudaGetDevice(&prev));
  CU(cudaSetDevice(device));
  CU(cudaDeviceSynchronize());
  CU(cudaSetDevice(prev));
cleanup:
  return st;
}

extern "C" ctr_status ctr_cuda_get_device_info(int index, ctr_device_info *info) {
  CTR_CHECK(ctr__struct_check(&ctr__struct_device_info, info));
  int n = ctr__cuda_device_count();
  if (index < 0 || index >= n)
    CTR_FAIL(CTR_E_NO_DEVICE, "CUDA device %d requested, %d visible", index, n);
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess)
    CTR_FAIL(CTR_E_DEVICE, "cudaGetDeviceProperties(%d): %s", index, cudaGetErrorString(e));
  ctr_device_info full;
  memset(&full, 0, sizeof full);
  ctr_device_info *out = &full;
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->multiprocessors = p.multiProcessorCount;
  int prev = 0;
  cudaGetDevice(&prev);
  if (cudaSetDevice(index) == cudaSuccess) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) out->free_memory = fr;
    cudaSetDevice(prev);
  }
  cudaGetLastError();
  return ctr__struct_store(&ctr__struct_device_info, info, &full);
}

extern "C" void *ctr_host_alloc(size_t bytes) {
  void *p = NULL;
  if (ctr__cuda_device_count() > 0 && cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess) return p;
  cudaGetLastError();
  p = ctr__aligned_alloc(bytes, "host buffer");
  return p;
}

extern "C" void ctr_host_free(void *p) {
  if (!p) return;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeHost) {
    cudaFreeHost(p);
    return;
  }
  cudaGetLastError();
  ctr__aligned_free(p);
}

extern "C" ctr_status ctr_host_register(void *p, size_t bytes) {
  if (!p || ctr__cuda_device_count() < 1) return CTR_OK;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.type == cudaMemoryTypeHost)
    return CTR_OK; /* already pinned */
  cudaGetLastError();
  cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    CTR_FAIL(CTR_E_DEVICE, "cannot pin %zu bytes of host memory: %s", bytes, cudaGetErrorString(e));
  }
  return CTR_OK;
}

extern "C" void ctr_host_unregister(void *p) {
  if (!p || ctr__cuda_device_count() < 1) return;
  if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
}

extern "C" ctr_status ctr__cuda_free_memory(int device, uint64_t *free_bytes) {
  *free_bytes = 0;
  const int n = ctr__cuda_device_count();
  if (device < 0 || device >= n)
    CTR_FAIL(CTR_E_NO_DEVICE, "CUDA device %d requested, %d visible", device, n);
  int prev = 0;
  cudaGetDevice(&prev);
  size_t fr = 0, tot = 0;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMemGetInfo(&fr, &tot);
  cudaSetDevice(prev);
  cudaGetLastError();
  if (e != cudaSuccess)
    CTR_FAIL(CTR_E_DEVICE, "cudaMemGetInfo on GPU %d: %s", device, cudaGetErrorString(e));
  *free_bytes = fr;
  return CTR_OK;
}
