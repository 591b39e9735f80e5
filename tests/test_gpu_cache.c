/* Every modality's GPU buffers come from the context's GPU buffer cache
 * (src/gpu/gpu_buffers.h) and go back to it. For each path moved onto it -
 * PET (projector tables, reconstruction, the FFT reference), iterative
 * reconstruction (the matched pair with every vector on the GPU and
 * streamed slab by slab, the fast pair with its backprojector), the
 * incremental backprojector and the FP64 reference - a run, the same run on
 * the buffers the first gave back, and the same run after
 * ctr_context_release_memory give the same bits; a run's large buffers are
 * kept afterwards and the release frees them (ctr__gpu_cached_bytes).
 * Objects freed after their context (ctr_context_free first) give their
 * buffers back to a context that lives on with them (core.h,
 * ctr_context_free): compute-sanitizer's memcheck and the sanitizer build see
 * any use of freed memory. Exits 77 without a GPU. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#if CTR_HAVE_CUDA
#include "core/internal.h"
#include "pet_test_util.h"

static ctr_context *gpu_context(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  return ctx;
}

static uint64_t kept(const ctr_context *ctx) {
  return ctr__gpu_cached_bytes(ctx, ctr_context_get_device_ordinal(ctx, 0));
}

/* a and b hold the same n bytes; what names the case. */
static void same_bits(const char *what, const void *a, const void *b, size_t n) {
  CHECK_MSG(!memcmp(a, b, n), "%s: the runs differ", what);
}

/* ---- PET ------------------------------------------------------------------------- */

/* One reconstruction of each algorithm into `out` (nvox floats each, from a
 * uniform start) and one FFT reference projection after them. */
static void pet_runs(ctr_context *ctx, ctr_pet_system *s, ctr_pet_projector *pr,
                     const ctr_pet_histo *h, const float *x, int64_t nvox, float *out) {
  for (int alg = 0; alg < 3; alg++) {
    ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
    o.algorithm = (ctr_pet_algorithm)alg, o.iterations = 2;
    float *img = out + alg * nvox;
    memset(img, 0, sizeof(float) * (size_t)nvox);
    CHECK_OK(ctr_pet_reconstruct(pr, h, &o, img, NULL));
  }
  CHECK_OK(ctr_pet_project_fft(ctx, s, 3, 4, x, out + 3 * nvox));
}

static void test_pet(void) {
  ctr_context *ctx = gpu_context();
  ctr_pet_params p = pet_test_params(40, 36, 12, 4.0);
  p.n_azimuth = 12, p.n_copolar = 2; /* 24 views: histo-images of 1.6 MiB */
  ctr_pet_kernel_params k = pet_test_kernel_invariant(); /* the FFT reference needs it */
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  if (ctx && s) CHECK_OK(ctr_pet_projector_create(ctx, s, &pr));
  CHECK_OK(ctr_pet_histo_create(&p, 1, &h));
  if (!ctx || !s || !pr || !h) goto done;
  {
    const int64_t n = p.nx * p.ny * p.nz;
    float *x = malloc(sizeof(float) * (size_t)n);
    float *a = malloc(sizeof(float) * (size_t)(4 * n)), *b = malloc(sizeof(float) * (size_t)(4 * n));
    pet_test_random(x, n, 3);
    CHECK_OK(pet_test_histo_fill(pr, h, x, n, 5, 50.0f));
    pet_runs(ctx, s, pr, h, x, n, a);
    /* the histo-images, factors and sensitivities of a run: several MiB, kept */
    const uint64_t after = kept(ctx);
    printf("PET: %.1f MiB kept after a run\n", (double)after / (1 << 20));
    CHECK_MSG(after >= ((uint64_t)1 << 20), "PET run: %llu bytes kept", (unsigned long long)after);
    pet_runs(ctx, s, pr, h, x, n, b); /* on the kept buffers */
    same_bits("PET on kept buffers", a, b, sizeof(float) * (size_t)(4 * n));
    ctr_context_release_memory(ctx);
    CHECK(kept(ctx) == 0);
    pet_runs(ctx, s, pr, h, x, n, b); /* on new ones; the projector's tables stay */
    same_bits("PET after a release", a, b, sizeof(float) * (size_t)(4 * n));
    /* the projector outlives its context: its tables go back to a context
     * that lives on until then */
    ctr_context_free(ctx);
    ctx = NULL;
    free(x), free(a), free(b);
  }
done:
  ctr_pet_projector_free(pr);
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
  ctr_context_free(ctx);
}

/* ---- Iterative reconstruction ------------------------------------------------------ */

typedef struct it_case {
  const char *name;
  int64_t n;            /* n^3 volume */
  ctr_projector_pair pair;
  uint64_t gpu_budget;  /* 0: detected (everything on the GPU) */
  int64_t max_slab;     /* ctr_iterate_options.max_slab_slices */
  ctr_iterate_placement placement;
} it_case;

static void test_iterative(const it_case *c) {
  ctr_context *ctx = gpu_context();
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  ctr_projector *pr = NULL;
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 200, cp.sdd = 300, cp.nu = cp.nv = 48, cp.du = cp.dv = 2.4, cp.nviews = 36;
  const double vx = 64.0 / (double)c->n;
  ctr_volume_geometry vol = {c->n, c->n, c->n, vx, vx, vx, 0, 0, 0};
  const int64_t nvol = c->n * c->n * c->n, nproj = cp.nu * cp.nv * cp.nviews;
  float *proj = malloc(sizeof(float) * (size_t)nproj);
  float *a = malloc(sizeof(float) * (size_t)nvol), *b = malloc(sizeof(float) * (size_t)nvol);
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g));
  CHECK_OK(ctr_phantom_shepp_logan(28.0, 0.02, &ph));
  if (!ctx || !g || !ph) goto done;
  {
    const int64_t pd[3] = {cp.nu, cp.nv, cp.nviews};
    ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
    CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  }
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  po.pair = c->pair;
  CHECK_OK(ctr_projector_create_cone(ctx, g, &po, &pr));
  if (!pr) goto done;
  {
    ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
    o.algorithm = CTR_ITERATE_SIRT;
    o.iterations = 3;
    o.gpu_budget = c->gpu_budget;
    o.max_slab_slices = c->max_slab;
    ctr_iterate_report r = CTR_ITERATE_REPORT_INIT;
    CHECK_OK(ctr_iterate(pr, &o, proj, a, &r));
    CHECK_MSG(r.plan.placement == c->placement, "%s: placement %s, expected %s", c->name,
              ctr_iterate_placement_name(r.plan.placement), ctr_iterate_placement_name(c->placement));
    const uint64_t after = kept(ctx);
    printf("iterative, %s: %.1f MiB kept after a run\n", c->name, (double)after / (1 << 20));
    if (c->placement == CTR_PLACE_DEVICE) /* the volumes (1 MiB each at 64^3) at least */
      CHECK_MSG(after >= ((uint64_t)1 << 20), "%s: %llu bytes kept", c->name,
                (unsigned long long)after);
    CHECK_OK(ctr_iterate(pr, &o, proj, b, NULL)); /* on the kept buffers */
    same_bits(c->name, a, b, sizeof(float) * (size_t)nvol);
    ctr_context_release_memory(ctx);
    CHECK(kept(ctx) == 0);
    CHECK_OK(ctr_iterate(pr, &o, proj, b, NULL));
    same_bits(c->name, a, b, sizeof(float) * (size_t)nvol);
    /* a new projector on the same context: the first one's buffers are
     * kept while it lives, reused by nothing, given back at its free */
    ctr_projector *second = NULL;
    CHECK_OK(ctr_projector_create_cone(ctx, g, &po, &second));
    if (second) {
      CHECK_OK(ctr_iterate(second, &o, proj, b, NULL));
      same_bits(c->name, a, b, sizeof(float) * (size_t)nvol);
      ctr_projector_free(second);
    }
  }
  /* the first projector outlives its context */
  ctr_context_free(ctx);
  ctx = NULL;
done:
  ctr_projector_free(pr);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_context_free(ctx);
  free(proj), free(a), free(b);
}

/* ---- Incremental backprojector and the FP64 reference ----------------------------- */

static void test_backprojector(void) {
  ctr_context *ctx = gpu_context();
  ctr_geometry *g = NULL;
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 400, cp.sdd = 600, cp.nu = 160, cp.nv = 128, cp.du = cp.dv = 1.0, cp.nviews = 90;
  ctr_volume_geometry vol = {96, 96, 64, 0.5, 0.5, 0.5, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g));
  if (!ctx || !g) goto done;
  {
    const int64_t npix = cp.nu * cp.nv, nvol = vol.nx * vol.ny * vol.nz, nv = cp.nviews;
    float *img = malloc(sizeof(float) * (size_t)(npix * nv));
    const float **images = malloc(sizeof(float *) * (size_t)nv);
    int64_t *views = malloc(sizeof(int64_t) * (size_t)nv);
    float *a = malloc(sizeof(float) * (size_t)nvol), *b = malloc(sizeof(float) * (size_t)nvol);
    double *ra = calloc((size_t)nvol, sizeof(double)), *rb = calloc((size_t)nvol, sizeof(double));
    for (int64_t i = 0; i < npix * nv; i++) img[i] = (float)th_uniform(-1, 1);
    for (int64_t v = 0; v < nv; v++) views[v] = (v * 37) % nv, images[v] = img + views[v] * npix;
    for (int round = 0; round < 3; round++) {
      /* round 1 on the buffers round 0 gave back, round 2 after a release */
      if (round == 2) {
        ctr_context_release_memory(ctx);
        CHECK(kept(ctx) == 0);
      }
      float *out = round ? b : a;
      double *ref = round ? rb : ra;
      ctr_backprojector *bp = NULL;
      CHECK_OK(ctr_backprojector_create(ctx, g, NULL, &bp));
      if (!bp) break;
      CHECK_OK(ctr_backprojector_add(bp, nv / 2, views, images, NULL));
      CHECK_OK(ctr_backprojector_add(bp, nv - nv / 2, views + nv / 2, images + nv / 2, NULL));
      CHECK_OK(ctr_backprojector_read(bp, out));
      ctr_backprojector_free(bp);
      if (round == 0) {
        printf("backprojector: %.1f MiB kept after its free\n", (double)kept(ctx) / (1 << 20));
        CHECK(kept(ctx) >= (uint64_t)nvol * sizeof(float)); /* its volume */
      }
      memset(ref, 0, sizeof(double) * (size_t)nvol);
      CHECK_OK(ctr_fdk_backproject_reference(ctx, g, nv, views, images, NULL, ref));
      if (round) {
        same_bits("backprojector", a, b, sizeof(float) * (size_t)nvol);
        same_bits("FP64 reference", ra, rb, sizeof(double) * (size_t)nvol);
      }
    }
    /* a backprojector outlives its context */
    ctr_backprojector *bp = NULL;
    CHECK_OK(ctr_backprojector_create(ctx, g, NULL, &bp));
    CHECK_OK(ctr_backprojector_add(bp, nv, views, images, NULL));
    ctr_context_free(ctx);
    ctx = NULL;
    ctr_backprojector_free(bp);
    free(img), free(images), free(views), free(a), free(b), free(ra), free(rb);
  }
done:
  ctr_geometry_free(g);
  ctr_context_free(ctx);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("no usable GPU: skipped\n");
    return 77;
  }
  test_pet();
  static const it_case cases[] = {
      {"matched, every vector on the GPU", 64, CTR_PAIR_MATCHED, 0, 0, CTR_PLACE_DEVICE},
      /* a tiny GPU (test_iterate's): slabs of the volume and blocks of views */
      {"matched, streamed", 24, CTR_PAIR_MATCHED, (uint64_t)1 << 19, 5, CTR_PLACE_STREAMED},
      {"fast pair, every vector on the GPU", 64, CTR_PAIR_FAST, 0, 0, CTR_PLACE_DEVICE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_iterative(&cases[i]);
  test_backprojector();
  return th_finish("test_gpu_cache");
}
#else
int main(void) {
  printf("built without CUDA: skipped\n");
  return 77;
}
#endif
