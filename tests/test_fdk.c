/* FDK: reconstructions of analytic phantoms from their exact projections,
 * the fast CPU backprojector against the double-precision reference, split
 * and batch equivalence, and argument errors.
 *
 * Built twice (RTK's way): as test_fdk on the CPU backend, and with
 * CTR_TEST_CUDA as test_gpu_fdk_foundation, where every ctr_fdk call runs
 * on the GPU (exit 77, skipped, without one). */
#include "harness.h"
#if defined(CTR_TEST_CUDA) && CTR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "bp_check.h"
#include "conebeam/cpu/backproject.h"
#include "filter/filter.h"

#define PI 3.14159265358979323846

/* The backend under test: NULL (CPU) or a CUDA context. */
static ctr_context *g_ctx;

#ifdef CTR_TEST_CUDA
/* On the GPU a slab uses other kernels than the whole volume (mirrored pairs
 * need the whole volume) and the batch size is the kernel's own, so splits
 * agree to float rounding (exact interpolation) rather than bit for bit. */
static int same_volume(const float *a, const float *b, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += (double)b[i] * b[i];
  }
  return s > 0 && sqrt(e / s) < 1e-5;
}
#define SPLIT_INTERP CTR_INTERP_EXACT
#else
static int same_volume(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}
#define SPLIT_INTERP CTR_INTERP_DEFAULT
#endif

typedef struct recon {
  ctr_geometry *g;
  float *proj, *vol, *truth;
  int64_t n; /* volume edge */
} recon;

static ctr_geometry *circular(int64_t n, int64_t nviews, double range, int64_t det, double offset_u,
                              ctr_rotation dir) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 4.0 * n;
  p.sdd = 6.0 * n;
  p.nu = det;
  p.nv = det;
  p.du = p.dv = 1.5 * n / det * 1.35;
  p.offset_u = offset_u;
  p.nviews = nviews;
  p.angle_range_deg = range;
  p.angle_start_deg = 30;
  p.direction = dir;
  ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g)); /* NULL only after a failed check */
  return g;
}


/* Errors against the voxelised truth, central 60 % of slices (FDK's
 * cone-beam approximation degrades towards the top and bottom). */
static ctr_volume_error compare(const float *v, const float *t, int64_t n) {
  ctr_volume_error e = CTR_VOLUME_ERROR_INIT;
  CHECK_OK(ctr_volume_compare(v, t, n, n, n, n / 5, &e));
  return e;
}
static double rmse_flat(const float *v, const float *t, int64_t n) { return compare(v, t, n).rmse_flat; }

static int make_recon(recon *r, ctr_phantom *ph, ctr_geometry *g, const ctr_fdk_options *o) {
  memset(r, 0, sizeof *r);
  r->g = g;
  CHECK_MSG(g != NULL, "no geometry to reconstruct (its creation failed)");
  if (!g) return 0;
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  ctr_volume_geometry vg = ctr_geometry_get_volume(g);
  r->n = vg.nx;
  const int64_t nviews = ctr_geometry_get_view_count(g);
  r->proj = malloc(sizeof(float) * nu * nv * nviews);
  r->vol = malloc(sizeof(float) * vg.nx * vg.ny * vg.nz);
  r->truth = malloc(sizeof(float) * vg.nx * vg.ny * vg.nz);
  int64_t pd[3] = {nu, nv, nviews}, vd[3] = {vg.nx, vg.ny, vg.nz};
  ctr_array pa = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(r->vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array ta = ctr_array_make(r->truth, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  CHECK_OK(ctr_phantom_voxelize(NULL, ph, &vg, 2, 0, &ta));
  ctr_status st = ctr_fdk(g_ctx, g, o, &pa, &va);
  CHECK_OK(st);
  return st == CTR_OK;
}

static void free_recon(recon *r) {
  free(r->proj);
  free(r->vol);
  free(r->truth);
  ctr_geometry_free(r->g);
}

/* Shepp-Logan, 96^3 from 240 views, Hann window. Away from edges the
 * reconstruction matches the phantom to ~1e-3 (cone-beam approximation and
 * ringing); 0.005 is 2.5 % of the brain value 0.2 and half the smallest
 * contrast step 0.01 of the original phantom, so any scale, offset or
 * geometry error fails. Over the whole head the RMSE is edge-dominated
 * (the 0.8 skull step blurred over ~1 voxel: ~0.07); a misregistered
 * reconstruction by one voxel gives > 0.12. The central profile along x
 * through the ventricles must follow the truth wherever the truth is flat. */
static void test_shepp_logan(void) {
  const int64_t n = 96;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  recon r;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  if (make_recon(&r, ph, circular(n, 240, 360, 160, 0, CTR_ROTATION_CCW), &o)) {
    const ctr_volume_error ce = compare(r.vol, r.truth, n);
    const double ef = ce.rmse_flat, eh = ce.rmse_object;
    printf("shepp-logan 96^3 full scan: RMSE %.4f away from edges, %.4f over the head\n", ef, eh);
    CHECK_MSG(ef < 0.005, "RMSE away from edges %g", ef);
    CHECK_MSG(eh < 0.09, "RMSE over the head %g", eh);
    const int64_t z = n / 2, y = n / 2;
    double worst = 0;
    for (int64_t x = 2; x < n - 2; x++) {
      const float *t = r.truth + (z * n + y) * n;
      if (t[x - 2] != t[x] || t[x - 1] != t[x] || t[x + 1] != t[x] || t[x + 2] != t[x]) continue;
      worst = fmax(worst, fabs(r.vol[(z * n + y) * n + x] - t[x]));
    }
    CHECK_MSG(worst < 0.02, "central profile deviates by %g where the truth is flat", worst);
  }
  free_recon(&r);
  ctr_phantom_free(ph);
}

/* The RMSE away from edges of FDK with options o of ph's exact projections
 * for geometry g (freed here); 0 when the run failed (its checks say so). */
static double rmse_of(ctr_phantom *ph, ctr_geometry *g, const ctr_fdk_options *o) {
  recon r;
  const double e = make_recon(&r, ph, g, o) ? rmse_flat(r.vol, r.truth, r.n) : 0;
  free_recon(&r);
  return e;
}

/* A short scan (180 deg + fan + margin) with Parker weights reconstructs as
 * well as a full scan, in both rotation directions and with a shifted
 * detector; without Parker weights it does not. */
static void test_short_scan(void) {
  const int64_t n = 64;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  const double fan = 2 * atan(0.5 * 1.35 * 1.5 * n / (6.0 * n)) * 180 / PI;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  const double full_err = rmse_of(ph, circular(n, 200, 360, 112, 0, CTR_ROTATION_CCW), &o);
  for (int dir = -1; dir <= 1; dir += 2) {
    recon r;
    const double range = 180 + fan + 10;
    if (make_recon(&r, ph, circular(n, 120, range, 112, 2.0, dir), &o)) {
      double e = rmse_flat(r.vol, r.truth, n);
      printf("short scan %.0f deg dir %d: RMSE away from edges %.4f (full scan %.4f)\n", range, dir, e, full_err);
      CHECK_MSG(e < 2 * full_err + 0.003, "short scan RMSE %g vs full %g", e, full_err);
      ctr_fdk_options off = o;
      off.short_scan = CTR_SHORT_SCAN_OFF;
      int64_t vd[3] = {n, n, n}, pd[3] = {112, 112, 120};
      ctr_array pa = ctr_array_make(r.proj, CTR_DTYPE_FLOAT32, 3, pd);
      ctr_array va = ctr_array_make(r.vol, CTR_DTYPE_FLOAT32, 3, vd);
      CHECK_OK(ctr_fdk(g_ctx, r.g, &off, &pa, &va));
      double e_off = rmse_flat(r.vol, r.truth, n);
      CHECK_MSG(e_off > 3 * e, "without Parker RMSE %g, with %g", e_off, e);
    }
    free_recon(&r);
  }
  ctr_phantom_free(ph);
}

/* A circular full-or-short scan of the 64^3 Shepp-Logan set-up of
 * test_short_scan with nu columns (pitch as for 112) shifted by shift_px
 * columns along +u (the wide side at +u for shift_px > 0), 112 rows. */
static ctr_geometry *circular_nu(int64_t n, int64_t nviews, double range, int64_t nu,
                                 double shift_px) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 4.0 * n;
  p.sdd = 6.0 * n;
  p.nu = nu;
  p.nv = 112;
  p.du = p.dv = 1.5 * n / 112 * 1.35;
  p.offset_u = shift_px * p.du;
  p.nviews = nviews;
  p.angle_range_deg = range;
  p.angle_start_deg = 30;
  ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

#ifdef CTR_TEST_CUDA
/* The GPU's volume r->vol against the CPU backend's on the same projections
 * and options: the GPU's default interpolation is the texture unit's (8-bit
 * weights, docs/cuda.md), so 5e-3 of the CPU volume's RMS. */
static void gpu_vs_cpu(recon *r, const ctr_fdk_options *o, const char *what) {
  ctr_context *cpu = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &cpu));
  int64_t nu, nv;
  ctr_geometry_get_detector(r->g, &nu, &nv, NULL, NULL);
  const int64_t n = r->n, nvox = n * n * n;
  const int64_t pd[3] = {nu, nv, ctr_geometry_get_view_count(r->g)}, vd[3] = {n, n, n};
  float *c = malloc(sizeof(float) * (size_t)nvox);
  ctr_array pa = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(c, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fdk(cpu, r->g, o, &pa, &va));
  double d2 = 0, c2 = 0;
  for (int64_t i = 0; i < nvox; i++) {
    d2 += ((double)r->vol[i] - c[i]) * ((double)r->vol[i] - c[i]);
    c2 += (double)c[i] * c[i];
  }
  const double rel = sqrt(d2 / (c2 > 0 ? c2 : 1));
  printf("  %s: GPU against CPU relative RMS %.2e (bound 5e-3)\n", what, rel);
  CHECK_MSG(rel < 5e-3, "%s: the GPU volume differs from the CPU's by %g relative RMS", what, rel);
  free(c);
  ctr_context_free(cpu);
}
#endif

/* Re-runs FDK on r's projections with options o: its status, and the RMSE
 * away from edges. */
static ctr_status fdk_again(recon *r, const ctr_fdk_options *o, double *rmse) {
  int64_t nu, nv;
  ctr_geometry_get_detector(r->g, &nu, &nv, NULL, NULL);
  const int64_t n = r->n, pd[3] = {nu, nv, ctr_geometry_get_view_count(r->g)}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(r->vol, CTR_DTYPE_FLOAT32, 3, vd);
  const ctr_status st = ctr_fdk(g_ctx, r->g, o, &pa, &va);
  if (rmse) *rmse = st == CTR_OK ? rmse_flat(r->vol, r->truth, n) : INFINITY;
  return st;
}
static double refdk(recon *r, const ctr_fdk_options *o) {
  double e;
  CHECK_OK(fdk_again(r, o, &e));
  return e;
}

/* Offset (half-fan) detector, issue 45: a full turn with 64 columns, the
 * principal point 7.5 columns from the centre of the narrow side's last
 * column, sees the field of view of a centred 112-column detector (the same
 * total width: both reach 56 columns beyond the axis). Wang 2002's weights
 * (on by default) with the rows extended beyond the narrow edge before the
 * ramp filter (the CPU backend; docs/geometry.md, "Offset detectors") give
 * the centred detector's RMSE over the object to 1 % (the target:
 * within 1.2x; checked), and 1.62x its RMSE away from edges, where both are
 * small (0.0017 against 0.00105 on contrast steps of 0.01; 70x without the
 * extension): that part depends on the overlap's width (8 columns: 1.9x, 3:
 * 2.3x), not on the views (600: 1.62x) or a wider extension; bound 1.8x.
 * Strict FDK accepts the geometry; with the weights off it refuses it. */
/* A streamed run of a half-fan scan whose later subvolumes backproject kept
 * filtered copies (in host memory, in a scratch file) gives the bits of the
 * one-subvolume run (the GPU: to 1e-5, same_volume, as the mirrored-pair
 * kernels of one symmetric subvolume differ from the others in rounding): the kept rows are the extended ones (nu_ext columns).
 * The halves ctr_fdk_filter / ctr_fdk_backproject refuse such a geometry
 * (their nu x nv arrays cannot hold the extension). */
static void test_offset_detector_streamed(ctr_phantom *ph) {
  const int64_t n = 32, views = 60;
  ctr_geometry *g = circular_nu(n, views, 360, 64, 24.0);
  REQUIRE(g != NULL);
  CHECK(ctr_geometry_offset_detector(g) == 1);
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t npx = nu * nv * views, nvox = n * n * n;
  float *proj = malloc(sizeof(float) * (size_t)npx), *one = malloc(sizeof(float) * (size_t)nvox),
        *split = malloc(sizeof(float) * (size_t)nvox);
  const int64_t pd[3] = {nu, nv, views}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &pa));
  ctr_array va = ctr_array_make(one, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.fdk.interp = SPLIT_INTERP; /* the GPU: one kernel family whatever the split (same_volume) */
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &pa, &va, NULL));
  const ctr_fdk_store stores[2] = {CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  for (int s = 0; s < 2; s++) {
    ctr_fdk_stream_options ss = CTR_FDK_STREAM_OPTIONS_INIT;
    ss.fdk.interp = SPLIT_INTERP;
    ss.max_slab_slices = 7;
    ss.store = stores[s];
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    ctr_array vs = ctr_array_make(split, CTR_DTYPE_FLOAT32, 3, vd);
    memset(split, 0xff, sizeof(float) * (size_t)nvox);
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &ss, &pa, &vs, &rep));
    CHECK_MSG(rep.plan.nslabs > 1 && rep.plan.store == stores[s], "store %s: %lld subvolume(s), store %s",
              ctr_fdk_store_name(stores[s]), (long long)rep.plan.nslabs, ctr_fdk_store_name(rep.plan.store));
    CHECK_MSG(same_volume(split, one, nvox),
              "half-fan, store %s: subvolumes of 7 slices differ from one subvolume",
              ctr_fdk_store_name(stores[s]));
  }
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  CHECK_FAILS(ctr_fdk_filter(g_ctx, g, &o, 0, views, proj), CTR_E_UNSUPPORTED,
              "use ctr_fdk or ctr_fdk_stream");
  CHECK(ctr_error_get_field() && !strcmp(ctr_error_get_field(), "ctr_fdk_options.offset_weight"));
  o.offset_weight = CTR_OFFSET_WEIGHT_OFF;
  CHECK_OK(ctr_fdk_filter(g_ctx, g, &o, 0, views, proj));
  free(proj);
  free(one);
  free(split);
  ctr_geometry_free(g);
}

static void test_offset_detector(void) {
  const int64_t n = 64, views = 200;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  double full_err = 0, full_obj = 0;
  {
    recon r;
    if (make_recon(&r, ph, circular_nu(n, views, 360, 112, 0), &o))
      full_err = rmse_flat(r.vol, r.truth, n), full_obj = compare(r.vol, r.truth, n).rmse_object;
    free_recon(&r);
  }
  for (int side = -1; side <= 1; side += 2) {
    recon r;
    /* 64 columns shifted by 24: u0 = 31.5 - 24 = 7.5, edges 8 and 56 columns from it */
    if (!make_recon(&r, ph, circular_nu(n, views, 360, 64, side * 24.0), &o)) {
      free_recon(&r);
      continue;
    }
    CHECK(ctr_geometry_offset_detector(r.g) == 1);
    const double e = rmse_flat(r.vol, r.truth, n), e_obj = compare(r.vol, r.truth, n).rmse_object;
#ifdef CTR_TEST_CUDA
    gpu_vs_cpu(&r, &o, "half fan");
#endif
    printf("offset detector (wide side %+d): RMSE over the object %.5f, centred 112 columns "
           "%.5f, ratio %.3f (target 1.2); away from edges %.5f against %.5f, ratio %.3f (bound "
           "1.8)\n", side, e_obj, full_obj, e_obj / full_obj, e, full_err, e / full_err);
    CHECK_MSG(e_obj <= 1.2 * full_obj, "half-fan RMSE over the object %g, %.3fx the centred "
              "detector's %g", e_obj, e_obj / full_obj, full_obj);
    CHECK_MSG(e <= 1.8 * full_err, "half-fan RMSE away from edges %g, %.3fx the centred "
              "detector's %g", e, e / full_err, full_err);
    ctr_fdk_options forced = o;
    forced.offset_weight = CTR_OFFSET_WEIGHT_WANG;
    CHECK_NEAR(refdk(&r, &forced), e, 0.0); /* auto chose the same */
    ctr_fdk_options off = o;
    off.offset_weight = CTR_OFFSET_WEIGHT_OFF;
    const double e_off = refdk(&r, &off);
    printf("  without offset weights: RMSE %.5f\n", e_off);
    CHECK_MSG(e_off > 1.5 * e, "without offset weights RMSE %g, with %g", e_off, e);
    ctr_fdk_options strict = o;
    strict.strict = 1;
    CHECK_OK(fdk_again(&r, &strict, NULL));
    strict.offset_weight = CTR_OFFSET_WEIGHT_OFF;
    CHECK_FAILS(fdk_again(&r, &strict, NULL), CTR_E_GEOMETRY, "half-fan");
    /* the options' errors name their fields */
    ctr_fdk_options bad = o;
    bad.offset_overlap = 17.0; /* the overlap is 2 x 7.5 = 15 columns */
    CHECK_FAILS(fdk_again(&r, &bad, NULL), CTR_E_INVALID_ARGUMENT,
                "the geometry's overlap is 15 columns");
    CHECK(ctr_error_get_field() && !strcmp(ctr_error_get_field(), "ctr_fdk_options.offset_overlap"));
    bad = o;
    bad.offset_overlap = 8.0;
    CHECK_OK(fdk_again(&r, &bad, NULL));
    bad.short_scan = CTR_SHORT_SCAN_PARKER;
    CHECK_FAILS(fdk_again(&r, &bad, NULL), CTR_E_INVALID_ARGUMENT, "Parker weights together");
    free_recon(&r);
  }
  test_offset_detector_streamed(ph);
  ctr_phantom_free(ph);
}

/* The pre-weights of a half-fan scan, column by column: over the overlap
 * (the columns whose mirror about the principal point is on the detector)
 * the weights of every column pair, cosine factor removed, sum to one in
 * every view; beyond it the wide side's columns weigh 1. */
static void test_offset_pixel_weights(void) {
  ctr_geometry *g = circular_nu(64, 90, 360, 64, 24.0);
  if (!g) return;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  ctr__fdk_filter f;
  CHECK_OK(ctr__fdk_filter_init(NULL, g, &o, &f));
  CHECK(f.offset == 1 && f.parker == 0);
  int pairs = 0;
  double worst = 0, beyond = 0;
  for (int64_t i = 0; i < 90; i++) {
    const ctr__fdk_view_params p = ctr__fdk_view_params_of(&f, i);
    ctr__fdk_view_params cos_only = p;
    cos_only.offset_side = 0;
    CHECK(p.offset_side == 1);
    CHECK_NEAR(p.u0, 7.5, 1e-9);
    for (int64_t iv = 0; iv < 112; iv += 37)
      for (int64_t iu = 0; iu < 64; iu++) {
        const double c = ctr__fdk_pixel_weight(&cos_only, (double)iu, (double)iv);
        const double w = ctr__fdk_pixel_weight(&p, (double)iu, (double)iv) / c;
        const int64_t mirror = 15 - iu; /* 2 u0 - iu */
        if (mirror >= 0 && mirror < 64) {
          const double wm = ctr__fdk_pixel_weight(&p, (double)mirror, (double)iv) /
                            ctr__fdk_pixel_weight(&cos_only, (double)mirror, (double)iv);
          worst = fmax(worst, fabs(w + wm - 1.0));
          pairs++;
        } else {
          beyond = fmax(beyond, fabs(w - 1.0));
        }
      }
  }
  CHECK_MSG(pairs == 90 * 4 * 16 && worst < 1e-12, "%d pairs, sums off by %g", pairs, worst);
  CHECK_MSG(beyond < 1e-12, "beyond the overlap the weight differs from 1 by %g", beyond);
  ctr__fdk_filter_free(&f);
  ctr_geometry_free(g);
}

/* A short scan of an intermediate range (270 deg: Parker's weights with the
 * overscan delta = 45 deg) reconstructs within 2x of the full turn's RMSE,
 * same phantom and angular step (measured 1.47); 200 deg + fan as well
 * (1.58). */
static void test_short_scan_ranges(void) {
  const int64_t n = 64;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  const double fan = 2 * atan(0.5 * 1.35 * 1.5 * n / (6.0 * n)) * 180 / PI;
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  const double full_err = rmse_of(ph, circular_nu(n, 240, 360, 112, 0), &o);
  const double ranges[] = {270, 200 + fan};
  for (int k = 0; k < 2; k++) {
    recon r;
    const int64_t views = (int64_t)(240 * ranges[k] / 360 + 0.5);
    if (make_recon(&r, ph, circular_nu(n, views, ranges[k], 112, 0), &o)) {
      const double e = rmse_flat(r.vol, r.truth, n);
      printf("short scan %.1f deg (%lld views): RMSE %.5f, full turn %.5f, ratio %.3f\n",
             ranges[k], (long long)views, e, full_err, e / full_err);
      CHECK_MSG(e <= 2.0 * full_err, "%.1f deg: RMSE %g vs full %g", ranges[k], e, full_err);
    }
    free_recon(&r);
  }
  ctr_phantom_free(ph);
}

/* A uniform ball: the centre value is the density (units and scaling). */
static void test_units(void) {
  const int64_t n = 64;
  ctr_ellipsoid e = {0.0173, 2.0, -1.0, 1.5, 20, 20, 20, 0, 0, 0};
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &ph));
  recon r;
  if (make_recon(&r, ph, circular(n, 180, 360, 112, 0, CTR_ROTATION_CCW), NULL)) {
    double mean = 0;
    int cnt = 0;
    for (int64_t z = n / 2 - 4; z <= n / 2 + 4; z++)
      for (int64_t y = n / 2 - 4; y <= n / 2 + 4; y++)
        for (int64_t x = n / 2 - 4; x <= n / 2 + 4; x++, cnt++) mean += r.vol[(z * n + y) * n + x];
    mean /= cnt;
    printf("ball density 0.0173: reconstructed %.6f\n", mean);
    CHECK_NEAR(mean, 0.0173, 0.0173 * 0.01);
  }
  free_recon(&r);
  ctr_phantom_free(ph);
}

/* The fast float backprojector equals the double reference on random data
 * for random circular and arbitrary-matrix geometries (offsets, non-square
 * pixels, tilted orbits, a volume offset, slabs). fp32 positions (u ~ 50
 * pixels, rounding ~4e-6 px) and sums of 23 terms: measured ~3e-6; the
 * exact-mode target is 1e-5. A wrong pixel convention gives ~1e-1. */
static void test_backprojector_vs_reference(void) {
  for (int trial = 0; trial < 6; trial++) {
    const int64_t nx = 20 + trial, ny = 17, nz = 13, nu = 40 + 3 * trial, nv = 31, nviews = 23;
    ctr_volume_geometry vol = {nx, ny, nz, th_uniform(0.8, 1.2), th_uniform(0.8, 1.2),
                               th_uniform(0.8, 1.3), th_uniform(-2, 2), th_uniform(-2, 2),
                               th_uniform(-2, 2)};
    ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
    p.sid = th_uniform(60, 120);
    p.sdd = p.sid * th_uniform(1.2, 2.0);
    p.nu = nu;
    p.nv = nv;
    p.du = th_uniform(0.9, 1.6);
    p.dv = th_uniform(0.9, 1.6);
    p.offset_u = th_uniform(-5, 5);
    p.offset_v = th_uniform(-5, 5);
    p.nviews = nviews;
    p.angle_range_deg = th_uniform(200, 360);
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    if (trial % 2) th_perturb_geometry(&g, 0.02); /* an arbitrary (tilted, skewed) orbit */
    if (!g) continue;
    const int64_t z0 = trial % 3, nzs = nz - z0 - 1;
    const double rel = th_bp_vs_reference(NULL, g, z0, nzs, 7);
    CHECK_MSG(rel < 1e-5, "trial %d: relative RMS %g", trial, rel);
    ctr_geometry_free(g);
  }
}

/* A slab reconstruction is bit-identical to the same slices of the whole
 * volume, and the batch size does not change a bit either; uint16 input
 * equals float input with the same values. */
static void test_split_equivalence(void) {
  const int64_t n = 32, nviews = 40, det = 56;
  ctr_geometry *g = circular(n, nviews, 360, det, 1.0, CTR_ROTATION_CCW);
  REQUIRE(g != NULL);
  uint16_t *p16 = malloc(sizeof(uint16_t) * det * det * nviews);
  float *pf = malloc(sizeof(float) * det * det * nviews);
  for (int64_t i = 0; i < det * det * nviews; i++) {
    p16[i] = (uint16_t)th_uniform(0, 65535);
    pf[i] = p16[i];
  }
  float *full = malloc(sizeof(float) * n * n * n), *other = malloc(sizeof(float) * n * n * n);
  int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(pf, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array pa16 = ctr_array_make(p16, CTR_DTYPE_UINT16, 3, pd);
  ctr_array va = ctr_array_make(full, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array vo = ctr_array_make(other, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options whole = CTR_FDK_OPTIONS_INIT;
  whole.interp = SPLIT_INTERP;
  CHECK_OK(ctr_fdk(g_ctx, g, &whole, &pa, &va));
  ctr_fdk_options o = whole;
  o.views_per_batch = 1;
  CHECK_OK(ctr_fdk(g_ctx, g, &o, &pa16, &vo));
  CHECK(same_volume(other, full, n * n * n));
  for (int64_t z0 = 0; z0 < n; z0 += 11) {
    ctr_fdk_options s = whole;
    s.z0 = z0;
    s.nz = z0 + 11 <= n ? 11 : n - z0;
    int64_t sd[3] = {n, n, s.nz};
    ctr_array sa = ctr_array_make(other, CTR_DTYPE_FLOAT32, 3, sd);
    CHECK_OK(ctr_fdk(g_ctx, g, &s, &pa, &sa));
    CHECK(same_volume(other, full + z0 * n * n, n * n * s.nz));
  }
  /* Argument errors name what was expected. */
  int64_t bad[3] = {det, det, nviews - 1};
  ctr_array pb = ctr_array_make(pf, CTR_DTYPE_FLOAT32, 3, bad);
  CHECK_FAILS(ctr_fdk(g_ctx, g, NULL, &pb, &va), CTR_E_SIZE_MISMATCH, "expected 56 x 56 x 40");
  ctr_array vb = ctr_array_make(p16, CTR_DTYPE_UINT16, 3, vd);
  CHECK_FAILS(ctr_fdk(g_ctx, g, NULL, &pa, &vb), CTR_E_INVALID_ARGUMENT, "expected float32");
  o = (ctr_fdk_options)CTR_FDK_OPTIONS_INIT;
  o.z0 = 30;
  o.nz = 5;
  CHECK_FAILS(ctr_fdk(g_ctx, g, &o, &pa, &va), CTR_E_INVALID_ARGUMENT, "inside [0, 32)");
  o = (ctr_fdk_options)CTR_FDK_OPTIONS_INIT;
  o.cutoff = 1.5;
  CHECK_FAILS(ctr_fdk(g_ctx, g, &o, &pa, &va), CTR_E_INVALID_ARGUMENT, "cutoff");
  o.cutoff = 1;
  o.version = 0;
  CHECK_FAILS(ctr_fdk(g_ctx, g, &o, &pa, &va), CTR_E_INVALID_ARGUMENT, "version");
  free(p16);
  free(pf);
  free(full);
  free(other);
  ctr_geometry_free(g);
}

#if defined(CTR_TEST_CUDA) && CTR_HAVE_CUDA
/* Arrays in GPU memory (ctr_fdk's contract): read and written in place, the
 * same bits as from host memory (the same kernels on the same values), in one
 * subvolume and in several, float32 and uint16, either array on the GPU; a CPU
 * context refuses them, naming the array. */
static void test_gpu_arrays(void) {
  const int64_t n = 32, nviews = 40, det = 56, nvox = n * n * n, npx = det * det * nviews;
  ctr_geometry *g = circular(n, nviews, 360, det, 1.0, CTR_ROTATION_CCW);
  REQUIRE(g != NULL);
  uint16_t *p16 = malloc(sizeof(uint16_t) * (size_t)npx);
  float *pf = malloc(sizeof(float) * (size_t)npx);
  for (int64_t i = 0; i < npx; i++) {
    p16[i] = (uint16_t)th_uniform(0, 4000);
    pf[i] = (float)th_uniform(0, 2);
  }
  float *host = malloc(sizeof(float) * (size_t)nvox), *back = malloc(sizeof(float) * (size_t)nvox);
  float *dpf = NULL, *dvol = NULL;
  uint16_t *dp16 = NULL;
  REQUIRE(cudaMalloc((void **)&dpf, sizeof(float) * (size_t)npx) == cudaSuccess);
  REQUIRE(cudaMalloc((void **)&dp16, sizeof(uint16_t) * (size_t)npx) == cudaSuccess);
  REQUIRE(cudaMalloc((void **)&dvol, sizeof(float) * (size_t)nvox) == cudaSuccess);
  REQUIRE(cudaMemcpy(dpf, pf, sizeof(float) * (size_t)npx, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(dp16, p16, sizeof(uint16_t) * (size_t)npx, cudaMemcpyHostToDevice) == cudaSuccess);
  const int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  for (int k = 0; k < 4; k++) {
    /* k: 0 float32 in one subvolume, 1 uint16, 2 subvolumes of 7 slices,
     * 3 the projections on the GPU and the volume on the host */
    const int u16 = k == 1;
    ctr_array hp = ctr_array_make(u16 ? (void *)p16 : (void *)pf, u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array dp = ctr_array_make(u16 ? (void *)dp16 : (void *)dpf, hp.dtype, 3, pd);
    ctr_array hv = ctr_array_make(host, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_array dv = ctr_array_make(k == 3 ? back : dvol, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
    if (k == 2) so.max_slab_slices = 7;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &hp, &hv, NULL));
    REQUIRE(cudaMemset(dvol, 0xff, sizeof(float) * (size_t)nvox) == cudaSuccess); /* NaN */
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &dp, &dv, &rep));
    if (k != 3) REQUIRE(cudaMemcpy(back, dvol, sizeof(float) * (size_t)nvox, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(memcmp(back, host, sizeof(float) * (size_t)nvox) == 0,
              "case %d: FDK of GPU arrays differs from FDK of host arrays", k);
    CHECK_MSG(k != 2 || rep.plan.nslabs > 1, "case 2: %lld subvolume(s), expected several",
              (long long)rep.plan.nslabs);
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  ctr_context *cpu = NULL;
  CHECK_OK(ctr_context_create(&co, &cpu));
  ctr_array dp = ctr_array_make(dpf, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array hv = ctr_array_make(host, CTR_DTYPE_FLOAT32, 3, vd), dv = ctr_array_make(dvol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array hp = ctr_array_make(pf, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_FAILS(ctr_fdk(cpu, g, NULL, &dp, &hv), CTR_E_INVALID_ARGUMENT, "projections array is in the memory of GPU");
  CHECK_FAILS(ctr_fdk(cpu, g, NULL, &hp, &dv), CTR_E_INVALID_ARGUMENT, "a CPU context cannot read");
  ctr_context_free(cpu);
  cudaFree(dpf);
  cudaFree(dp16);
  cudaFree(dvol);
  free(p16);
  free(pf);
  free(host);
  free(back);
  ctr_geometry_free(g);
}
#endif

int main(void) {
#ifdef CTR_TEST_CUDA
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_fdk_foundation: SKIPPED (no usable GPU)\n");
    return 77;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  if (ctr_context_create(&co, &g_ctx) != CTR_OK) {
    fprintf(stderr, "CUDA context: %s\n", ctr_error_detail());
    return 1;
  }
#endif
  test_backprojector_vs_reference();
  test_split_equivalence();
  test_units();
  test_shepp_logan();
  test_short_scan();
  test_short_scan_ranges();
  test_offset_detector();
  test_offset_pixel_weights();
#if defined(CTR_TEST_CUDA) && CTR_HAVE_CUDA
  test_gpu_arrays();
#endif
  ctr_context_free(g_ctx);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_fdk_foundation");
#else
  return th_finish("test_fdk");
#endif
}
