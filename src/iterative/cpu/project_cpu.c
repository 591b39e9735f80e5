/* The CPU backend of the iterative projector (OpenMP): Joseph forward
 * projection over zero-padded plane stacks of a slab, and its exact adjoint
 * as a voxel-driven gather over ray tables (column by column where the view
 * is column-separable), with the maths of itmath.h.
 * Compiled with -ffp-contract=off (CMakeLists.txt): the positions must have
 * the bits the adjoint and the GPU compute. */
#include "iterative/iterative.h"

#include <string.h>

/* ---- Plane stacks -------------------------------------------------------------- */

/* Two zero-bordered copies of a slab of zs slices (CTR__IT_PAD on both sides
 * of every axis): sz with x fastest, then y, then z (planes of
 * constant y or z), sx with y fastest, then x, then z (planes of constant
 * x), so that the in-plane axis p of every ray family is contiguous. */
typedef struct stacks {
  float *sz, *sx;
  int64_t nxp, nyp, nzp;
} stacks;

#define PAD CTR__IT_PAD
#define PADS (2 * CTR__IT_PAD)
#define TILE 32

static ctr_status stacks_build(const ctr_projector *p, const float *x, int64_t zs, stacks *s) {
  const int64_t nx = p->n[0], ny = p->n[1];
  s->nxp = nx + PADS, s->nyp = ny + PADS, s->nzp = zs + PADS;
  const size_t count = (size_t)(s->nxp * s->nyp * s->nzp);
  s->sz = ctr__aligned_alloc(sizeof(float) * count, "plane stack (z)");
  s->sx = ctr__aligned_alloc(sizeof(float) * count, "plane stack (x)");
  if (!s->sz || !s->sx) return CTR_E_OUT_OF_MEMORY;
  const int64_t nxp = s->nxp, nyp = s->nyp, plane = nxp * nyp;
  const int nt = ctr__num_threads(p->ctx);
#pragma omp parallel for num_threads(nt)
  for (int64_t k = 0; k < s->nzp; k++) {
    memset(s->sz + k * plane, 0, sizeof(float) * (size_t)plane);
    memset(s->sx + k * plane, 0, sizeof(float) * (size_t)plane);
  }
#pragma omp parallel for collapse(2) num_threads(nt)
  for (int64_t k = 0; k < zs; k++)
    for (int64_t j = 0; j < ny; j++)
      memcpy(s->sz + ((k + PAD) * nyp + j + PAD) * nxp + PAD,
             x + (k * ny + j) * nx, sizeof(float) * (size_t)nx);
  /* The transposed copy tile by tile. */
  const int64_t tj = (ny + TILE - 1) / TILE, ti = (nx + TILE - 1) / TILE;
#pragma omp parallel for collapse(3) num_threads(nt)
  for (int64_t k = 0; k < zs; k++)
    for (int64_t bj = 0; bj < tj; bj++)
      for (int64_t bi = 0; bi < ti; bi++) {
        const int64_t j1 = (bj + 1) * TILE < ny ? (bj + 1) * TILE : ny;
        const int64_t i1 = (bi + 1) * TILE < nx ? (bi + 1) * TILE : nx;
        for (int64_t i = bi * TILE; i < i1; i++) {
          float *dst = s->sx + ((k + PAD) * nxp + i + PAD) * nyp + PAD;
          for (int64_t j = bj * TILE; j < j1; j++) dst[j] = x[(k * ny + j) * nx + i];
        }
      }
  return CTR_OK;
}

static void stacks_free(stacks *s) {
  ctr__aligned_free(s->sz);
  ctr__aligned_free(s->sx);
}

/* ---- Forward projection ----------------------------------------------------------- */

ctr_status ctr__it_cpu_forward(const ctr_projector *p, const float *x_slab, int64_t z0, int64_t z1,
                               float *y, int64_t w0, int64_t w1, int accumulate) {
  const int64_t zs = z1 - z0;
  stacks s = {NULL, NULL, 0, 0, 0};
  ctr_status st = stacks_build(p, x_slab, zs, &s);
  if (st != CTR_OK) {
    stacks_free(&s);
    return st;
  }
  const int64_t nu = p->nu, nv = p->nv;
  const int64_t nxp = s.nxp, nyp = s.nyp;
  const int pitch_z = (int)(nxp * nyp); /* the planner keeps a slab's stack below 2^31 */
  const float *bz = s.sz + (PAD * nyp + PAD) * nxp + PAD;
  const float *bx = s.sx + (PAD * nxp + PAD) * nyp + PAD;
  int64_t b0[3], b1[3];
  ctr__proj_box(p, z0, z1, b0, b1);
#pragma omp parallel for collapse(2) schedule(dynamic, 4) num_threads(ctr__num_threads(p->ctx))
  for (int64_t w = w0; w < w1; w++)
    for (int64_t v = 0; v < nv; v++) {
      const ctr__it_view *view = &p->views[p->order[w]];
      float *row = y + (w * nv + v) * nu;
      for (int64_t u = 0; u < nu; u++) {
        ctr__it_ray r;
        ctr__it_ray_setup(view, p->vox, b0, b1, (double)u, (double)v, &r);
        float sum = 0.0f;
        if (r.lo <= r.hi) {
          if (r.f == 0)
            sum = ctr__it_ray_sum(bx, nyp, pitch_z, &r, r.lo, r.hi, 0, (float)z0);
          else if (r.f == 1)
            sum = ctr__it_ray_sum(bz, nxp, pitch_z, &r, r.lo, r.hi, 0, (float)z0);
          else
            sum = ctr__it_ray_sum(bz, nxp * nyp, (int)nxp, &r, r.lo, r.hi, (int)z0, 0.0f);
        }
        const float value = CTR__FMUL(r.len, sum);
        row[u] = accumulate ? CTR__FADD(row[u], value) : value;
      }
    }
  stacks_free(&s);
  return CTR_OK;
}

/* ---- Adjoint --------------------------------------------------------------------------- */

/* A batch's ray tables: per ray (A_p, B_p, A_q, B_q) and (Y = y len, f), f
 * = 3 for a ray that weighs no voxel; per view the families present. */
typedef struct tables {
  float *line; /* 4 per ray */
  float *yf;   /* 2 per ray */
  int *fam;    /* per view: bit f set when a ray of family f is there */
} tables;

static void tables_build(const ctr_projector *p, const float *y, int64_t w0, int64_t nb,
                         tables *t) {
  const int64_t nu = p->nu, nv = p->nv;
  int64_t b0[3], b1[3];
  ctr__proj_box(p, 0, p->n[2], b0, b1);
#pragma omp parallel for num_threads(ctr__num_threads(p->ctx))
  for (int64_t k = 0; k < nb; k++) {
    const ctr__it_view *view = &p->views[p->order[w0 + k]];
    int fam = 0;
    for (int64_t v = 0; v < nv; v++)
      for (int64_t u = 0; u < nu; u++) {
        const int64_t r = (k * nv + v) * nu + u;
        ctr__it_ray ray;
        ctr__it_ray_setup(view, p->vox, b0, b1, (double)u, (double)v, &ray);
        const int f = ray.lo <= ray.hi ? ray.f : 3;
        t->line[4 * r] = ray.A[0];
        t->line[4 * r + 1] = ray.B[0];
        t->line[4 * r + 2] = ray.A[1];
        t->line[4 * r + 3] = ray.B[1];
        t->yf[2 * r] = CTR__FMUL(y[((w0 + k) * nv + v) * nu + u], ray.len);
        t->yf[2 * r + 1] = (float)f;
        if (f < 3) fam |= 1 << f;
        if (view->cols &&
            !ctr__it_sep_check(view, p->cols + 2 * (p->order[w0 + k] * nu + u), (int)u, f,
                               ray.A[0], ray.B[0]))
          fam |= CTR__IT_FAM_SPLIT;
      }
    t->fam[k] = fam;
  }
}

/* Views per batch of ray tables on the CPU: at most this many bytes of
 * tables (and at least one view). */
#define CPU_TABLE_BYTES ((int64_t)64 << 20)

/* Voxels along x and y of the adjoint's tiles (a tile: TILE_XY^2 columns
 * of CTR__IT_COLUMN slices). */
#define TILE_XY 16

/* The separable gather of one column-separable view (itmath.h) into a
 * tile: voxels (i0 + a, j0 + b, k0 + s), a < na, b < nb, s < nk, their
 * accumulators at acc[(s * TILE_XY + b) * TILE_XY + a]. Per family and
 * plane of the tile, each column of the plane's pixel box that weighs a
 * voxel of the tile (wp > 0: at most two in-plane voxels, floor(p) and the
 * next) walks its rows once (ctr__it_sep_walk) and adds wp T to them; the
 * columns in increasing u, so every voxel's terms come in the order the
 * GPU's tiles and any other tiling give. */
static void sep_tile(const ctr__it_view *w, const float *cols, const float *line, const float *yf,
                     int nu, int nv, int i0, int j0, int na, int nb, int k0, int nk, float *acc) {
  const float zc = (float)k0 + 0.5f * (float)(nk - 1), zh = 0.5f * (float)(nk + 1);
  for (int f = 0; f < 2; f++) {
    if (w->run[f][0] > w->run[f][1]) continue;
    const int np = f == 0 ? na : nb, nin = f == 0 ? nb : na, in0 = f == 0 ? j0 : i0;
    const float c = 0.5f * (float)(nin - 1);
    for (int P = 0; P < np; P++) {
      const int fi = (f == 0 ? i0 : j0) + P;
      int u0, u1, v0, v1;
      if (f == 0)
        ctr__it_box_view(&w->cam, (float)fi, (float)j0 + c, zc, 1, 2, c + 1.0f, zh, nu, nv, &u0,
                         &u1, &v0, &v1);
      else
        ctr__it_box_view(&w->cam, (float)i0 + c, (float)fi, zc, 0, 2, c + 1.0f, zh, nu, nv, &u0,
                         &u1, &v0, &v1);
      if (u0 < w->run[f][0]) u0 = w->run[f][0];
      if (u1 > w->run[f][1]) u1 = w->run[f][1];
      if (v0 > v1) continue;
      for (int u = u0; u <= u1; u++) {
        const float p = ctr__it_pos(cols[2 * u], cols[2 * u + 1], fi);
        const float fl = floorf(p);
        if (!(fl >= (float)(in0 - 1) && fl < (float)(in0 + nin))) continue; /* misses the tile */
        float wp[2];
        int any = 0;
        for (int h = 0; h < 2; h++) {
          const int a = (int)fl + h - in0;
          wp[h] = a >= 0 && a < nin ? ctr__it_sep_wp(cols[2 * u], cols[2 * u + 1], fi,
                                                     (float)(in0 + a))
                                    : 0.0f;
          any |= wp[h] > 0.0f;
        }
        if (!any) continue;
        float Tp[CTR__IT_COLUMN + 2];
        for (int s = 0; s < nk + 2; s++) Tp[s] = 0.0f;
        ctr__it_sep_walk(line, yf, nu, u, v0, v1, (float)f, fi, k0, nk, Tp + 1, 1);
        for (int h = 0; h < 2; h++) {
          if (!(wp[h] > 0.0f)) continue;
          const int a = (int)fl + h - in0;
          float *o = acc + (f == 0 ? a * TILE_XY + P : P * TILE_XY + a);
          for (int s = 0; s < nk; s++) o[s * TILE_XY * TILE_XY] += wp[h] * Tp[s + 1];
        }
      }
    }
  }
}

ctr_status ctr__it_cpu_adjoint(const ctr_projector *p, const float *y, int64_t w0, int64_t w1,
                               float *x_slab, int64_t z0, int64_t z1, int accumulate) {
  const int64_t nx = p->n[0], ny = p->n[1], npix = p->nu * p->nv;
  int64_t nb = CPU_TABLE_BYTES / (24 * npix);
  if (nb < 1) nb = 1;
  if (nb > w1 - w0) nb = w1 - w0 > 0 ? w1 - w0 : 1;
  tables t;
  t.line = ctr__aligned_alloc(sizeof(float) * 4 * (size_t)(nb * npix), "ray tables");
  t.yf = ctr__aligned_alloc(sizeof(float) * 2 * (size_t)(nb * npix), "ray tables");
  t.fam = ctr__malloc(sizeof(int) * (size_t)nb, "ray tables");
  ctr_status st = CTR_OK;
  if (!t.line || !t.yf || !t.fam) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  if (w0 == w1 && !accumulate) memset(x_slab, 0, sizeof(float) * (size_t)(nx * ny * (z1 - z0)));
  for (int64_t b = w0; b < w1; b += nb) {
    const int64_t n = b + nb < w1 ? nb : w1 - b;
    tables_build(p, y, b, n, &t);
    const int add = accumulate || b > w0;
    const int64_t ncol = (z1 - z0 + CTR__IT_COLUMN - 1) / CTR__IT_COLUMN;
    const int64_t ti = (nx + TILE_XY - 1) / TILE_XY, tj = (ny + TILE_XY - 1) / TILE_XY;
#pragma omp parallel for collapse(3) schedule(dynamic, 1) num_threads(ctr__num_threads(p->ctx))
    for (int64_t c = 0; c < ncol; c++)
      for (int64_t bj = 0; bj < tj; bj++)
        for (int64_t bi = 0; bi < ti; bi++) {
          const int64_t k0 = z0 + c * CTR__IT_COLUMN, i0 = bi * TILE_XY, j0 = bj * TILE_XY;
          const int nk = (int)(z1 - k0 < CTR__IT_COLUMN ? z1 - k0 : CTR__IT_COLUMN);
          const int na = (int)(nx - i0 < TILE_XY ? nx - i0 : TILE_XY);
          const int nbv = (int)(ny - j0 < TILE_XY ? ny - j0 : TILE_XY);
          float acc[CTR__IT_COLUMN * TILE_XY * TILE_XY];
          float *vol = x_slab + ((k0 - z0) * ny + j0) * nx + i0;
          for (int s = 0; s < nk; s++)
            for (int jb = 0; jb < nbv; jb++)
              for (int ia = 0; ia < na; ia++)
                acc[(s * TILE_XY + jb) * TILE_XY + ia] = add ? vol[(s * ny + jb) * nx + ia] : 0.0f;
          for (int64_t q = 0; q < n; q++) {
            const int64_t g = p->order[b + q];
            const ctr__it_view *view = &p->views[g];
            const float *lq = t.line + 4 * q * npix, *yq = t.yf + 2 * q * npix;
            if (view->cols && !(t.fam[q] & (CTR__IT_FAM_SPLIT | 4))) {
              sep_tile(view, p->cols + 2 * g * p->nu, lq, yq, (int)p->nu, (int)p->nv, (int)i0,
                       (int)j0, na, nbv, (int)k0, nk, acc);
              continue;
            }
            for (int jb = 0; jb < nbv; jb++)
              for (int ia = 0; ia < na; ia++)
                ctr__it_gather_column(&view->cam, lq, yq, (int)p->nu, (int)p->nv, t.fam[q],
                                      (int)(i0 + ia), (int)(j0 + jb), (int)k0, nk,
                                      acc + jb * TILE_XY + ia, TILE_XY * TILE_XY);
          }
          for (int s = 0; s < nk; s++)
            for (int jb = 0; jb < nbv; jb++)
              for (int ia = 0; ia < na; ia++)
                vol[(s * ny + jb) * nx + ia] = acc[(s * TILE_XY + jb) * TILE_XY + ia];
        }
  }
cleanup:
  ctr__aligned_free(t.line);
  ctr__aligned_free(t.yf);
  free(t.fam);
  return st;
}
