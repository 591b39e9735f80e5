/* Parallel-beam backprojection on the CPU: the fast float backprojector and
 * the double-precision reference (docs/parallel-beam.md).
 *
 * Both evaluate, for pixel (i, j) and angle a with the constants of
 * ctr__par_angles, the bin
 *   t = (t0 + j s) + i c          (in double, in this order)
 * and add w_a times the sinogram at t: linear, (1 - f) q[i0] + f q[i0 + 1]
 * with i0 = floor(t), f = t - i0; nearest, q[floor(t + 0.5)]; the sinogram
 * is 0 outside its bins [0, nbins).
 *
 * The fast backprojector follows Chilingaryan et al. 2020, section 6.10: plain threaded C,
 * each thread owns a tile of pixels of several slices at once (KS slices of
 * TY x TX pixels, accumulated in L1) and walks every angle over it. Per
 * angle and tile row the bin positions are computed once, in double (float
 * t would carry errors of ~1e-5 bins at bin 500), and the KS slices reuse
 * them; the inner loops run across x and vectorise (AVX-512 / AVX2 / SSE
 * clones picked at run time).
 *
 * Linear interpolation reads, like the GPU's ALU kernel (Chilingaryan et al. 2020, Alg. 9),
 * a per-tile cache of (w q[b], w (q[b+1] - q[b])) pairs for the bins the
 * tile covers at that angle: one 8-byte load and one multiply-add per pixel
 * and slice instead of two loads and two weights (the compiler emulates
 * gathers with scalar loads, so loads are the cost: 2 - 3x faster, even
 * with 6-bin pixels where the cache is as long as the tile is wide). Border
 * bins are in the cache (zeros beyond the detector), so the tables need no
 * border logic. For very coarse pixels (a cache over 4x the tile's pixel
 * count, voxel > ~20 bins) the tiles read the sinogram directly with the
 * border folded into two weights instead. Nearest interpolation reads the
 * sinogram directly, its weight 0 off the detector. */
#include "parbeam/parbeam.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CTR__CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CTR__CLONES
#endif

#define KS 8  /* slices per pass */
#define TX 64 /* tile width (pixels): the vectorised loops */
#define TY 8  /* tile height */

/* Per-thread scratch: the accumulators of one tile and one row's tables. */
typedef struct bp_scratch {
  float acc[KS * TY * TX];
  int32_t idx[TX];
  float wa[TX], wb[TX];
} bp_scratch;

/* Bin positions are computed without contracting x * c + t into a fused
 * multiply-add, in the tables, the driver and the reference alike, so that
 * both round t the same way on every target (an exact tie t = k + 1/2 of
 * nearest interpolation, e.g. pixels on the diagonal at 45 degrees, must go
 * the same way in both). no-trapping-math lets the compiler turn the clamps
 * of t into selects (FP exception flags are of no interest here; values are
 * unchanged). The accumulation loops further down keep their FMAs. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off", "no-trapping-math")

/* Cached linear tables for one tile row: idx = floor(t) - blo, wa = the
 * fraction, t clamped to [blo, bhi] (the cache's span, which holds every
 * pixel's t; the clamp only keeps a stray index inside it). */
CTR__CLONES
static void table_cached(double tr, double c, int i0, int blo, int bhi, int32_t *restrict idx,
                         float *restrict wa) {
  const double lo_d = (double)blo, hi_d = (double)bhi;
  for (int k = 0; k < TX; k++) {
    double t = tr + (double)(i0 + k) * c;
    t = t < lo_d ? lo_d : t;
    t = t > hi_d ? hi_d : t;
    const int e = (int)(t - lo_d); /* floor(t) - blo, t - blo >= 0 */
    idx[k] = e;
    wa[k] = (float)(t - (double)(blo + e));
  }
}

/* Direct linear tables for one tile row: value = wa q[idx] + wb q[idx + d1]
 * (d1 = 1, or 0 when nbins == 1) equals w times the linear interpolation of
 * q at t with q = 0 outside [0, nb). Written to vectorise: floor as a
 * truncation of t + 1 >= 0, selects rather than branches. */
CTR__CLONES
static void table_linear(double tr, double c, int i0, int nb, double w, int32_t *restrict idx,
                         float *restrict wa, float *restrict wb) {
  const double hi = (double)nb;
  const int top = nb - 2; /* largest base index with a right neighbour (-1 if nb == 1) */
  for (int k = 0; k < TX; k++) {
    double t = tr + (double)(i0 + k) * c;
    t = t < -1.0 ? -1.0 : t;
    t = t > hi ? hi : t;
    const int lo = (int)(t + 1.0) - 1; /* floor(t), -1 .. nb */
    const double f = t - (double)lo;
    const float a = (float)(w * (1.0 - f)), b = (float)(w * f);
    int base = lo > top ? top : lo;
    base = base < 0 ? 0 : base;
    idx[k] = base;
    /* lo = -1: f q[0]; 0 <= lo <= nb - 2: both; lo = nb - 1: (1 - f) q[nb - 1]
     * at base + d1; lo = nb: nothing. */
    wa[k] = lo < 0 ? b : (lo <= top ? a : 0.0f);
    wb[k] = lo < 0 ? 0.0f : (lo <= top ? b : (lo == nb - 1 ? a : 0.0f));
  }
}

/* Nearest-bin tables: value = wa q[idx], the bin floor(t + 1/2). */
CTR__CLONES
static void table_nearest(double tr, double c, int i0, int nb, double w, int32_t *restrict idx,
                          float *restrict wa) {
  const double hi = (double)nb;
  for (int k = 0; k < TX; k++) {
    double t = tr + (double)(i0 + k) * c;
    t = t < -1.0 ? -1.0 : t;
    t = t > hi ? hi : t;
    const int r = (int)(t + 1.5) - 1; /* floor(t + 0.5), -1 .. nb */
    const int ok = (r >= 0) & (r < nb);
    idx[k] = ok ? r : 0;
    wa[k] = ok ? (float)w : 0.0f;
  }
}

#pragma GCC pop_options

static inline uint64_t pack_pair(float v, float d) {
  uint32_t a, b;
  memcpy(&a, &v, sizeof a);
  memcpy(&b, &d, sizeof b);
  return (uint64_t)a | ((uint64_t)b << 32);
}

/* pc[e] = (w q[b], w (q[b + 1] - q[b])) for b = blo + e, e < n, where
 * 0 <= b and b + 1 < nb (no border). */
CTR__CLONES
static void pairs_inner(uint64_t *restrict pc, const float *restrict q, int n, float w) {
  for (int e = 0; e < n; e++) pc[e] = pack_pair(w * q[e], w * (q[e + 1] - q[e]));
}

/* The cache of bins [blo, blo + n) of row q (nb bins, 0 outside). */
static void build_pairs(uint64_t *restrict pc, const float *restrict q, int nb, int blo, int n,
                        float w) {
  int e = 0;
  /* Border entries (b < 0 or b + 1 >= nb) one by one, the rest in bulk. */
  for (; e < n && blo + e < 0; e++) {
    const int b = blo + e;
    const float v1 = b + 1 >= 0 && b + 1 < nb ? q[b + 1] : 0.0f;
    pc[e] = pack_pair(0.0f, w * v1);
  }
  int inner = nb - 1 - (blo + e); /* entries with b + 1 < nb */
  if (inner > n - e) inner = n - e;
  if (inner > 0) {
    pairs_inner(pc + e, q + blo + e, inner, w);
    e += inner;
  }
  for (; e < n; e++) {
    const int b = blo + e;
    const float v = b >= 0 && b < nb ? q[b] : 0.0f;
    pc[e] = pack_pair(w * v, -w * v);
  }
}

CTR__CLONES
static void acc_cached(float *restrict acc, const uint64_t *restrict pc, const int32_t *restrict idx,
                       const float *restrict f) {
  for (int k = 0; k < TX; k++) {
    const uint64_t p = pc[idx[k]];
    const uint32_t lo = (uint32_t)p, hi = (uint32_t)(p >> 32);
    float v, d;
    memcpy(&v, &lo, sizeof v);
    memcpy(&d, &hi, sizeof d);
    acc[k] += v + f[k] * d;
  }
}

CTR__CLONES
static void acc_linear(float *restrict acc, const float *restrict q, int d1,
                       const int32_t *restrict idx, const float *restrict wa,
                       const float *restrict wb) {
  for (int k = 0; k < TX; k++) acc[k] += wa[k] * q[idx[k]] + wb[k] * q[idx[k] + d1];
}

CTR__CLONES
static void acc_nearest(float *restrict acc, const float *restrict q, const int32_t *restrict idx,
                        const float *restrict wa) {
  for (int k = 0; k < TX; k++) acc[k] += wa[k] * q[idx[k]];
}

/* Cache entries a tile may need at one angle: its bin span (the corners'
 * extreme t are at most (TX - 1 + TY - 1) voxel sqrt 2 apart), the floor,
 * the right neighbour and margins; never more than the detector and its two
 * border bins. */
static int cache_entries(const ctr_parallel_geometry *g) {
  const double span = (double)(TX + TY) * g->p.voxel * 1.4142136 + 6.0;
  const double det = (double)g->p.nbins + 2.0;
  return (int)(span < det ? span : det);
}

typedef struct bp_job {
  const ctr_parallel_geometry *g;
  const ctr__par_angle *ang; /* NULL: computed per tile; else angles a0 .. a0 + na - 1 */
  const float *sino;         /* nslices x na x nbins */
  float *slices;
  int64_t nslices;
  int nearest, cached;
  int cache_n;               /* cache entries per slice */
  int64_t a0, na;            /* the geometry's angles summed: [a0, a0 + na) */
  int cont;                  /* 1: the sums continue from the slices' values, else from 0 */
} bp_job;

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

/* Tile (item) of the job: KS slices from s0, rows j0 .., columns i0 .. */
static void bp_tile(const bp_job *jb, int64_t s0, int64_t j0, int64_t i0, bp_scratch *sc,
                    uint64_t *cache) {
  const ctr_parallel_geometry *g = jb->g;
  const int64_t nb = g->p.nbins, na = jb->na, nx = g->p.nx, ny = g->p.ny;
  const int ks = (int)(jb->nslices - s0 < KS ? jb->nslices - s0 : KS);
  const int h = (int)(ny - j0 < TY ? ny - j0 : TY), wdt = (int)(nx - i0 < TX ? nx - i0 : TX);
  const int d1 = nb > 1 ? 1 : 0;
  memset(sc->acc, 0, sizeof sc->acc);
  if (jb->cont) /* the sums so far: each pixel's sequence of additions goes on */
    for (int m = 0; m < ks; m++)
      for (int r = 0; r < h; r++)
        memcpy(sc->acc + (m * TY + r) * TX, jb->slices + ((s0 + m) * ny + j0 + r) * nx + i0,
               sizeof(float) * (size_t)wdt);
  for (int64_t a = 0; a < na; a++) {
    ctr__par_angle one;
    if (!jb->ang) ctr__par_angles(g, jb->a0 + a, 1, &one);
    const ctr__par_angle *A = jb->ang ? &jb->ang[a] : &one;
    const float *q0 = jb->sino + (s0 * na + a) * nb;
    int blo = 0, bhi = 0, n = 0;
    if (jb->cached) {
      /* The tile's bin span from its corners (t is linear in i and j),
       * widened by one bin each way against rounding, within [-1, nb]. */
      const double tc = A->t0 + (double)j0 * A->s + (double)i0 * A->c;
      const double di = (double)(TX - 1) * A->c, dj = (double)(h - 1) * A->s;
      const double tmin = tc + (di < 0 ? di : 0) + (dj < 0 ? dj : 0);
      const double tmax = tc + (di > 0 ? di : 0) + (dj > 0 ? dj : 0);
      blo = tmin < 0.0 ? -1 : (tmin > (double)nb ? (int)nb : (int)tmin - 1);
      bhi = tmax > (double)nb ? (int)nb : (tmax < 0.0 ? 0 : (int)tmax + 2);
      if (blo < -1) blo = -1;
      if (bhi > nb) bhi = (int)nb;
      if (bhi < blo) bhi = blo;
      n = bhi - blo + 1;
      if (n > jb->cache_n) { /* cannot happen (cache_entries); stay in bounds */
        n = jb->cache_n;
        bhi = blo + n - 1;
      }
      for (int m = 0; m < ks; m++)
        build_pairs(cache + (size_t)m * (size_t)jb->cache_n, q0 + (int64_t)m * na * nb, (int)nb,
                    blo, n, (float)A->w);
    }
    for (int r = 0; r < h; r++) {
      const double tr = A->t0 + (double)(j0 + r) * A->s;
      if (jb->cached) {
        table_cached(tr, A->c, (int)i0, blo, bhi, sc->idx, sc->wa);
        for (int m = 0; m < ks; m++)
          acc_cached(sc->acc + (m * TY + r) * TX, cache + (size_t)m * (size_t)jb->cache_n, sc->idx,
                     sc->wa);
      } else if (jb->nearest) {
        table_nearest(tr, A->c, (int)i0, (int)nb, A->w, sc->idx, sc->wa);
        for (int m = 0; m < ks; m++)
          acc_nearest(sc->acc + (m * TY + r) * TX, q0 + (int64_t)m * na * nb, sc->idx, sc->wa);
      } else {
        table_linear(tr, A->c, (int)i0, (int)nb, A->w, sc->idx, sc->wa, sc->wb);
        for (int m = 0; m < ks; m++)
          acc_linear(sc->acc + (m * TY + r) * TX, q0 + (int64_t)m * na * nb, d1, sc->idx, sc->wa,
                     sc->wb);
      }
    }
  }
  for (int m = 0; m < ks; m++)
    for (int r = 0; r < h; r++)
      memcpy(jb->slices + ((s0 + m) * ny + j0 + r) * nx + i0, sc->acc + (m * TY + r) * TX,
             sizeof(float) * (size_t)wdt);
}

/* The sums of angles [a0, a0 + na) into the slices, from 0 or (cont) on. */
static void bp_run(const ctr_context *ctx, const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                   int64_t nslices, int64_t a0, int64_t na, int cont, const float *sino,
                   float *slices) {
  const int64_t nx = g->p.nx, ny = g->p.ny;
  const int64_t ngroups = (nslices + KS - 1) / KS, ntx = (nx + TX - 1) / TX,
                nty = (ny + TY - 1) / TY, nitems = ngroups * nty * ntx;
  if (nslices <= 0 || na <= 0) return;
  const int nthreads = ctr__num_threads(ctx);
  bp_job jb = {g,  NULL, sino, slices, nslices, interp == CTR_FBP_NEAREST, 0, cache_entries(g),
               a0, na, cont};
  /* The pair cache: building it is a vectorised copy, so it pays up to
   * caches several times the tile's pixel count (measured: 2x faster at
   * 6-bin pixels). Without memory for it (or the angle table) the
   * backprojector falls back to the direct reads (or per-tile constants):
   * slower, never wrong. */
  uint64_t *caches = NULL;
  if (!jb.nearest && jb.cache_n <= 4 * TX * TY)
    caches = malloc(sizeof(uint64_t) * (size_t)jb.cache_n * KS * (size_t)nthreads);
  jb.cached = caches != NULL;
  ctr__par_angle *ang = malloc(sizeof *ang * (size_t)na);
  if (ang) ctr__par_angles(g, a0, na, ang);
  jb.ang = ang;
#pragma omp parallel num_threads(nthreads)
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
    uint64_t *cache = caches ? caches + (size_t)tid * (size_t)jb.cache_n * KS : NULL;
    /* On the stack (17 KB): nothing to fail. */
    _Alignas(64) bp_scratch sc;
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < nitems; item++) {
      const int64_t grp = item / (nty * ntx), rem = item % (nty * ntx);
      bp_tile(&jb, grp * KS, (rem / ntx) * TY, (rem % ntx) * TX, &sc, cache);
    }
  }
  free(ang);
  free(caches);
}

void ctr__fbp_bp_cpu(const ctr_context *ctx, const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                     int64_t nslices, const float *sino, float *slices) {
  bp_run(ctx, g, interp, nslices, 0, g->p.nangles, 0, sino, slices);
}

void ctr__fbp_bp_cpu_continue(const ctr_context *ctx, const ctr_parallel_geometry *g,
                              ctr_fbp_interp interp, int64_t nslices, int64_t a0, int64_t na,
                              const float *sino, float *slices) {
  bp_run(ctx, g, interp, nslices, a0, na, 1, sino, slices);
}

ctr_status ctr_fbp_backproject_reference(const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                                         int64_t nslices, const float *sino, double *slices) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_backproject_reference: geometry is NULL");
  if (interp != CTR_FBP_LINEAR && interp != CTR_FBP_NEAREST)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_fbp_backproject_reference: interp = %d, expected CTR_FBP_LINEAR or "
             "CTR_FBP_NEAREST",
             (int)interp);
  if (nslices < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_backproject_reference: nslices = %lld, expected >= 1",
             (long long)nslices);
  if (!sino || !slices)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_backproject_reference: %s is NULL",
             !sino ? "sino" : "slices");
  if (ctr__par_tilted(g)) /* nslices: the slices (nz); the views have the geometry's rows */
    return ctr__lamino_bp_reference(g, interp, nslices, sino, slices);
  const int64_t nb = g->p.nbins, na = g->p.nangles, nx = g->p.nx, ny = g->p.ny;
  ctr__par_angle *ang = ctr__malloc(sizeof *ang * (size_t)na, "angle constants");
  if (!ang) return CTR_E_OUT_OF_MEMORY;
  ctr__par_angles(g, 0, na, ang);
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctr__num_threads(NULL))
  for (int64_t s = 0; s < nslices; s++) {
    for (int64_t j = 0; j < ny; j++) {
      double *out = slices + (s * ny + j) * nx;
      for (int64_t i = 0; i < nx; i++) out[i] = 0.0;
      for (int64_t a = 0; a < na; a++) {
        const ctr__par_angle *A = &ang[a];
        const float *q = sino + (s * na + a) * nb;
        const double tr = A->t0 + (double)j * A->s;
        for (int64_t i = 0; i < nx; i++) {
          const double t = tr + (double)i * A->c;
          double v = 0.0;
          if (interp == CTR_FBP_NEAREST) {
            const double r = floor(t + 0.5);
            if (r >= 0.0 && r < (double)nb) v = q[(int64_t)r];
          } else {
            const double fl = floor(t), f = t - fl;
            if (fl >= 0.0 && fl < (double)nb) v += (1.0 - f) * q[(int64_t)fl];
            if (fl + 1.0 >= 0.0 && fl + 1.0 < (double)nb) v += f * q[(int64_t)fl + 1];
          }
          out[i] += A->w * v;
        }
      }
    }
  }
  free(ang);
  return CTR_OK;
}

#pragma GCC pop_options
