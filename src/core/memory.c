/* Memory budgets: the one rule by which every "0 = detected" budget of the
 * library (GPU and host) is resolved (core.h, ctr_context_get_memory_budgets;
 * docs/out-of-core.md, "Budgets"). Free GPU memory is asked of the CUDA
 * backend through a declaration (src/gpu/device.cu when built, a stub in
 * context.c otherwise), as context.c counts devices. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* GPU: free memory less this (the CUDA context, cuFFT and library work areas
 * and other processes' growth are not in any plan). */
#define GPU_RESERVE ((uint64_t)1 << 30)
/* Host: available memory less a tenth of it, and at least this. */
#define HOST_KEEP_MIN ((uint64_t)1 << 30)

/* MemAvailable from /proc/meminfo (bytes), else physical pages x page size. */
static uint64_t host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
        fclose(f);
        return (uint64_t)kb * 1024u;
      }
    fclose(f);
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

uint64_t ctr__host_budget_detect(void) {
  const uint64_t avail = host_available();
  uint64_t keep = avail / 10;
  if (keep < HOST_KEEP_MIN) keep = HOST_KEEP_MIN;
  return avail > keep ? avail - keep : 0;
}

ctr_status ctr__gpu_budget_detect(const ctr_context *ctx, int device, uint64_t *budget) {
  uint64_t free_mem = 0;
  *budget = 0;
  CTR_CHECK(ctr__cuda_free_memory(device, &free_mem));
  /* the buffers the context keeps are reused or given back by an allocation
   * that finds the GPU full (src/gpu/gpu_buffers.h): free to plan with */
  free_mem += ctr__gpu_cached_bytes(ctx, device);
  *budget = free_mem > GPU_RESERVE ? free_mem - GPU_RESERVE : 0;
  return CTR_OK;
}

/* The GPU budget of ctx's first GPU (0 on a CPU context); release: give the
 * kept buffers back first. */
static ctr_status budgets(ctr_context *ctx, int release, uint64_t *gpu_budget,
                          uint64_t *host_budget) {
  if (gpu_budget) {
    *gpu_budget = 0;
    if (ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA) {
      if (release) ctr_context_release_memory(ctx);
      CTR_CHECK(ctr__gpu_budget_detect(ctx, ctr__context_gpu(ctx, 0), gpu_budget));
    }
  }
  if (host_budget) *host_budget = ctr__host_budget_detect();
  return CTR_OK;
}

ctr_status ctr_context_get_memory_budgets(ctr_context *ctx, uint64_t *gpu_budget,
                                          uint64_t *host_budget) {
  /* for the caller's own allocations, which are not the cache's: the kept
   * buffers go back first (the same figure: they counted as free) */
  return budgets(ctx, 1, gpu_budget, host_budget);
}

ctr_status ctr__budgets_resolve(ctr_context *ctx, uint64_t *gpu_budget, uint64_t *host_budget) {
  const int gpu = gpu_budget && *gpu_budget == 0;
  const int host = host_budget && *host_budget == 0;
  if (!gpu && !host) return CTR_OK;
  /* the library's allocations come from the cache, which reuses the kept
   * buffers or gives them back when the GPU is full: they stay */
  return budgets(ctx, 0, gpu ? gpu_budget : NULL, host ? host_budget : NULL);
}

void ctr__copy_parallel(void *dst, const void *src, size_t n) {
  const size_t piece = (size_t)1 << 20;
  if (n < 4 * piece) {
    memcpy(dst, src, n);
    return;
  }
  const int64_t pieces = (int64_t)((n + piece - 1) / piece);
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < pieces; p++) {
    const size_t at = (size_t)p * piece;
    memcpy((char *)dst + at, (const char *)src + at, n - at < piece ? n - at : piece);
  }
}
