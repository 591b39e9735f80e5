/* The pageable floor of an end-to-end case (issue 43, bench/NOTES.md "Host
 * transfer floor"), measured in the same run as the case: the pinned DMA
 * rates each way and the staged path's host copy rates (16 MiB pieces into
 * pinned memory, and out of it into touched pageable memory, on all the
 * threads), 1 GiB each, median of 3. A case that moves `in` bytes up and
 * `out` bytes down from pageable memory then costs, beyond its pinned time,
 * the part of its host copies that the DMA cannot hide:
 *   floor = pinned + max(0, in / copy_up - in / dma_up)
 *                  + max(0, out / copy_down - out / dma_down).
 * CUDA builds only; includes the library's internal header for the copy. */
#ifndef CTR_BENCH_FLOOR_H
#define CTR_BENCH_FLOOR_H

#include <cuda_runtime_api.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "gpu/host_transfer.h"

typedef struct bench_floor {
  double dma_up, dma_down, copy_up, copy_down; /* GB/s */
} bench_floor;

static inline double bench_floor_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 0 on success. */
static inline int bench_floor_measure(bench_floor *f) {
  const size_t bytes = (size_t)1 << 30, piece = (size_t)16 << 20;
  void *dev = NULL, *pin = NULL;
  char *pg = malloc(bytes);
  if (!pg || cudaMalloc(&dev, bytes) != cudaSuccess || cudaMallocHost(&pin, bytes) != cudaSuccess) {
    free(pg);
    cudaFree(dev);
    return 1;
  }
  memset(pg, 1, bytes);
  memset(pin, 1, bytes);
  const int T = omp_get_max_threads();
  double t[4][3];
  for (int r = -1; r < 3; r++) {
    double s[4];
    double t0 = bench_floor_now();
    cudaMemcpy(dev, pin, bytes, cudaMemcpyHostToDevice);
    s[0] = bench_floor_now() - t0;
    t0 = bench_floor_now();
    cudaMemcpy(pin, dev, bytes, cudaMemcpyDeviceToHost);
    s[1] = bench_floor_now() - t0;
    t0 = bench_floor_now();
    for (size_t o = 0; o < bytes; o += piece) ctr__host_copy((char *)pin + (o / piece % 4) * piece, pg + o, piece, T);
    s[2] = bench_floor_now() - t0;
    t0 = bench_floor_now();
    for (size_t o = 0; o < bytes; o += piece) ctr__host_copy(pg + o, (char *)pin + (o / piece % 4) * piece, piece, T);
    s[3] = bench_floor_now() - t0;
    if (r >= 0)
      for (int k = 0; k < 4; k++) t[k][r] = s[k];
  }
  double *out[4] = {&f->dma_up, &f->dma_down, &f->copy_up, &f->copy_down};
  for (int k = 0; k < 4; k++) *out[k] = (double)bytes / bench_median(t[k], 3) / 1e9;
  free(pg);
  cudaFree(dev);
  cudaFreeHost(pin);
  return 0;
}

/* Seconds of the floor of a case: its pinned time, `in` bytes up and `out`
 * bytes down. */
static inline double bench_floor_seconds(const bench_floor *f, double pinned, double in, double out) {
  const double up = in / (f->copy_up * 1e9) - in / (f->dma_up * 1e9);
  const double down = out / (f->copy_down * 1e9) - out / (f->dma_down * 1e9);
  return pinned + (up > 0 ? up : 0) + (down > 0 ? down : 0);
}

#endif
