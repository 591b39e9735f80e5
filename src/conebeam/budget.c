/* Memory budgets from the machine: free GPU memory and available host memory,
 * less safety margins (documented at ctr_plan_default_budgets). */
#include "conebeam/fdk_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GPU_RESERVE ((uint64_t)1 << 30)
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

ctr_status ctr__device_budget(ctr_context *ctx, int device, uint64_t *budget) {
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  CTR_CHECK(ctr_cuda_get_device_info(device, &info));
  /* the buffers the context keeps from its last run are reused: free to plan with */
  const uint64_t free_mem = info.free_memory + ctr__gpu_cached_bytes(ctx, device);
  *budget = free_mem > GPU_RESERVE ? free_mem - GPU_RESERVE : 0;
  return CTR_OK;
}

ctr_status ctr_plan_default_budgets(ctr_context *ctx, uint64_t *gpu_budget, uint64_t *host_budget) {
  if (gpu_budget) {
    *gpu_budget = 0;
    if (ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA) {
      /* what a new allocation can get: the buffers the context kept from a
       * cone-beam run go back first (the caller's work does not reuse them) */
      ctr__gpu_cache_release(ctx);
      CTR_CHECK(ctr__device_budget(ctx, ctr__context_gpu(ctx, 0), gpu_budget));
    }
  }
  if (host_budget) {
    const uint64_t avail = host_available();
    uint64_t keep = avail / 10;
    if (keep < HOST_KEEP_MIN) keep = HOST_KEEP_MIN;
    *host_budget = avail > keep ? avail - keep : 0;
  }
  return CTR_OK;
}
