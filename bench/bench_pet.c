/* DIRECT TOF-PET benchmark (issue 6 targets, Ha et al. 2013, sections 5 and 6):
 *  1. projectors: one view forward and back, 144 x 144 x 48 of 4 mm, TOF
 *     900 ps, LOR radial 10 -> 100 mm FWHM centre to edge, axial 10 mm
 *     (Ha et al.: 2.59 s per view on a GTX 285), data on the GPU, for Z = 1
 *     (thread-level form), 8 and 16 (instruction-level form) slices per
 *     thread, an untilted and a tilted view;
 *  2. one full block-RAMLA iteration (40 x 3 views, TOF 400 ps, variant LOR
 *     5.8 -> 10 mm at the edge) from simulated data, transfers included
 *     (Ha et al., Table III: 22.43 s): the first from pageable and from
 *     pinned histo-images beside the pageable floor (bench_floor.h, issue
 *     43), then a further one;
 *  3. spatial projector vs cuFFT convolution for invariant kernels at
 *     clinical TOF resolutions, per view, in the same run;
 * with --autotune, only the autotuner against the defaults (the tuning
 * pass, then four views' projections tuned and with tune off).
 * Writes JSON (the benchmark form of docs/design.md) with --json FILE. */
#include "bench_common.h"
#include "pet/pet.h"
#if CTR_HAVE_CUDA
#include "bench_floor.h"
#include "pet/cuda/pet_cuda.h"
#endif

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if CTR_HAVE_CUDA
ctr_status ctr__pet_cuda_time_view(ctr__pet_cuda *c, ctr_pet_direction dir, int64_t view, int reps,
                                   double *ms);
ctr_status ctr__pet_cuda_set_input(ctr__pet_cuda *c, const float *img);
ctr_status ctr__pet_cuda_fft_time(int device, ctr_pet_system *s, int64_t view, int64_t pad,
                                  const float *in, int reps, double *ms);
#endif

static FILE *g_json;
static int g_best = 1;
static double g_best_ms = 1e30;
static int g_first = 1;

static void json_case(const char *fmt, ...) {
  if (!g_json) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(g_json, "%s    {", g_first ? "" : ",\n");
  vfprintf(g_json, fmt, ap);
  fprintf(g_json, "}");
  va_end(ap);
  g_first = 0;
}

static int fail(const char *what, ctr_status st) {
  fprintf(stderr, "bench_pet: %s: %s: %s\n", what, ctr_status_name(st), ctr_error_detail());
  return 1;
}

#if CTR_HAVE_CUDA
/* The projector sweep's system (wide = 1: 900 ps TOF, radial 10 -> 100 mm,
 * axial 10 mm) or the iteration's (0: 400 ps, radial 5.8 -> 10 mm) on p's
 * lattice, and a fixed pseudo-random image for it (*img, malloc'd). */
static ctr_status projector_system(const ctr_pet_params *p, int narrow, ctr_pet_system **s,
                                   float **img) {
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  if (!narrow)
    k.tof_fwhm_ps = 900, k.radial_fwhm_center_mm = 10, k.radial_fwhm_edge_mm = 100,
    k.axial_fwhm_mm = 10;
  else
    k.radial_fwhm_edge_mm = 10;
  const int64_t n = p->nx * p->ny * p->nz;
  *img = malloc(n * sizeof(float));
  if (!*img) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i++) (*img)[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
  return ctr_pet_system_create(p, &k, s);
}

static int bench_projectors(ctr_context *ctx, int reps) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  ctr_pet_system *s = NULL;
  float *img = NULL;
  ctr_status st = projector_system(&p, 0, &s, &img);
  if (st) return fail("system", st);
  const int64_t n = p.nx * p.ny * p.nz;
  /* launch shapes: Z slices per thread (0: default), LC run entries per pass,
   * block ("auto": default), split runs (0: default); entry 1 is the default */
  typedef struct { const char *z, *lc, *block, *split, *cnst; } shape;
  static const shape sweep[] = {
      {"1", "4", "32x4", "1", "1"},  {"0", "4", "auto", "0", "1"},  {"16", "4", "32x4", "1", "1"},
      {"24", "4", "32x4", "1", "1"}, {"16", "4", "32x4", "0", "1"}, {"24", "4", "32x4", "2", "1"},
      {"24", "4", "32x4", "4", "1"}, {"24", "4", "32x4", "8", "1"}, {"24", "8", "32x4", "0", "1"},
      {"24", "4", "16x8", "0", "1"}, {"24", "4", "48x2", "0", "1"}, {"24", "4", "32x2", "0", "1"},
      {"16", "4", "16x8", "0", "1"}, {"8", "4", "32x4", "0", "1"}, {"24", "4", "64x2", "0", "1"},
      {"24", "4", "32x4", "0", "1"}, {"24", "4", "48x2", "8", "1"}, {"24", "4", "96x1", "0", "1"},
      {"0", "4", "auto", "0", "0"}};
  const int64_t views[] = {0, 10, p.n_azimuth + 10, 2 * p.n_azimuth + 10};
  for (int vi = 0; vi < 4; vi++) {
    double t0 = ctr__now_s();
    ctr_pet_view_info info = CTR_PET_VIEW_INFO_INIT;
    if ((st = ctr_pet_system_get_view_info(s, views[vi], &info))) return fail("tables", st);
    double tables = ctr__now_s() - t0;
    const int nshapes = vi == 0 ? (int)(sizeof sweep / sizeof sweep[0]) : 3;
    for (int si = 0; si < nshapes; si++) {
      /* other views: the thread-level form, the default, and the best of the sweep */
      const shape *sh = &sweep[vi == 0 ? si : (si == 0 ? 0 : (si == 1 ? 1 : g_best))];
      /* the shape through the context's tuning table; autotuning off, so
       * that "0" and "auto" are the static defaults (--autotune compares) */
      const char *const kv[12] = {"pet_z",     sh->z,     "pet_lc",    sh->lc,   "pet_block",
                                  sh->block,   "pet_split", sh->split, "pet_const", sh->cnst,
                                  "tune",      "off"};
      ctr_context *sctx = bench_context(ctr_context_get_device(ctx), kv, 6);
      if (!sctx) return 1;
      ctr_pet_projector *pr = NULL;
      if ((st = ctr_pet_projector_create(sctx, s, &pr))) return fail("projector", st);
      if ((st = ctr__pet_cuda_set_input((ctr__pet_cuda *)pr->impl, img))) return fail("input", st);
      double ms[2];
      for (int d = 0; d < 2; d++)
        if ((st = ctr__pet_cuda_time_view((ctr__pet_cuda *)pr->impl, d ? CTR_PET_BACK : CTR_PET_FORWARD, views[vi],
                                          reps, &ms[d])))
          return fail("time", st);
      double worst = fmax(ms[0], ms[1]), macs = (double)info.support * n;
      if (vi == 0 && (si == 0 || worst < g_best_ms) && si > 0) g_best = si, g_best_ms = worst;
      printf("  view %3lld (azimuth %6.2f, tilt %5.2f deg, %lld entries, %lld runs), Z=%2s LC=%s "
             "block %-4s split %s runs %s: forward %.3f ms, back %.3f ms (%.0f G MAC/s); tables %.2f s\n",
             (long long)views[vi], info.azimuth_deg, info.copolar_deg, (long long)info.support,
             (long long)info.columns, sh->z, sh->lc, sh->block, sh->split,
             sh->cnst[0] == '1' ? "constant" : "global", ms[0], ms[1],
             macs / (worst * 1e-3) / 1e9, tables);
      json_case("\"name\": \"pet_view_900ps_v%lld_z%s_lc%s_%s_split%s_const%s\", \"view\": %lld, "
                "\"azimuth_deg\": %.3f, \"tilt_deg\": %.3f, \"slices_per_thread\": %s, "
                "\"run_entries_per_pass\": %s, \"block\": \"%s\", \"support\": %lld, "
                "\"runs\": %lld, \"forward_seconds\": %.6g, \"back_seconds\": %.6g, "
                "\"seconds\": %.6g, \"gmacs\": %.1f, \"seed_gtx285_seconds\": 2.59",
                (long long)views[vi], sh->z, sh->lc, sh->block, sh->split, sh->cnst, (long long)views[vi],
                info.azimuth_deg, info.copolar_deg, sh->z, sh->lc, sh->block,
                (long long)info.support, (long long)info.columns, ms[0] * 1e-3, ms[1] * 1e-3,
                worst * 1e-3, macs / (worst * 1e-3) / 1e9);
      ctr_pet_projector_free(pr);
      ctr_context_free(sctx);
    }
  }
  free(img);
  ctr_pet_system_free(s);
  return 0;
}

/* Median (by wall time) of 3 one-iteration reconstructions from a zero
 * image: *wall the call (the host's data check included), *t its steps. */
static int first_iteration(ctr_pet_projector *pr, const ctr_pet_histo *h, float *img, int64_t n,
                           double *wall, ctr_pet_recon_timings *t) {
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  o.iterations = 1;
  ctr_pet_recon_timings r[3];
  double w[3];
  for (int k = 0; k < 3; k++) {
    memset(img, 0, n * sizeof(float));
    r[k] = (ctr_pet_recon_timings)CTR_PET_RECON_TIMINGS_INIT;
    const double w0 = ctr__now_s();
    const ctr_status st = ctr_pet_reconstruct(pr, h, &o, img, &r[k]);
    w[k] = ctr__now_s() - w0;
    if (st) return fail("recon 1", st);
  }
  const int m = w[0] <= w[1] ? (w[1] <= w[2] ? 1 : (w[0] <= w[2] ? 2 : 0))
                             : (w[0] <= w[2] ? 0 : (w[1] <= w[2] ? 2 : 1));
  *wall = w[m], *t = r[m];
  return 0;
}

/* The histo-images and factors in pinned memory (as a caller who allocates
 * with cudaMallocHost has them); restore puts the caller's back. */
static int pin_histo(ctr_pet_histo *h, int64_t n, float *saved[2]) {
  float **ptr[2] = {&h->counts, &h->factors};
  for (int k = 0; k < 2; k++) {
    saved[k] = *ptr[k];
    if (!saved[k]) continue;
    void *p = NULL;
    if (cudaMallocHost(&p, (size_t)n * sizeof(float)) != cudaSuccess) return 1;
    memcpy(p, saved[k], (size_t)n * sizeof(float));
    *ptr[k] = p;
  }
  return 0;
}

static void unpin_histo(ctr_pet_histo *h, float *saved[2]) {
  float **ptr[2] = {&h->counts, &h->factors};
  for (int k = 0; k < 2; k++) {
    if (saved[k] && *ptr[k] != saved[k]) cudaFreeHost(*ptr[k]);
    *ptr[k] = saved[k];
  }
}

static int bench_iteration(ctr_context *ctx, double events) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT; /* 400 ps, 5.8 mm */
  k.radial_fwhm_edge_mm = 10;                          /* variant1 of Ha et al. Fig. 8 */
  ctr_pet_system *s = NULL;
  ctr_pet_histo *h = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_pet_phantom ph;
  ctr_pet_phantom_spheres(&ph, 4.0);
  ctr_status st = ctr_pet_system_create(&p, &k, &s);
  if (st) return fail("system", st);
  ctr_pet_sim_options so = CTR_PET_SIM_OPTIONS_INIT;
  so.events = events, so.attenuation = 1;
  double t0 = ctr__now_s();
  if ((st = ctr_pet_simulate(ctx, s, &ph, &so, &h))) return fail("simulate", st);
  double tsim = ctr__now_s() - t0;
  t0 = ctr__now_s();
  for (int64_t v = 0; v < ctr_pet_system_get_view_count(s); v++)
    if (!ctr__pet_lut_get(s, v)) return fail("tables", CTR_E_OUT_OF_MEMORY);
  double ttab = ctr__now_s() - t0;
  if ((st = ctr_pet_projector_create(ctx, s, &pr))) return fail("projector", st);
  const int64_t n = p.nx * p.ny * p.nz, nh = n * h->nviews;
  const double in_bytes = (double)nh * sizeof(float) * (h->factors ? 2 : 1) + (double)n * sizeof(float);
  bench_floor rates;
  if (bench_floor_measure(&rates)) return fail("floor", CTR_E_OUT_OF_MEMORY);
  float *img = calloc(n, sizeof(float));
  ctr_pet_recon_timings t1 = CTR_PET_RECON_TIMINGS_INIT, t1p = CTR_PET_RECON_TIMINGS_INIT,
                        t5 = CTR_PET_RECON_TIMINGS_INIT;
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  o.iterations = 1;
  if ((st = ctr_pet_reconstruct(pr, h, &o, img, &t1))) return fail("recon 1", st); /* warm-up */
  double wall1, wall1p;
  float *saved[2];
  if (first_iteration(pr, h, img, n, &wall1, &t1)) return 1;
  const int pinned_ok = !pin_histo(h, nh, saved) && !first_iteration(pr, h, img, n, &wall1p, &t1p);
  unpin_histo(h, saved);
  if (!pinned_ok) return fail("pinned histo-images", CTR_E_OUT_OF_MEMORY);
  memset(img, 0, n * sizeof(float));
  /* a further iteration: the medians of 3 five-iteration and 3 one-iteration
   * runs apart, over 4 (their prologues vary with the host's copy rate) */
  o.iterations = 5;
  double tot5[3], tot1[3];
  for (int r = 0; r < 3; r++) {
    memset(img, 0, n * sizeof(float));
    if ((st = ctr_pet_reconstruct(pr, h, &o, img, &t5))) return fail("recon 5", st);
    tot5[r] = t5.total;
    ctr_pet_recon_timings t;
    double w;
    if (first_iteration(pr, h, img, n, &w, &t)) return 1;
    tot1[r] = t.total;
  }
  memset(img, 0, n * sizeof(float));
  if ((st = ctr_pet_reconstruct(pr, h, &o, img, &t5))) return fail("recon 5", st); /* for the metrics */
  double per_iter = (bench_median(tot5, 3) - bench_median(tot1, 3)) / 4.0;
  /* the floor: the pinned call plus the host copies the DMA cannot hide */
  const double floor_s = bench_floor_seconds(&rates, wall1p, in_bytes, 0);
  /* the target: 1.5 x a later iteration plus the floor's upload time
   * (the staged copy's or the DMA's, the slower); the DMA's alone beside it */
  const double up_dma = in_bytes / (rates.dma_up * 1e9), up_copy = in_bytes / (rates.copy_up * 1e9);
  const double target = 1.5 * per_iter + (up_copy > up_dma ? up_copy : up_dma);
  const double target_dma = 1.5 * per_iter + up_dma;
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  if ((st = ctr_pet_metrics_compute(&p, &ph, img, &m))) return fail("metrics", st);
  ctr_pet_view_info info = CTR_PET_VIEW_INFO_INIT;
  ctr_pet_system_get_view_info(s, 0, &info);
  printf("iteration: 40x3 views, TOF 400 ps, LOR 5.8 -> 10 mm, %lld-entry support, %.3g events "
         "(simulated in %.1f s, tables %.2f s)\n",
         (long long)info.support, h->events, tsim, ttab);
  printf("floor rates: DMA %.1f GB/s up; staged host copy %.1f GB/s up; %.2f GB up\n", rates.dma_up,
         rates.copy_up, in_bytes / 1e9);
  printf("  1 iteration, the call (data check included), median of 3: pageable %.3f s, pinned %.3f "
         "s, pageable floor %.3f s; target 1.5 x later + the floor's upload = %.3f s (with the "
         "DMA's upload alone %.3f s)\n",
         wall1, wall1p, floor_s, target, target_dma);
  printf("  its steps (pageable): %.3f s (upload %.3f, sensitivities %.3f, forward %.3f, "
         "discrepancy %.4f, back %.3f, update %.4f, download %.4f); pinned upload %.3f\n",
         t1.total, t1.upload, t1.back - (t5.back - t1.back) / 4.0, t1.forward, t1.discrepancy,
         (t5.back - t1.back) / 4.0, t1.update, t1.download, t1p.upload);
  printf("  each further iteration: %.3f s (forward %.3f, back %.3f); CRC %.3f noise %.3f after 5\n",
         per_iter, (t5.forward - t1.forward) / 4.0, (t5.back - t1.back) / 4.0, m.crc, m.noise);
  json_case("\"name\": \"pet_ramla_iteration_400ps_variant\", \"views\": %lld, \"support\": %lld, "
            "\"events\": %.6g, \"seconds\": %.6g, \"first_iteration_seconds\": %.6g, "
            "\"first_call_seconds\": %.6g, \"first_call_pinned_seconds\": %.6g, "
            "\"floor_seconds\": %.6g, \"target_seconds\": %.6g, \"target_dma_seconds\": %.6g, "
            "\"upload_bytes\": %.6g, "
            "\"upload_seconds\": %.6g, \"upload_pinned_seconds\": %.6g, \"forward_seconds\": %.6g, "
            "\"back_seconds\": %.6g, \"crc_5\": %.4f, \"noise_5\": %.4f, "
            "\"seed_gtx285_seconds\": 22.43, \"seed_fft_invariant_seconds\": 21.48",
            (long long)ctr_pet_system_get_view_count(s), (long long)info.support, h->events,
            per_iter, t1.total, wall1, wall1p, floor_s, target, target_dma, in_bytes, t1.upload, t1p.upload,
            (t5.forward - t1.forward) / 4.0, (t5.back - t1.back) / 4.0, m.crc, m.noise);
  free(img);
  ctr_pet_projector_free(pr);
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
  return 0;
}

/* One view's forward projection, spatial (ours) and cuFFT (the invariant
 * kernel's FFT convolution; pad: padded by the kernel's halo so that nothing
 * wraps, else unpadded), for a lattice of n x n x nz voxels of `voxel` mm and an invariant
 * kernel (TOF ps, radial and axial mm FWHM); ms in sp and ff. */
static int time_spatial_fft(ctr_context *ctx, int reps, int64_t n, int64_t nz, double voxel,
                            double tof, double radial, double axial, int pad, double *sp,
                            double *ff, int64_t *support) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  p.nx = p.ny = n, p.nz = nz, p.voxel = voxel;
  k.tof_fwhm_ps = tof, k.radial_fwhm_center_mm = k.radial_fwhm_edge_mm = radial;
  k.axial_fwhm_mm = axial;
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_status st = ctr_pet_system_create(&p, &k, &s);
  if (st || (st = ctr_pet_projector_create(ctx, s, &pr))) return fail("system", st);
  const int64_t nv = p.nx * p.ny * p.nz;
  float *img = malloc(nv * sizeof(float));
  for (int64_t j = 0; j < nv; j++) img[j] = (float)((j * 2654435761u) % 1000) * 1e-3f;
  ctr_pet_view_info info = CTR_PET_VIEW_INFO_INIT;
  if ((st = ctr_pet_system_get_view_info(s, 10, &info))) return fail("tables", st);
  *support = info.support;
  if ((st = ctr__pet_cuda_set_input((ctr__pet_cuda *)pr->impl, img)) ||
      (st = ctr__pet_cuda_time_view((ctr__pet_cuda *)pr->impl, CTR_PET_FORWARD, 10, reps, sp)) ||
      (st = ctr__pet_cuda_fft_time(0, s, 10, pad ? s->halo[0] : 0, img, reps, ff)))
    return fail("time", st);
  free(img);
  ctr_pet_projector_free(pr);
  ctr_pet_system_free(s);
  return 0;
}

/* Ha et al. 2013, Fig. 4 on this GPU (issue 48): one view's forward
 * projection, spatial against cuFFT, over [top] TOF 300 .. 1200 ps (LOR 10
 * mm radial, 5 mm axial) and LOR radial 5 .. 20 mm (TOF 300 ps, axial 5
 * mm), 144 x 144 x 48 voxels of 4 mm; [bottom] 4 mm voxels (144 x 144 x 48)
 * against 2 mm (288 x 288 x 96: the same field of view), TOF 375 ps, LOR
 * 6.5 mm. The paper's growth from 4 to 2 mm: 54.3x (spatial) and 9.4x (FFT);
 * spatial 2x faster than FFT at 4 mm and 2.7x slower at 2 mm. */
static int bench_fig4(ctr_context *ctx, int reps) {
  static const double tofs[] = {300, 450, 600, 750, 900, 1050, 1200};
  static const double lors[] = {5, 7.5, 10, 12.5, 15, 17.5, 20};
  double sp, ff;
  int64_t sup;
  printf("Ha et al. 2013 Fig. 4 [top]: one view, 144x144x48 of 4 mm, spatial vs cuFFT (padded)\n");
  for (int i = 0; i < 7; i++) {
    if (time_spatial_fft(ctx, reps, 144, 48, 4.0, tofs[i], 10.0, 5.0, 1, &sp, &ff, &sup)) return 1;
    printf("  TOF %4.0f ps, LOR 10 mm: spatial %8.3f ms, cuFFT %8.3f ms (support %lld)\n", tofs[i],
           sp, ff, (long long)sup);
    json_case("\"name\": \"fig4_tof_%.0fps\", \"study\": \"fig4-tof\", \"tof_ps\": %.0f, "
              "\"radial_mm\": 10, \"axial_mm\": 5, \"voxel_mm\": 4, \"support\": %lld, "
              "\"seconds\": %.6g, \"cufft_seconds\": %.6g", tofs[i], tofs[i], (long long)sup,
              sp * 1e-3, ff * 1e-3);
  }
  for (int i = 0; i < 7; i++) {
    if (time_spatial_fft(ctx, reps, 144, 48, 4.0, 300.0, lors[i], 5.0, 1, &sp, &ff, &sup)) return 1;
    printf("  LOR %4.1f mm, TOF 300 ps: spatial %8.3f ms, cuFFT %8.3f ms (support %lld)\n", lors[i],
           sp, ff, (long long)sup);
    json_case("\"name\": \"fig4_lor_%.1fmm\", \"study\": \"fig4-lor\", \"tof_ps\": 300, "
              "\"radial_mm\": %.1f, \"axial_mm\": 5, \"voxel_mm\": 4, \"support\": %lld, "
              "\"seconds\": %.6g, \"cufft_seconds\": %.6g", lors[i], lors[i], (long long)sup,
              sp * 1e-3, ff * 1e-3);
  }
  double t[2][2];
  printf("Ha et al. 2013 Fig. 4 [bottom]: TOF 375 ps, LOR 6.5 mm, the same field of view\n");
  for (int v = 0; v < 2; v++) {
    const int64_t n = v ? 288 : 144, nz = v ? 96 : 48;
    if (time_spatial_fft(ctx, reps, n, nz, v ? 2.0 : 4.0, 375.0, 6.5, 6.5, 1, &sp, &ff, &sup)) return 1;
    t[v][0] = sp, t[v][1] = ff;
    printf("  voxel %.0f mm (%lldx%lldx%lld): spatial %8.3f ms, cuFFT %8.3f ms (support %lld)\n",
           v ? 2.0 : 4.0, (long long)n, (long long)n, (long long)nz, sp, ff, (long long)sup);
    json_case("\"name\": \"fig4_voxel_%.0fmm\", \"study\": \"fig4-voxel\", \"tof_ps\": 375, "
              "\"radial_mm\": 6.5, \"axial_mm\": 6.5, \"voxel_mm\": %.0f, \"lattice\": [%lld, "
              "%lld, %lld], \"support\": %lld, \"seconds\": %.6g, \"cufft_seconds\": %.6g",
              v ? 2.0 : 4.0, v ? 2.0 : 4.0, (long long)n, (long long)n, (long long)nz,
              (long long)sup, sp * 1e-3, ff * 1e-3);
  }
  printf("  4 -> 2 mm: spatial %.1fx, cuFFT %.1fx (Ha et al.: 54.3x, 9.4x); spatial/cuFFT %.2f at 4 "
         "mm, %.2f at 2 mm (Ha et al.: 0.5, 2.7)\n", t[1][0] / t[0][0], t[1][1] / t[0][1],
         t[0][0] / t[0][1], t[1][0] / t[1][1]);
  json_case("\"name\": \"fig4_voxel_growth\", \"study\": \"fig4-voxel\", \"spatial_growth\": "
            "%.4g, \"cufft_growth\": %.4g, \"seed_spatial_growth\": 54.3, \"seed_cufft_growth\": "
            "9.4, \"spatial_over_cufft_4mm\": %.4g, \"spatial_over_cufft_2mm\": %.4g, "
            "\"seed_spatial_over_cufft_4mm\": 0.5, \"seed_spatial_over_cufft_2mm\": 2.7",
            t[1][0] / t[0][0], t[1][1] / t[0][1], t[0][0] / t[0][1], t[1][0] / t[1][1]);
  return 0;
}

static int bench_fft(ctr_context *ctx, int reps) {
  const double tofs[] = {375, 450, 600};
  printf("spatial vs cuFFT, invariant kernels, 144x144x48 of 4 mm, LOR 6.5 mm, one view:\n");
  for (int i = 0; i < 3; i++)
    for (int pad = 0; pad <= 1; pad++) {
      double sp, ff;
      int64_t sup;
      if (time_spatial_fft(ctx, reps, 144, 48, 4.0, tofs[i], 6.5, 6.5, pad, &sp, &ff, &sup))
        return 1;
      printf("  TOF %3.0f ps, FFT padding %s: spatial %.3f ms, cuFFT %.3f ms\n", tofs[i],
             pad ? "the halo" : "none", sp, ff);
      json_case("\"name\": \"pet_spatial_vs_cufft_%.0fps_pad%d\", \"tof_ps\": %.0f, \"pad\": %d, "
                "\"seconds\": %.6g, \"cufft_seconds\": %.6g",
                tofs[i], pad, tofs[i], pad, sp * 1e-3, ff * 1e-3);
    }
  return 0;
}

/* --autotune: the autotuner against the static defaults (issue 48: tuned
 * never slower, a class tuned in under 10 s), for the projector sweep's
 * system (900 ps, wide radial kernels) and the iteration's (400 ps): the
 * tuning pass (ctr_tune_pet, forced, into a fresh cache directory) timed
 * whole, then forward and back projections of four views by the tuned
 * projector and by one with tune off, median of `reps` each. */
static int bench_autotune(ctr_context *ctx, int reps) {
  char dir[] = "/tmp/bench_pet_tune_XXXXXX";
  if (!mkdtemp(dir)) return fail("autotune cache directory", CTR_E_IO);
  const char *const off_kv[2] = {"tune", "off"}, *const on_kv[2] = {"cache_dir", dir};
  const ctr_device_kind dev = ctr_context_get_device(ctx);
  ctr_context *cx[2] = {bench_context(dev, off_kv, 1), bench_context(dev, on_kv, 1)};
  ctr_tune_report *rep = calloc(1, sizeof *rep);
  if (!cx[0] || !cx[1] || !rep || ctr_tune_report_init(rep, CTR_TUNE_REPORT_VERSION))
    return fail("autotune contexts", CTR_E_OUT_OF_MEMORY);
  for (int sys = 0; sys < 2; sys++) {
    ctr_pet_params p = CTR_PET_PARAMS_INIT;
    ctr_pet_system *s = NULL;
    float *img = NULL;
    ctr_status st = projector_system(&p, sys, &s, &img);
    if (st) return fail("system", st);
    const double t0 = ctr__now_s();
    if ((st = ctr_tune_pet(cx[1], s, 1, rep))) return fail("tune", st);
    const double pass = ctr__now_s() - t0;
    const int64_t views[] = {0, 10, p.n_azimuth + 10, 2 * p.n_azimuth + 10};
    double tot[2] = {0, 0};
    for (int c = 0; c < 2; c++) { /* 0: the defaults, 1: tuned */
      ctr_pet_projector *pr = NULL;
      if ((st = ctr_pet_projector_create(cx[c], s, &pr))) return fail("projector", st);
      if ((st = ctr__pet_cuda_set_input((ctr__pet_cuda *)pr->impl, img))) return fail("input", st);
      for (int vi = 0; vi < 4; vi++)
        for (int d = 0; d < 2; d++) {
          double ms = 0;
          if ((st = ctr__pet_cuda_time_view((ctr__pet_cuda *)pr->impl,
                                            d ? CTR_PET_BACK : CTR_PET_FORWARD, views[vi], reps,
                                            &ms)))
            return fail("time", st);
          tot[c] += ms;
        }
      ctr_pet_projector_free(pr);
    }
    const char *name = sys == 0 ? "900ps" : "400ps";
    printf("autotune %s: pass %.2f s (search %.2f s, %d of %d candidates%s), chosen %s | four "
           "views forward + back: default %.3f ms, tuned %.3f ms\n", name, pass, rep->seconds,
           rep->ncandidates, rep->total, rep->budget_hit ? ", budget spent" : "",
           rep->params[0] ? rep->params : rep->note, tot[0], tot[1]);
    json_case("\"name\": \"pet_autotune_%s\", \"seconds\": %.6g, \"default_seconds\": %.6g, "
              "\"tuning_pass_seconds\": %.3f, \"search_seconds\": %.3f, "
              "\"candidates_timed\": %d, \"candidates\": %d, \"chosen\": \"%s\", "
              "\"views\": 4, \"repeats\": %d",
              name, tot[1] * 1e-3, tot[0] * 1e-3, pass, rep->seconds, rep->ncandidates,
              rep->total, rep->params, reps);
    free(img);
    ctr_pet_system_free(s);
  }
  int removed = 0;
  ctr_tune_cache_clear(cx[1], NULL, &removed);
  rmdir(dir);
  free(rep);
  ctr_context_free(cx[0]);
  ctr_context_free(cx[1]);
  return 0;
}
#endif

int main(int argc, char **argv) {
  const char *json = NULL;
  int reps = 7, study = 0, autotune = 0;
  double events = 2e7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atof(argv[++i]);
    else if (!strcmp(argv[i], "--study") && i + 1 < argc && !strcmp(argv[i + 1], "fig4")) study = 1, i++;
    else if (!strcmp(argv[i], "--autotune")) autotune = 1;
    else {
      fprintf(stderr, "usage: bench_pet [--json FILE] [--repeats N] [--events N] [--study fig4] "
              "[--autotune]\n"
              "  --study fig4: only Ha et al. 2013's Fig. 4 sweeps (TOF, LOR width, voxel size;\n"
              "  spatial vs cuFFT), docs/pet.md\n"
              "  --autotune: only the autotuner against the defaults (docs/tuning.md)\n");
      return 2;
    }
  }
#if CTR_HAVE_CUDA
  if (ctr_cuda_get_device_count() < 1) {
    fprintf(stderr, "bench_pet: no usable GPU\n");
    return 77;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) return fail("context", CTR_E_NO_DEVICE);
  ctr_device_info di = CTR_DEVICE_INFO_INIT;
  ctr_cuda_get_device_info(0, &di);
  if (json && !(g_json = fopen(json, "w"))) {
    perror(json);
    return 1;
  }
  char date[32];
  if (g_json)
    fprintf(g_json, "{\n  \"gpu\": \"%s\",\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n"
            "  \"command\": \"bench_pet --repeats %d --events %.3g%s%s\",\n  \"cases\": [\n",
            di.name, bench_date(date, sizeof date), bench_revision(), reps, events,
            study ? " --study fig4" : "", autotune ? " --autotune" : "");
  int rc = autotune ? bench_autotune(ctx, reps)
           : study  ? bench_fig4(ctx, reps)
                    : bench_projectors(ctx, reps) || bench_fft(ctx, reps) || bench_iteration(ctx, events);
  if (g_json) {
    fprintf(g_json, "\n  ]\n}\n");
    fclose(g_json);
  }
  ctr_context_free(ctx);
  return rc;
#else
  fprintf(stderr, "bench_pet: built without CUDA\n");
  return 77;
#endif
}
