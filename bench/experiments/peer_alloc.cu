/* Does enabling peer access make device allocations slower? The question
 * behind the ~80 ms fixed cost of the in-memory FDK projection split on two
 * GPUs against 16 ms on one (docs/multi-gpu.md, issues 20 and 25): each run
 * allocates and frees a volume and its views on every GPU, and once the
 * first run's reduction has enabled peer access (for the life of the
 * process), every allocation may be mapped on the peer too.
 * Times cudaMalloc + cudaMemset + cudaFree of the FDK run's sizes on GPU 0
 * (median of R), before and after cudaDeviceEnablePeerAccess in both
 * directions between GPUs 0 and 1; with one GPU, only "before".
 *   nvcc -O2 -arch=sm_90 peer_alloc.cu -o peer_alloc
 * Also: the same through the stream-ordered pool allocator, and the peer
 * copy's rate with and without peer access.
 *   ./peer_alloc [GiB = 4.0 (the volume)] [GiB = 2.5 (the views)] [R = 7] */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CU(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median over r rounds of: allocate the two buffers, touch them (the first
 * touch is where a lazy mapping would show), free them; milliseconds for
 * each phase. */
static void measure(const char *label, size_t vol, size_t views, int r, int pool) {
  double ta[64], tt[64], tf[64];
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (pool) {
    /* the stream-ordered allocator (cudaMallocAsync from the device's default
     * pool): pool memory is mapped on a peer only where cudaMemPoolSetAccess
     * grants it, whatever cudaDeviceEnablePeerAccess says */
    cudaMemPool_t mp;
    CU(cudaDeviceGetDefaultMemPool(&mp, 0));
    unsigned long long zero = 0; /* give the memory back at every free, as cudaFree does */
    CU(cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &zero));
  }
  for (int i = 0; i < r; i++) {
    void *a = NULL, *b = NULL;
    CU(cudaDeviceSynchronize());
    double t0 = now();
    if (pool) {
      CU(cudaMallocAsync(&a, vol, s));
      CU(cudaMallocAsync(&b, views, s));
    } else {
      CU(cudaMalloc(&a, vol));
      CU(cudaMalloc(&b, views));
    }
    CU(cudaStreamSynchronize(s));
    double t1 = now();
    CU(cudaMemsetAsync(a, 0, vol, s));
    CU(cudaMemsetAsync(b, 0, views, s));
    CU(cudaStreamSynchronize(s));
    double t2 = now();
    if (pool) {
      CU(cudaFreeAsync(a, s));
      CU(cudaFreeAsync(b, s));
    } else {
      CU(cudaFree(a));
      CU(cudaFree(b));
    }
    CU(cudaStreamSynchronize(s));
    double t3 = now();
    ta[i] = 1e3 * (t1 - t0);
    tt[i] = 1e3 * (t2 - t1);
    tf[i] = 1e3 * (t3 - t2);
  }
  qsort(ta, r, sizeof *ta, cmp);
  qsort(tt, r, sizeof *tt, cmp);
  qsort(tf, r, sizeof *tf, cmp);
  printf("%-28s malloc %8.2f ms  first touch %8.2f ms  free %8.2f ms  (medians of %d)\n", label,
         ta[r / 2], tt[r / 2], tf[r / 2], r);
  CU(cudaStreamDestroy(s));
}

/* GB/s of a 1 GiB cudaMemcpyPeerAsync from GPU 1 to GPU 0 (median of r). */
static void peer_copy(const char *label, int r) {
  const size_t len = (size_t)1 << 30;
  void *d0 = NULL, *d1 = NULL;
  double t[64];
  CU(cudaSetDevice(1));
  CU(cudaMalloc(&d1, len));
  CU(cudaMemset(d1, 0, len));
  CU(cudaDeviceSynchronize());
  CU(cudaSetDevice(0));
  CU(cudaMalloc(&d0, len));
  for (int i = 0; i < r; i++) {
    CU(cudaDeviceSynchronize());
    double t0 = now();
    CU(cudaMemcpyPeerAsync(d0, 0, d1, 1, len, 0));
    CU(cudaDeviceSynchronize());
    t[i] = now() - t0;
  }
  qsort(t, r, sizeof *t, cmp);
  printf("%-28s 1 GiB GPU 1 -> GPU 0: %.1f GB/s (median of %d)\n", label, len / t[r / 2] / 1e9, r);
  CU(cudaFree(d0));
  CU(cudaSetDevice(1));
  CU(cudaFree(d1));
  CU(cudaSetDevice(0));
}

int main(int argc, char **argv) {
  const double gv = argc > 1 ? atof(argv[1]) : 4.0, gw = argc > 2 ? atof(argv[2]) : 2.5;
  int r = argc > 3 ? atoi(argv[3]) : 7;
  if (r < 1 || r > 64 || gv <= 0 || gw <= 0) {
    fprintf(stderr, "usage: %s [volume GiB] [views GiB] [repeats 1..64]\n", argv[0]);
    return 2;
  }
  const size_t vol = (size_t)(gv * (1 << 30)), views = (size_t)(gw * (1 << 30));
  int n = 0;
  CU(cudaGetDeviceCount(&n));
  for (int d = n - 1; d >= 0; d--) { /* every context, outside the timings */
    CU(cudaSetDevice(d));
    CU(cudaFree(0));
  }
  measure("GPU 0, no peer access", vol, views, r, 0);
  measure("GPU 0, pool, no peer access", vol, views, r, 1);
  if (n < 2) {
    printf("one GPU: no peer access to compare\n");
    return 0;
  }
  int can01 = 0, can10 = 0;
  CU(cudaDeviceCanAccessPeer(&can01, 0, 1));
  CU(cudaDeviceCanAccessPeer(&can10, 1, 0));
  if (!can01 || !can10) {
    printf("GPUs 0 and 1 cannot access each other's memory\n");
    return 0;
  }
  peer_copy("copy, no peer access", r);
  CU(cudaSetDevice(1));
  CU(cudaDeviceEnablePeerAccess(0, 0));
  CU(cudaSetDevice(0));
  CU(cudaDeviceEnablePeerAccess(1, 0));
  measure("GPU 0, peer access 0<->1", vol, views, r, 0);
  measure("GPU 0, pool, peer 0<->1", vol, views, r, 1);
  peer_copy("copy, peer access 0<->1", r);
  if (n > 2) { /* every GPU maps GPU 0's memory, as a reduction over all does */
    for (int d = 2; d < n; d++) {
      int can = 0;
      CU(cudaDeviceCanAccessPeer(&can, d, 0));
      if (!can) continue;
      CU(cudaSetDevice(d));
      CU(cudaDeviceEnablePeerAccess(0, 0));
      CU(cudaSetDevice(0));
      CU(cudaDeviceEnablePeerAccess(d, 0));
    }
    char label[64];
    snprintf(label, sizeof label, "GPU 0, peer access 0<->all %d", n);
    measure(label, vol, views, r, 0);
  }
  return 0;
}
