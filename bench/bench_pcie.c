/* PCIe floor (issue 26): host-to-device and device-to-host copy times from
 * pinned host memory (cudaMallocHost) and from pageable memory (malloc,
 * touched first, as a numpy array that holds data), measured in the same run
 * as the benchmarks that quote the floor. Each copy is one cudaMemcpy timed
 * on the host clock (the call returns when the copy is done); median of R
 * runs after one untimed copy.
 *
 *   bench_pcie [--sizes 16M,1G] [--repeats 5] [--json FILE] */
#include "bench_common.h"
#include "ctrecon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if CTR_HAVE_CUDA
#include <cuda_runtime_api.h>

#define DIE(...)                                 \
  do {                                           \
    fprintf(stderr, "bench_pcie: " __VA_ARGS__); \
    fprintf(stderr, "\n");                       \
    exit(1);                                     \
  } while (0)
#define CU(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) DIE("%s: %s", #x, cudaGetErrorString(e_));          \
  } while (0)

enum { MAX_REPEATS = 32, MAX_SIZES = 8 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Times `repeats` copies of `bytes` (after one untimed copy) into runs[];
 * returns the median. */
static double time_copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                        int repeats, double *runs) {
  CU(cudaMemcpy(dst, src, bytes, kind));
  for (int r = 0; r < repeats; r++) {
    const double t0 = now_s();
    CU(cudaMemcpy(dst, src, bytes, kind));
    runs[r] = now_s() - t0;
  }
  return bench_median(runs, repeats);
}

int main(int argc, char **argv) {
  const char *sizes_arg = "16M,1G", *json = NULL;
  int repeats = 5;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) DIE("%s needs a value (usage: bench_pcie [--sizes 16M,1G] [--repeats 5] [--json FILE])", k);
    i++;
    if (!strcmp(k, "--sizes")) sizes_arg = v;
    else if (!strcmp(k, "--repeats")) repeats = atoi(v);
    else if (!strcmp(k, "--json")) json = v;
    else DIE("unknown option %s", k);
  }
  if (repeats < 3 || repeats > MAX_REPEATS) DIE("--repeats must be 3 .. %d", MAX_REPEATS);
  uint64_t sizes[MAX_SIZES];
  int nsizes = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", sizes_arg);
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (nsizes == MAX_SIZES) DIE("at most %d sizes", MAX_SIZES);
    if (ctr_size_parse(t, &sizes[nsizes]) || sizes[nsizes] == 0) DIE("--sizes: %s", ctr_error_detail());
    nsizes++;
  }
  if (nsizes == 0) DIE("--sizes: no size given");
  uint64_t largest = 0;
  for (int s = 0; s < nsizes; s++) largest = sizes[s] > largest ? sizes[s] : largest;

  ctr_device_info info = CTR_DEVICE_INFO_INIT;

  if (ctr_cuda_get_device_info(0, &info)) DIE("%s", ctr_error_detail());
  void *dev = NULL, *pinned = NULL;
  CU(cudaMalloc(&dev, largest));
  CU(cudaMallocHost(&pinned, largest));
  char *pageable = malloc(largest);
  if (!pageable) DIE("out of host memory (%llu bytes)", (unsigned long long)largest);
  memset(pageable, 1, largest); /* resident, as an array that holds data */
  memset(pinned, 1, largest);

  FILE *f = NULL;
  if (json) {
    char date[64];
    f = fopen(json, "w");
    if (!f) DIE("cannot write %s", json);
    fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"command\": \"bench_pcie --sizes %s "
               "--repeats %d\",\n \"method\": \"one cudaMemcpy per copy, host clock, median of the runs after one "
               "untimed copy; pageable = malloc'd and touched\",\n \"cases\": [\n",
            info.name, bench_date(date, sizeof date), bench_revision(), sizes_arg, repeats);
  }
  printf("PCIe copies on %s, median of %d:\n", info.name, repeats);
  int first = 1;
  for (int s = 0; s < nsizes; s++) {
    const size_t bytes = (size_t)sizes[s];
    for (int d = 0; d < 2; d++) {    /* 0: host to device, 1: device to host */
      for (int m = 0; m < 2; m++) {  /* 0: pinned, 1: pageable */
        void *host = m == 0 ? pinned : (void *)pageable;
        double runs[MAX_REPEATS];
        const double med = d == 0 ? time_copy(dev, host, bytes, cudaMemcpyHostToDevice, repeats, runs)
                                  : time_copy(host, dev, bytes, cudaMemcpyDeviceToHost, repeats, runs);
        const char *dir = d == 0 ? "h2d" : "d2h", *mem = m == 0 ? "pinned" : "pageable";
        printf("  %s %-8s %12zu bytes: %9.3f ms  %6.2f GB/s\n", dir, mem, bytes, med * 1e3,
               (double)bytes / med / 1e9);
        if (f) {
          fprintf(f, "%s  {\"name\": \"%s-%s-%zu\", \"direction\": \"%s\", \"memory\": \"%s\", \"bytes\": %zu, "
                     "\"seconds\": %.6f, \"gb_per_s\": %.3f, ",
                  first ? "" : ",\n", dir, mem, bytes, dir, mem, bytes, med, (double)bytes / med / 1e9);
          bench_json_runs(f, runs, repeats);
          fprintf(f, "}");
          first = 0;
        }
      }
    }
  }
  if (f) {
    fprintf(f, "\n ]}\n");
    fclose(f);
  }
  free(pageable);
  cudaFreeHost(pinned);
  cudaFree(dev);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "bench_pcie: built without CUDA\n");
  return 1;
}
#endif
