/* The streamed (out-of-core) FDK pipeline on the CUDA backend: every plan
 * (one subvolume with resident mirrored pairs, many subvolumes with views
 * resident, in host memory, in a scratch file, or not kept) against the CPU
 * backend; split against unsplit runs on the GPU; file in / file out with a
 * resume bit-identical to an uninterrupted run; uint16 input with a scale
 * and non-finite values; a GPU budget too small for any plan. Exits 77
 * (skipped) without a usable GPU. */
#include "harness.h"
#include "scratch_dir.h"

#include <stdlib.h>

static double rel_rms(const float *a, const float *b, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += (double)b[i] * b[i];
  }
  return s > 0 ? sqrt(e / s) : INFINITY;
}

static double max_abs_diff(const float *a, const float *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

enum { N = 40, NU = 64, NV = 56, NVIEWS = 50 };

static ctr_geometry *make_geometry(int symmetric) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 200;
  p.sdd = 320;
  p.nu = NU;
  p.nv = NV;
  p.du = p.dv = 1.4;
  p.nviews = NVIEWS;
  if (!symmetric) p.offset_v = 1.3;
  ctr_volume_geometry vol = {N, N, N, 1, 1, 1, 0, 0, symmetric ? 0 : 0.7};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

static ctr_context *context(ctr_device_kind d) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = d;
  ctr_context *c = NULL;
  CHECK_OK(ctr_context_create(&co, &c));
  return c;
}

typedef struct plan_case {
  const char *name;
  int64_t max_slab, per_batch;
  ctr_fdk_store store;
} plan_case;

static void test_plans(ctr_context *cpu, ctr_context *gpu, int symmetric) {
  ctr_geometry *g = make_geometry(symmetric);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.4 * N, 1.0, &ph));
  if (!g || !ph) return;
  const int64_t np = (int64_t)NU * NV * NVIEWS, nvox = (int64_t)N * N * N;
  float *proj = ctr_host_alloc(sizeof(float) * np);
  float *ref = malloc(sizeof(float) * nvox), *whole = malloc(sizeof(float) * nvox);
  float *vol = malloc(sizeof(float) * nvox);
  const int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ra = ctr_array_make(ref, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array wa = ctr_array_make(whole, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.fdk.interp = CTR_INTERP_EXACT;
  CHECK_OK(ctr_fdk_stream_memory(cpu, g, &so, &pa, &ra, NULL));
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(ctr_fdk_stream_memory(gpu, g, &so, &pa, &wa, &rep));
  printf("%s geometry, default plan: %lld subvolume(s), store %s, pairs %d\n",
         symmetric ? "symmetric" : "offset", (long long)rep.plan.nslabs,
         ctr_fdk_store_name(rep.plan.store), rep.plan.pair);
  CHECK(rep.plan.nslabs == 1 && rep.plan.store == CTR_FDK_STORE_DEVICE);
  CHECK(rep.plan.pair == symmetric);
  double e = rel_rms(whole, ref, nvox);
  printf("  one subvolume: GPU vs CPU relative RMS %.2e\n", e);
  CHECK_MSG(e < 2e-5, "GPU one-subvolume vs CPU: %g", e);
  const plan_case cases[] = {
      {"resident, 7-slice subvolumes", 7, 0, CTR_FDK_STORE_DEVICE},
      {"host store, 5 slices", 5, 0, CTR_FDK_STORE_HOST},
      {"resident, 1-slice subvolumes", 1, 0, CTR_FDK_STORE_DEVICE},
      {"host store, 5 slices, N'=6", 5, 6, CTR_FDK_STORE_HOST},
      {"scratch store, 9 slices, N'=13", 9, 13, CTR_FDK_STORE_SCRATCH},
      {"not kept, one subvolume, N'=17", 0, 17, CTR_FDK_STORE_NONE},
  };
  float *first = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ctr_fdk_stream_options o = so;
    o.max_slab_slices = cases[i].max_slab;
    o.fdk.views_per_batch = cases[i].per_batch;
    o.store = cases[i].store;
    memset(vol, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr_fdk_stream_memory(gpu, g, &o, &pa, &va, &rep));
    e = rel_rms(vol, ref, nvox);
    printf("  %-36s %3lld subvolumes: GPU vs CPU relative RMS %.2e\n", cases[i].name,
           (long long)rep.plan.nslabs, e);
    CHECK_MSG(e < 2e-5, "%s: GPU vs CPU %g", cases[i].name, e);
    CHECK(rep.plan.store == cases[i].store);
    /* Subvolume boundaries move the kernels' float anchors (positions are
     * taken relative to each subvolume's first slice) and another N' groups
     * the views of a launch differently: float rounding only. (A resumed run
     * repeats the interrupted run's plan and is bit-identical: test_files.) */
    if (!first) {
      first = malloc(sizeof(float) * nvox);
      memcpy(first, vol, sizeof(float) * nvox);
    } else {
      const double d = max_abs_diff(vol, first, nvox);
      printf("  %-36s max |difference| to the first split plan %.3g\n", "", d);
      CHECK_MSG(d <= 1e-5, "%s differs from the first split plan by %g", cases[i].name, d);
    }
  }
  /* Texture interpolation, split and unsplit: within texture accuracy. */
  ctr_fdk_stream_options t = so;
  t.fdk.interp = CTR_INTERP_TEXTURE;
  CHECK_OK(ctr_fdk_stream_memory(gpu, g, &t, &pa, &wa, NULL));
  t.max_slab_slices = 6;
  t.store = CTR_FDK_STORE_HOST;
  CHECK_OK(ctr_fdk_stream_memory(gpu, g, &t, &pa, &va, NULL));
  printf("  texture: one subvolume %.2e, 6-slice host plan %.2e vs CPU\n", rel_rms(whole, ref, nvox),
         rel_rms(vol, ref, nvox));
  CHECK(rel_rms(whole, ref, nvox) < 3e-3 && rel_rms(vol, ref, nvox) < 3e-3);
  free(first);
  ctr_host_free(proj);
  free(ref);
  free(whole);
  free(vol);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

/* File in, file out; interrupted after k subvolumes and resumed: the same
 * bytes as an uninterrupted run. uint16 projections with a scale and a few
 * NaN give the CPU's volume and count. */
static void test_files(ctr_context *cpu, ctr_context *gpu) {
  ctr_geometry *g = make_geometry(0);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.4 * N, 1.0, &ph));
  if (!g || !ph) return;
  const int64_t np = (int64_t)NU * NV * NVIEWS, nvox = (int64_t)N * N * N;
  float *proj = malloc(sizeof(float) * np);
  const int64_t pd[3] = {NU, NV, NVIEWS};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  proj[5] = NAN;
  proj[np / 2] = INFINITY;
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, NU, NV, NVIEWS, CTR_DTYPE_FLOAT32, {0, 0, 0}, {0, 0, 0}};
  CHECK_OK(ctr_stack_save(P("p.nrrd"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, proj, 0));
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.fdk.interp = CTR_INTERP_EXACT;
  so.max_slab_slices = 6;
  so.store = CTR_FDK_STORE_HOST;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  ctr_stack_reader *r = NULL;
  /* Uninterrupted GPU and CPU runs. */
  CHECK_OK(ctr_stack_open(P("p.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r));
  CHECK_OK(ctr_fdk_stream(gpu, g, &so, r, P("gpu.raw"), CTR_FORMAT_AUTO, &rep));
  CHECK(rep.nonfinite == 2);
  CHECK_OK(ctr_fdk_stream(cpu, g, &so, r, P("cpu.raw"), CTR_FORMAT_AUTO, &rep));
  CHECK(rep.nonfinite == 2);
  const ctr_stack_info vi = {CTR_STACK_INFO_VERSION, N, N, N, CTR_DTYPE_FLOAT32, {0, 0, 0}, {0, 0, 0}};
  float *a = NULL, *b = NULL;
  CHECK_OK(ctr_stack_load(P("gpu.raw"), CTR_FORMAT_AUTO, &vi, CTR_DTYPE_FLOAT32, NULL, (void **)&a));
  CHECK_OK(ctr_stack_load(P("cpu.raw"), CTR_FORMAT_AUTO, &vi, CTR_DTYPE_FLOAT32, NULL, (void **)&b));
  if (a && b) {
    printf("file run, %lld subvolumes: GPU vs CPU relative RMS %.2e\n", (long long)rep.plan.nslabs,
           rel_rms(a, b, nvox));
    CHECK(rel_rms(a, b, nvox) < 2e-5);
  }
  /* Interrupted after k subvolumes, then resumed. */
  for (int k = 1; k <= 5; k += 2) {
    char stop[16];
    snprintf(stop, sizeof stop, "%d", k);
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", stop, 1);
    CHECK(ctr_fdk_stream(gpu, g, &so, r, P("res.raw"), CTR_FORMAT_AUTO, &rep) == CTR_E_CANCELLED);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK(!exists(P("res.raw")) && exists(P("res.raw.partial")) &&
          exists(P("res.raw.partial.journal")));
    ctr_fdk_stream_options ro = so;
    ro.resume = 1;
    CHECK_OK(ctr_fdk_stream(gpu, g, &ro, r, P("res.raw"), CTR_FORMAT_AUTO, &rep));
    CHECK_MSG(rep.slabs_resumed == k, "resumed %lld subvolumes, expected %d",
              (long long)rep.slabs_resumed, k);
    float *c = NULL;
    CHECK_OK(ctr_stack_load(P("res.raw"), CTR_FORMAT_AUTO, &vi, CTR_DTYPE_FLOAT32, NULL, (void **)&c));
    CHECK_MSG(a && c && memcmp(a, c, sizeof(float) * nvox) == 0,
              "resumed after %d subvolumes: not bit-identical", k);
    printf("stopped after %d subvolume(s), resumed: bit-identical %s\n", k,
           a && c && !memcmp(a, c, sizeof(float) * nvox) ? "yes" : "NO");
    free(c);
    CHECK(!exists(P("res.raw.partial")) && !exists(P("res.raw.partial.journal")));
    remove(P("res.raw"));
  }
  ctr_stack_close(r);
  /* uint16 input with a scale. */
  uint16_t *p16 = malloc(sizeof(uint16_t) * np);
  for (int64_t i = 0; i < np; i++) p16[i] = (uint16_t)lrint(fmin(65535.0, fmax(0.0, isfinite(proj[i]) ? proj[i] * 700.0 : 0.0)));
  info.dtype = CTR_DTYPE_UINT16;
  CHECK_OK(ctr_stack_save(P("p16.raw"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, p16, 0));
  CHECK_OK(ctr_stack_open(P("p16.raw"), CTR_FORMAT_RAW, &info, 0, &r));
  so.input_scale = 700.0;
  so.out_dtype = CTR_DTYPE_UINT16;
  so.out_scale = 20000.0;
  CHECK_OK(ctr_fdk_stream(gpu, g, &so, r, P("g16.nrrd"), CTR_FORMAT_AUTO, &rep));
  CHECK_OK(ctr_fdk_stream(cpu, g, &so, r, P("c16.nrrd"), CTR_FORMAT_AUTO, &rep));
  ctr_stack_close(r);
  uint16_t *ga = NULL, *ca = NULL;
  CHECK_OK(ctr_stack_load(P("g16.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_UINT16, NULL, (void **)&ga));
  CHECK_OK(ctr_stack_load(P("c16.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_UINT16, NULL, (void **)&ca));
  if (ga && ca) {
    int maxd = 0;
    for (int64_t i = 0; i < nvox; i++) maxd = abs((int)ga[i] - (int)ca[i]) > maxd ? abs((int)ga[i] - (int)ca[i]) : maxd;
    printf("uint16 in and out: largest GPU - CPU difference %d (of 65535)\n", maxd);
    CHECK(maxd <= 1);
  }
  free(ga);
  free(ca);
  free(p16);
  free(a);
  free(b);
  free(proj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
}

static void test_budget(ctr_context *gpu) {
  ctr_geometry *g = make_geometry(1);
  if (!g) return;
  const int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  float *proj = calloc((size_t)(NU * NV * NVIEWS), sizeof(float));
  float *vol = malloc(sizeof(float) * N * N * N);
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.gpu_budget = 4096;
  CHECK(ctr_fdk_stream_memory(gpu, g, &so, &pa, &va, NULL) == CTR_E_DEVICE_OUT_OF_MEMORY);
  CHECK(strstr(ctr_error_detail(), "(gpu_budget)") != NULL);
  printf("tiny GPU budget: %s\n", ctr_error_detail());
  free(proj);
  free(vol);
  ctr_geometry_free(g);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("no usable GPU: skipped\n");
    return 77;
  }
  if (!scratch_open("gpu_stream")) return 1;
  ctr_context *cpu = context(CTR_DEVICE_CPU), *gpu = context(CTR_DEVICE_CUDA);
  if (cpu && gpu) {
    test_plans(cpu, gpu, 1);
    test_plans(cpu, gpu, 0);
    test_files(cpu, gpu);
    test_budget(gpu);
  }
  ctr_context_free(cpu);
  ctr_context_free(gpu);
  scratch_close();
  return th_finish("test_gpu_stream");
}
