/* The memory planner of the streamed FDK pipeline (ctr_fdk_plan_compute): a pure
 * function, so CUDA plans are tested too, without a GPU. Checks the choice of
 * store and subvolume size against the budgets, that no plan ever exceeds a
 * budget (a sweep over budgets, and budgets just below each plan's bytes),
 * the errors for absurd budgets and the smallest budget they name, forced
 * stores, argument errors, ctr_fdk_plan_describe and ctr_size_parse; the
 * output format's own buffers (OME-Zarr's rows of chunks) in the plan. */
#include "harness.h"
#include "io/io_internal.h" /* ctr__format_writer_bytes */

#include <stdint.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static ctr_geometry *make_geometry(int64_t n, int64_t nviews, int64_t nu, int64_t nv, double voxel,
                                   double du, double offset_z) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = nu;
  p.nv = nv;
  p.du = p.dv = du;
  p.nviews = nviews;
  ctr_volume_geometry vol = {n, n, n, voxel, voxel, voxel, 0, 0, offset_z};
  ctr_geometry *g = NULL;
  ctr_status st = ctr_geometry_create_circular(&p, &vol, &g);
  if (st != CTR_OK) fprintf(stderr, "geometry: %s\n", ctr_error_detail());
  CHECK(st == CTR_OK && g);
  return g;
}

/* The 2048^3 volume from 1200 views of 2048^2 (a 32 GiB volume, 18.75 GiB of
 * float projections). */
static ctr_geometry *big_geometry(double offset_z) {
  return make_geometry(2048, 1200, 2048, 2048, 0.25, 0.4, offset_z);
}

static ctr_fdk_plan_request cuda_request(uint64_t gpu, uint64_t host) {
  ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
  q.device = CTR_DEVICE_CUDA;
  q.gpu_budget = gpu;
  q.host_budget = host;
  return q;
}

static ctr_fdk_plan_request cpu_request(uint64_t host) {
  ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
  q.device = CTR_DEVICE_CPU;
  q.host_budget = host;
  return q;
}

static int same_plan(const ctr_fdk_plan *a, const ctr_fdk_plan *b) {
  return a->device == b->device && a->z0 == b->z0 && a->nz == b->nz &&
         a->slab_slices == b->slab_slices && a->nslabs == b->nslabs &&
         a->views_per_batch == b->views_per_batch && a->nbatches == b->nbatches &&
         a->store == b->store && a->pair == b->pair && a->read_buffers == b->read_buffers &&
         a->host_slab_buffers == b->host_slab_buffers && a->chunk_slices == b->chunk_slices &&
         a->gpu_bytes == b->gpu_bytes && a->host_bytes == b->host_bytes &&
         a->scratch_bytes == b->scratch_bytes;
}

static void print_plan(const char *what, const ctr_fdk_plan *p) {
  char text[512];
  ctr_fdk_plan_describe(p, text, sizeof text);
  printf("%s: %s\n", what, text);
}

/* Invariants every plan must satisfy for request q on geometry g. Returns
 * the number of failed checks (so callers can print context). */
static int check_plan(const char *what, const ctr_geometry *g, const ctr_fdk_plan_request *q,
                      const ctr_fdk_plan *p) {
  const int before = th_failures;
  const ctr_volume_geometry vg = ctr_geometry_get_volume(g);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  const int64_t nz = q->nz ? q->nz : vg.nz - q->z0;
  CHECK_MSG(p->device == q->device, "%s: device %d", what, (int)p->device);
  CHECK_MSG(p->z0 == q->z0 && p->nz == nz, "%s: slices [%lld, +%lld)", what, (long long)p->z0,
            (long long)p->nz);
  CHECK_MSG(p->slab_slices >= 1 && p->slab_slices <= nz, "%s: slab_slices %lld of %lld", what,
            (long long)p->slab_slices, (long long)nz);
  CHECK_MSG(p->nslabs >= 1 && p->nslabs * p->slab_slices >= nz &&
                (p->nslabs - 1) * p->slab_slices < nz,
            "%s: %lld subvolumes of %lld slices for %lld slices", what, (long long)p->nslabs,
            (long long)p->slab_slices, (long long)nz);
  if (q->max_slab_slices > 0)
    CHECK_MSG(p->slab_slices <= q->max_slab_slices, "%s: slab_slices %lld > max %lld", what,
              (long long)p->slab_slices, (long long)q->max_slab_slices);
  CHECK_MSG(p->views_per_batch >= 1 && p->views_per_batch <= nviews, "%s: N' = %lld", what,
            (long long)p->views_per_batch);
  if (q->views_per_batch > 0)
    CHECK_MSG(p->views_per_batch ==
                  (q->views_per_batch < nviews ? q->views_per_batch : nviews),
              "%s: N' = %lld, asked for %lld", what, (long long)p->views_per_batch,
              (long long)q->views_per_batch);
  CHECK_MSG(p->nbatches == (nviews + p->views_per_batch - 1) / p->views_per_batch,
            "%s: %lld batches of %lld for %lld views", what, (long long)p->nbatches,
            (long long)p->views_per_batch, (long long)nviews);
  CHECK_MSG(p->store >= CTR_FDK_STORE_DEVICE && p->store <= CTR_FDK_STORE_NONE, "%s: store %d", what,
            (int)p->store);
  if (q->store != CTR_FDK_STORE_AUTO)
    CHECK_MSG(p->store == q->store, "%s: store %s, forced %s", what, ctr_fdk_store_name(p->store),
              ctr_fdk_store_name(q->store));
  if (q->device == CTR_DEVICE_CPU) {
    CHECK_MSG(p->store != CTR_FDK_STORE_DEVICE, "%s: device store on the CPU", what);
    CHECK_MSG(p->gpu_bytes == 0, "%s: CPU plan with %llu GPU bytes", what,
              (unsigned long long)p->gpu_bytes);
    CHECK_MSG(!p->pair, "%s: mirrored pairs on the CPU", what);
  } else {
    CHECK_MSG(p->gpu_bytes > 0 && p->gpu_bytes <= q->gpu_budget,
              "%s: %llu GPU bytes, budget %llu", what, (unsigned long long)p->gpu_bytes,
              (unsigned long long)q->gpu_budget);
  }
  CHECK_MSG(p->host_bytes <= q->host_budget, "%s: %llu host bytes, budget %llu", what,
            (unsigned long long)p->host_bytes, (unsigned long long)q->host_budget);
  /* One subvolume needs each filtered view once: "none" means one subvolume. */
  if (p->store == CTR_FDK_STORE_NONE)
    CHECK_MSG(p->nslabs == 1, "%s: store none with %lld subvolumes", what, (long long)p->nslabs);
  if (p->pair)
    CHECK_MSG(p->store == CTR_FDK_STORE_DEVICE && p->nslabs == 1,
              "%s: pairs with store %s and %lld subvolumes", what, ctr_fdk_store_name(p->store),
              (long long)p->nslabs);
  CHECK_MSG((p->scratch_bytes > 0) == (p->store == CTR_FDK_STORE_SCRATCH),
            "%s: %llu scratch bytes with store %s", what, (unsigned long long)p->scratch_bytes,
            ctr_fdk_store_name(p->store));
  if (p->store == CTR_FDK_STORE_SCRATCH) {
    int64_t nu, nv;
    ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
    CHECK_MSG(p->scratch_bytes == (uint64_t)nu * (uint64_t)nv * 4u * (uint64_t)nviews,
              "%s: scratch %llu bytes", what, (unsigned long long)p->scratch_bytes);
  }
  CHECK_MSG(p->read_buffers == (q->input_in_memory ? 0 : p->read_buffers) &&
                (q->input_in_memory || p->read_buffers > 0),
            "%s: %d read buffers (input in memory: %d)", what, p->read_buffers,
            q->input_in_memory);
  CHECK_MSG(q->output_in_memory ? p->host_slab_buffers == 0 : p->host_slab_buffers > 0,
            "%s: %d host slab buffers (output in memory: %d)", what, p->host_slab_buffers,
            q->output_in_memory);
  CHECK_MSG(p->chunk_slices >= 1 && p->chunk_slices <= p->slab_slices,
            "%s: chunk of %lld slices, subvolumes of %lld", what, (long long)p->chunk_slices,
            (long long)p->slab_slices);
  return th_failures - before;
}

/* ---- ctr_size_parse and ctr_fdk_store_name -------------------------------------- */

static void test_parse_size(void) {
  static const struct {
    const char *text;
    uint64_t bytes;
  } good[] = {
      {"0", 0},          {"100", 100},          {"4k", 4 * KiB},         {"4K", 4 * KiB},
      {"1KiB", KiB},     {"2KB", 2 * KiB},      {"512M", 512 * MiB},     {"512MiB", 512 * MiB},
      {"8G", 8 * GiB},   {"8g", 8 * GiB},       {"8GB", 8 * GiB},        {"8GiB", 8 * GiB},
      {"1.5T", 3 * GiB * 512}, {"0.5G", 512 * MiB}, {"2.25M", 2 * MiB + 256 * KiB},
      {"1T", GiB * 1024},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    uint64_t b = 12345;
    ctr_status st = ctr_size_parse(good[i].text, &b);
    CHECK_MSG(st == CTR_OK && b == good[i].bytes, "'%s' -> %s, %llu (expected %llu)",
              good[i].text, ctr_status_name(st), (unsigned long long)b,
              (unsigned long long)good[i].bytes);
  }
  static const char *bad[] = {"", "banana", "8X", "8Gx", "-1", "-1G", "G", "8 G", "nan", "inf",
                              "1e30T"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t b = 777;
    ctr_error_clear();
    ctr_status st = ctr_size_parse(bad[i], &b);
    CHECK_MSG(st == CTR_E_INVALID_ARGUMENT && strstr(ctr_error_detail(), bad[i]) && b == 777,
              "'%s' -> %s (%s), bytes %llu", bad[i], ctr_status_name(st), ctr_error_detail(),
              (unsigned long long)b);
  }
  uint64_t b;
  CHECK_FAILS(ctr_size_parse(NULL, &b), CTR_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(ctr_size_parse("8G", NULL), CTR_E_INVALID_ARGUMENT, "NULL");
  CHECK(!strcmp(ctr_fdk_store_name(CTR_FDK_STORE_AUTO), "auto"));
  CHECK(!strcmp(ctr_fdk_store_name(CTR_FDK_STORE_DEVICE), "device"));
  CHECK(!strcmp(ctr_fdk_store_name(CTR_FDK_STORE_HOST), "host"));
  CHECK(!strcmp(ctr_fdk_store_name(CTR_FDK_STORE_SCRATCH), "scratch"));
  CHECK(!strcmp(ctr_fdk_store_name(CTR_FDK_STORE_NONE), "none"));
  CHECK(!strcmp(ctr_fdk_store_name((ctr_fdk_store)42), "unknown"));
}

/* ---- CUDA plans of the big geometry -------------------------------------------- */

static void test_cuda_big(void) {
  ctr_geometry *g = big_geometry(0);
  if (!g) return;
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT, p2 = CTR_FDK_PLAN_INIT;

  /* 80 GiB GPU: the 32 GiB volume and the 18.75 GiB of filtered views fit:
   * one subvolume, views resident, mirrored pairs (symmetric circular scan). */
  ctr_fdk_plan_request q = cuda_request(80 * GiB, 100 * GiB);
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  print_plan("cuda 80G/100G", &p);
  check_plan("cuda 80G/100G", g, &q, &p);
  CHECK(p.nslabs == 1 && p.slab_slices == 2048);
  CHECK(p.store == CTR_FDK_STORE_DEVICE);
  CHECK(p.pair == 1);
  CHECK(p.gpu_bytes > 32 * GiB + 18 * GiB); /* volume + resident views at least */

  /* A slab (z0 != 0) cannot use mirrored pairs; nor can a volume off-centre
   * in z. */
  q.z0 = 100;
  q.nz = 1000;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  check_plan("cuda 80G slab", g, &q, &p2);
  CHECK(p2.nslabs == 1 && p2.store == CTR_FDK_STORE_DEVICE && p2.pair == 0);
  ctr_geometry *goff = big_geometry(5.0);
  if (goff) {
    ctr_fdk_plan_request qo = cuda_request(80 * GiB, 100 * GiB);
    CHECK_OK(ctr_fdk_plan_compute(goff, &qo, &p2));
    check_plan("cuda 80G offset z", goff, &qo, &p2);
    CHECK(p2.nslabs == 1 && p2.store == CTR_FDK_STORE_DEVICE && p2.pair == 0);
    ctr_geometry_free(goff);
  }

  /* max_slab_slices: subvolumes of at most 100 slices, still resident views,
   * no pairs (they need the whole volume in one subvolume). */
  q = cuda_request(80 * GiB, 100 * GiB);
  q.max_slab_slices = 100;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  check_plan("cuda 80G max 100", g, &q, &p2);
  CHECK(p2.slab_slices == 100 && p2.nslabs == 21 && p2.store == CTR_FDK_STORE_DEVICE && !p2.pair);

  /* 8 GiB GPU: the views cannot stay resident; host memory keeps them. */
  q = cuda_request(8 * GiB, 100 * GiB);
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  print_plan("cuda 8G/100G", &p2);
  check_plan("cuda 8G/100G", g, &q, &p2);
  CHECK(p2.nslabs > 1 && p2.store == CTR_FDK_STORE_HOST && !p2.pair);
  CHECK(p2.gpu_bytes <= 8 * GiB);
  CHECK(p2.host_bytes >= (uint64_t)1200 * 2048 * 2048 * 4); /* the filtered views */

  /* 8 GiB GPU and 4 GiB host: the views go to a scratch file. */
  q = cuda_request(8 * GiB, 4 * GiB);
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  print_plan("cuda 8G/4G", &p2);
  check_plan("cuda 8G/4G", g, &q, &p2);
  CHECK(p2.nslabs > 1 && p2.store == CTR_FDK_STORE_SCRATCH);
  CHECK(p2.scratch_bytes == (uint64_t)1200 * 2048 * 2048 * 4);
  CHECK(p2.gpu_bytes <= 8 * GiB && p2.host_bytes <= 4 * GiB);

  /* Views per batch as asked; forced stores honoured. */
  const ctr_fdk_store forced[] = {CTR_FDK_STORE_DEVICE, CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH, CTR_FDK_STORE_NONE};
  for (int i = 0; i < 4; i++) {
    q = cuda_request(80 * GiB, 100 * GiB);
    q.store = forced[i];
    q.views_per_batch = 24;
    char what[64];
    snprintf(what, sizeof what, "cuda forced %s", ctr_fdk_store_name(forced[i]));
    ctr_status st = ctr_fdk_plan_compute(g, &q, &p2);
    CHECK_MSG(st == CTR_OK, "%s: %s", what, ctr_error_detail());
    if (st == CTR_OK) {
      check_plan(what, g, &q, &p2);
      CHECK_MSG(p2.views_per_batch == 24 && p2.nbatches == 50, "%s: N' %lld", what,
                (long long)p2.views_per_batch);
      /* One subvolume fits the 80 GiB in every case but pairs need resident views. */
      CHECK_MSG(p2.nslabs == 1, "%s: %lld subvolumes", what, (long long)p2.nslabs);
      CHECK_MSG(p2.pair == (forced[i] == CTR_FDK_STORE_DEVICE), "%s: pair %d", what, p2.pair);
    }
  }
  /* Forced device store with a GPU too small for the resident views. */
  q = cuda_request(8 * GiB, 100 * GiB);
  q.store = CTR_FDK_STORE_DEVICE;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p2), CTR_E_DEVICE_OUT_OF_MEMORY, "(gpu_budget)");
  /* Forced "none" needs the whole 32 GiB volume on the GPU at once. */
  q.store = CTR_FDK_STORE_NONE;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p2), CTR_E_DEVICE_OUT_OF_MEMORY, "(gpu_budget)");

  /* Input and output in memory: no read / write buffers, less host memory. */
  q = cuda_request(8 * GiB, 100 * GiB);
  q.input_in_memory = q.output_in_memory = 1;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  check_plan("cuda 8G in memory", g, &q, &p2);
  CHECK(p2.read_buffers == 0 && p2.host_slab_buffers == 0);

  /* uint16 projections read as uint16 need half the read buffers. */
  q = cuda_request(8 * GiB, 100 * GiB);
  q.store = CTR_FDK_STORE_SCRATCH;
  q.views_per_batch = 32;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  q.proj_dtype = CTR_DTYPE_UINT16;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  CHECK_MSG(p2.host_bytes < p.host_bytes, "uint16 host %llu, float32 %llu",
            (unsigned long long)p2.host_bytes, (unsigned long long)p.host_bytes);
  ctr_geometry_free(g);
}

/* ---- Budget sweeps: never over budget; just below a plan gives a smaller one */

/* For a plan p made with budgets (gpu, host): the plan's own bytes as budget
 * give the same plan, and one byte less gives a plan within that budget
 * (smaller) or an out-of-memory error. `which` 0: the GPU budget, 1: host. */
static void check_just_below(const char *what, const ctr_geometry *g, const ctr_fdk_plan_request *q0,
                             const ctr_fdk_plan *p, int which) {
  ctr_fdk_plan_request q = *q0;
  ctr_fdk_plan p2 = CTR_FDK_PLAN_INIT;
  uint64_t *budget = which ? &q.host_budget : &q.gpu_budget;
  const uint64_t bytes = which ? p->host_bytes : p->gpu_bytes;
  *budget = bytes;
  ctr_status st = ctr_fdk_plan_compute(g, &q, &p2);
  CHECK_MSG(st == CTR_OK && same_plan(&p2, p),
            "%s: a budget of exactly the plan's %llu bytes gives %s, another plan", what,
            (unsigned long long)bytes, ctr_status_name(st));
  *budget = bytes - 1;
  st = ctr_fdk_plan_compute(g, &q, &p2);
  if (st == CTR_OK) {
    const uint64_t b2 = which ? p2.host_bytes : p2.gpu_bytes;
    CHECK_MSG(b2 < bytes, "%s: budget %llu - 1 gives a plan of %llu bytes", what,
              (unsigned long long)bytes, (unsigned long long)b2);
    check_plan(what, g, &q, &p2);
  } else {
    CHECK_MSG(st == (which ? CTR_E_OUT_OF_MEMORY : CTR_E_DEVICE_OUT_OF_MEMORY),
              "%s: budget just below the plan: %s (%s)", what, ctr_status_name(st),
              ctr_error_detail());
  }
}

/* One budget of a sweep: a plan within the budget (checked, and the exact
 * minimum just below it), or a refusal that names the flag to change.
 * which: 0 = the GPU budget varies, 1 = the host budget. */
static void sweep_one(const ctr_geometry *g, ctr_fdk_plan_request q, int which, double b, int *plans,
                      int *refused, int *stores) {
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  char what[64];
  snprintf(what, sizeof what, "cuda sweep %s %.3f GiB", which ? "host" : "gpu", b / GiB);
  ctr_status st = ctr_fdk_plan_compute(g, &q, &p);
  if (st != CTR_OK) {
    (*refused)++;
    CHECK_MSG(st == (which ? CTR_E_OUT_OF_MEMORY : CTR_E_DEVICE_OUT_OF_MEMORY) &&
                  strstr(ctr_error_detail(), which ? "(host_budget)" : "(gpu_budget)"),
              "%s: %s (%s)", what, ctr_status_name(st), ctr_error_detail());
    return;
  }
  (*plans)++;
  stores[p.store]++;
  if (check_plan(what, g, &q, &p)) print_plan(what, &p);
  check_just_below(what, g, &q, &p, which);
}

static void test_sweep_cuda(void) {
  ctr_geometry *g = big_geometry(0);
  if (!g) return;
  int plans = 0, refused = 0, stores[5] = {0};
  /* GPU budgets from 512 MiB to 96 GiB in steps of ~7 %. */
  for (double b = 512.0 * MiB; b <= 96.0 * GiB; b *= 1.07)
    sweep_one(g, cuda_request((uint64_t)b, 100 * GiB), 0, b, &plans, &refused, stores);
  /* Host budgets from 64 MiB to 64 GiB with an 8 GiB GPU. */
  for (double b = 64.0 * MiB; b <= 64.0 * GiB; b *= 1.11)
    sweep_one(g, cuda_request(8 * GiB, (uint64_t)b), 1, b, &plans, &refused, stores);
  printf("cuda sweep: %d plans (device %d, host %d, scratch %d, none %d), %d refused\n", plans,
         stores[CTR_FDK_STORE_DEVICE], stores[CTR_FDK_STORE_HOST], stores[CTR_FDK_STORE_SCRATCH],
         stores[CTR_FDK_STORE_NONE], refused);
  /* The sweep must have seen every store a GPU uses and some refusals. */
  CHECK(stores[CTR_FDK_STORE_DEVICE] > 0 && stores[CTR_FDK_STORE_HOST] > 0 &&
        stores[CTR_FDK_STORE_SCRATCH] > 0);
  CHECK(refused > 0);
  ctr_geometry_free(g);
}

static void test_sweep_cpu(void) {
  /* 256^3 volume (64 MiB, 256 KiB slices), 90 views of 256 x 192 (17 MiB):
   * keeping the filtered views in memory beats one subvolume at some
   * budgets. */
  ctr_geometry *g = make_geometry(256, 90, 256, 192, 1.0, 1.8, 0);
  if (!g) return;
  int plans = 0, refused = 0, stores[5] = {0};
  for (int inmem = 0; inmem < 2; inmem++)
    for (double b = 1.0 * MiB; b <= 2.0 * GiB; b *= 1.09) {
      ctr_fdk_plan_request q = cpu_request((uint64_t)b);
      q.input_in_memory = q.output_in_memory = inmem;
      ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
      char what[64];
      snprintf(what, sizeof what, "cpu sweep host %.2f MiB%s", b / MiB, inmem ? " in memory" : "");
      ctr_status st = ctr_fdk_plan_compute(g, &q, &p);
      if (st != CTR_OK) {
        refused++;
        CHECK_MSG(st == CTR_E_OUT_OF_MEMORY && strstr(ctr_error_detail(), "(host_budget)"),
                  "%s: %s (%s)", what, ctr_status_name(st), ctr_error_detail());
        continue;
      }
      plans++;
      stores[p.store]++;
      if (check_plan(what, g, &q, &p)) print_plan(what, &p);
      check_just_below(what, g, &q, &p, 1);
    }
  printf("cpu sweep: %d plans (host %d, scratch %d, none %d), %d refused\n", plans,
         stores[CTR_FDK_STORE_HOST], stores[CTR_FDK_STORE_SCRATCH], stores[CTR_FDK_STORE_NONE], refused);
  CHECK(stores[CTR_FDK_STORE_NONE] > 0 && stores[CTR_FDK_STORE_HOST] > 0 &&
        stores[CTR_FDK_STORE_SCRATCH] > 0 && refused > 0);
  CHECK(stores[CTR_FDK_STORE_DEVICE] == 0);
  ctr_geometry_free(g);
}

/* ---- CPU plans ------------------------------------------------------------------- */

static void test_cpu(void) {
  ctr_geometry *g = make_geometry(32, 40, 48, 40, 8.0, 9.0, 0);
  if (!g) return;
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  /* Ample memory: one subvolume, nothing kept. */
  ctr_fdk_plan_request q = cpu_request(16 * GiB);
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  check_plan("cpu small", g, &q, &p);
  CHECK(p.nslabs == 1 && p.slab_slices == 32 && p.store == CTR_FDK_STORE_NONE && p.gpu_bytes == 0);
  CHECK(p.views_per_batch == 32 && p.nbatches == 2); /* the CPU's default N' */
  /* A GPU budget is irrelevant on the CPU. */
  q.gpu_budget = 1;
  ctr_fdk_plan p2 = CTR_FDK_PLAN_INIT;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p2));
  CHECK(same_plan(&p, &p2));
  /* Forced small subvolumes: host memory keeps the filtered views. */
  for (int64_t m = 1; m <= 33; m += 4) {
    q = cpu_request(16 * GiB);
    q.max_slab_slices = m;
    q.views_per_batch = 7;
    char what[64];
    snprintf(what, sizeof what, "cpu max %lld", (long long)m);
    CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
    check_plan(what, g, &q, &p);
    const int64_t zs = m < 32 ? m : 32;
    CHECK_MSG(p.slab_slices == zs && p.nslabs == (32 + zs - 1) / zs, "%s: %lld x %lld", what,
              (long long)p.nslabs, (long long)p.slab_slices);
    CHECK_MSG(p.store == (zs < 32 ? CTR_FDK_STORE_HOST : CTR_FDK_STORE_NONE), "%s: store %s", what,
              ctr_fdk_store_name(p.store));
    CHECK(p.views_per_batch == 7 && p.nbatches == 6);
  }
  /* N' larger than the number of views is clamped. */
  q = cpu_request(16 * GiB);
  q.views_per_batch = 1000;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  CHECK(p.views_per_batch == 40 && p.nbatches == 1);
  /* Forced host and scratch stores, one slab (z0, nz). */
  q = cpu_request(16 * GiB);
  q.store = CTR_FDK_STORE_SCRATCH;
  q.z0 = 8;
  q.nz = 13;
  q.max_slab_slices = 5;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  check_plan("cpu scratch slab", g, &q, &p);
  CHECK(p.store == CTR_FDK_STORE_SCRATCH && p.z0 == 8 && p.nz == 13 && p.nslabs == 3 &&
        p.slab_slices == 5);
  q.store = CTR_FDK_STORE_HOST;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  check_plan("cpu host slab", g, &q, &p);
  CHECK(p.store == CTR_FDK_STORE_HOST && p.nslabs == 3);
  /* Store "none" with one subvolume is fine. */
  q = cpu_request(16 * GiB);
  q.store = CTR_FDK_STORE_NONE;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  check_plan("cpu forced none", g, &q, &p);
  CHECK(p.store == CTR_FDK_STORE_NONE && p.nslabs == 1);
  /* "none" cannot serve several subvolumes: refused. */
  q.max_slab_slices = 5;
  ctr_error_clear();
  ctr_status st = ctr_fdk_plan_compute(g, &q, &p);
  printf("store none with max_slab_slices 5: %s: %s\n", ctr_status_name(st), ctr_error_detail());
  CHECK(st != CTR_OK);
  ctr_geometry_free(g);
}

/* ---- Absurd budgets: the error names the smallest budget that works ------------ */

/* Parses "needs 1.23 GiB of" from a detail: bytes and the unit's size. */
static int parse_need(const char *detail, double *bytes, double *unit) {
  const char *s = strstr(detail, "needs ");
  if (!s) return 0;
  double v;
  char u[8];
  if (sscanf(s, "needs %lf %7s", &v, u) != 2) return 0;
  static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double m = 1;
  for (int i = 0; i < 5; i++, m *= 1024)
    if (!strcmp(u, names[i])) {
      *bytes = v * m;
      *unit = m;
      return 1;
    }
  return 0;
}

/* The smallest budget (GPU: which 0, host: 1) that gives a plan, by
 * bisection in [lo, hi] (the planner succeeds at hi). */
static uint64_t true_minimum(const ctr_geometry *g, ctr_fdk_plan_request q, int which, uint64_t lo,
                             uint64_t hi) {
  uint64_t *budget = which ? &q.host_budget : &q.gpu_budget;
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    *budget = mid;
    if (ctr_fdk_plan_compute(g, &q, &p) == CTR_OK) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

/* The budget named in the detail (printed to 0.01 of its unit) works, and
 * it is the smallest that works: the planner's true minimum (bisection)
 * lies within the printing precision of it. `tolerance` allows a named
 * budget that is larger than the true minimum by that fraction (see the
 * notes at the callers). */
static void check_named_minimum(const char *what, const ctr_geometry *g, ctr_fdk_plan_request q,
                                int which, double tolerance) {
  double need = 0, unit = 1;
  const int ok = parse_need(ctr_error_detail(), &need, &unit);
  CHECK_MSG(ok, "%s: no 'needs SIZE' in '%s'", what, ctr_error_detail());
  if (!ok) return;
  const double slack = unit > 1 ? 0.006 * unit : 0.0;
  uint64_t *budget = which ? &q.host_budget : &q.gpu_budget;
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  *budget = (uint64_t)(need + slack) + 1;
  ctr_status st = ctr_fdk_plan_compute(g, &q, &p);
  CHECK_MSG(st == CTR_OK, "%s: the named minimum %.0f bytes (+%.0f) fails: %s", what, need, slack,
            ctr_error_detail());
  if (st != CTR_OK) return;
  check_plan(what, g, &q, &p);
  const uint64_t truth = true_minimum(g, q, which, 0, *budget);
  printf("%s: named %.0f bytes, smallest working budget %llu bytes (%+.2f %%)\n", what, need,
         (unsigned long long)truth, 100.0 * (need - (double)truth) / (double)truth);
  CHECK_MSG(need + slack >= (double)truth, "%s: named %.0f bytes, but %llu are needed", what,
            need, (unsigned long long)truth);
  CHECK_MSG(need - slack <= (double)truth * (1.0 + tolerance),
            "%s: named %.0f bytes, but %llu bytes suffice", what, need,
            (unsigned long long)truth);
}

static void test_absurd_budgets(void) {
  ctr_geometry *g = big_geometry(0);
  ctr_geometry *small = make_geometry(32, 40, 48, 40, 8.0, 9.0, 0);
  if (!g || !small) {
    ctr_geometry_free(g);
    ctr_geometry_free(small);
    return;
  }
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  ctr_fdk_plan_request q = cuda_request(64 * MiB, 100 * GiB);
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_DEVICE_OUT_OF_MEMORY, "(gpu_budget)");
  printf("gpu 64 MiB: %s\n", ctr_error_detail());
  CHECK(strstr(ctr_error_detail(), "64.00 MiB") != NULL); /* the budget given */
  check_named_minimum("cuda gpu minimum", g, q, 0, 0.0);
  q = cuda_request(80 * GiB, 16 * MiB);
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_OUT_OF_MEMORY, "(host_budget)");
  printf("host 16 MiB (cuda): %s\n", ctr_error_detail());
  /* The named minimum is the planner's own (found by bisection), whatever
   * store wins at it. */
  check_named_minimum("cuda host minimum", g, q, 1, 0.0);
  q = cpu_request(1 * KiB);
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_OUT_OF_MEMORY, "(host_budget)");
  printf("host 1 KiB (cpu): %s\n", ctr_error_detail());
  check_named_minimum("cpu host minimum", g, q, 1, 0.0);
  q = cpu_request(1 * KiB);
  CHECK_FAILS(ctr_fdk_plan_compute(small, &q, &p), CTR_E_OUT_OF_MEMORY, "(host_budget)");
  check_named_minimum("cpu small host minimum", small, q, 1, 0.0);
  q.input_in_memory = q.output_in_memory = 1;
  CHECK_FAILS(ctr_fdk_plan_compute(small, &q, &p), CTR_E_OUT_OF_MEMORY, "(host_budget)");
  /* With the output in memory one subvolume without a store is the cheapest
   * plan: the named minimum is its budget. */
  check_named_minimum("cpu small in-memory host minimum", small, q, 1, 0.0);
  q = cpu_request(0);
  CHECK_FAILS(ctr_fdk_plan_compute(small, &q, &p), CTR_E_OUT_OF_MEMORY, "(host_budget)");
  ctr_geometry_free(g);
  ctr_geometry_free(small);
}

/* ---- The output format's own buffers -------------------------------------------------- */

/* A plan for an OME-Zarr output counts the writer's rows of chunks: its
 * host bytes are the raw plan's and the format table's figure, which is at
 * least a row of 64 slices; a budget below that is refused naming
 * host_budget and the writer; a volume split's workers hold rows each. */
static void test_writer_buffers(void) {
  ctr_geometry *g = make_geometry(256, 90, 300, 300, 1.0, 1.5, 0);
  if (!g) return;
  ctr_fdk_plan praw = CTR_FDK_PLAN_INIT, pz = CTR_FDK_PLAN_INIT;
  ctr_fdk_plan_request q = cpu_request(64 * GiB);
  q.out_format = CTR_FORMAT_RAW;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &praw));
  q.out_format = CTR_FORMAT_ZARR;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &pz));
  const uint64_t own = ctr__format_writer_bytes(CTR_FORMAT_ZARR, 256, 256, 256, CTR_DTYPE_FLOAT32, 1);
  const uint64_t row = (uint64_t)64 * 256 * 256 * 4;
  CHECK(own >= row + row / 8u); /* level 0's row and level 1's */
  CHECK(pz.slab_slices == praw.slab_slices);
  CHECK(pz.host_bytes == praw.host_bytes + own);
  CHECK(ctr__format_writer_bytes(CTR_FORMAT_RAW, 256, 256, 256, CTR_DTYPE_FLOAT32, 1) == 0);
  CHECK(ctr__format_writer_bytes(CTR_FORMAT_AUTO, 256, 256, 256, CTR_DTYPE_FLOAT32, 1) == 0);
  /* uint16: half the bytes of the rows */
  CHECK(ctr__format_writer_bytes(CTR_FORMAT_ZARR, 256, 256, 256, CTR_DTYPE_UINT16, 1) < own);
  /* two streams hold more rows */
  CHECK(ctr__format_writer_bytes(CTR_FORMAT_ZARR, 256, 256, 256, CTR_DTYPE_FLOAT32, 2) >= own + 2 * row);
  /* a memory output has no writer */
  q.output_in_memory = 1;
  ctr_fdk_plan pm = CTR_FDK_PLAN_INIT;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &pm));
  q.output_in_memory = 0;
  /* a budget that the raw plan fits but not the writer's rows */
  q.host_budget = own - 1;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &pz), CTR_E_OUT_OF_MEMORY, "(host_budget), of which");
  CHECK(strstr(ctr_error_detail(), "OME-Zarr writer's own buffers") != NULL);
  q.out_format = CTR_FORMAT_RAW;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &pm), CTR_E_OUT_OF_MEMORY, "(host_budget) (");
  /* a budget that the raw plan fits, with less than the rows to spare: the
   * OME-Zarr plan is a smaller one */
  q.host_budget = praw.host_bytes + own / 2;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &pm));
  CHECK(same_plan(&pm, &praw));
  q.out_format = CTR_FORMAT_ZARR;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &pz));
  CHECK(pz.host_bytes <= q.host_budget);
  CHECK(!same_plan(&pz, &praw));
  /* an unknown format is refused */
  q.out_format = (ctr_file_format)99;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &pz), CTR_E_INVALID_ARGUMENT, "file format 99");
  ctr_geometry_free(g);
}

/* ---- Argument errors, describe ----------------------------------------------------- */

static void test_errors(void) {
  ctr_geometry *g = make_geometry(32, 40, 48, 40, 8.0, 9.0, 0);
  if (!g) return;
  ctr_fdk_plan p = CTR_FDK_PLAN_INIT;
  ctr_fdk_plan_request q = cpu_request(16 * GiB);
  q.version = CTR_FDK_PLAN_REQUEST_VERSION + 1;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT,
              "ctr_fdk_plan_request.version is 3: this library accepts ctr_fdk_plan_request versions 1 to 2");
  q.version = 0;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "ctr_fdk_plan_request_init");
  q = cpu_request(16 * GiB);
  q.store = CTR_FDK_STORE_DEVICE;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "CUDA");
  q = cpu_request(16 * GiB);
  q.device = CTR_DEVICE_AUTO;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "device");
  q = cpu_request(16 * GiB);
  q.store = (ctr_fdk_store)9;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "store");
  q = cpu_request(16 * GiB);
  q.proj_dtype = (ctr_dtype)7;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "dtype");
  q = cpu_request(16 * GiB);
  q.views_per_batch = -1;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "views_per_batch");
  q = cpu_request(16 * GiB);
  q.max_slab_slices = -3;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "max_slab_slices");
  q = cpu_request(16 * GiB);
  q.z0 = 30;
  q.nz = 5;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "[0, 32)");
  q.z0 = -1;
  q.nz = 5;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "[0, 32)");
  q.z0 = 4;
  q.nz = 0;
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, &p), CTR_E_INVALID_ARGUMENT, "nz");
  q = cpu_request(16 * GiB);
  CHECK_FAILS(ctr_fdk_plan_compute(NULL, &q, &p), CTR_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(ctr_fdk_plan_compute(g, NULL, &p), CTR_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(ctr_fdk_plan_compute(g, &q, NULL), CTR_E_INVALID_ARGUMENT, "NULL");
  /* Budgets for a CPU context: no GPU memory; some host memory. */
  ctr_context *ctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &ctx));
  uint64_t gb = 99, hb = 0;
  CHECK_OK(ctr_context_get_memory_budgets(ctx, &gb, &hb));
  CHECK(gb == 0 && hb > 0);
  ctr_context_free(ctx);

  /* describe: the subvolume count, slices, batches, store. */
  char text[512], expect[128];
  q = cpu_request(16 * GiB);
  q.max_slab_slices = 5;
  q.views_per_batch = 7;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  const int n = ctr_fdk_plan_describe(&p, text, sizeof text);
  printf("describe: %s\n", text);
  CHECK(n == (int)strlen(text) && n > 0);
  snprintf(expect, sizeof expect, "%lld subvolumes of 5 slices", (long long)p.nslabs);
  CHECK_MSG(p.nslabs == 7 && strstr(text, expect), "'%s' lacks '%s'", text, expect);
  CHECK(strstr(text, "last shorter") != NULL); /* 32 = 6 x 5 + 2 */
  CHECK(strstr(text, "7 views") != NULL);
  CHECK(strstr(text, ctr_fdk_store_name(p.store)) != NULL);
  char tiny[8];
  CHECK(ctr_fdk_plan_describe(&p, tiny, sizeof tiny) == n && strlen(tiny) == sizeof tiny - 1);
  q = cpu_request(16 * GiB);
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  ctr_fdk_plan_describe(&p, text, sizeof text);
  CHECK_MSG(strstr(text, "1 subvolume of 32 slices") && !strstr(text, "last shorter"), "'%s'",
            text);
  q.store = CTR_FDK_STORE_SCRATCH;
  q.max_slab_slices = 8;
  CHECK_OK(ctr_fdk_plan_compute(g, &q, &p));
  ctr_fdk_plan_describe(&p, text, sizeof text);
  CHECK_MSG(strstr(text, "4 subvolumes of 8 slices") && strstr(text, "scratch"), "'%s'", text);
  ctr_geometry *big = big_geometry(0);
  if (big) {
    ctr_fdk_plan_request qc = cuda_request(80 * GiB, 100 * GiB);
    CHECK_OK(ctr_fdk_plan_compute(big, &qc, &p));
    ctr_fdk_plan_describe(&p, text, sizeof text);
    printf("describe: %s\n", text);
    CHECK_MSG(strstr(text, "1 subvolume of 2048 slices") && strstr(text, "mirrored pairs") &&
                  strstr(text, "device"),
              "'%s'", text);
    ctr_geometry_free(big);
  }
  CHECK(ctr_fdk_plan_describe(NULL, text, sizeof text) > 0);
  ctr_geometry_free(g);
}

int main(void) {
  test_parse_size();
  test_cpu();
  test_cuda_big();
  test_sweep_cuda();
  test_sweep_cpu();
  test_absurd_budgets();
  test_errors();
  test_writer_buffers();
  return th_finish("test_plan");
}
