/* The GPU buffer cache of a context (gpu_buffers.h). */
#include <cuda_runtime.h>

#include "gpu/gpu_buffers.h"

/* A cache: logically const (the context's mutex guards it). */
static ctr__gpu_cache *cache_of(const ctr_context *ctx) { return (ctr__gpu_cache *)&ctx->gpu_cache; }

/* device -1: the current one */
static int device_of(int device) {
  if (device == -1 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    device = 0;
  }
  return device;
}

/* Frees a kept buffer: pinned host memory or a device buffer. */
static void free_kept(int device, void *p) {
  if (device == CTR__PINNED_HOST) cudaFreeHost(p);
  else cudaFree(p);
}

extern "C" int ctr__gpu_buffer_take(const ctr_context *ctx, int device, size_t bytes, void **out) {
  *out = NULL;
  if (!ctx) return 0;
  ctr__gpu_cache *c = cache_of(ctx);
  pthread_mutex_lock(&c->mu);
  int best = -1;
  for (int i = 0; i < c->n; i++)
    if (c->slot[i].device == device && c->slot[i].bytes >= bytes &&
        c->slot[i].bytes - bytes <= bytes / 8 &&
        (best < 0 || c->slot[i].bytes < c->slot[best].bytes))
      best = i;
  if (best >= 0) {
    *out = c->slot[best].ptr;
    c->slot[best] = c->slot[--c->n];
  }
  pthread_mutex_unlock(&c->mu);
  return *out != NULL;
}

extern "C" int ctr__gpu_buffer_keep(const ctr_context *ctx, int device, void *p, size_t bytes) {
  if (!ctx || bytes < CTR__GPU_KEEP_MIN) return 0;
  ctr__gpu_cache *c = cache_of(ctx);
  pthread_mutex_lock(&c->mu);
  const int kept = c->n < CTR__GPU_CACHE_SLOTS;
  if (kept) c->slot[c->n++] = {device, p, bytes};
  pthread_mutex_unlock(&c->mu);
  return kept;
}

extern "C" ctr_status ctr__gpu_buffer_get(const ctr_context *ctx, int device, size_t bytes,
                                          const char *what, void **out) {
  *out = NULL;
  if (bytes == 0) bytes = 1;
  device = device_of(device);
  if (ctr__gpu_buffer_take(ctx, device, bytes, out)) return CTR_OK;
  cudaError_t e = cudaMalloc(out, bytes);
  if (e == cudaErrorMemoryAllocation && ctr__gpu_buffer_trim(ctx, device)) {
    cudaGetLastError(); /* this GPU's kept buffers back, then again */
    e = cudaMalloc(out, bytes);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    *out = NULL;
    char b[32];
    return ctr__error_set(e == cudaErrorMemoryAllocation ? CTR_E_DEVICE_OUT_OF_MEMORY : CTR_E_DEVICE,
                          "%s: cudaMalloc of %s on GPU %d: %s", what ? what : "GPU buffer",
                          ctr__format_bytes((double)bytes, b, sizeof b), device,
                          cudaGetErrorString(e));
  }
  return CTR_OK;
}

extern "C" int ctr__gpu_buffer_trim(const ctr_context *ctx, int device) {
  if (!ctx) return 0;
  device = device_of(device);
  ctr__gpu_cache *c = cache_of(ctx);
  int freed = 0;
  pthread_mutex_lock(&c->mu);
  for (int i = 0; i < c->n;) {
    if (c->slot[i].device == device) {
      free_kept(device, c->slot[i].ptr);
      c->slot[i] = c->slot[--c->n];
      freed = 1;
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return freed;
}

extern "C" void ctr__gpu_buffer_put(const ctr_context *ctx, int device, void *p, size_t bytes) {
  if (!p) return;
  device = device_of(device);
  if (!ctr__gpu_buffer_keep(ctx, device, p, bytes)) cudaFree(p);
}

extern "C" uint64_t ctr__gpu_cached_bytes(const ctr_context *ctx, int device) {
  if (!ctx) return 0;
  ctr__gpu_cache *c = cache_of(ctx);
  uint64_t n = 0;
  pthread_mutex_lock(&c->mu);
  for (int i = 0; i < c->n; i++)
    if (c->slot[i].device == device) n += c->slot[i].bytes;
  pthread_mutex_unlock(&c->mu);
  return n;
}

extern "C" void ctr__gpu_cache_release(const ctr_context *ctx) {
  if (!ctx) return;
  ctr__gpu_cache *c = cache_of(ctx);
  pthread_mutex_lock(&c->mu);
  int prev = -1;
  if (c->n > 0 && cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  for (int i = 0; i < c->n; i++) {
    if (c->slot[i].device != CTR__PINNED_HOST) cudaSetDevice(c->slot[i].device);
    free_kept(c->slot[i].device, c->slot[i].ptr);
  }
  if (prev >= 0) cudaSetDevice(prev);
  c->n = 0;
  pthread_mutex_unlock(&c->mu);
  cudaGetLastError();
}
