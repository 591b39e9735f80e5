/* The host-transfer layer (src/gpu/host_transfer.h): every path gives the
 * same bytes, and no path leaves a caller's buffer registered.
 *  - the layer alone: host -> device -> host round trips of odd sizes (1
 *    byte, one slot and one byte, several slots and a tail) and strided
 *    (2D) uploads, rows shorter and longer than a slot, on each path forced
 *    through ctr_tuning.host_transfer with 64 KiB slots;
 *  - with --errors (ctest test_gpu_host_transfer_errors, left out of
 *    memcheck: it provokes a CUDA API error on purpose) an error on the
 *    registered path (a copy the driver refuses) leaves the buffer
 *    unregistered;
 *  - FDK and FBP from projections (flat field, uint16: the strided upload)
 *    from and into pageable memory on each path, bit-identical to the run
 *    from pinned memory (ctr_host_alloc), the caller's buffers unregistered
 *    and the input unchanged after every call.
 * Exits 77 (skipped) without a usable GPU. */
#include "harness.h"

#if CTR_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "gpu/host_transfer.h"

static const char *const k_paths[] = {"auto", "staged", "registered", "driver"};
#define NPATHS 4

/* A context with host_transfer = k_paths[p] and 64 KiB slots. */
static ctr_context *path_context(int p) {
  ctr_tuning t;
  CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
  CHECK_OK(ctr_tuning_set(&t, "host_transfer", k_paths[p]));
  CHECK_OK(ctr_tuning_set(&t, "host_stage_kib", "64"));
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.tuning = &t;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  return ctx;
}

/* 1 when p is memory CUDA does not know (pageable, not registered). */
static int unregistered(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 1;
  }
  return a.type == cudaMemoryTypeUnregistered;
}

static void fill(unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

static void test_round_trips(void) {
  static const size_t sizes[] = {1, 1000, (64 << 10) + 1, 3 * (64 << 10) + 17, 5u << 20};
  const size_t big = 5u << 20;
  unsigned char *src = malloc(big + 64), *back = malloc(big + 64);
  void *dev = NULL;
  REQUIRE(src && back && cudaMalloc(&dev, big + 64) == cudaSuccess);
  for (int p = 0; p < NPATHS; p++) {
    ctr_context *ctx = path_context(p);
    REQUIRE(ctx);
    ctr__xfer x;
    CHECK_OK(ctr__xfer_init(&x, ctx));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      const size_t n = sizes[k];
      /* an unaligned start: registration rounds to pages */
      fill(src + 3, n, (unsigned)(p * 31 + k));
      memset(back, 0, n + 8);
      ctr__xfer_path up = CTR__XFER_DIRECT, down = CTR__XFER_DIRECT;
      CHECK_OK(ctr__xfer_h2d(&x, dev, src + 3, n, 0, 0, &up));
      memset(src + 3, 0xAB, n); /* may be changed once the call returned */
      CHECK_OK(ctr__xfer_d2h(&x, back + 5, dev, n, 0, 1, &down));
      fill(src + 3, n, (unsigned)(p * 31 + k));
      CHECK_MSG(!memcmp(back + 5, src + 3, n), "%s: %zu bytes (up %s, down %s) differ", k_paths[p],
                n, ctr__xfer_path_name(up), ctr__xfer_path_name(down));
      CHECK(unregistered(src) && unregistered(back));
      if (p > 0 && n > (1u << 20))
        CHECK_MSG(up == (ctr__xfer_path)p, "%s: took %s", k_paths[p],
                  ctr__xfer_path_name(up));
    }
    /* strided: rows shorter than a slot (many per slot) and longer (alone) */
    static const size_t widths[] = {3000, (100 << 10) + 7};
    for (int w = 0; w < 2; w++) {
      const size_t width = widths[w], height = w ? 7 : 500, spitch = width + 4096;
      REQUIRE(spitch * height <= big);
      fill(src, spitch * height, (unsigned)(w + 7 * p));
      CHECK_OK(ctr__xfer_h2d_2d(&x, dev, width, src, spitch, width, height, 0, 0, NULL));
      CHECK_OK(ctr__xfer_d2h(&x, back, dev, width * height, 0, 1, NULL));
      int same = 1;
      for (size_t r = 0; r < height && same; r++) same = !memcmp(back + r * width, src + r * spitch, width);
      CHECK_MSG(same, "%s: strided rows of %zu bytes differ", k_paths[p], width);
      CHECK(unregistered(src));
    }
    ctr__xfer_free(&x);
    ctr_context_free(ctx);
  }
  free(src);
}

/* The registered path's error (a CUDA API error on purpose: its own test,
 * test_gpu_host_transfer_errors, left out of memcheck): the buffer is
 * unregistered again. */
static void test_registered_error(void) {
  const size_t big = 5u << 20;
  unsigned char *src = malloc(big);
  REQUIRE(src);
  memset(src, 1, big);
  {
    ctr_context *ctx = path_context(2);
    ctr__xfer x;
    CHECK_OK(ctr__xfer_init(&x, ctx));
    /* no destination: the driver refuses the copy after the registration */
    const ctr_status st = ctr__xfer_h2d_on(&x, CTR__XFER_REGISTERED, NULL, src, big, 0, 1);
    CHECK(st != CTR_OK);
    CHECK(unregistered(src));
    ctr__xfer_free(&x);
    ctr_context_free(ctx);
  }
  free(src);
}

/* FDK of a small Shepp-Logan from pinned and from pageable memory. */
static void test_fdk(void) {
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 300, cp.sdd = 500, cp.nu = 96, cp.nv = 80, cp.du = cp.dv = 1.0, cp.nviews = 90;
  ctr_volume_geometry vol = {64, 64, 64, 0.8, 0.8, 0.8, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g));
  CHECK_OK(ctr_phantom_shepp_logan(24.0, 0.02, &ph));
  REQUIRE(g && ph);
  const int64_t pd[3] = {96, 80, 90}, vd[3] = {64, 64, 64};
  const size_t np = 96 * 80 * 90, nv = 64 * 64 * 64;
  float *pin_p = ctr_host_alloc(np * 4), *pin_v = ctr_host_alloc(nv * 4);
  float *pg_p = malloc(np * 4), *pg_v = malloc(nv * 4), *keep = malloc(np * 4);
  REQUIRE(pin_p && pin_v && pg_p && pg_v && keep);
  ctr_array pa = ctr_array_make(pin_p, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  memcpy(pg_p, pin_p, np * 4);
  memcpy(keep, pin_p, np * 4);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  {
    ctr_context *ctx = path_context(0);
    ctr_array va = ctr_array_make(pin_v, CTR_DTYPE_FLOAT32, 3, vd);
    CHECK_OK(ctr_fdk(ctx, g, &o, &pa, &va));
    ctr_context_free(ctx);
  }
  for (int p = 0; p < NPATHS; p++) {
    ctr_context *ctx = path_context(p);
    ctr_array qa = ctr_array_make(pg_p, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array va = ctr_array_make(pg_v, CTR_DTYPE_FLOAT32, 3, vd);
    memset(pg_v, 0x7f, nv * 4);
    CHECK_OK(ctr_fdk(ctx, g, &o, &qa, &va));
    CHECK_MSG(!memcmp(pg_v, pin_v, nv * 4), "FDK from pageable memory, host_transfer %s: not "
              "the bits of the pinned run", k_paths[p]);
    CHECK_MSG(!memcmp(pg_p, keep, np * 4), "FDK changed its input (%s)", k_paths[p]);
    CHECK(unregistered(pg_p) && unregistered(pg_v));
    ctr_context_free(ctx);
  }
  ctr_host_free(pin_p);
  ctr_host_free(pin_v);
  free(pg_p);
  free(pg_v);
  free(keep);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* FBP from uint16 projections with a flat field (the strided upload). */
static void test_fbp(void) {
  const int64_t nb = 160, nrows = 12, na = 200;
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = nb, pp.nangles = na;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&pp, &g));
  REQUIRE(g);
  const size_t nproj = (size_t)(nb * nrows * na), nsl = (size_t)(nb * nb * (nrows - 2));
  uint16_t *pin_p = ctr_host_alloc(nproj * 2), *pg_p = malloc(nproj * 2);
  float *pin_s = ctr_host_alloc(nsl * 4), *pg_s = malloc(nsl * 4);
  float *flat = malloc(sizeof(float) * (size_t)(nb * nrows));
  REQUIRE(pin_p && pg_p && pin_s && pg_s && flat);
  for (int64_t i = 0; i < nb * nrows; i++) flat[i] = 60000.0f;
  for (size_t i = 0; i < nproj; i++) {
    const int64_t b = (int64_t)(i % (size_t)nb), a = (int64_t)(i / (size_t)(nb * nrows));
    const double t = (b - nb / 2.0 + 30.0 * cos(a * 0.0157)) / 40.0;
    pin_p[i] = (uint16_t)(60000.0 * exp(-(t * t < 1 ? 1.5 * sqrt(1 - t * t) : 0.0)));
  }
  memcpy(pg_p, pin_p, nproj * 2);
  const int64_t pd[3] = {nb, nrows, na}, sd[3] = {nb, nb, nrows - 2};
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  {
    ctr_context *ctx = path_context(0);
    ctr_array pa = ctr_array_make(pin_p, CTR_DTYPE_UINT16, 3, pd);
    ctr_array sa = ctr_array_make(pin_s, CTR_DTYPE_FLOAT32, 3, sd);
    CHECK_OK(ctr_fbp_projections(ctx, g, &o, &pa, flat, NULL, 1, &sa));
    ctr_context_free(ctx);
  }
  for (int p = 0; p < NPATHS; p++) {
    ctr_context *ctx = path_context(p);
    ctr_array pa = ctr_array_make(pg_p, CTR_DTYPE_UINT16, 3, pd);
    ctr_array sa = ctr_array_make(pg_s, CTR_DTYPE_FLOAT32, 3, sd);
    memset(pg_s, 0x7f, nsl * 4);
    CHECK_OK(ctr_fbp_projections(ctx, g, &o, &pa, flat, NULL, 1, &sa));
    CHECK_MSG(!memcmp(pg_s, pin_s, nsl * 4), "FBP from pageable memory, host_transfer %s: not "
              "the bits of the pinned run", k_paths[p]);
    CHECK(!memcmp(pg_p, pin_p, nproj * 2));
    CHECK(unregistered(pg_p) && unregistered(pg_s));
    ctr_context_free(ctx);
  }
  ctr_host_free(pin_p);
  ctr_host_free(pin_s);
  free(pg_p);
  free(pg_s);
  free(flat);
  ctr_parallel_free(g);
}

/* --errors: the error path alone (test_gpu_host_transfer_errors). */
int main(int argc, char **argv) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_host_transfer: no usable GPU, skipped\n");
    return 77;
  }
  if (argc > 1 && !strcmp(argv[1], "--errors")) {
    test_registered_error();
    return th_finish("test_gpu_host_transfer --errors");
  }
  test_round_trips();
  test_fdk();
  test_fbp();
  return th_finish("test_gpu_host_transfer");
}
#else
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("test_gpu_host_transfer: built without CUDA, skipped\n");
  return 77;
}
#endif
