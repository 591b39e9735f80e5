/* The projector object (public API): cone-beam and parallel-beam views in
 * index space, the slot order, the dispatch of forward and adjoint
 * projections to the context's backend (backend.h), and the fast unmatched
 * pair through the public ctr_backprojector. */
#include "conebeam/backprojector.h"
#include "geometry/geometry_internal.h"
#include "iterative/backend.h"
#include "parbeam/parbeam.h"

#include <math.h>
#include <string.h>


static ctr_status options_copy(const ctr_projector_options *in, ctr_projector_options *o) {
  /* the caller's version read into the current layout (NULL: the defaults) */
  CTR_CHECK(ctr__struct_copy(&ctr__struct_projector_options, o, in));
  if (o->pair != CTR_PAIR_MATCHED && o->pair != CTR_PAIR_FAST)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_projector_options.pair", CTR__V_INT(o->pair),
                   "ctr_projector_options.pair is %d: expected CTR_PAIR_MATCHED or "
                   "CTR_PAIR_FAST", (int)o->pair);
  if (o->max_slab_slices < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_projector_options.max_slab_slices",
                   CTR__V_INT(o->max_slab_slices),
                   "ctr_projector_options.max_slab_slices is %lld: expected >= 0",
                   (long long)o->max_slab_slices);
  return CTR_OK;
}

/* ---- Views in index space ---------------------------------------------------- */

/* Inverse of a 3 x 3 matrix (row-major); 0 if singular. */
static int invert3(const double m[9], double inv[9], double *det) {
  const double c0 = m[4] * m[8] - m[5] * m[7], c1 = m[5] * m[6] - m[3] * m[8],
               c2 = m[3] * m[7] - m[4] * m[6];
  const double d = m[0] * c0 + m[1] * c1 + m[2] * c2;
  if (!(fabs(d) > 0.0) || !isfinite(d)) return 0;
  inv[0] = c0 / d;
  inv[1] = (m[2] * m[7] - m[1] * m[8]) / d;
  inv[2] = (m[1] * m[5] - m[2] * m[4]) / d;
  inv[3] = c1 / d;
  inv[4] = (m[0] * m[8] - m[2] * m[6]) / d;
  inv[5] = (m[2] * m[3] - m[0] * m[5]) / d;
  inv[6] = c2 / d;
  inv[7] = (m[1] * m[6] - m[0] * m[7]) / d;
  inv[8] = (m[0] * m[4] - m[1] * m[3]) / d;
  *det = d;
  return 1;
}

/* A cone-beam view from its world matrix: the matrix in index space, the
 * source as every ray's origin, the directions M^-1 (u, v, 1). */
static ctr_status cone_view(const ctr_projector *p, const double Pw[12], int64_t i,
                            ctr__it_view *w) {
  const ctr_volume_geometry vol = ctr_geometry_get_volume(p->g);
  const double off[3] = {vol.offset_x, vol.offset_y, vol.offset_z};
  double Pi[12];
  for (int r = 0; r < 3; r++) {
    double t = Pw[4 * r + 3];
    for (int a = 0; a < 3; a++) {
      Pi[4 * r + a] = Pw[4 * r + a] * p->vox[a];
      t += Pw[4 * r + a] * (off[a] - p->vox[a] * 0.5 * (double)(p->n[a] - 1));
    }
    Pi[4 * r + 3] = t;
  }
  const double M[9] = {Pi[0], Pi[1], Pi[2], Pi[4], Pi[5], Pi[6], Pi[8], Pi[9], Pi[10]};
  double inv[9], det;
  if (!invert3(M, inv, &det))
    CTR_FAIL(CTR_E_GEOMETRY, "view %lld: singular projection matrix", (long long)i);
  for (int a = 0; a < 3; a++) {
    w->o[a] = -(inv[3 * a] * Pi[3] + inv[3 * a + 1] * Pi[7] + inv[3 * a + 2] * Pi[11]);
    w->ou[a] = w->ov[a] = 0.0;
    w->du[a] = inv[3 * a];
    w->dv[a] = inv[3 * a + 1];
    w->d[a] = inv[3 * a + 2];
  }
  memset(&w->cyl, 0, sizeof w->cyl);
  memset(&w->cam, 0, sizeof w->cam);
  w->curved = 0;
  for (int k = 0; k < 12; k++) w->cam.P[k] = (float)Pi[k];
  /* Every point within one voxel of the grid lies in front of the source
   * (c > 0: the adjoint's footprints are bounded). c is affine: its corners
   * bound it. */
  for (int s = 0; s < 8; s++) {
    const double x = (s & 1) ? (double)p->n[0] : -1.0, y = (s & 2) ? (double)p->n[1] : -1.0,
                 z = (s & 4) ? (double)p->n[2] : -1.0;
    const double c = Pi[8] * x + Pi[9] * y + Pi[10] * z + Pi[11];
    if (!(c > 1e-6))
      CTR_FAIL(CTR_E_GEOMETRY,
               "view %lld: the source lies within one voxel of the volume or beyond it (a "
               "projector needs it at least one voxel outside)",
               (long long)i);
  }
  return CTR_OK;
}

/* A view of a cylindrical detector (core/cylmath.h), after cone_view has
 * checked the source: rays from the source along h(u) + d + v dv (itmath.h:
 * h(u) the column's horizontal direction, (v - v0) / fv its slope, in index
 * space), and the camera of the boxes, index space -> (l, h, s) mm, h the
 * height over the source (zs: a helix's source height, 0 on a circle). */
static void curved_view(const ctr_projector *p, int64_t i, ctr__it_view *w) {
  const ctr_volume_geometry vol = ctr_geometry_get_volume(p->g);
  const double off[3] = {vol.offset_x, vol.offset_y, vol.offset_z};
  ctr__cyl_view c;
  double src[3], b[3];
  ctr__geometry_cyl_view(p->g, i, &c);
  ctr_geometry_get_source(p->g, i, src);
  for (int a = 0; a < 3; a++) {
    b[a] = off[a] - p->vox[a] * 0.5 * (double)(p->n[a] - 1); /* world of index 0 */
    w->o[a] = (src[a] - b[a]) / p->vox[a];
    w->ou[a] = w->ov[a] = w->d[a] = w->du[a] = w->dv[a] = 0.0;
  }
  w->d[2] = -c.v0 / (c.fv * p->vox[2]);
  w->dv[2] = 1.0 / (c.fv * p->vox[2]);
  w->cyl = c;
  w->curved = 1;
  const double cam[12] = {-c.st * p->vox[0], c.ct * p->vox[1], 0.0, -c.st * b[0] + c.ct * b[1],
                          0.0, 0.0, p->vox[2], b[2] - c.zs,
                          -c.ct * p->vox[0], -c.st * p->vox[1], 0.0, c.d - c.ct * b[0] - c.st * b[1]};
  for (int k = 0; k < 12; k++) w->cam.P[k] = (float)cam[k];
  w->cam.cyl[0] = (float)c.u0;
  w->cam.cyl[1] = (float)c.fu;
  w->cam.cyl[2] = (float)c.v0;
  w->cam.cyl[3] = (float)c.fv;
}

/* A parallel-beam angle (ctr_parallel_params' convention, bins; slices are
 * the z axis): t = c i + s j + t0, v = k; rays along (-s, c, 0). */
static void parallel_view(const ctr_parallel_params *pp, int64_t a, ctr__it_view *w) {
  const double th = pp->angles_deg[a] * M_PI / 180.0;
  const double c = cos(th) * pp->voxel, s = sin(th) * pp->voxel;
  const double t0 = pp->axis + pp->axis_shift[a] - c * 0.5 * (double)(pp->nx - 1) -
                    s * 0.5 * (double)(pp->ny - 1);
  const double n2 = c * c + s * s;
  memset(w, 0, sizeof *w);
  w->o[0] = -t0 * c / n2;
  w->o[1] = -t0 * s / n2;
  w->ou[0] = c / n2;
  w->ou[1] = s / n2;
  w->ov[2] = 1.0;
  w->d[0] = -s;
  w->d[1] = c;
  const float P[12] = {(float)c, (float)s, 0.0f, (float)t0, 0.0f, 0.0f, 1.0f, 0.0f,
                       0.0f, 0.0f, 0.0f, 1.0f};
  memcpy(w->cam.P, P, sizeof P);
}

/* A view of a tilted parallel-beam geometry (laminography,
 * docs/geometry.md): the affine camera t = U . (X, 1), r = V . (X, 1) of
 * ctr__lamino_views in index space (third row (0, 0, 0, 1)); its rays run
 * along the null vector of the 2 x 3 part, V x U, and the ray of (t, r)
 * passes through the point of the plane spanned by U and V that projects
 * there (a 2 x 2 solve with the Gram matrix of U and V). The Joseph pair
 * then runs on it as on any view. */
static void tilted_view(const ctr__lamino_view *lv, ctr__it_view *w) {
  const double *U = lv->u, *V = lv->v;
  const double g00 = U[0] * U[0] + U[1] * U[1] + U[2] * U[2];
  const double g01 = U[0] * V[0] + U[1] * V[1] + U[2] * V[2];
  const double g11 = V[0] * V[0] + V[1] * V[1] + V[2] * V[2];
  const double det = g00 * g11 - g01 * g01;
  const double i00 = g11 / det, i01 = -g01 / det, i11 = g00 / det;
  memset(w, 0, sizeof *w);
  for (int a = 0; a < 3; a++) {
    w->ou[a] = U[a] * i00 + V[a] * i01;
    w->ov[a] = U[a] * i01 + V[a] * i11;
    w->o[a] = -(w->ou[a] * U[3] + w->ov[a] * V[3]);
  }
  w->d[0] = V[1] * U[2] - V[2] * U[1];
  w->d[1] = V[2] * U[0] - V[0] * U[2];
  w->d[2] = V[0] * U[1] - V[1] * U[0];
  const float P[12] = {(float)U[0], (float)U[1], (float)U[2], (float)U[3], (float)V[0], (float)V[1],
                       (float)V[2], (float)V[3], 0.0f, 0.0f, 0.0f, 1.0f};
  memcpy(w->cam.P, P, sizeof P);
}

/* ---- Column-separable views --------------------------------------------------- */

/* A direction's stepping axis as ctr__it_ray_f64 picks it, and whether the
 * pick is safe from the last bits of |d_z| (strictly below the larger of
 * |d_x| and |d_y| by a relative 1e-9). */
static int column_family(const double d[3], int *safe) {
  const double ax = fabs(d[0]), ay = fabs(d[1]), az = fabs(d[2]);
  const double m = ax >= ay ? ax : ay;
  *safe = az < m * (1.0 - 1e-9) && m > 0.0;
  return ax >= ay ? 0 : 1;
}

/* Whether view w is column-separable (itmath.h), its family runs and its
 * column table (nu x 2 floats: the float A_p, B_p of each column, those
 * ctr__it_ray_setup gives its rays). A view is separable when the x and y
 * parts of its rays' origins and directions do not depend on v (exact
 * zeros, so the doubles of ctr__it_ray_f64 are the same for every row),
 * no ray steps along z (|d_z| is affine in v: its ends bound it), and each
 * family's columns form one run. The table builders confirm it bit for bit. */
static void view_columns(const ctr_projector *p, ctr__it_view *w, float *cols) {
  const int64_t nu = p->nu;
  w->cols = 0;
  for (int f = 0; f < 2; f++) w->run[f][0] = 1, w->run[f][1] = 0;
  if (w->ov[0] != 0.0 || w->ov[1] != 0.0 || w->dv[0] != 0.0 || w->dv[1] != 0.0) return;
  int last = -1, runs[2] = {0, 0};
  for (int64_t u = 0; u < nu; u++) {
    int fam = -1;
    for (int end = 0; end < 2; end++) {
      const double v = end ? (double)(p->nv - 1) : 0.0, uu = (double)u;
      double d[3], hu[3];
      ctr__it_ray_hu(w, p->vox, uu, hu); /* u du, or a curved view's h(u) */
      for (int a = 0; a < 3; a++) d[a] = CTR__DADD(CTR__DADD(w->d[a], hu[a]), CTR__DMUL(v, w->dv[a]));
      int safe;
      const int f = column_family(d, &safe);
      if (!safe || (fam >= 0 && f != fam)) return;
      fam = f;
    }
    double A[2], B[2], len;
    int f;
    if (!ctr__it_ray_f64(w, p->vox, (double)u, 0.0, A, B, &len, &f) || f != fam) return;
    cols[2 * u] = (float)A[0];
    cols[2 * u + 1] = (float)B[0];
    if (f != last) {
      if (++runs[f] > 1) return; /* a family in two runs */
      w->run[f][0] = (int)u;
      last = f;
    }
    w->run[f][1] = (int)u;
  }
  w->cols = 1;
}

static ctr_status columns_build(ctr_projector *p) {
  p->cols = ctr__malloc(sizeof(float) * 2 * (size_t)(p->nviews * p->nu), "projector columns");
  if (!p->cols) return CTR_E_OUT_OF_MEMORY;
  for (int64_t w = 0; w < p->nviews; w++) view_columns(p, &p->views[w], p->cols + 2 * w * p->nu);
  return CTR_OK;
}

/* ---- Creation ---------------------------------------------------------------- */

static ctr_status projector_new(ctr_context *ctx, const ctr_projector_options *opts,
                                ctr_projector **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_create: out is NULL");
  *out = NULL;
  if (!ctx) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_create: ctx is NULL");
  ctr_projector *p = ctr__calloc(1, sizeof *p, "projector");
  if (!p) return CTR_E_OUT_OF_MEMORY;
  p->ctx = ctx;
  ctr__context_hold(ctx); /* its buffers go back to ctx's cache when it is freed */
  p->device = ctr_context_get_device(ctx);
  p->gpu = ctr__context_gpu(ctx, 0);
  ctr_status st = ctr__it_backend_of(ctx, &p->be);
  if (st == CTR_OK) st = options_copy(opts, &p->o);
  if (st != CTR_OK) {
    ctr_projector_free(p);
    return st;
  }
  *out = p;
  return CTR_OK;
}

/* Views, identity order and a first plan, once the sizes are set. */
static ctr_status projector_finish(ctr_projector *p) {
  const int64_t nv = p->nviews;
  p->views = ctr__malloc(sizeof(ctr__it_view) * (size_t)nv, "projector views");
  p->order = ctr__malloc(sizeof(int64_t) * (size_t)nv, "projector view order");
  if (!p->views || !p->order) return CTR_E_OUT_OF_MEMORY;
  for (int64_t w = 0; w < nv; w++) p->order[w] = w;
  p->slab_slices = p->n[2];
  p->block_views = nv;
  p->batch_views = nv < 16 ? nv : 16;
  return CTR_OK;
}

static ctr_status check_sizes(const ctr_projector *p) {
  for (int a = 0; a < 3; a++)
    if (p->n[a] < 1 || p->n[a] > (1 << 20))
      CTR_FAIL(CTR_E_GEOMETRY, "volume size %lld x %lld x %lld: each from 1 to 1048576",
               (long long)p->n[0], (long long)p->n[1], (long long)p->n[2]);
  if (p->nu < 1 || p->nv < 1 || p->nu > (1 << 20) || p->nv > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "detector %lld x %lld: each from 1 to 1048576", (long long)p->nu,
             (long long)p->nv);
  return CTR_OK;
}

ctr_status ctr_projector_create_cone(ctr_context *ctx, const ctr_geometry *g,
                                     const ctr_projector_options *opts, ctr_projector **out) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_create_cone: geometry is NULL");
  const int curved = ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL;
  ctr_projector *p;
  CTR_CHECK(projector_new(ctx, opts, &p));
  ctr_status st = CTR_OK;
  /* The fast pair's weights W(u, v) follow a flat detector's matrix. */
  if (curved && p->o.pair == CTR_PAIR_FAST)
    CTR_FAIL_FIELD_VALUE_GOTO(st, CTR_E_UNSUPPORTED, "ctr_projector_options.pair",
                              CTR__V_INT(p->o.pair),
                              "ctr_projector_options.pair = CTR_PAIR_FAST: the fast pair's "
                              "weights are those of a flat detector; a cylindrical (curved) "
                              "detector has the matched pair (CTR_PAIR_MATCHED)");
  CTR_CHECK_GOTO(st, ctr_geometry_clone(g, &p->g));
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
  p->n[0] = vol.nx, p->n[1] = vol.ny, p->n[2] = vol.nz;
  p->vox[0] = vol.voxel_x, p->vox[1] = vol.voxel_y, p->vox[2] = vol.voxel_z;
  ctr_geometry_get_detector(g, &p->nu, &p->nv, NULL, NULL);
  p->nviews = ctr_geometry_get_view_count(g);
  p->user_dims[0] = p->nu, p->user_dims[1] = p->nv, p->user_dims[2] = p->nviews;
  CTR_CHECK_GOTO(st, check_sizes(p));
  CTR_CHECK_GOTO(st, projector_finish(p));
  for (int64_t i = 0; i < p->nviews; i++) {
    double Pw[12];
    ctr_geometry_get_matrix(g, i, Pw);
    CTR_CHECK_GOTO(st, cone_view(p, Pw, i, &p->views[i]));
    if (curved) curved_view(p, i, &p->views[i]);
  }
  CTR_CHECK_GOTO(st, columns_build(p));
  CTR_CHECK_GOTO(st, ctr__proj_workers_create(p));
  *out = p;
  return CTR_OK;
cleanup:
  ctr_projector_free(p);
  return st;
}

ctr_status ctr_projector_create_parallel(ctr_context *ctx, const ctr_parallel_geometry *g,
                                         int64_t nslices, const ctr_projector_options *opts,
                                         ctr_projector **out) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_create_parallel: geometry is NULL");
  if (nslices < 1 || nslices > (1 << 20))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_create_parallel: nslices %lld: expected 1 .. "
             "1048576", (long long)nslices);
  if (opts && opts->pair == CTR_PAIR_FAST)
    CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_projector_options.pair", CTR__V_INT(opts->pair),
                   "ctr_projector_options.pair = CTR_PAIR_FAST: the fast pair is "
                   "cone beam only (it uses the FDK backprojector); parallel beam has the matched pair");
  const ctr_parallel_params *pp = ctr_parallel_get_params(g);
  ctr_projector *p;
  CTR_CHECK(projector_new(ctx, opts, &p));
  ctr_status st = CTR_OK;
  p->parallel = 1;
  CTR_CHECK_GOTO(st, ctr_parallel_create(pp, &p->pg));
  p->n[0] = pp->nx, p->n[1] = pp->ny, p->n[2] = nslices;
  p->vox[0] = p->vox[1] = pp->voxel * pp->pixel_size;
  p->vox[2] = pp->pixel_size;
  const int tilted = ctr__par_tilted(g); /* rows of their own, else a row a slice */
  if (!tilted && pp->nrows > 0 && pp->nrows != nslices)
    CTR_FAIL_GOTO(st, CTR_E_SIZE_MISMATCH, "ctr_projector_create_parallel: nslices %lld and "
                  "ctr_parallel_params.nrows %lld: without a tilt a detector row is a slice (nrows "
                  "0 or the slices' count)", (long long)nslices, (long long)pp->nrows);
  p->nu = pp->nbins, p->nv = tilted ? pp->nrows : nslices, p->nviews = pp->nangles;
  p->user_dims[0] = pp->nbins, p->user_dims[1] = pp->nangles, p->user_dims[2] = p->nv;
  CTR_CHECK_GOTO(st, check_sizes(p));
  CTR_CHECK_GOTO(st, projector_finish(p));
  for (int64_t a = 0; a < p->nviews; a++) {
    if (tilted) {
      ctr__lamino_view lv;
      ctr__lamino_views(p->pg, nslices, a, 1, &lv);
      tilted_view(&lv, &p->views[a]);
    } else {
      parallel_view(pp, a, &p->views[a]);
    }
  }
  CTR_CHECK_GOTO(st, columns_build(p));
  CTR_CHECK_GOTO(st, ctr__proj_workers_create(p));
  *out = p;
  return CTR_OK;
cleanup:
  ctr_projector_free(p);
  return st;
}

void ctr_projector_free(ctr_projector *p) {
  if (!p) return;
  ctr__proj_workers_free(p);
  ctr_backprojector_free(p->fast_bp); /* waits for its queued work */
  if (p->be && p->be->release) p->be->release(p);
  ctr_geometry_free(p->g);
  ctr_parallel_free(p->pg);
  free(p->views);
  free(p->cols);
  free(p->order);
  ctr__context_drop(p->ctx);
  free(p);
}

void ctr_projector_get_volume_dims(const ctr_projector *p, int64_t dims[3]) {
  for (int a = 0; a < 3; a++) dims[a] = p ? p->n[a] : 0;
}

void ctr_projector_get_projection_dims(const ctr_projector *p, int64_t dims[3]) {
  for (int a = 0; a < 3; a++) dims[a] = p ? p->user_dims[a] : 0;
}

int ctr_projector_is_matched(const ctr_projector *p) {
  return p && p->o.pair == CTR_PAIR_MATCHED;
}

/* ---- Internal operations -------------------------------------------------------- */

ctr_status ctr__proj_set_order(ctr_projector *p, const int64_t *order) {
  for (int64_t w = 0; w < p->nviews; w++) {
    const int64_t v = order ? order[w] : w;
    if (v < 0 || v >= p->nviews)
      CTR_FAIL(CTR_E_INTERNAL, "slot order: view %lld out of range", (long long)v);
    p->order[w] = v;
  }
  p->order_changed = 1;
  ctr__proj_workers_follow(p);
  return CTR_OK;
}

void ctr__proj_use(ctr_projector *p, const ctr_iterate_plan *plan) {
  p->slab_slices = plan->slab_slices > 0 ? plan->slab_slices : p->n[2];
  p->block_views = plan->block_views > 0 ? plan->block_views : p->nviews;
  p->batch_views = plan->batch_views > 0 ? plan->batch_views : 1;
  ctr__proj_workers_follow(p);
}

static ctr_status check_slots(const ctr_projector *p, int64_t w0, int64_t w1) {
  if (w0 < 0 || w1 > p->nviews || w0 > w1)
    CTR_FAIL(CTR_E_INTERNAL, "slots [%lld, %lld) outside 0 .. %lld", (long long)w0, (long long)w1,
             (long long)p->nviews);
  return CTR_OK;
}

static ctr_status fast_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                               int64_t w1);

/* A forward projection (x -> y) or an adjoint (y -> x) of slots [w0, w1) on
 * the context's backend (the unmatched adjoint: the fast pair). */
static ctr_status project(ctr_projector *p, int forward, ctr__vec *x, ctr__vec *y, int64_t w0,
                          int64_t w1) {
  CTR_CHECK(check_slots(p, w0, w1));
  if (p->be->sync) CTR_CHECK(p->be->sync(p)); /* queued vector work is not the projection's */
  const double t0 = ctr__now_s();
  ctr_status st = CTR_OK;
  if (!forward && p->o.pair == CTR_PAIR_FAST) {
    st = fast_adjoint(p, y, x, w0, w1);
  } else if (p->nworkers > 1) {
    st = ctr__proj_workers_run(p, forward, x, y, w0, w1);
  } else {
    st = forward ? p->be->forward(p, x, y, w0, w1) : p->be->adjoint(p, y, x, w0, w1, 0, p->n[2]);
  }
  *(forward ? &p->seconds_forward : &p->seconds_adjoint) += ctr__now_s() - t0;
  *(forward ? &p->views_forward : &p->views_adjoint) += w1 - w0;
  return st;
}

ctr_status ctr__proj_forward(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0,
                             int64_t w1) {
  return project(p, 1, (ctr__vec *)x, y, w0, w1);
}

ctr_status ctr__proj_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                             int64_t w1) {
  return project(p, 0, x, (ctr__vec *)y, w0, w1);
}

/* ---- The fast unmatched pair ------------------------------------------------------ */

/* B y = sum over views of the backprojection (ctr_backprojector: bilinear
 * samples weighted 1 / c^2) of y times W(u, v) = V |det M| |M^-1 (u, v, 1)|
 * (world matrix M of the view, voxel volume V): the Joseph projector's
 * column sums at a voxel are about V / (c^2 |det M^-1| / |M^-1 (u, v, 1)|),
 * the ray density there, so B approximates A^T (docs/iterative.md). */

ctr_status ctr__proj_fast_view(const ctr_projector *p, int64_t view, ctr__it_fast_view *w) {
  double Pw[12], M[9], det;
  ctr_geometry_get_matrix(p->g, view, Pw);
  for (int r = 0; r < 3; r++)
    for (int a = 0; a < 3; a++) M[3 * r + a] = Pw[4 * r + a];
  if (!invert3(M, w->inv, &det))
    CTR_FAIL(CTR_E_GEOMETRY, "view %lld: singular matrix", (long long)view);
  w->scale = p->vox[0] * p->vox[1] * p->vox[2] * fabs(det);
  return CTR_OK;
}

/* The projector's backprojector, kept for its lifetime: created on first
 * use for slabs of the plan's thickness, again only when a later plan's
 * slabs are thicker (then freed with the projector). */
static ctr_status fast_backprojector(ctr_projector *p, int64_t zs, ctr_backprojector **out) {
  if (!p->fast_bp || p->fast_nz < zs) {
    ctr_backprojector_free(p->fast_bp);
    p->fast_bp = NULL;
    p->fast_nz = 0;
    ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
    fo.z0 = 0;
    fo.nz = zs;
    CTR_CHECK(ctr_backprojector_create(p->ctx, p->g, &fo, &p->fast_bp));
    p->fast_nz = zs;
  }
  *out = p->fast_bp;
  return CTR_OK;
}

/* Where the views of a chunk are weighted: projections on the device are
 * weighted there into the CUDA backend's chunk buffer and queued on the
 * backprojector (no host wait per chunk: ctr__it_cuda_fast_queue); host
 * ones are downloaded into `stage` and weighted in place, then added (each
 * add returns when its views are in). Slabs of a volume on the device are
 * copied into it on the device, queued; the host waits once, at the end.
 * Either way nothing crosses PCIe that the placement does not ask for.
 * Per slab the same chunks, launches and arithmetic as a backprojector
 * created for it (ctr__backprojector_slab), so the bits do not depend on
 * the backprojector being kept. */
static ctr_status fast_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                               int64_t w1) {
  ctr_status st = CTR_OK;
  const int64_t nu = p->nu, nv = p->nv, npix = nu * nv, plane = p->n[0] * p->n[1];
  const int64_t zs = p->slab_slices < p->n[2] ? p->slab_slices : p->n[2];
  float *stage = NULL;
  ctr_backprojector *bp;
  CTR_CHECK(fast_backprojector(p, zs, &bp));
  /* Views on the device are queued after their producers (the default
   * stream's order, ctr__it_cuda_fast_queue), and so is the copy into a
   * device volume; without a chunk to order it, or with host views, the
   * host waits for the device volume's producers first. (Device vectors
   * are the projector's backend's, which then has the fast pair's device
   * path: backend.h.) */
  const int queue = y->device;
  if (x->device && (!queue || w1 <= w0)) CTR_CHECK(p->be->sync(p));
  if (!queue) {
    stage = ctr_host_alloc(sizeof(float) * (size_t)(npix * CTR__IT_FAST_CHUNK));
    if (!stage) return CTR_E_OUT_OF_MEMORY;
  }
  for (int64_t z0 = 0; z0 < p->n[2]; z0 += zs) {
    const int64_t z1 = z0 + zs < p->n[2] ? z0 + zs : p->n[2];
    CTR_CHECK_GOTO(st, ctr__backprojector_slab(bp, z0, z1 - z0));
    for (int64_t c0 = w0; c0 < w1; c0 += CTR__IT_FAST_CHUNK) {
      const int64_t nc = c0 + CTR__IT_FAST_CHUNK < w1 ? CTR__IT_FAST_CHUNK : w1 - c0;
      int64_t views[CTR__IT_FAST_CHUNK];
      const float *images[CTR__IT_FAST_CHUNK];
      ctr__it_fast_view fw[CTR__IT_FAST_CHUNK];
      for (int64_t k = 0; k < nc; k++) {
        views[k] = p->order[c0 + k];
        CTR_CHECK_GOTO(st, ctr__proj_fast_view(p, views[k], &fw[k]));
      }
      if (queue) {
        CTR_CHECK_GOTO(st, p->be->fast_queue(p, bp, y->data + c0 * npix, nc, views, fw));
        continue;
      }
      ctr__vec part = ctr__vec_part(y, c0 * npix, nc * npix);
      CTR_CHECK_GOTO(st, ctr__vec_download(p, stage, &part));
      for (int64_t k = 0; k < nc; k++) {
        float *img = stage + k * npix;
        const ctr__it_fast_view *w = &fw[k];
#pragma omp parallel for num_threads(ctr__num_threads(p->ctx))
        for (int64_t v = 0; v < nv; v++)
          for (int64_t u = 0; u < nu; u++)
            img[v * nu + u] *= ctr__it_fast_weight(w, (double)u, (double)v);
        images[k] = img;
      }
      CTR_CHECK_GOTO(st, ctr_backprojector_add(bp, nc, views, images, NULL));
    }
    ctr__vec out = ctr__vec_part(x, z0 * plane, (z1 - z0) * plane);
    if (x->device) /* copied on the device, queued */
      CTR_CHECK_GOTO(st, ctr__backprojector_read_queued(bp, out.data));
    else
      CTR_CHECK_GOTO(st, ctr_backprojector_read(bp, out.data));
  }
cleanup:
  if (x->device || queue) { /* also after an error: nothing queued outlives the call */
    const ctr_status ws = ctr__backprojector_wait(bp);
    if (st == CTR_OK) st = ws;
  }
  ctr_host_free(stage);
  return st;
}

/* ---- Public forward and adjoint ------------------------------------------------------ */

/* Between the API's layout (cone beam: nu x nv x views; parallel beam: bins
 * x angles x slices) and the slots (slot w holds view order[w]), one
 * detector row at a time. */
static void slots_copy(const ctr_projector *p, float *user, float *slots, int to_slots) {
  const int64_t nu = p->nu, nv = p->nv, na = p->nviews;
#pragma omp parallel for collapse(2) num_threads(ctr__num_threads(p->ctx))
  for (int64_t w = 0; w < na; w++)
    for (int64_t v = 0; v < nv; v++) {
      const int64_t view = p->order[w];
      float *row = p->parallel ? user + (v * na + view) * nu : user + (view * nv + v) * nu;
      float *slot = slots + (w * nv + v) * nu;
      memcpy(to_slots ? slot : row, to_slots ? row : slot, sizeof(float) * (size_t)nu);
    }
}

void ctr__proj_to_slots(const ctr_projector *p, const float *user, float *slots) {
  slots_copy(p, (float *)user, slots, 1);
}

void ctr__proj_from_slots(const ctr_projector *p, const float *slots, float *user) {
  slots_copy(p, user, (float *)slots, 0);
}

/* One public call: a plan for one vector of each space, vectors where it
 * puts them, the caller's arrays where they can serve as host vectors. */
static ctr_status public_call(ctr_projector *p, int forward, const float *vol_in, float *vol_out,
                              const float *proj_in, float *proj_out) {
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_%s: projector is NULL",
                   forward ? "forward" : "adjoint");
  if (forward ? (!vol_in || !proj_out) : (!proj_in || !vol_out))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_projector_%s: NULL array", forward ? "forward" : "adjoint");
  ctr_status st = CTR_OK;
  uint64_t gpu_budget = p->o.gpu_budget;
  if (p->device == CTR_DEVICE_CUDA) CTR_CHECK(ctr__budgets_resolve(p->ctx, &gpu_budget, NULL));
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  CTR_CHECK(ctr__it_plan(p, 1, 1, p->o.pair == CTR_PAIR_FAST, p->device, gpu_budget, 0,
                         p->o.max_slab_slices, &plan));
  CTR_CHECK(ctr__proj_set_order(p, NULL));
  ctr__proj_use(p, &plan);
  const int vdev = plan.placement == CTR_PLACE_DEVICE;
  const int pdev = vdev || plan.placement == CTR_PLACE_PROJ_DEVICE;
  const int64_t nvol = ctr__proj_vol_count(p), nproj = ctr__proj_proj_count(p);
  ctr__vec x = {forward ? (float *)vol_in : vol_out, nvol, 0};
  ctr__vec y = {forward ? proj_out : (float *)proj_in, nproj, 0};
  float *slots = NULL;
  if (p->parallel) {
    slots = ctr__aligned_alloc(sizeof(float) * (size_t)nproj, "projection slots");
    if (!slots) return CTR_E_OUT_OF_MEMORY;
    if (!forward) ctr__proj_to_slots(p, proj_in, slots);
    y.data = slots;
  }
  ctr__vec dx = {NULL, 0, 0}, dy = {NULL, 0, 0};
  if (vdev) {
    CTR_CHECK_GOTO(st, ctr__vec_alloc(p, nvol, 1, &dx));
    if (forward) CTR_CHECK_GOTO(st, ctr__vec_upload(p, &dx, vol_in));
  }
  if (pdev) {
    CTR_CHECK_GOTO(st, ctr__vec_alloc(p, nproj, 1, &dy));
    if (!forward) CTR_CHECK_GOTO(st, ctr__vec_upload(p, &dy, y.data));
  }
  ctr__vec *X = vdev ? &dx : &x, *Y = pdev ? &dy : &y;
  if (forward)
    CTR_CHECK_GOTO(st, ctr__proj_forward(p, X, Y, 0, p->nviews));
  else
    CTR_CHECK_GOTO(st, ctr__proj_adjoint(p, Y, X, 0, p->nviews));
  if (forward && pdev) CTR_CHECK_GOTO(st, ctr__vec_download(p, y.data, &dy));
  if (!forward && vdev) CTR_CHECK_GOTO(st, ctr__vec_download(p, vol_out, &dx));
  if (forward && p->parallel) ctr__proj_from_slots(p, slots, proj_out);
cleanup:
  ctr__vec_free(p, &dx);
  ctr__vec_free(p, &dy);
  ctr__aligned_free(slots);
  return st;
}

ctr_status ctr_projector_forward(ctr_projector *p, const float *vol, float *proj) {
  return public_call(p, 1, vol, NULL, NULL, proj);
}

ctr_status ctr_projector_adjoint(ctr_projector *p, const float *proj, float *vol) {
  return public_call(p, 0, NULL, vol, proj, NULL);
}

/* ---- Public forward and adjoint on GPU arrays ---------------------------------------- */

/* The caller's arrays are the vectors (cone beam: the API's layout is the
 * slots' in identity order; parallel beam: transposed into device slots and
 * back on the GPU). */
static ctr_status device_call(ctr_projector *p, int forward, const float *in, float *out) {
  const char *fn = forward ? "ctr_projector_forward_device" : "ctr_projector_adjoint_device";
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: projector is NULL", fn);
  if (!in || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: NULL array", fn);
  if (!p->be->device_args)
    CTR_FAIL(CTR_E_UNSUPPORTED, "%s: the projector's context runs on the CPU: arrays in GPU memory "
             "need a CUDA context (ctr_context_options.device)", fn);
  CTR_CHECK(p->be->device_args(p, fn, in, forward ? "vol" : "proj", out, forward ? "proj" : "vol"));
  uint64_t gpu_budget = p->o.gpu_budget;
  CTR_CHECK(ctr__budgets_resolve(p->ctx, &gpu_budget, NULL));
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  CTR_CHECK(ctr__it_plan(p, 1, 1, p->o.pair == CTR_PAIR_FAST, p->device, gpu_budget, 0,
                         p->o.max_slab_slices, &plan));
  CTR_CHECK(ctr__proj_set_order(p, NULL));
  ctr__proj_use(p, &plan);
  const int64_t nvol = ctr__proj_vol_count(p), nproj = ctr__proj_proj_count(p);
  ctr_status st = CTR_OK;
  ctr__vec x = {forward ? (float *)in : out, nvol, 1};
  ctr__vec y = {forward ? out : (float *)in, nproj, 1};
  ctr__vec slots = {NULL, 0, 0};
  if (p->parallel) {
    CTR_CHECK(ctr__vec_alloc(p, nproj, 1, &slots));
    if (!forward) CTR_CHECK_GOTO(st, p->be->slots_device(p, (float *)in, slots.data, 1));
  }
  ctr__vec *Y = p->parallel ? &slots : &y;
  if (forward) {
    CTR_CHECK_GOTO(st, ctr__proj_forward(p, &x, Y, 0, p->nviews));
    if (p->parallel) CTR_CHECK_GOTO(st, p->be->slots_device(p, out, slots.data, 0));
  } else {
    CTR_CHECK_GOTO(st, ctr__proj_adjoint(p, Y, &x, 0, p->nviews));
  }
cleanup:
  ctr__vec_free(p, &slots);
  return st;
}

ctr_status ctr_projector_forward_device(ctr_projector *p, const float *vol, float *proj) {
  return device_call(p, 1, vol, proj);
}

ctr_status ctr_projector_adjoint_device(ctr_projector *p, const float *proj, float *vol) {
  return device_call(p, 0, proj, vol);
}
