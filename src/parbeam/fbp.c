/* Parallel-beam filtered back projection: options, the ramp filter of
 * sinogram rows, dispatch to the context's backend (backend.h) and the
 * chunked host drivers (docs/parallel-beam.md). */
#include "filter/filter.h"
#include "parbeam/backend.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Slices per chunk of ctr_fbp, and the most bytes of sinograms a chunk
 * copies (a chunk holds at least one slice). */
#define CTR__FBP_CHUNK_SLICES 64
#define CTR__FBP_CHUNK_BYTES ((int64_t)256 << 20)

/* The filter's scale. The spatial Ram-Lak kernel for unit bins (h(0) = 1/4,
 * h(odd n) = -1/(pi n)^2, ctr__ramp) applied to line integrals in bins and
 * summed with weights dtheta gives the density; the geometry's weights are
 * dtheta / pixel_size, so line integrals in mm (density in 1/mm times mm)
 * come back as the density. Checked by tests/test_fbp.c (disks and
 * Shepp-Logan reconstruct to their densities within 1 %). */
#define CTR__FBP_FILTER_SCALE 1.0f

static ctr_status resolve_options(const char *fn, const ctr_fbp_options *opts, ctr_fbp_options *o) {
  if (!opts) {
    *o = (ctr_fbp_options)CTR_FBP_OPTIONS_INIT;
    return CTR_OK;
  }
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fbp_options, o, opts));
  opts = o;
  if (o->counts) CTR_CHECK(ctr__struct_check(&ctr__struct_value_counts, o->counts));
  if (o->timings) CTR_CHECK(ctr__struct_check(&ctr__struct_fbp_timings, o->timings));
  if (!strcmp(ctr_window_name(opts->window), "unknown"))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_options.window", CTR__V_INT(opts->window),
             "%s: ctr_fbp_options.window = %d, expected ram-lak, shepp-logan, cosine, hamming or "
             "hann",
             fn, (int)opts->window);
  if (!(opts->cutoff > 0.0 && opts->cutoff <= 1.0))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_options.cutoff",
             CTR__V_REAL(opts->cutoff),
             "%s: ctr_fbp_options.cutoff = %g, expected 0 < cutoff <= 1 (fraction of Nyquist)", fn,
             opts->cutoff);
  if (opts->interp != CTR_FBP_LINEAR && opts->interp != CTR_FBP_NEAREST)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_options.interp", CTR__V_INT(opts->interp),
             "%s: ctr_fbp_options.interp = %d, expected CTR_FBP_LINEAR or CTR_FBP_NEAREST", fn,
             (int)opts->interp);
  *o = *opts;
  return CTR_OK;
}

/* The data policy (src/core/values.c) for `bad` data of one kind: an
 * error in strict mode; else added to o->counts when the caller collects
 * them, or a warning with the count. */
static ctr_status policy(const ctr_context *ctx, const ctr_fbp_options *o, int64_t bad,
                         int64_t *counter, const char *what, const char *kind, const char *fate) {
  if (bad <= 0) return CTR_OK;
  if (counter && !o->strict) {
    *counter += bad;
    return CTR_OK;
  }
  return ctr__values_report_kind(ctx, o->strict, bad, what, kind, fate);
}

/* The caller's counter of one kind, if its version of ctr_value_counts has
 * it (else the count is logged). */
static int64_t *count_of(const ctr_fbp_options *o, size_t offset) {
  if (!o->counts || !ctr__struct_holds(&ctr__struct_value_counts, o->counts, offset,
                                       sizeof(int64_t)))
    return NULL;
  return (int64_t *)((char *)o->counts + offset);
}
#define CTR__COUNT(o, field) count_of((o), offsetof(ctr_value_counts, field))

/* The backend ran the data policy (non-finite values replaced by 0, so
 * nothing non-finite leaves the library): bad[0] input values and bad[1]
 * slice values it replaced, reported. */
static ctr_status counts(const ctr_context *ctx, const char *fn, const ctr_fbp_options *o,
                         const int64_t bad[2]) {
  char what[64];
  snprintf(what, sizeof what, "%s: sinograms", fn);
  CTR_CHECK(policy(ctx, o, bad[0], CTR__COUNT(o, input), what, CTR__BAD_VALUES, "replaced by 0"));
  snprintf(what, sizeof what, "%s: slices", fn);
  return policy(ctx, o, bad[1], CTR__COUNT(o, output), what, CTR__BAD_VALUES, "replaced by 0");
}

static ctr_status check_call(const char *fn, const ctr_parallel_geometry *g, int64_t nslices,
                             const void *a, const char *aname, const void *b, const char *bname) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: geometry is NULL", fn);
  if (nslices < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: nslices = %lld, expected >= 1", fn, (long long)nslices);
  if (!a) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s is NULL", fn, aname);
  if (bname && !b) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s is NULL", fn, bname);
  return CTR_OK;
}

/* Filters rows [0, nrows) of nb values at sino with the ramp r. */
static ctr_status filter_rows(const ctr_context *ctx, const ctr__ramp *r, int64_t nrows,
                              int64_t nb, float *sino) {
  int failed = 0;
#pragma omp parallel num_threads(ctr__num_threads(ctx))
  {
    ctr__ramp_work *w = ctr__ramp_work_create(r);
    if (!w) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(static)
    for (int64_t row = 0; row < nrows; row++)
      if (w) ctr__ramp_apply(r, w, sino + row * nb, NULL, CTR__FBP_FILTER_SCALE);
    ctr__ramp_work_free(w);
  }
  /* The detail was set on a worker thread; set it here. */
  if (failed)
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot allocate the ramp filter's work buffers (%lld floats)",
             (long long)ctr__ramp_padded(r));
  return CTR_OK;
}

ctr_status ctr_fbp_filter(ctr_context *ctx, const ctr_parallel_geometry *g,
                          const ctr_fbp_options *opts, int64_t nslices, float *sino) {
  static const char fn[] = "ctr_fbp_filter";
  ctr_fbp_options o;
  CTR_CHECK(check_call(fn, g, nslices, sino, "sino", NULL, NULL));
  CTR_CHECK(resolve_options(fn, opts, &o));
  CTR_CHECK(ctr__gpu_rule(ctx, fn, 0, sino, "sino", NULL, NULL)); /* filters on the host */
  /* The data policy: bad values would spread over whole rows. */
  const int64_t n = nslices * g->p.nangles * g->p.nbins;
  const int64_t bad = ctr__values_count(sino, n);
  CTR_CHECK(policy(ctx, &o, bad, CTR__COUNT(&o, input), "ctr_fbp_filter: sinograms",
                   CTR__BAD_VALUES, "replaced by 0"));
  if (bad) ctr__values_sanitize(sino, n);
  ctr__ramp *r = NULL;
  CTR_CHECK(ctr__ramp_create(g->p.nbins, o.window, o.cutoff, &r));
  const ctr_status st = filter_rows(ctx, r, nslices * g->p.nangles, g->p.nbins, sino);
  ctr__ramp_free(r);
  return st;
}

/* A tilted axis (laminography) has its own backprojection, on the backends
 * that have it (the CPU's and the GPU's); one without refuses, saying what
 * runs it. */
static ctr_status lamino_backend(const char *fn, const ctr_parallel_geometry *g,
                                 const ctr__par_backend *be) {
  if (be->lamino_backproject) return CTR_OK;
  CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_parallel_params.tilt_deg", CTR__V_REAL(g->p.tilt_deg),
                       "%s: a tilted rotation axis (tilt_deg %g: laminography) has no filtered "
                       "backprojection on %s: use a CPU context (ctrecon: --device cpu), or the "
                       "iterative solvers (ctr_projector_create_parallel, ctrecon iterate)",
                       fn, g->p.tilt_deg, be->head.name);
}

/* ctr_fbp of a tilted geometry: every slice needs every detector row, so
 * the views are filtered whole (a copy of all of them: nbins x nangles x
 * nrows floats) and backprojected into all nz slices at once. */
static ctr_status fbp_lamino(ctr_context *ctx, const ctr_parallel_geometry *g,
                             const ctr_fbp_options *o, const ctr__par_backend *be,
                             const float *src, int64_t nz, float *dst) {
  const int64_t n = g->p.nbins * g->p.nangles * g->p.nrows;
  const int64_t bad = ctr__values_count(src, n);
  CTR_CHECK(policy(ctx, o, bad, CTR__COUNT(o, input), "ctr_fbp: sinograms", CTR__BAD_VALUES,
                   "replaced by 0"));
  float *work = ctr__aligned_alloc(sizeof(float) * (size_t)n, "filtered laminography views");
  if (!work) return CTR_E_OUT_OF_MEMORY;
  memcpy(work, src, sizeof(float) * (size_t)n);
  if (bad) ctr__values_sanitize(work, n);
  ctr_status st = CTR_OK;
  ctr__ramp *r = NULL;
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "fbp", 0.0));
  CTR_CHECK_GOTO(st, ctr__ramp_create(g->p.nbins, o->window, o->cutoff, &r));
  CTR_CHECK_GOTO(st, filter_rows(ctx, r, g->p.nangles * g->p.nrows, g->p.nbins, work));
  int64_t out_bad[2] = {0, 0};
  CTR_CHECK_GOTO(st, be->lamino_backproject(ctx, g, o, nz, work, dst, &out_bad[1]));
  CTR_CHECK_GOTO(st, counts(ctx, "ctr_fbp", o, out_bad));
  st = ctr__progress(ctx, "fbp", 1.0);
cleanup:
  ctr__ramp_free(r);
  ctr__aligned_free(work);
  return st;
}

ctr_status ctr_fbp_backproject(ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *opts, int64_t nslices, const float *sino,
                               float *slices) {
  static const char fn[] = "ctr_fbp_backproject";
  ctr_fbp_options o;
  CTR_CHECK(check_call(fn, g, nslices, sino, "sino", slices, "slices"));
  CTR_CHECK(resolve_options(fn, opts, &o));
  const int tilted = ctr__par_tilted(g);
  CTR_CHECK(ctr__gpu_rule(ctx, fn, !tilted, sino, "sino", slices, "slices"));
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  int64_t bad[2] = {0, 0}; /* the data policy on the backend: slices may be GPU memory */
  if (tilted) {
    CTR_CHECK(lamino_backend(fn, g, be));
    CTR_CHECK(be->lamino_backproject(ctx, g, &o, nslices, sino, slices, &bad[1]));
  } else {
    CTR_CHECK(be->backproject(ctx, g, &o, nslices, sino, slices, &bad[1]));
  }
  return counts(ctx, fn, &o, bad);
}

/* A 3D float32 contiguous array of d0 x d1 x d2 (d2 < 0: any >= 1);
 * `expect` names the dimensions in the detail. */
static ctr_status check_array(const char *what, const ctr_array *a, const char *expect, int64_t d0,
                              int64_t d1, int64_t d2) {
  if (!a) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp: %s is NULL", what);
  if (!a->data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp: %s has no data", what);
  if (a->dtype != CTR_DTYPE_FLOAT32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp: %s dtype is %s, expected float32", what,
             ctr_dtype_name(a->dtype));
  if (a->ndim != 3 || a->dims[0] != d0 || a->dims[1] != d1 || a->dims[2] < 1 ||
      (d2 >= 0 && a->dims[2] != d2)) {
    char want[64];
    if (d2 >= 0)
      snprintf(want, sizeof want, "%lld x %lld x %lld", (long long)d0, (long long)d1, (long long)d2);
    else
      snprintf(want, sizeof want, "%lld x %lld x (>= 1)", (long long)d0, (long long)d1);
    CTR_FAIL(CTR_E_SIZE_MISMATCH, "ctr_fbp: %s is %lld x %lld x %lld (ndim %d), expected %s = %s",
             what, (long long)(a->ndim > 0 ? a->dims[0] : 0),
             (long long)(a->ndim > 1 ? a->dims[1] : 0), (long long)(a->ndim > 2 ? a->dims[2] : 0),
             a->ndim, expect, want);
  }
  return CTR_OK;
}

/* ctr_fbp's host driver: chunks of sinograms filtered on the host and
 * backprojected by the backend. */
static ctr_status fbp_host(ctr_context *ctx, const ctr_parallel_geometry *g,
                           const ctr_fbp_options *opts, const ctr__par_backend *be,
                           const float *src, int64_t ns, float *dst) {
  ctr_status st = CTR_OK;
  const ctr_fbp_options o = *opts;
  const int64_t nb = g->p.nbins, na = g->p.nangles, nx = g->p.nx, ny = g->p.ny;
  const int64_t per_slice = nb * na;
  /* The data policy: bad sinogram values would spread over whole rows in
   * the filter (a backend with its own ctr_fbp replaces them itself). */
  const int64_t bad = ctr__values_count(src, ns * per_slice);
  CTR_CHECK(policy(ctx, &o, bad, CTR__COUNT(&o, input), "ctr_fbp: sinograms", CTR__BAD_VALUES,
                   "replaced by 0"));
  int64_t chunk = CTR__FBP_CHUNK_BYTES / (per_slice * (int64_t)sizeof(float));
  if (chunk > CTR__FBP_CHUNK_SLICES) chunk = CTR__FBP_CHUNK_SLICES;
  if (chunk < 1) chunk = 1;
  if (chunk > ns) chunk = ns;
  ctr__ramp *r = NULL;
  float *work = ctr__aligned_alloc(sizeof(float) * (size_t)(chunk * per_slice), "sinogram chunk");
  if (!work) return CTR_E_OUT_OF_MEMORY;
  CTR_CHECK_GOTO(st, ctr__ramp_create(nb, o.window, o.cutoff, &r));
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "fbp", 0.0));
  for (int64_t s0 = 0; s0 < ns; s0 += chunk) {
    const int64_t n = ns - s0 < chunk ? ns - s0 : chunk;
    memcpy(work, src + s0 * per_slice, sizeof(float) * (size_t)(n * per_slice));
    if (bad) ctr__values_sanitize(work, n * per_slice);
    CTR_CHECK_GOTO(st, filter_rows(ctx, r, n * na, nb, work));
    int64_t out_bad[2] = {0, 0};
    CTR_CHECK_GOTO(st, be->backproject(ctx, g, &o, n, work, dst + s0 * nx * ny, &out_bad[1]));
    CTR_CHECK_GOTO(st, counts(ctx, "ctr_fbp", &o, out_bad));
    CTR_CHECK_GOTO(st, ctr__progress(ctx, "fbp", (double)(s0 + n) / (double)ns));
  }
cleanup:
  ctr__ramp_free(r);
  ctr__aligned_free(work);
  return st;
}

ctr_status ctr_fbp(ctr_context *ctx, const ctr_parallel_geometry *g, const ctr_fbp_options *opts,
                   const ctr_array *sinograms, ctr_array *slices) {
  ctr_fbp_options o;
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp: geometry is NULL");
  CTR_CHECK(resolve_options("ctr_fbp", opts, &o));
  const int64_t nb = g->p.nbins, na = g->p.nangles, nx = g->p.nx, ny = g->p.ny;
  const int tilted = ctr__par_tilted(g);
  if (tilted || g->p.nrows > 0) /* the rows of the geometry */
    CTR_CHECK(check_array("sinograms", sinograms, "nbins x nangles x nrows", nb, na, g->p.nrows));
  else
    CTR_CHECK(check_array("sinograms", sinograms, "nbins x nangles x nslices", nb, na, -1));
  const int64_t ns = sinograms->dims[2];
  if (tilted) /* slices of any count: a row is not a slice */
    CTR_CHECK(check_array("slices", slices, "nx x ny x nz", nx, ny, -1));
  else
    CTR_CHECK(check_array("slices", slices, "nx x ny x nslices", nx, ny, ns));
  CTR_CHECK(ctr__gpu_rule(ctx, "ctr_fbp", !tilted, sinograms->data, "sinograms", slices->data,
                          "slices"));
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  if (tilted) {
    CTR_CHECK(lamino_backend("ctr_fbp", g, be));
    return fbp_lamino(ctx, g, &o, be, sinograms->data, slices->dims[2], slices->data);
  }
  if (be->sinograms) {
    int64_t bad[2] = {0, 0};
    CTR_CHECK(be->sinograms(ctx, g, &o, sinograms->data, ns, slices->data, bad));
    return counts(ctx, "ctr_fbp", &o, bad);
  }
  return fbp_host(ctx, g, &o, be, sinograms->data, ns, slices->data);
}

ctr_status ctr_fbp_projections(ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *opts, const ctr_array *proj,
                               const float *flat, const float *dark, int64_t row0,
                               ctr_array *slices) {
  ctr_status st = CTR_OK;
  ctr_fbp_options o;
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_projections: geometry is NULL");
  CTR_CHECK(resolve_options("ctr_fbp_projections", opts, &o));
  if (ctr__par_tilted(g))
    CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_parallel_params.tilt_deg",
                         CTR__V_REAL(g->p.tilt_deg),
                         "ctr_fbp_projections: a tilted rotation axis (tilt_deg %g) makes every "
                         "slice need every detector row, and this call reconstructs chunks of "
                         "rows: make the sinograms of all rows (ctr_flatfield_sinograms) and call "
                         "ctr_fbp", g->p.tilt_deg);
  if (!proj || !proj->data || proj->ndim != 3 ||
      (proj->dtype != CTR_DTYPE_FLOAT32 && proj->dtype != CTR_DTYPE_UINT16))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_projections: projections must be a 3D float32 or "
             "uint16 array (nbins x nrows x nangles)");
  const int64_t nb = g->p.nbins, na = g->p.nangles, nrows = proj->dims[1];
  if (proj->dims[0] != nb || proj->dims[2] != na)
    CTR_FAIL(CTR_E_SIZE_MISMATCH, "ctr_fbp_projections: projections are %lld x %lld x %lld, "
             "expected nbins %lld x nrows x nangles %lld", (long long)proj->dims[0],
             (long long)proj->dims[1], (long long)proj->dims[2], (long long)nb, (long long)na);
  if (!flat) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_projections: flat is NULL");
  CTR_CHECK(check_array("slices", slices, "nx x ny x nslices", g->p.nx, g->p.ny, -1));
  {
    const void *ptr[4] = {proj->data, flat, dark, slices->data};
    const char *const name[4] = {"projections", "flat", "dark", "slices"};
    int gpu[4];
    CTR_CHECK(ctr__gpu_arrays(ctx, "ctr_fbp_projections", 0, 4, ptr, name, gpu));
  }
  const int64_t ns = slices->dims[2];
  if (row0 < 0 || row0 + ns > nrows)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_projections: rows [%lld, %lld) outside the "
             "projections' %lld rows", (long long)row0, (long long)(row0 + ns), (long long)nrows);
  /* The data policy for the calibration, in host code for both backends. */
  CTR_CHECK(policy(ctx, &o,
                   ctr__flat_bad_pixels(flat + row0 * nb, dark ? dark + row0 * nb : NULL, ns * nb),
                   CTR__COUNT(&o, calibration), "ctr_fbp_projections: flat/dark",
                   "pixels with flat <= dark or a non-finite flat or dark", "their sinogram "
                   "values set to 0"));
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  if (be->projections) {
    int64_t bad[2] = {0, 0};
    CTR_CHECK(be->projections(ctx, g, &o, proj->data, proj->dtype, nrows, flat, dark, row0, ns,
                              slices->data, bad));
    return counts(ctx, "ctr_fbp_projections", &o, bad);
  }
  /* The host driver: chunks of rows through sinograms in host memory. */
  int64_t chunk = CTR__FBP_CHUNK_BYTES / (nb * na * (int64_t)sizeof(float));
  if (chunk > CTR__FBP_CHUNK_SLICES) chunk = CTR__FBP_CHUNK_SLICES;
  if (chunk < 1) chunk = 1;
  if (chunk > ns) chunk = ns;
  float *sino = ctr__aligned_alloc(sizeof(float) * (size_t)(chunk * nb * na), "sinogram chunk");
  if (!sino) return CTR_E_OUT_OF_MEMORY;
  float *out = slices->data;
  for (int64_t s0 = 0; s0 < ns; s0 += chunk) {
    const int64_t n = ns - s0 < chunk ? ns - s0 : chunk;
    int64_t clamped = 0;
    CTR_CHECK_GOTO(st, ctr_flatfield_sinograms(proj->data, proj->dtype, nb, nrows, na, flat, dark,
                                               row0 + s0, n, sino, &clamped));
    CTR_CHECK_GOTO(st, policy(ctx, &o, clamped, CTR__COUNT(&o, clamped),
                              "ctr_fbp_projections: projections", "transmissions (p - dark) / "
                              "(flat - dark) below 1e-6 or NaN", "clamped to 1e-6"));
    const int64_t sd[3] = {nb, na, n}, vd[3] = {g->p.nx, g->p.ny, n};
    const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
    ctr_array va = ctr_array_make(out + s0 * g->p.nx * g->p.ny, CTR_DTYPE_FLOAT32, 3, vd);
    CTR_CHECK_GOTO(st, ctr_fbp(ctx, g, &o, &sa, &va));
  }
cleanup:
  ctr__aligned_free(sino);
  return st;
}
