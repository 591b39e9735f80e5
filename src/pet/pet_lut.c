/* The three look-up tables of a view (seed 002 section 4.1): LORmap (kernel
 * identifier per lattice column), mSR (the kernel support, here as z-runs)
 * and mSRval (normalised kernel values, kernel id fastest). */
#include "pet/pet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ctr__pet_lut_free(ctr__pet_lut *L) {
  if (!L) return;
  free(L->cols);
  free(L->w);
  free(L->norm);
  free(L->lormap);
  free(L->pid);
  free(L);
}

static int inside(const ctr__pet_frame *f, const double h[3], const double o[3]) {
  const double *ax[3] = {f->d, f->r, f->a};
  double q = 0;
  for (int i = 0; i < 3; i++) {
    double c = o[0] * ax[i][0] + o[1] * ax[i][1] + o[2] * ax[i][2];
    if (h[i] <= 0) {
      if (fabs(c) > 1e-9) return 0;
      continue;
    }
    q += (c / h[i]) * (c / h[i]);
  }
  return q <= 1.0 + 1e-9;
}

/* The support as z-runs in (dy, dx, dz) lexicographic order. */
static ctr_status build_support(const ctr_pet_system *s, ctr__pet_lut *L) {
  double h[3];
  int box[3];
  ctr__pet_support_axes(s, h);
  ctr__pet_support_box(s, &L->f, box);
  int64_t ncap = (int64_t)(2 * box[0] + 1) * (2 * box[1] + 1);
  L->cols = ctr__malloc((size_t)ncap * sizeof *L->cols, "PET kernel support");
  if (!L->cols) return CTR_E_OUT_OF_MEMORY;
  double vox = s->p.voxel;
  int32_t nc = 0, ne = 0;
  for (int dy = -box[1]; dy <= box[1]; dy++)
    for (int dx = -box[0]; dx <= box[0]; dx++) {
      int lo = 1, hi = 0;
      for (int dz = -box[2]; dz <= box[2]; dz++) {
        double o[3] = {dx * vox, dy * vox, dz * vox};
        if (!inside(&L->f, h, o)) continue;
        if (lo > hi) lo = dz;
        hi = dz;
      }
      if (lo > hi) continue;
      ctr__pet_column *c = &L->cols[nc++];
      c->dx = (int16_t)dx, c->dy = (int16_t)dy, c->dz0 = (int16_t)lo;
      c->len = (int16_t)(hi - lo + 1), c->e0 = ne;
      ne += hi - lo + 1;
      if (abs(dx) > L->hx) L->hx = abs(dx);
      if (abs(dy) > L->hy) L->hy = abs(dy);
      if (abs(lo) > L->hz) L->hz = abs(lo);
      if (abs(hi) > L->hz) L->hz = abs(hi);
    }
  L->ncols = nc, L->nent = ne;
  return CTR_OK;
}

static ctr_status build_values(const ctr_pet_system *s, ctr__pet_lut *L) {
  int nk = s->nk, ne = L->nent;
  L->nk = nk;
  L->w = ctr__malloc((size_t)ne * nk * sizeof(float), "PET kernel values (mSRval)");
  L->norm = ctr__malloc((size_t)nk * sizeof(double), "PET kernel norms");
  if (!L->w || !L->norm) return CTR_E_OUT_OF_MEMORY;
  double vox = s->p.voxel;
  int bad = -1;
#pragma omp parallel for schedule(dynamic, 4)
  for (int id = 0; id < nk; id++) {
    double rho = ctr__pet_kernel_rho(s, id), sum = 0;
    double *val = malloc((size_t)ne * sizeof(double));
    if (!val) {
      bad = id;
      continue;
    }
    for (int c = 0; c < L->ncols; c++) {
      const ctr__pet_column *col = &L->cols[c];
      for (int k = 0; k < col->len; k++) {
        double o[3] = {col->dx * vox, col->dy * vox, (col->dz0 + k) * vox};
        double v = ctr__pet_kernel_raw(s, &L->f, rho, o);
        val[col->e0 + k] = v;
        sum += v;
      }
    }
    if (!(sum > 0) || !isfinite(sum)) {
      bad = id;
      free(val);
      continue;
    }
    L->norm[id] = 1.0 / sum;
    for (int e = 0; e < ne; e++) L->w[(size_t)e * nk + id] = (float)(val[e] / sum);
    free(val);
  }
  if (bad >= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "SR kernel at radial position %g mm has no positive value on its support (check "
             "the kernel widths against the %g mm voxels, or the custom kernel)",
             ctr__pet_kernel_rho(s, bad), vox);
  return CTR_OK;
}

static ctr_status build_lormap(const ctr_pet_system *s, ctr__pet_lut *L) {
  const ctr_pet_params *p = &s->p;
  L->lormap = ctr__malloc((size_t)(p->nx * p->ny) * sizeof(int32_t), "PET LORmap");
  if (!L->lormap) return CTR_E_OUT_OF_MEMORY;
  for (int64_t j = 0; j < p->ny; j++)
    for (int64_t i = 0; i < p->nx; i++) {
      double x = (i - 0.5 * (p->nx - 1)) * p->voxel, y = (j - 0.5 * (p->ny - 1)) * p->voxel;
      L->lormap[j * p->nx + i] = ctr__pet_kernel_id(s, x * L->f.r[0] + y * L->f.r[1]);
    }
  const int64_t hx = s->halo[0], hy = s->halo[1], px = p->nx + 2 * hx, py = p->ny + 2 * hy;
  L->pid = ctr__malloc((size_t)(px * py) * sizeof(int32_t), "PET padded LORmap");
  if (!L->pid) return CTR_E_OUT_OF_MEMORY;
  for (int64_t y = 0; y < py; y++)
    for (int64_t x = 0; x < px; x++) {
      int64_t cy = y - hy < 0 ? 0 : (y - hy >= p->ny ? p->ny - 1 : y - hy);
      int64_t cx = x - hx < 0 ? 0 : (x - hx >= p->nx ? p->nx - 1 : x - hx);
      L->pid[y * px + x] = L->lormap[cy * p->nx + cx];
    }
  return CTR_OK;
}

static ctr_status build(ctr_pet_system *s, int64_t v, ctr__pet_lut **out) {
  ctr__pet_lut *L = ctr__calloc(1, sizeof *L, "PET view tables");
  if (!L) return CTR_E_OUT_OF_MEMORY;
  ctr__pet_frame_of(s, v, &L->f);
  ctr_status st;
  CTR_CHECK_GOTO(st, build_support(s, L));
  CTR_CHECK_GOTO(st, build_values(s, L));
  CTR_CHECK_GOTO(st, build_lormap(s, L));
  *out = L;
  return CTR_OK;
cleanup:
  ctr__pet_lut_free(L);
  return st;
}

const ctr__pet_lut *ctr__pet_lut_get(ctr_pet_system *s, int64_t v) {
  if (v < 0 || v >= s->nviews) {
    ctr__error_set(CTR_E_INVALID_ARGUMENT, "view %lld: expected 0..%lld", (long long)v,
                   (long long)s->nviews - 1);
    return NULL;
  }
  pthread_mutex_lock(&s->lock);
  ctr__pet_lut *L = s->luts[v];
  if (!L && build(s, v, &L) == CTR_OK) s->luts[v] = L;
  pthread_mutex_unlock(&s->lock);
  return L;
}

ctr_status ctr__pet_fft_kernel(ctr_pet_system *s, int64_t view, const int64_t n[3], double *out) {
  if (!ctr_pet_system_is_kernel_invariant(s))
    CTR_FAIL(CTR_E_UNSUPPORTED,
             "the FFT reference needs symmetric invariant kernels (same LOR-radial FWHM at "
             "centre and edge, not asymmetric, not custom)");
  const ctr__pet_lut *L = ctr__pet_lut_get(s, view);
  if (!L) return CTR_E_OUT_OF_MEMORY;
  double vox = s->p.voxel, norm = L->norm[s->nk / 2];
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        double o[3] = {(i <= n[0] / 2 ? i : i - n[0]) * vox, (j <= n[1] / 2 ? j : j - n[1]) * vox,
                       (k <= n[2] / 2 ? k : k - n[2]) * vox};
        out[(k * n[1] + j) * n[0] + i] = ctr__pet_kernel_raw(s, &L->f, 0.0, o) * norm;
      }
  return CTR_OK;
}
