/* The host transfer floor (issues 26 and 43), measured in the same run as
 * the benchmarks that quote it:
 *   dma       one cudaMemcpy of each size, host to device and device to
 *             host, from pinned memory (cudaMallocHost) and from pageable
 *             memory (malloc, touched first, as a numpy array holding data);
 *   copy      the host copy the staged path makes: pageable -> a ring of 4
 *             pinned slots (each slot size, each thread count), and pinned ->
 *             pageable into touched memory and into fresh memory (untouched:
 *             its first touch, the kernel zeroing pages, is in the time);
 *   register  cudaHostRegister of the largest size, the pinned DMA after it
 *             and cudaHostUnregister, whole and in 64 MiB pieces;
 *   layer     the library's host-transfer layer (src/gpu/host_transfer.h)
 *             from and into pageable memory on each path (staged at each
 *             slot size, registered, driver, and the per-call choice).
 * Each figure is timed on the host clock (the call returns when the copy is
 * done); median of R runs after one untimed run.
 *
 *   bench_pcie [--sizes 16M,1G] [--large 2368M] [--threads 1,2,4,8,16,0]
 *              [--slots 1M,4M,16M,64M] [--stages dma,copy,register,layer]
 *              [--repeats 5] [--json FILE]
 * --large is the size of the copy, register and layer stages (2368M: the
 * projections of FDK case A, 496 views of 1248 x 960 float); a thread count
 * 0 is all the cores OpenMP sees. */
#include "bench_common.h"
#include "ctrecon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if CTR_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <omp.h>

#include "gpu/host_transfer.h"

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

enum { MAX_REPEATS = 32, MAX_LIST = 8 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct bench {
  int repeats;
  bench_json json;
  char *dev, *pinned, *pageable; /* each of the largest size */
  size_t large;
} bench;

/* Prints and records one figure: the median of runs[] for `bytes`. */
static void report(bench *b, const char *name, const char *what, size_t bytes, double *runs) {
  const double med = bench_median(runs, b->repeats);
  printf("  %-44s %11zu bytes: %9.3f ms  %6.2f GB/s\n", name, bytes, med * 1e3,
         (double)bytes / med / 1e9);
  if (b->json.f) {
    char list[MAX_REPEATS * 16] = "";
    for (int r = 0, len = 0; r < b->repeats; r++)
      len += snprintf(list + len, sizeof list - (size_t)len, "%s%.6f", r ? ", " : "", runs[r]);
    bench_json_case(&b->json, "\"name\": \"%s\", \"what\": \"%s\", \"bytes\": %zu, \"seconds\": %.6f, "
                    "\"gb_per_s\": %.3f, \"runs\": [%s]", name, what, bytes, med,
                    (double)bytes / med / 1e9, list);
  }
}

/* ---- dma ---------------------------------------------------------------------- */

static void stage_dma(bench *b, const uint64_t *sizes, int nsizes) {
  for (int s = 0; s < nsizes; s++)
    for (int d = 0; d < 2; d++)
      for (int m = 0; m < 2; m++) {
        const size_t bytes = (size_t)sizes[s];
        void *host = m == 0 ? b->pinned : b->pageable;
        void *dst = d == 0 ? (void *)b->dev : host;
        const void *src = d == 0 ? host : (void *)b->dev;
        double runs[MAX_REPEATS];
        CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
        for (int r = 0; r < b->repeats; r++) {
          const double t0 = now_s();
          CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
          runs[r] = now_s() - t0;
        }
        char name[96];
        snprintf(name, sizeof name, "dma/%s/%s", d == 0 ? "h2d" : "d2h", m == 0 ? "pinned" : "pageable");
        report(b, name, "one cudaMemcpy", bytes, runs);
      }
}

/* ---- copy --------------------------------------------------------------------- */

/* Fresh (untouched) anonymous memory. */
static char *fresh(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) DIE("mmap of %zu bytes failed", bytes);
  return (char *)p;
}

static void stage_copy(bench *b, const int *threads, int nthreads, const uint64_t *slots,
                       int nslots) {
  const size_t bytes = b->large;
  for (int t = 0; t < nthreads; t++) {
    const int T = threads[t] > 0 ? threads[t] : omp_get_max_threads();
    /* pageable -> a ring of 4 pinned slots of each size (the whole buffer:
       one slot of all of it) */
    for (int s = 0; s <= nslots; s++) {
      const size_t S = s < nslots ? (size_t)slots[s] : bytes;
      if (s < nslots && 4 * S > bytes) continue;
      double runs[MAX_REPEATS];
      for (int r = -1; r < b->repeats; r++) {
        const double t0 = now_s();
        for (size_t o = 0, k = 0; o < bytes; o += S, k++) {
          const size_t l = bytes - o < S ? bytes - o : S;
          char *slot = s < nslots ? b->pinned + (k % 4) * S : b->pinned;
          ctr__host_copy(slot, b->pageable + o, l, T);
        }
        if (r >= 0) runs[r] = now_s() - t0;
      }
      char name[96];
      if (s < nslots) snprintf(name, sizeof name, "copy/to-pinned/slot-%zuK/threads-%d", S >> 10, T);
      else snprintf(name, sizeof name, "copy/to-pinned/whole/threads-%d", T);
      report(b, name, "pageable -> pinned slots, host threads", bytes, runs);
    }
    /* pinned -> pageable: touched, fresh, and fresh with transparent huge
       pages asked for (as numpy asks for its large arrays) */
    for (int f = 0; f < 3; f++) {
      double runs[MAX_REPEATS];
      for (int r = -1; r < b->repeats; r++) {
        char *dst = f ? fresh(bytes) : b->pageable;
        if (f == 2) madvise(dst, bytes, MADV_HUGEPAGE);
        const double t0 = now_s();
        ctr__host_copy(dst, b->pinned, bytes, T);
        if (r >= 0) runs[r] = now_s() - t0;
        if (f) munmap(dst, bytes);
      }
      char name[96];
      snprintf(name, sizeof name, "copy/from-pinned/%s/threads-%d",
               f == 2 ? "fresh-thp" : f ? "fresh" : "touched", T);
      report(b, name, "pinned -> pageable, host threads", bytes, runs);
    }
  }
}

/* ---- register ----------------------------------------------------------------- */

static void stage_register(bench *b) {
  const size_t bytes = b->large, piece = (size_t)64 << 20;
  for (int chunked = 0; chunked < 2; chunked++) {
    double reg[MAX_REPEATS], dma[MAX_REPEATS], unreg[MAX_REPEATS];
    for (int r = -1; r < b->repeats; r++) {
      const size_t step = chunked ? piece : bytes;
      double t0 = now_s();
      for (size_t o = 0; o < bytes; o += step)
        CU(cudaHostRegister(b->pageable + o, bytes - o < step ? bytes - o : step, cudaHostRegisterDefault));
      const double t1 = now_s();
      for (size_t o = 0; o < bytes; o += step) /* one copy may not span two registrations */
        CU(cudaMemcpy(b->dev + o, b->pageable + o, bytes - o < step ? bytes - o : step,
                      cudaMemcpyHostToDevice));
      const double t2 = now_s();
      for (size_t o = 0; o < bytes; o += step) CU(cudaHostUnregister(b->pageable + o));
      const double t3 = now_s();
      if (r >= 0) reg[r] = t1 - t0, dma[r] = t2 - t1, unreg[r] = t3 - t2;
    }
    const char *how = chunked ? "pieces-64M" : "whole";
    char name[96];
    snprintf(name, sizeof name, "register/%s/cudaHostRegister", how);
    report(b, name, "cudaHostRegister of pageable memory", bytes, reg);
    snprintf(name, sizeof name, "register/%s/h2d-after", how);
    report(b, name, "cudaMemcpy from the registered memory", bytes, dma);
    snprintf(name, sizeof name, "register/%s/cudaHostUnregister", how);
    report(b, name, "cudaHostUnregister", bytes, unreg);
  }
}

/* ---- layer -------------------------------------------------------------------- */

/* fresh_dst: 1 untouched, 2 untouched with MADV_HUGEPAGE (numpy's large arrays) */
static void layer_case(bench *b, ctr_context *ctx, const char *label, int d2h, int fresh_dst) {
  const size_t bytes = b->large;
  ctr__xfer x;
  CU(cudaSetDevice(0));
  if (ctr__xfer_init(&x, ctx)) DIE("%s", ctr_error_detail());
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double runs[MAX_REPEATS];
  ctr__xfer_path path = CTR__XFER_DIRECT;
  for (int r = -1; r < b->repeats; r++) {
    char *host = fresh_dst ? fresh(bytes) : b->pageable;
    if (fresh_dst == 2) madvise(host, bytes, MADV_HUGEPAGE);
    const double t0 = now_s();
    const ctr_status st = d2h ? ctr__xfer_d2h(&x, host, b->dev, bytes, s, 1, &path)
                              : ctr__xfer_h2d(&x, b->dev, host, bytes, s, 1, &path);
    if (st) DIE("%s: %s", label, ctr_error_detail());
    CU(cudaStreamSynchronize(s));
    if (r >= 0) runs[r] = now_s() - t0;
    if (fresh_dst) munmap(host, bytes);
  }
  char name[128];
  snprintf(name, sizeof name, "layer/%s/%s%s/%s", d2h ? "d2h" : "h2d", label,
           fresh_dst == 2 ? "/fresh-thp" : fresh_dst ? "/fresh" : "", ctr__xfer_path_name(path));
  report(b, name, "host_transfer.h from or into pageable memory", bytes, runs);
  ctr__xfer_free(&x);
  cudaStreamDestroy(s);
}

static ctr_context *layer_context(const char *key, const char *value) {
  const char *kv[2] = {key, value};
  return bench_context(CTR_DEVICE_CUDA, kv, key ? 1 : 0);
}

static void stage_layer(bench *b, const uint64_t *slots, int nslots) {
  for (int d2h = 0; d2h < 2; d2h++) {
    for (int s = 0; s < nslots; s++) {
      char kib[32], label[64];
      snprintf(kib, sizeof kib, "%llu", (unsigned long long)(slots[s] >> 10));
      const char *kv[4] = {"host_transfer", "staged", "host_stage_kib", kib};
      ctr_context *ctx = bench_context(CTR_DEVICE_CUDA, kv, 2);
      snprintf(label, sizeof label, "staged-%sK", kib);
      layer_case(b, ctx, label, d2h, 0);
      if (d2h) layer_case(b, ctx, label, d2h, 1), layer_case(b, ctx, label, d2h, 2);
      ctr_context_free(ctx);
    }
    static const char *const forced[] = {"registered", "driver", NULL};
    for (int f = 0; f < 3; f++) {
      ctr_context *ctx = layer_context(forced[f] ? "host_transfer" : NULL, forced[f]);
      layer_case(b, ctx, forced[f] ? forced[f] : "auto", d2h, 0);
      if (d2h && !forced[f]) layer_case(b, ctx, "auto", d2h, 1), layer_case(b, ctx, "auto", d2h, 2);
      ctr_context_free(ctx);
    }
  }
}

/* ---- main --------------------------------------------------------------------- */

static int parse_sizes(const char *arg, const char *opt, uint64_t *out) {
  int n = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", arg);
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MAX_LIST) DIE("%s: at most %d sizes", opt, MAX_LIST);
    if (ctr_size_parse(t, &out[n]) || out[n] == 0) DIE("%s: %s", opt, ctr_error_detail());
    n++;
  }
  if (n == 0) DIE("%s: no size given", opt);
  return n;
}

int main(int argc, char **argv) {
  const char *sizes_arg = "16M,1G", *large_arg = "2368M", *threads_arg = "1,2,4,8,16,0";
  const char *slots_arg = "1M,4M,16M,64M", *stages = "dma,copy,register,layer", *json = NULL;
  bench b;
  memset(&b, 0, sizeof b);
  b.repeats = 5;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) DIE("%s needs a value (see the comment at the top of bench/bench_pcie.c)", k);
    i++;
    if (!strcmp(k, "--sizes")) sizes_arg = v;
    else if (!strcmp(k, "--large")) large_arg = v;
    else if (!strcmp(k, "--threads")) threads_arg = v;
    else if (!strcmp(k, "--slots")) slots_arg = v;
    else if (!strcmp(k, "--stages")) stages = v;
    else if (!strcmp(k, "--repeats")) b.repeats = atoi(v);
    else if (!strcmp(k, "--json")) json = v;
    else DIE("unknown option %s", k);
  }
  if (b.repeats < 3 || b.repeats > MAX_REPEATS) DIE("--repeats must be 3 .. %d", MAX_REPEATS);
  uint64_t sizes[MAX_LIST], large[1], slots[MAX_LIST];
  const int nsizes = parse_sizes(sizes_arg, "--sizes", sizes);
  parse_sizes(large_arg, "--large", large);
  const int nslots = parse_sizes(slots_arg, "--slots", slots);
  int threads[MAX_LIST], nthreads = 0;
  {
    char list[128];
    snprintf(list, sizeof list, "%s", threads_arg);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && nthreads < MAX_LIST;
         t = strtok_r(NULL, ",", &save))
      threads[nthreads++] = atoi(t);
  }
  uint64_t largest = large[0];
  for (int s = 0; s < nsizes; s++) largest = sizes[s] > largest ? sizes[s] : largest;
  b.large = (size_t)large[0];

  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (ctr_cuda_get_device_info(0, &info)) DIE("%s", ctr_error_detail());
  CU(cudaMalloc((void **)&b.dev, largest));
  CU(cudaMallocHost((void **)&b.pinned, largest));
  b.pageable = malloc(largest);
  if (!b.pageable) DIE("out of host memory (%llu bytes)", (unsigned long long)largest);
  memset(b.pageable, 1, largest); /* resident, as an array that holds data */
  memset(b.pinned, 1, largest);

  if (json) {
    char date[64];
    b.json.f = fopen(json, "w");
    if (!b.json.f) DIE("cannot write %s", json);
    fprintf(b.json.f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"host_threads\": %d, "
            "\"command\": \"bench_pcie --sizes %s --large %s --threads %s --slots %s --stages %s "
            "--repeats %d\",\n \"method\": \"host clock, median of the runs after one untimed run; "
            "pageable = malloc'd and touched; fresh = mmap'd, untouched\",\n \"cases\": [\n",
            info.name, bench_date(date, sizeof date), bench_revision(), omp_get_max_threads(),
            sizes_arg, large_arg, threads_arg, slots_arg, stages, b.repeats);
  }
  printf("Host transfers on %s, %d host threads, median of %d:\n", info.name,
         omp_get_max_threads(), b.repeats);
  if (bench_listed(stages, "dma")) stage_dma(&b, sizes, nsizes);
  if (bench_listed(stages, "copy")) stage_copy(&b, threads, nthreads, slots, nslots);
  if (bench_listed(stages, "register")) stage_register(&b);
  if (bench_listed(stages, "layer")) stage_layer(&b, slots, nslots);
  if (b.json.f) {
    fprintf(b.json.f, "\n ]}\n");
    fclose(b.json.f);
  }
  free(b.pageable);
  cudaFreeHost(b.pinned);
  cudaFree(b.dev);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "bench_pcie: built without CUDA\n");
  return 1;
}
#endif
