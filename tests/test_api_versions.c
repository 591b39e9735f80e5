/* The versioned structs through the public API, as a program built against
 * an older header would use them: version 1 of ctr_context_options,
 * ctr_fdk_options (no strict), ctr_fdk_stream_options (ctr_fdk_options version 1
 * inside, so every later member sits 8 bytes earlier), ctr_fbp_options and
 * ctr_pet_recon_options, each written out here as its own C struct. A
 * version-1 struct must give the same result as the current one with the
 * same members (and the defaults for the rest), a version out of range is
 * refused naming the struct, the version and the range, and every
 * ctr_<name>_init writes its version's layout and not a byte beyond. */
#include "core/internal.h"
#include "harness.h"

#include <stddef.h>

/* ---- The version-1 layouts -------------------------------------------------- */

typedef struct context_options_v1 {
  unsigned version;
  ctr_device_kind device;
  int device_index;
  int num_threads;
  ctr_progress_fn progress;
  ctr_log_fn log;
  void *user;
} context_options_v1;

typedef struct fdk_options_v1 {
  unsigned version;
  ctr_window window;
  double cutoff;
  ctr_short_scan short_scan;
  ctr_interp interp;
  int64_t z0, nz;
  int64_t views_per_batch;
} fdk_options_v1;

typedef struct stream_options_v1 {
  unsigned version;
  fdk_options_v1 fdk;
  uint64_t gpu_budget;
  uint64_t host_budget;
  int64_t max_slab_slices;
  ctr_fdk_store store;
  const char *scratch_dir;
  double input_scale;
  ctr_dtype out_dtype;
  double out_scale;
  int resume;
  ctr_slab_fn on_slab;
  void *user;
} stream_options_v1;

typedef struct fbp_options_v1 {
  unsigned version;
  ctr_window window;
  double cutoff;
  ctr_fbp_interp interp;
  const char *kernel;
} fbp_options_v1;

typedef struct pet_recon_options_v1 {
  unsigned version;
  ctr_pet_algorithm algorithm;
  int iterations;
  double relax0;
  double relax_decay;
  ctr_pet_iteration_fn on_iteration;
  void *user;
} pet_recon_options_v1;

typedef struct file_format_info_v1 {
  unsigned version;
  const char *name, *extensions;
  int stack_of_files;
  unsigned dtypes, feature;
  int in_order, resumable, many_ranks, adds_to_file;
  const char *partial;
} file_format_info_v1;

typedef struct parallel_params_v1 {
  unsigned version;
  int64_t nbins, nangles;
  const double *angles_deg;
  double angle_start_deg, angle_range_deg;
  double axis;
  const double *axis_shift;
  int64_t nx, ny;
  double voxel;
  double pixel_size;
} parallel_params_v1;

/* The tables' idea of the old layouts is the compiler's. */
static void test_layouts(void) {
  CHECK(ctr__struct_size(&ctr__struct_context_options, 1) == sizeof(context_options_v1));
  CHECK(ctr__struct_size(&ctr__struct_fdk_options, 1) == sizeof(fdk_options_v1));
  CHECK(ctr__struct_size(&ctr__struct_fdk_stream_options, 1) == sizeof(stream_options_v1));
  CHECK(ctr__struct_size(&ctr__struct_fbp_options, 1) == sizeof(fbp_options_v1));
  CHECK(ctr__struct_size(&ctr__struct_pet_recon_options, 1) == sizeof(pet_recon_options_v1));
  CHECK(ctr__struct_size(&ctr__struct_file_format_info, 1) == sizeof(file_format_info_v1));
  CHECK(ctr__struct_size(&ctr__struct_parallel_params, 1) == sizeof(parallel_params_v1));
  CHECK(sizeof(stream_options_v1) < sizeof(ctr_fdk_stream_options));
  CHECK(offsetof(stream_options_v1, gpu_budget) < offsetof(ctr_fdk_stream_options, gpu_budget));
}

/* ---- Every init function ------------------------------------------------------ */

/* For every versioned struct and version: init writes that version's
 * layout only, the version field says so, and reading it back gives the
 * defaults (the current INIT macro's values). */
static void test_init_all(void) {
  int n = 0;
  for (const ctr__struct_desc *const *dp = ctr__structs; *dp; dp++, n++) {
    const ctr__struct_desc *d = *dp;
    for (unsigned v = 1; v <= d->current; v++) {
      const size_t size = ctr__struct_size(d, v);
      unsigned char buf[8192], back[8192];
      CHECK(size > 0 && size <= d->size && d->size + 64 <= sizeof buf);
      memset(buf, 0x5A, sizeof buf);
      CHECK_OK(ctr__struct_init(d, buf, v));
      unsigned got;
      memcpy(&got, buf, sizeof got);
      CHECK_MSG(got == v, "%s version %u: init stamped %u", d->name, v, got);
      int beyond = 0;
      for (size_t i = size; i < sizeof buf; i++) beyond += buf[i] != 0x5A;
      CHECK_MSG(beyond == 0, "%s version %u: init wrote %d bytes beyond %zu", d->name, v,
                beyond, size);
      CHECK_OK(ctr__struct_copy(d, back, buf));
      CHECK_MSG(!memcmp(back, d->defaults, d->size), "%s version %u: not the defaults", d->name,
                v);
    }
    CHECK_FAILS(ctr__struct_init(d, (unsigned char[8192]){0}, d->current + 1),
                CTR_E_INVALID_ARGUMENT, d->name);
  }
  CHECK(n >= 11);
  /* The public functions are these (one of each kind). */
  ctr_fdk_options f;
  CHECK_OK(ctr_fdk_options_init(&f, CTR_FDK_OPTIONS_VERSION));
  CHECK(f.version == CTR_FDK_OPTIONS_VERSION && f.cutoff == 1.0 && f.strict == 0);
  ctr_fdk_stream_options so;
  CHECK_OK(ctr_fdk_stream_options_init(&so, 1));
  const stream_options_v1 *s1 = (const stream_options_v1 *)&so;
  CHECK(s1->version == 1 && s1->fdk.version == 1 && s1->fdk.cutoff == 1.0 &&
        s1->input_scale == 1.0 && s1->out_scale == 1.0 && s1->out_dtype == CTR_DTYPE_FLOAT32);
  CHECK_FAILS(ctr_context_options_init(NULL, 1), CTR_E_INVALID_ARGUMENT, "NULL");
  ctr_pet_params pp;
  CHECK_FAILS(ctr_pet_params_init(&pp, 0), CTR_E_INVALID_ARGUMENT,
              "ctr_pet_params_init: version 0, this library accepts ctr_pet_params versions 1 to");
}

/* ---- FDK and the stream from version-1 structs -------------------------------- */

enum { NU = 40, NV = 32, NVIEWS = 36, N = 24 };

static ctr_geometry *make_geometry(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 300;
  p.sdd = 500;
  p.nu = NU;
  p.nv = NV;
  p.du = p.dv = 1.6;
  p.nviews = NVIEWS;
  const ctr_volume_geometry vol = {N, N, N, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

static void test_fdk(ctr_context *ctx, ctr_geometry *g, const float *proj) {
  const int64_t pd[3] = {NU, NV, NVIEWS}, z0 = 5, nz = 11, vd[3] = {N, N, nz};
  const size_t nvox = (size_t)N * N * nz;
  float *a = calloc(nvox, sizeof(float)), *b = calloc(nvox, sizeof(float));
  const ctr_array pa = ctr_array_make((void *)proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(a, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array vb = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, vd);

  /* ctr_fdk: version 1 (no strict) against version 2 */
  fdk_options_v1 f1 = {1, CTR_WINDOW_HANN, 0.8, CTR_SHORT_SCAN_AUTO, CTR_INTERP_DEFAULT, z0, nz, 7};
  ctr_fdk_options f2 = CTR_FDK_OPTIONS_INIT;
  f2.window = CTR_WINDOW_HANN;
  f2.cutoff = 0.8;
  f2.z0 = z0;
  f2.nz = nz;
  f2.views_per_batch = 7;
  CHECK_OK(ctr_fdk(ctx, g, (const ctr_fdk_options *)&f1, &pa, &va));
  CHECK_OK(ctr_fdk(ctx, g, &f2, &pa, &vb));
  double sum = 0;
  for (size_t i = 0; i < nvox; i++) sum += fabs(a[i]);
  CHECK(sum > 0 && !memcmp(a, b, nvox * sizeof(float)));
  f1.version = 5;
  CHECK_FAILS(ctr_fdk(ctx, g, (const ctr_fdk_options *)&f1, &pa, &va), CTR_E_INVALID_ARGUMENT,
              "ctr_fdk_options.version is 5: this library accepts ctr_fdk_options versions 1 to 4");
  f1.version = 1;

  /* the stream: version 1 holds the version-1 FDK options, so its later
   * members sit elsewhere; max_slab_slices and store must still arrive */
  stream_options_v1 s1;
  memset(&s1, 0, sizeof s1);
  s1.version = 1;
  s1.fdk = f1;
  s1.max_slab_slices = 3;
  s1.store = CTR_FDK_STORE_HOST;
  s1.input_scale = 2.0;
  s1.out_dtype = CTR_DTYPE_FLOAT32;
  s1.out_scale = 1.0;
  ctr_fdk_stream_options s2 = CTR_FDK_STREAM_OPTIONS_INIT;
  s2.fdk = f2;
  s2.max_slab_slices = 3;
  s2.store = CTR_FDK_STORE_HOST;
  s2.input_scale = 2.0;
  ctr_fdk_stream_report r1 = CTR_FDK_STREAM_REPORT_INIT, r2 = CTR_FDK_STREAM_REPORT_INIT;
  memset(a, 0, nvox * sizeof(float));
  memset(b, 0, nvox * sizeof(float));
  CHECK_OK(ctr_fdk_stream_memory(ctx, g, (const ctr_fdk_stream_options *)&s1, &pa, &va, &r1));
  CHECK_OK(ctr_fdk_stream_memory(ctx, g, &s2, &pa, &vb, &r2));
  CHECK(r1.plan.slab_slices == 3 && r1.plan.nslabs == 4 && r1.plan.store == CTR_FDK_STORE_HOST);
  CHECK(r2.plan.slab_slices == 3 && r1.plan.views_per_batch == 7);
  CHECK(!memcmp(a, b, nvox * sizeof(float)));
  double half = 0;
  for (size_t i = 0; i < nvox; i++) half += fabs(a[i]);
  CHECK_NEAR(half, 0.5 * sum, 1e-3 * sum); /* input_scale 2 arrived */
  /* an FDK options version the stream options' version does not hold */
  s1.fdk.version = 2;
  CHECK_FAILS(ctr_fdk_stream_memory(ctx, g, (const ctr_fdk_stream_options *)&s1, &pa, &va, NULL),
              CTR_E_INVALID_ARGUMENT,
              "ctr_fdk_stream_options.fdk.version is 2: this library accepts ctr_fdk_options "
              "versions 1 to 1");
  s2.version = 0;
  CHECK_FAILS(ctr_fdk_stream_memory(ctx, g, &s2, &pa, &vb, NULL), CTR_E_INVALID_ARGUMENT,
              "ctr_fdk_stream_options.version is 0");
  free(a);
  free(b);
}

/* ---- The context, FBP and PET recon from version-1 structs -------------------- */

static void test_context(void) {
  context_options_v1 c1 = {1, CTR_DEVICE_CPU, -1, 1, NULL, NULL, NULL};
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create((const ctr_context_options *)&c1, &ctx));
  CHECK(ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CPU);
  ctr_context_free(ctx);
  c1.version = 7;
  CHECK_FAILS(ctr_context_create((const ctr_context_options *)&c1, &ctx),
              CTR_E_INVALID_ARGUMENT, "ctr_context_options.version is 7");
}

static void test_fbp(ctr_context *ctx) {
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = 32;
  pp.nangles = 24;
  ctr_parallel_geometry *pg = NULL;
  CHECK_OK(ctr_parallel_create(&pp, &pg));
  if (!pg) return;
  float sino[32 * 24], s1[32 * 32], s2[32 * 32];
  for (int i = 0; i < 32 * 24; i++) sino[i] = (float)(i % 32 >= 10 && i % 32 < 22);
  sino[5] = NAN; /* strict is not in version 1: the default (replace) applies */
  const int64_t sd[3] = {32, 24, 1}, od[3] = {32, 32, 1};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array a1 = ctr_array_make(s1, CTR_DTYPE_FLOAT32, 3, od);
  ctr_array a2 = ctr_array_make(s2, CTR_DTYPE_FLOAT32, 3, od);
  const fbp_options_v1 o1 = {1, CTR_WINDOW_COSINE, 0.9, CTR_FBP_NEAREST, NULL};
  ctr_fbp_options o2 = CTR_FBP_OPTIONS_INIT;
  o2.window = CTR_WINDOW_COSINE;
  o2.cutoff = 0.9;
  o2.interp = CTR_FBP_NEAREST;
  CHECK_OK(ctr_fbp(ctx, pg, (const ctr_fbp_options *)&o1, &sa, &a1));
  CHECK_OK(ctr_fbp(ctx, pg, &o2, &sa, &a2));
  CHECK(!memcmp(s1, s2, sizeof s1) && s1[16 * 32 + 16] != 0);
  o2.strict = 1;
  CHECK_FAILS(ctr_fbp(ctx, pg, &o2, &sa, &a2), CTR_E_FORMAT, "strict");
  ctr_parallel_free(pg);
  /* ctr_parallel_params version 1 (before tilt_deg and nrows): read as untilted, the same
   * geometry as the current layout's defaults */
  const parallel_params_v1 p1 = {1, 32, 24, NULL, 0.0, 180.0, CTR_AXIS_CENTER, NULL, 0, 0, 0.0, 0.0};
  ctr_parallel_geometry *g1 = NULL;
  CHECK_OK(ctr_parallel_create((const ctr_parallel_params *)&p1, &g1));
  if (g1) {
    const ctr_parallel_params *r = ctr_parallel_get_params(g1);
    CHECK(r->tilt_deg == 0.0 && r->nrows == 0 && r->nbins == 32 && r->nangles == 24);
    CHECK(fabs(ctr_parallel_get_weight(g1, 0) - M_PI / 24.0) < 1e-15);
  }
  ctr_parallel_free(g1);
}

static void test_pet(ctr_context *ctx) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = p.ny = 12;
  p.nz = 4;
  p.n_azimuth = 4;
  p.n_copolar = 1;
  const ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  if (s) CHECK_OK(ctr_pet_projector_create(ctx, s, &pr));
  if (pr) CHECK_OK(ctr_pet_histo_create(&p, 0, &h));
  if (!h) goto done;
  const int64_t nvox = 12 * 12 * 4;
  for (int64_t i = 0; i < nvox * 4; i++) h->counts[i] = (float)(1 + i % 5);
  h->counts[3] = NAN; /* used as 0 with a warning without strict (not in version 1) */
  float *a = calloc((size_t)nvox, sizeof(float)), *b = calloc((size_t)nvox, sizeof(float));
  const pet_recon_options_v1 o1 = {1, CTR_PET_OSEM, 2, 0.1, 0.1, NULL, NULL};
  ctr_pet_recon_options o2 = CTR_PET_RECON_OPTIONS_INIT;
  o2.algorithm = CTR_PET_OSEM;
  o2.iterations = 2;
  CHECK_OK(ctr_pet_reconstruct(pr, h, (const ctr_pet_recon_options *)&o1, a, NULL));
  CHECK_OK(ctr_pet_reconstruct(pr, h, &o2, b, NULL));
  CHECK(!memcmp(a, b, (size_t)nvox * sizeof(float)) && a[nvox / 2] > 0);
  o2.strict = 1;
  CHECK_FAILS(ctr_pet_reconstruct(pr, h, &o2, b, NULL), CTR_E_FORMAT, "strict");
  free(a);
  free(b);
done:
  ctr_pet_histo_free(h);
  ctr_pet_projector_free(pr);
  ctr_pet_system_free(s);
}

/* ctr_file_format_get_info fills a version-1 struct in its layout, not a
 * byte beyond, with the values of the current one. */
static void test_file_format_info(void) {
  struct {
    file_format_info_v1 v1;
    unsigned char guard[64];
  } old;
  memset(&old, 0x5A, sizeof old);
  old.v1.version = 1;
  CHECK_OK(ctr_file_format_get_info(CTR_FORMAT_NRRD, (ctr_file_format_info *)&old.v1));
  ctr_file_format_info cur = CTR_FILE_FORMAT_INFO_INIT;
  CHECK_OK(ctr_file_format_get_info(CTR_FORMAT_NRRD, &cur));
  CHECK(old.v1.version == 1 && !strcmp(old.v1.name, cur.name) &&
        old.v1.resumable == cur.resumable && !strcmp(old.v1.partial, cur.partial));
  int beyond = 0;
  for (size_t i = 0; i < sizeof old.guard; i++) beyond += old.guard[i] != 0x5A;
  CHECK_MSG(beyond == 0, "ctr_file_format_get_info wrote %d bytes beyond version 1", beyond);
  CHECK(cur.title && !strcmp(cur.title, "NRRD") && !cur.needs_hint && !cur.dataset_path);
}

int main(void) {
  test_layouts();
  test_file_format_info();
  test_init_all();
  test_context();
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  ctr_geometry *g = make_geometry();
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(10.0, 1.0, &ph));
  float *proj = calloc((size_t)NU * NV * NVIEWS, sizeof(float));
  const int64_t pd[3] = {NU, NV, NVIEWS};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  if (ctx && g && ph) {
    CHECK_OK(ctr_phantom_project(ctx, ph, g, 1, &pa));
    test_fdk(ctx, g, proj);
    test_fbp(ctx);
    test_pet(ctx);
  } else {
    CHECK(!"setup failed");
  }
  free(proj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_context_free(ctx);
  return th_finish("test_api_versions");
}
