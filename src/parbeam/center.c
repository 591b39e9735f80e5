/* Rotation-centre finding (docs/synchrotron.md), on the CPU: it runs once
 * per reconstruction, on one band of sinograms.
 *
 * VO (Vo et al. 2014): a 180-degree sinogram S(theta, t) and its mirror
 * S(theta, 2c - t), stacked, form a 360-degree sinogram that is consistent
 * only for the right axis c; the 2D spectrum of a consistent one has no
 * energy in the double wedge |m| > 2 pi R |omega| (m cycles per turn, omega
 * cycles per bin, R the object's radius in bins). The metric is the mean
 * magnitude there; coarse search on bins averaged d at a time, then at full
 * resolution in steps of 1 and 1/4 bin, then a parabola.
 * CORRELATION: opposite projections B(t) = p(theta + 180, t) = A(2c - t) =
 * Af(t + s) with Af the flipped A and s = nbins - 1 - 2c; the squared
 * difference over the overlap relative to the energy there, (E_A + E_B -
 * 2 C + e) / (E_A + E_B + e) with e a millionth of the rows' energy (an
 * overlap where both are empty scores 1, not 0), for every pair at once
 * (correlations summed in Fourier space, energies by prefix sums); its least
 * integer s refined by a parabola. */
#include "filter/filter.h"
#include "parbeam/sync.h"

#include <fftw3.h> /* before complex.h: fftw_complex stays double[2] */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

/* ---- VO ----------------------------------------------------------------------- */

typedef struct vo {
  int64_t na, nb, np, kmax;   /* rows (180 degrees), bins, padded row length, columns used */
  fftw_complex *direct, *flip; /* na x (np / 2 + 1) row spectra */
  fftw_complex *col;           /* 2 na */
  fftw_plan colplan;
  double radius;
} vo;

static void vo_free(vo *v) {
  ctr__fftw_lock();
  if (v->colplan) fftw_destroy_plan(v->colplan);
  ctr__fftw_unlock();
  fftw_free(v->direct);
  fftw_free(v->flip);
  fftw_free(v->col);
  memset(v, 0, sizeof *v);
}

/* Row spectra of s (na x nb, rows zero-padded to 2 nb) and of its flip. */
static ctr_status vo_init(vo *v, const double *s, int64_t na, int64_t nb) {
  memset(v, 0, sizeof *v);
  v->na = na;
  v->nb = nb;
  v->np = 2 * nb;
  const int64_t nf = v->np / 2 + 1;
  v->radius = 0.5 * (double)nb;
  /* the wedge reaches column k while 2 pi R k / np < na */
  v->kmax = (int64_t)ceil((double)na * (double)v->np / (2.0 * PI * v->radius)) + 1;
  if (v->kmax > nf) v->kmax = nf;
  v->direct = fftw_malloc(sizeof(fftw_complex) * (size_t)(na * nf));
  v->flip = fftw_malloc(sizeof(fftw_complex) * (size_t)(na * nf));
  v->col = fftw_malloc(sizeof(fftw_complex) * (size_t)(2 * na));
  double *row = fftw_malloc(sizeof(double) * (size_t)v->np);
  fftw_complex *spec = fftw_malloc(sizeof(fftw_complex) * (size_t)nf);
  fftw_plan rp = NULL;
  ctr__fftw_lock();
  if (row && spec && v->col) {
    rp = fftw_plan_dft_r2c_1d((int)v->np, row, spec, FFTW_ESTIMATE);
    v->colplan = fftw_plan_dft_1d((int)(2 * na), v->col, v->col, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  ctr__fftw_unlock();
  ctr_status st = CTR_OK;
  if (!v->direct || !v->flip || !rp || !v->colplan) {
    st = ctr__error_set(CTR_E_FFT, "centre finding: cannot plan transforms of %lld x %lld",
                        (long long)(2 * na), (long long)v->np);
  } else {
    for (int64_t a = 0; a < na; a++)
      for (int f = 0; f < 2; f++) {
        memset(row, 0, sizeof(double) * (size_t)v->np);
        for (int64_t t = 0; t < nb; t++) row[t] = s[a * nb + (f ? nb - 1 - t : t)];
        fftw_execute(rp);
        memcpy((f ? v->flip : v->direct) + a * nf, spec, sizeof(fftw_complex) * (size_t)nf);
      }
  }
  ctr__fftw_lock();
  if (rp) fftw_destroy_plan(rp);
  ctr__fftw_unlock();
  fftw_free(row);
  fftw_free(spec);
  if (st != CTR_OK) vo_free(v);
  return st;
}

/* Mean spectral magnitude in the double wedge for axis c (bins). */
static double vo_metric(vo *v, double c) {
  const int64_t na = v->na, nf = v->np / 2 + 1;
  const double s = (double)(v->nb - 1) - 2.0 * c;
  double sum = 0;
  int64_t count = 0;
  for (int64_t k = 1; k < v->kmax; k++) {
    const double complex ph = cexp(2.0 * PI * I * (double)k * s / (double)v->np);
    for (int64_t a = 0; a < na; a++) {
      const fftw_complex *d = v->direct + a * nf + k, *f = v->flip + a * nf + k;
      v->col[a][0] = (*d)[0];
      v->col[a][1] = (*d)[1];
      const double complex b = ((*f)[0] + I * (*f)[1]) * ph;
      v->col[na + a][0] = creal(b);
      v->col[na + a][1] = cimag(b);
    }
    fftw_execute(v->colplan);
    const double edge = 2.0 * PI * v->radius * (double)k / (double)v->np + 1.0;
    for (int64_t m = 0; m < 2 * na; m++) {
      const double mm = (double)(m <= na ? m : 2 * na - m);
      if (mm > edge) {
        sum += hypot(v->col[m][0], v->col[m][1]);
        count++;
      }
    }
  }
  return count ? sum / (double)count : 0.0;
}

/* Least metric over c = c0 + i * step, i = 0 .. n - 1, within [lo, hi]
 * (the search range: a refinement never leaves it). */
static double vo_search(vo *v, double c0, double step, int64_t n, double lo, double hi,
                        double *best_metric) {
  double best = fmin(fmax(c0, lo), hi), bm = INFINITY;
  for (int64_t i = 0; i < n; i++) {
    const double c = c0 + (double)i * step;
    if (c < lo || c > hi) continue;
    const double m = vo_metric(v, c);
    if (m < bm) {
      bm = m;
      best = c;
    }
  }
  if (best_metric) *best_metric = bm;
  return best;
}

/* Vertex of the parabola through (x - h, a), (x, b), (x + h, c), kept
 * within [x - h, x + h]. */
static double parabola(double x, double h, double a, double b, double c) {
  const double den = a - 2.0 * b + c;
  if (!(den > 0)) return x;
  double d = 0.5 * (a - c) / den;
  if (d > 1) d = 1;
  if (d < -1) d = -1;
  return x + d * h;
}

/* The 180-degree rows (na of them, already chosen) averaged into s. */
static ctr_status center_vo(const double *s, int64_t na, int64_t nb, double lo, double hi,
                            double *axis) {
  /* rows: at most 256 (every k-th) */
  const int64_t k = (na + 255) / 256, nr = na / k;
  /* coarse: bins averaged d at a time, at most 256 of them */
  const int64_t d = (nb + 255) / 256, nbd = nb / d;
  double *sd = malloc(sizeof(double) * (size_t)(nr * nbd));
  double *sr = malloc(sizeof(double) * (size_t)(nr * nb));
  if (!sd || !sr) {
    free(sd);
    free(sr);
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "centre finding: %lld x %lld values", (long long)nr, (long long)nb);
  }
  for (int64_t r = 0; r < nr; r++) {
    memcpy(sr + r * nb, s + r * k * nb, sizeof(double) * (size_t)nb);
    for (int64_t b = 0; b < nbd; b++) {
      double acc = 0;
      for (int64_t j = 0; j < d; j++) acc += s[r * k * nb + b * d + j];
      sd[r * nbd + b] = acc / (double)d;
    }
  }
  vo v;
  ctr_status st = vo_init(&v, sd, nr, nbd);
  double c = 0.5 * (double)(nb - 1);
  if (st == CTR_OK) {
    /* candidates in coarse bins: position x = (c - (d - 1) / 2) / d */
    const double x0 = ceil((lo - 0.5 * (double)(d - 1)) / (double)d);
    const double x1 = floor((hi - 0.5 * (double)(d - 1)) / (double)d);
    const double x = vo_search(&v, x0, 1.0, (int64_t)(x1 - x0) + 1, x0, x1, NULL);
    c = x * (double)d + 0.5 * (double)(d - 1);
    vo_free(&v);
    st = vo_init(&v, sr, nr, nb);
  }
  if (st == CTR_OK) {
    if (d > 1) c = vo_search(&v, c - (double)d, 1.0, 2 * d + 1, lo, hi, NULL);
    c = vo_search(&v, c - 1.0, 0.25, 9, lo, hi, NULL);
    const double h = 0.25;
    c = parabola(c, h, vo_metric(&v, c - h), vo_metric(&v, c), vo_metric(&v, c + h));
    c = fmin(fmax(c, lo), hi);
    vo_free(&v);
  }
  free(sd);
  free(sr);
  *axis = c;
  return st;
}

/* ---- CORRELATION ------------------------------------------------------------------ */

static ctr_status center_correlation(const double *s, int64_t na, int64_t nb, const int64_t *pair,
                                     int64_t npairs, double lo, double hi, double *axis) {
  ctr_status st = CTR_OK;
  const int64_t np = 2 * nb, nf = nb + 1;
  double *row = fftw_malloc(sizeof(double) * (size_t)np);
  fftw_complex *fa = fftw_malloc(sizeof(fftw_complex) * (size_t)nf);
  fftw_complex *fb = fftw_malloc(sizeof(fftw_complex) * (size_t)nf);
  fftw_complex *acc = fftw_malloc(sizeof(fftw_complex) * (size_t)nf);
  double *pb = calloc((size_t)(nb + 1), sizeof(double)), *pf = calloc((size_t)(nb + 1), sizeof(double));
  fftw_plan fw = NULL, bw = NULL;
  ctr__fftw_lock();
  if (row && fa && acc) {
    fw = fftw_plan_dft_r2c_1d((int)np, row, fa, FFTW_ESTIMATE);
    bw = fftw_plan_dft_c2r_1d((int)np, acc, row, FFTW_ESTIMATE);
  }
  ctr__fftw_unlock();
  if (!fw || !bw || !fb || !pb || !pf) {
    st = ctr__error_set(CTR_E_FFT, "centre finding: cannot plan transforms of %lld", (long long)np);
    goto cleanup;
  }
  memset(acc, 0, sizeof(fftw_complex) * (size_t)nf);
  for (int64_t i = 0; i < npairs; i++) {
    const double *A = s + pair[2 * i] * nb, *B = s + pair[2 * i + 1] * nb;
    memset(row, 0, sizeof(double) * (size_t)np);
    for (int64_t t = 0; t < nb; t++) row[t] = A[nb - 1 - t]; /* Af */
    fftw_execute_dft_r2c(fw, row, fa);
    memset(row, 0, sizeof(double) * (size_t)np);
    for (int64_t t = 0; t < nb; t++) row[t] = B[t];
    fftw_execute_dft_r2c(fw, row, fb);
    /* C(s) = sum_t B(t) Af(t + s): the spectrum Af^ conj(B^) */
    for (int64_t k = 0; k < nf; k++) {
      acc[k][0] += fa[k][0] * fb[k][0] + fa[k][1] * fb[k][1];
      acc[k][1] += fa[k][1] * fb[k][0] - fa[k][0] * fb[k][1];
    }
    for (int64_t t = 0; t < nb; t++) {
      pb[t + 1] += B[t] * B[t];
      pf[t + 1] += A[nb - 1 - t] * A[nb - 1 - t];
    }
  }
  for (int64_t t = 0; t < nb; t++) {
    pb[t + 1] += pb[t];
    pf[t + 1] += pf[t];
  }
  fftw_execute(bw); /* row[s mod np] = np x sum of C(s) */
  /* s = nb - 1 - 2c over the search range, overlaps of at least minov bins */
  const int64_t minov = nb / 64 > 8 ? nb / 64 : (nb > 8 ? 8 : nb);
  const int64_t s0 = (int64_t)ceil((double)(nb - 1) - 2.0 * hi), s1 = (int64_t)floor((double)(nb - 1) - 2.0 * lo);
  const double eps = 1e-6 * (pb[nb] + pf[nb]) + 1e-300;
  double best = INFINITY;
  int64_t bs = 0;
  double *msd = malloc(sizeof(double) * (size_t)(2 * nb + 1));
  if (!msd) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "centre finding");
    goto cleanup;
  }
  for (int64_t sh = -(nb - 1); sh <= nb - 1; sh++) {
    const int64_t t0 = sh < 0 ? -sh : 0, t1 = sh < 0 ? nb : nb - sh; /* t in [t0, t1) */
    const int64_t ov = t1 - t0;
    double m = INFINITY;
    if (ov >= minov) {
      const double eb = pb[t1] - pb[t0], ef = pf[t1 + sh] - pf[t0 + sh];
      const double cc = row[(sh + np) % np] / (double)np;
      m = (eb + ef - 2.0 * cc + eps) / (eb + ef + eps);
    }
    msd[sh + nb - 1] = m;
    if (sh >= s0 && sh <= s1 && m < best) {
      best = m;
      bs = sh;
    }
  }
  if (!isfinite(best)) {
    free(msd);
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT, "centre finding: no axis in [%g, %g] leaves "
                        "opposite projections an overlap of %lld bins", lo, hi, (long long)minov);
    goto cleanup;
  }
  double sub = (double)bs;
  if (bs > -(nb - 1) && bs < nb - 1 && isfinite(msd[bs + nb - 2]) && isfinite(msd[bs + nb]))
    sub = parabola((double)bs, 1.0, msd[bs + nb - 2], msd[bs + nb - 1], msd[bs + nb]);
  free(msd);
  *axis = fmin(fmax(0.5 * ((double)(nb - 1) - sub), lo), hi);
cleanup:
  ctr__fftw_lock();
  if (fw) fftw_destroy_plan(fw);
  if (bw) fftw_destroy_plan(bw);
  ctr__fftw_unlock();
  fftw_free(row);
  fftw_free(fa);
  fftw_free(fb);
  fftw_free(acc);
  free(pb);
  free(pf);
  return st;
}

/* ---- Dispatch ------------------------------------------------------------------------ */

/* Whether every row of s (na x nb) is constant along its bins (to 1e-9 of
 * the largest value): the data hold no trace of the rotation axis. */
static int flat_rows(const double *s, int64_t na, int64_t nb) {
  double top = 0, spread = 0;
  for (int64_t a = 0; a < na; a++) {
    double lo = s[a * nb], hi = lo;
    for (int64_t b = 1; b < nb; b++) {
      lo = fmin(lo, s[a * nb + b]);
      hi = fmax(hi, s[a * nb + b]);
    }
    top = fmax(top, fmax(fabs(lo), fabs(hi)));
    spread = fmax(spread, hi - lo);
  }
  return !(spread > 1e-9 * top);
}

static int by_angle(const void *x, const void *y) {
  const double a = ((const double *)x)[0], b = ((const double *)y)[0];
  return (a > b) - (a < b);
}

ctr_status ctr_center_find(ctr_context *ctx, const ctr_parallel_geometry *g,
                           ctr_center_method method, double lo, double hi, int64_t nslices,
                           const float *sino, double *axis, ctr_center_method *used) {
  ctr_status st = CTR_OK;
  if (!g || !sino || !axis || nslices < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_center_find: g, sino, axis and nslices >= 1 are required");
  if (method < CTR_CENTER_AUTO || method > CTR_CENTER_CORRELATION)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_center_find: method %d: expected CTR_CENTER_AUTO, "
             "CTR_CENTER_VO or CTR_CENTER_CORRELATION", (int)method);
  const int64_t na = g->p.nangles, nb = g->p.nbins;
  if (nb < 8) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_center_find: %lld bins, expected at least 8", (long long)nb);
  if (lo == 0 && hi == 0) {
    lo = 0;
    hi = (double)(nb - 1);
  }
  if (!(lo <= hi) || hi < 0 || lo > (double)(nb - 1))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_center_find: search range [%g, %g] outside the "
             "detector's bins 0 .. %lld", lo, hi, (long long)(nb - 1));
  if (lo < 0) lo = 0;
  if (hi > (double)(nb - 1)) hi = (double)(nb - 1);
  double *s = calloc((size_t)(na * nb), sizeof(double));
  double *ang = malloc(sizeof(double) * 2 * (size_t)na);
  int64_t *pair = malloc(sizeof(int64_t) * 2 * (size_t)na), *rows = malloc(sizeof(int64_t) * (size_t)na);
  if (!s || !ang || !pair || !rows) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "ctr_center_find: %lld x %lld values", (long long)na,
                        (long long)nb);
    goto cleanup;
  }
  for (int64_t k = 0; k < nslices; k++)
    for (int64_t i = 0; i < na * nb; i++) {
      const float v = sino[k * na * nb + i];
      s[i] += isfinite(v) ? (double)v / (double)nslices : 0.0;
    }
  if (flat_rows(s, na, nb))
    CTR_FAIL_GOTO(st, CTR_E_GEOMETRY, "ctr_center_find: the sinograms are constant along the "
                  "detector in every projection (a blank or all-zero scan): no rotation axis can "
                  "be found from them; give the axis");
  /* opposite pairs: theta_b = theta_a + 180 within a quarter of the mean step */
  const double tol = fmax(1e-3, 0.25 * fabs(g->angles_deg[na - 1] - g->angles_deg[0]) / (double)(na > 1 ? na - 1 : 1));
  for (int64_t a = 0; a < na; a++) {
    ang[2 * a] = fmod(fmod(g->angles_deg[a], 360.0) + 360.0, 360.0);
    ang[2 * a + 1] = (double)a;
  }
  qsort(ang, (size_t)na, 2 * sizeof(double), by_angle);
  int64_t npairs = 0;
  for (int64_t i = 0; i < na; i++) {
    const double want = ang[2 * i] + 180.0;
    if (want >= 360.0 + tol) continue;
    int64_t l = 0, h = na;
    while (l < h) {
      const int64_t mid = (l + h) / 2;
      if (ang[2 * mid] < want - tol) l = mid + 1;
      else h = mid;
    }
    if (l < na && fabs(ang[2 * l] - want) <= tol) {
      pair[2 * npairs] = (int64_t)ang[2 * i + 1];
      pair[2 * npairs + 1] = (int64_t)ang[2 * l + 1];
      npairs++;
    }
  }
  if (method == CTR_CENTER_AUTO) method = npairs > 0 ? CTR_CENTER_CORRELATION : CTR_CENTER_VO;
  if (method == CTR_CENTER_CORRELATION) {
    if (!npairs)
      CTR_FAIL_GOTO(st, CTR_E_GEOMETRY, "ctr_center_find: no two projections are 180 degrees "
                    "apart, as CTR_CENTER_CORRELATION needs: use CTR_CENTER_VO");
    CTR_CHECK_GOTO(st, center_correlation(s, na, nb, pair, npairs, lo, hi, axis));
  } else {
    /* a half turn of rows from the first angle, in angle order */
    int64_t nr = 0;
    const double a0 = g->angles_deg[0];
    for (int64_t i = 0; i < na; i++) {
      const double d = fmod(fmod(g->angles_deg[i] - a0, 360.0) + 360.0, 360.0);
      if (d < 180.0 - tol) rows[nr++] = i;
    }
    if (nr < 8)
      CTR_FAIL_GOTO(st, CTR_E_GEOMETRY, "ctr_center_find: %lld projections in the half turn from "
                    "%g degrees; CTR_CENTER_VO needs at least 8", (long long)nr, a0);
    double *half = malloc(sizeof(double) * (size_t)(nr * nb));
    if (!half) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "ctr_center_find");
    for (int64_t i = 0; i < nr; i++) memcpy(half + i * nb, s + rows[i] * nb, sizeof(double) * (size_t)nb);
    /* VO's default range: the middle half, where a 180-degree scan's axis is */
    if (lo == 0 && hi == (double)(nb - 1)) {
      lo = 0.25 * (double)(nb - 1);
      hi = 0.75 * (double)(nb - 1);
    }
    st = center_vo(half, nr, nb, lo, hi, axis);
    free(half);
  }
  if (used) *used = method;
  (void)ctx;
cleanup:
  free(s);
  free(ang);
  free(pair);
  free(rows);
  return st;
}
