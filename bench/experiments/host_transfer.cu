/* Host-to-GPU transfer from memory the caller did not pin, the case of a
 * RabbitCT runner that allocates its own projection buffers after Load
 * (issue 18, bench/NOTES.md): what pinning them in place costs
 * (cudaHostRegister, once per run) against uploading them as they are
 * (pageable cudaMemcpy, or a multi-threaded copy into pinned staging).
 *   nvcc -O2 -arch=sm_90 -Xcompiler -fopenmp host_transfer.cu -o host_transfer
 *   ./host_transfer [MiB = 567] */
#include <cuda_runtime.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
  const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 567; /* 124 views of 1248 x 960 */
  const size_t bytes = mib << 20, view = (size_t)1248 * 960 * 4;
  char *host = (char *)malloc(bytes), *dev, *stage;
  memset(host, 1, bytes); /* the runner zeroes its buffers: pages are resident */
  cudaMalloc(&dev, bytes);
  cudaMallocHost(&stage, 2 * view);
  cudaFree(0);
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
    double t_page = now() - t0;
    t0 = now();
    cudaHostRegister(host, bytes, cudaHostRegisterDefault);
    double t_reg = now() - t0;
    t0 = now();
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
    double t_pinned = now() - t0;
    t0 = now();
    cudaHostUnregister(host);
    double t_unreg = now() - t0;
    /* view by view through two pinned staging views, 16 threads per copy */
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t ev[2];
    cudaEventCreate(&ev[0]);
    cudaEventCreate(&ev[1]);
    t0 = now();
    const size_t nv = bytes / view;
    for (size_t k = 0; k < nv; k++) {
      char *st = stage + (k & 1) * view;
      cudaEventSynchronize(ev[k & 1]);
      const int T = omp_get_max_threads();
#pragma omp parallel for num_threads(T)
      for (int t = 0; t < T; t++) {
        const size_t a = view * t / T, b = view * (t + 1) / T;
        memcpy(st + a, host + k * view + a, b - a);
      }
      cudaMemcpyAsync(dev + k * view, st, view, cudaMemcpyHostToDevice, s);
      cudaEventRecord(ev[k & 1], s);
    }
    cudaStreamSynchronize(s);
    double t_stage = now() - t0;
    printf("%zu MiB: pageable %.1f ms (%.1f GB/s); register %.1f ms (%.1f GB/s), pinned copy %.1f ms "
           "(%.1f GB/s), unregister %.1f ms; staged %zu views, %d threads: %.1f ms (%.1f GB/s)\n",
           mib, 1e3 * t_page, bytes / t_page / 1e9, 1e3 * t_reg, bytes / t_reg / 1e9,
           1e3 * t_pinned, bytes / t_pinned / 1e9, 1e3 * t_unreg, nv, omp_get_max_threads(),
           1e3 * t_stage, nv * view / t_stage / 1e9);
    cudaStreamDestroy(s);
  }
  return 0;
}
