/* CPU backend of the streamed FDK pipeline: filters a padded batch in place
 * (FFTW) and backprojects it into a subvolume held in host memory. */
#include "conebeam/cpu/backproject.h"
#include "conebeam/cpu/engine_cpu.h"
#include "conebeam/fdk_internal.h"
#include "filter/filter.h"

#include <math.h>
#include <string.h>

typedef struct cpu_engine {
  ctr_context *ctx;
  const ctr_geometry *g;
  ctr_geometry *gx;     /* an offset detector's extended detector (ctr__fdk_filter_extend),
                           whose rows the batch holds; NULL: g's */
  ctr__fdk_filter filter;
  int have_filter;
  float *batch;         /* N' padded views */
  float *slab;          /* the subvolume: own buffer, or the caller's target */
  float *own;           /* own subvolume buffer (NULL when the output is in memory) */
  int64_t nb, z0, nz, cap;
  float in_scale;
  int64_t nonfinite, out_bad;
  float min, max;
  double t_filter, t_bp, t_reduce;
} cpu_engine;

static ctr_status cpu_slab_begin(ctr__engine *e, int64_t z0, int64_t nz, float *target) {
  cpu_engine *c = e->impl;
  c->slab = target ? target : c->own;
  if (!c->slab) CTR_FAIL(CTR_E_INTERNAL, "no subvolume buffer");
  if (nz > c->cap) CTR_FAIL(CTR_E_INTERNAL, "subvolume of %lld slices exceeds the plan's %lld",
                            (long long)nz, (long long)c->cap);
  c->z0 = z0;
  c->nz = nz;
  memset(c->slab, 0, (size_t)(c->g->vol.nx * c->g->vol.ny * nz) * sizeof(float));
  return CTR_OK;
}

/* The geometry of the batch's rows. */
static const ctr_geometry *batch_geometry(const cpu_engine *c) { return c->gx ? c->gx : c->g; }

static ctr__padded_views batch_views(const cpu_engine *c) {
  const int64_t nu = batch_geometry(c)->nu;
  const ctr__padded_views v = {c->batch + ctr__padded_origin(nu), ctr__padded_size(nu, c->g->nv),
                               ctr__padded_pitch(nu)};
  return v;
}

/* Views into the padded batch (their columns among the extended ones). */
static int64_t fill_batch(const cpu_engine *c, const void *src, ctr_dtype dtype, int64_t n,
                          float scale) {
  if (!c->gx) return ctr__fill_padded_scaled(c->g, src, dtype, n, scale, c->batch);
  return ctr__fill_padded_columns(c->g, src, dtype, n, scale, c->gx->nu, c->filter.pad_lo,
                                  c->batch);
}

/* Unpadded filtered views out of the padded batch, as wide as the batch's
 * rows (an offset detector's extended rows whole: the executor's kept
 * copies are ctr__fdk_row_width's nu_ext columns wide). */
static void copy_unpadded(const cpu_engine *c, int64_t n, float *dst) {
  const ctr__padded_views v = batch_views(c);
  const int64_t nu = batch_geometry(c)->nu, nv = c->g->nv;
  for (int64_t k = 0; k < n; k++)
    for (int64_t r = 0; r < nv; r++)
      memcpy(dst + (k * nv + r) * nu, v.base + k * v.view_stride + r * v.pitch,
             (size_t)nu * sizeof(float));
}

static ctr_status cpu_filter_bp(ctr__engine *e, int64_t v0, int64_t n, const void *raw,
                                ctr_dtype dtype, float *filtered_out) {
  cpu_engine *c = e->impl;
  if (n > c->nb) CTR_FAIL(CTR_E_INTERNAL, "batch of %lld views exceeds N' = %lld", (long long)n,
                          (long long)c->nb);
  const double t0 = ctr__now_s();
  c->nonfinite += fill_batch(c, raw, dtype, n, c->in_scale);
  const ctr__padded_views v = batch_views(c);
  CTR_CHECK(ctr__fdk_filter_run(c->ctx, &c->filter, v0, n, (float *)v.base, v.view_stride, v.pitch));
  if (filtered_out) copy_unpadded(c, n, filtered_out);
  const double t1 = ctr__now_s();
  ctr__bp_cpu(c->ctx, batch_geometry(c), v0, n, NULL, NULL, &v, c->slab, c->z0, c->nz);
  c->t_filter += t1 - t0;
  c->t_bp += ctr__now_s() - t1;
  return CTR_OK;
}

static ctr_status cpu_bp(ctr__engine *e, int64_t v0, int64_t n, const float *filtered) {
  cpu_engine *c = e->impl;
  if (!filtered) CTR_FAIL(CTR_E_INTERNAL, "the CPU backend keeps no filtered views");
  const double t0 = ctr__now_s();
  /* kept copies are as wide as the batch's rows (copy_unpadded) */
  ctr__fill_padded_scaled(batch_geometry(c), filtered, CTR_DTYPE_FLOAT32, n, 1.0f, c->batch);
  const ctr__padded_views v = batch_views(c);
  ctr__bp_cpu(c->ctx, batch_geometry(c), v0, n, NULL, NULL, &v, c->slab, c->z0, c->nz);
  c->t_bp += ctr__now_s() - t0;
  return CTR_OK;
}

/* A subvolume written into the caller's volume is checked here; one that
 * goes to a file, when its slices are downloaded (so that a projection
 * split's sum is what is checked, not a partial). */
static ctr_status cpu_slab_end(ctr__engine *e) {
  cpu_engine *c = e->impl;
  if (c->slab != c->own)
    c->out_bad += ctr__slab_stats(c->slab, c->g->vol.nx * c->g->vol.ny * c->nz, &c->min, &c->max);
  return CTR_OK;
}

static void cpu_range(ctr__engine *e, float *mn, float *mx) {
  cpu_engine *c = e->impl;
  *mn = c->min;
  *mx = c->max;
}

static ctr_status cpu_download(ctr__engine *e, int64_t k0, int64_t k1, float *dst) {
  cpu_engine *c = e->impl;
  const int64_t slice = c->g->vol.nx * c->g->vol.ny;
  if (k0 < 0 || k1 > c->nz || k0 > k1)
    CTR_FAIL(CTR_E_INTERNAL, "download of slices [%lld, %lld) of a %lld-slice subvolume",
             (long long)k0, (long long)k1, (long long)c->nz);
  float *src = c->slab + k0 * slice;
  if (c->slab == c->own) c->out_bad += ctr__slab_stats(src, (k1 - k0) * slice, &c->min, &c->max);
  memcpy(dst, src, (size_t)((k1 - k0) * slice) * sizeof(float));
  return CTR_OK;
}

static ctr_status cpu_add_from(ctr__engine *e, ctr__engine *src, int64_t k0, int64_t k1) {
  cpu_engine *c = e->impl;
  const cpu_engine *s = src->impl;
  const int64_t slice = c->g->vol.nx * c->g->vol.ny;
  const double t0 = ctr__now_s();
  float *d = c->slab + k0 * slice;
  const float *a = s->slab + k0 * slice;
  const int64_t n = (k1 - k0) * slice;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) d[i] += a[i];
  c->t_reduce += ctr__now_s() - t0;
  return CTR_OK;
}

static void cpu_timings(ctr__engine *e, ctr_fdk_stream_timings *t) {
  cpu_engine *c = e->impl;
  t->filter += c->t_filter;
  t->backproject += c->t_bp;
  t->reduce += c->t_reduce;
}

static int64_t cpu_nonfinite(ctr__engine *e) { return ((cpu_engine *)e->impl)->nonfinite; }
static int64_t cpu_out_nonfinite(ctr__engine *e) { return ((cpu_engine *)e->impl)->out_bad; }

static void cpu_destroy(ctr__engine *e) {
  cpu_engine *c = e->impl;
  if (!c) return;
  if (c->have_filter) ctr__fdk_filter_free(&c->filter);
  ctr_geometry_free(c->gx);
  ctr__aligned_free(c->batch);
  ctr__aligned_free(c->own);
  free(c);
}

static const ctr__engine_ops cpu_ops = {
    .slab_begin = cpu_slab_begin, .filter_bp = cpu_filter_bp, .bp = cpu_bp,
    .slab_end = cpu_slab_end,     .download = cpu_download,   .add_from = cpu_add_from,
    .timings = cpu_timings,       .nonfinite = cpu_nonfinite, .out_nonfinite = cpu_out_nonfinite,
    .range = cpu_range,           .destroy = cpu_destroy};

static ctr_status cpu_create(ctr_context *ctx, int device, const ctr_geometry *g,
                             const ctr_fdk_options *o, const ctr_fdk_plan *plan, double input_scale,
                             int64_t view_begin, int64_t view_end, ctr__engine **out) {
  ctr_status st = CTR_OK;
  (void)device;
  (void)view_begin; /* the CPU keeps no views between calls */
  (void)view_end;
  ctr__engine *e = ctr__calloc(1, sizeof *e, "CPU backend");
  cpu_engine *c = ctr__calloc(1, sizeof *c, "CPU backend");
  if (!e || !c) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  e->ops = &cpu_ops;
  e->impl = c;
  c->ctx = ctx;
  c->g = g;
  c->nb = plan->views_per_batch;
  c->cap = plan->slab_slices;
  c->in_scale = (float)(1.0 / input_scale);
  c->min = INFINITY;
  c->max = -INFINITY;
  if (o->interp == CTR_INTERP_TEXTURE)
    ctr__log(ctx, CTR_LOG_WARNING, "texture interpolation needs a GPU; the CPU uses exact interpolation");
  CTR_CHECK_GOTO(st, ctr__fdk_filter_init(ctx, g, o, &c->filter));
  c->have_filter = 1;
  CTR_CHECK_GOTO(st, ctr__fdk_filter_extend(o, &c->filter));
  if (c->filter.nu_ext != g->nu)
    CTR_CHECK_GOTO(st, ctr__geometry_columns(g, c->filter.pad_lo, c->filter.nu_ext, &c->gx));
  c->batch = ctr__aligned_alloc(
      (size_t)(c->nb * ctr__padded_size(batch_geometry(c)->nu, g->nv)) * sizeof(float),
      "padded projection batch");
  /* its own subvolume: for a file, or for a projection split's partial sums */
  const int own = plan->host_slab_buffers || (plan->workers > 1 && plan->split == CTR_FDK_SPLIT_PROJECTIONS);
  if (own)
    c->own = ctr__aligned_alloc((size_t)(g->vol.nx * g->vol.ny * c->cap) * sizeof(float),
                                "subvolume");
  if (!c->batch || (own && !c->own)) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  *out = e;
  return CTR_OK;
cleanup:
  if (e) {
    cpu_destroy(e);
    free(e);
  } else {
    free(c);
  }
  return st;
}

/* Largest padded batch (the filter's and backprojector's working set). */
#define CPU_BATCH_BYTES ((uint64_t)256 << 20)
#define CPU_DEFAULT_BATCH 32

static int64_t cpu_first_batch(const ctr_geometry *g) {
  const uint64_t per = (uint64_t)ctr__padded_size(g->nu, g->nv) * 4u;
  int64_t b = CPU_DEFAULT_BATCH;
  while (b > 1 && (uint64_t)b * per > CPU_BATCH_BYTES) b /= 2;
  return b;
}

/* The engine's memory: the padded batch it filters in place, and the
 * subvolume in host memory unless it goes straight into the caller's
 * volume. */
static void cpu_cost(const ctr_geometry *g, const ctr__plan_candidate *c, ctr__engine_cost *out) {
  memset(out, 0, sizeof *out);
  out->host_fixed = (uint64_t)ctr__padded_size(g->nu, g->nv) * 4u * (uint64_t)c->views_per_batch;
  if (!c->req->output_in_memory || (c->workers > 1 && c->split == CTR_FDK_SPLIT_PROJECTIONS))
    out->host_per_slice = (uint64_t)g->vol.nx * (uint64_t)g->vol.ny * 4u;
}

const ctr__engine_backend ctr__engine_backend_cpu = {
    .head = {"cpu", CTR_DEVICE_CPU, 1},
    .first_batch = cpu_first_batch,
    .device_store = 0,
    .row_window = 1,
    .extends_rows = 1,
    .cost = cpu_cost,
    .create = cpu_create,
    .bpj_create = ctr__cpu_bpj_create,
    .bpj_add = ctr__cpu_bpj_add,
    .bpj_read = ctr__cpu_bpj_read,
    .bpj_reset = ctr__cpu_bpj_reset,
    .bpj_free = ctr__cpu_bpj_free,
    .bpj_slab = ctr__cpu_bpj_slab,
    .reference = ctr__cpu_reference,
};
