/* The canonical geometry: one normalised 3x4 matrix per view plus what the FDK
 * weights need, all derived once from the matrix (RQ decomposition), so that
 * circular and arbitrary orbits share every later step. */
#ifndef CTR_GEOMETRY_INTERNAL_H
#define CTR_GEOMETRY_INTERNAL_H

#include "core/cylmath.h"
#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__view {
  double P[12];    /* row-major; scaled so that P[11] = 1 (c = 1 at the origin) */
  double src[3];   /* source position, mm */
  double u0, v0;   /* principal point, pixels */
  double fu, fv;   /* source-detector distance in pixels along u and v */
  double dist;     /* source to origin depth along the principal ray, mm */
  double axis_u[3];/* unit world direction of increasing u */
  double angle;    /* source azimuth, radians, unwrapped along the view order */
} ctr__view;

struct ctr_geometry {
  int64_t nu, nv, nviews;
  int64_t row0; /* the detector rows are [row0, row0 + nv) of the scanned detector: 0 except
                   in a window (ctr__geometry_rows), whose views' matrices still give rows
                   of the whole detector */
  double du, dv; /* mm; 0 when built from matrices without pitch */
  ctr_volume_geometry vol;
  int circular; /* built from ctr_circular_params */
  int curved;   /* a cylindrical detector (ctr_circular_params.detector): the views' matrices
                   are those of the flat detector tangent to the arc at the principal ray,
                   which give u0, v0, fu, fv, the source and the scan, but not the pixels:
                   those follow ctr__geometry_cyl_view's maps (core/cylmath.h) */
  ctr_circular_params circ; /* copy (angles_deg points at `angles_deg` below) */
  double *angles_deg;       /* circular: per-view angle list */
  int helical; /* built from ctr_helical_params (ctr_geometry_create_helical) */
  ctr_helical_params hel; /* its copy: the helix FDK's window needs */
  double *vectors; /* built from vectors (ctr_geometry_create_vectors): their copy, nviews * 12;
                      else NULL */
  ctr__view *views;
};

/* Fills a view from a raw matrix (any scale/sign); `what` names it in errors
 * ("view 12"). */
ctr_status ctr__view_from_matrix(const double M[12], const char *what, ctr__view *out);
/* The 12-number vector row of a circular orbit's view at angle a_deg
 * (docs/geometry.md, "Vector geometries"): ctr_geometry_get_vectors of a
 * circular geometry, and the form ctr_geometry_create_vectors recognises. */
void ctr__circular_vectors(const ctr_circular_params *p, double a_deg, double out[12]);
/* ctr_geometry_create_matrices after its argument checks: `label` names the
 * views in errors ("matrices" -> "matrices[12]", else "LABEL: view 12"). */
ctr_status ctr__geometry_from_matrices(int64_t nu, int64_t nv, double du, double dv,
                                       int64_t nviews, const double *matrices, const char *label,
                                       const ctr_volume_geometry *vol, ctr_geometry **out);
/* A helical geometry's FDK parameters (docs/geometry.md, "Helical orbits"):
 * view i's window argument for a voxel at height z is
 *   d = 2 pi (src_z[i] - z) / pitch_mm  = k_src[i] - k_z z,
 * and the window (filter/helix_weight_math.h) has smoothing width s. */
typedef struct ctr__helix_fdk {
  double kz;     /* 2 pi / pitch_mm, radians per mm */
  double s;      /* window_deg in radians */
} ctr__helix_fdk;
/* The widest window (degrees) the automatic choice takes (window_deg
 * CTR_HELIX_WINDOW_AUTO): the old default. */
#define CTR__HELIX_AUTO_MAX_DEG 10.0
/* 1 and *h for a helical geometry, else 0; h->s is the window FDK uses
 * (window_deg, or the automatic choice: ctr_geometry_get_helix_window). */
int ctr__geometry_helix(const ctr_geometry *g, ctr__helix_fdk *h);
/* The largest |pitch_mm| helical FDK takes on g's detector with window s
 * (radians): a voxel on the rotation axis stays on the detector's rows
 * (to their outer edges) for the 2 (pi + s) of rotation its window uses. */
double ctr__helix_pitch_limit(const ctr_geometry *g, double s);
/* The views [*v0, *v1) that helical FDK's window weights for some slice of
 * [z0, z0 + nz) of g's volume: those whose source height lies within the
 * window's reach |pitch| (pi + s) / (2 pi) of the slices' heights, one more
 * on each side (the rounding of the float weights); the others add exactly
 * nothing to those slices. All views for other geometries. */
void ctr__helix_slab_views(const ctr_geometry *g, int64_t z0, int64_t nz, int64_t *v0,
                           int64_t *v1);
/* CTR_OK, or for a helical geometry whose pitch exceeds that limit
 * CTR_E_GEOMETRY with the field ctr_helical_params.pitch_mm, the limit and
 * what to do; every FDK filter set-up calls it. */
ctr_status ctr__helix_fdk_check(const ctr_geometry *g);

/* Checks that the volume lies in front of every source and outside it. */
ctr_status ctr__geometry_check_volume(const ctr_geometry *g, const ctr_volume_geometry *vol);
ctr_status ctr__volume_validate(const ctr_volume_geometry *vol);

/* Scan description for FDK weighting. direction is +1 when the source azimuth
 * increases with the view index, -1 otherwise; range is the angular coverage
 * (radians) including one view's spacing; dbeta[i] is view i's angular
 * integration weight (radians). `u_sign` is +1 when increasing u points along
 * the direction of motion of the source. */
typedef struct ctr__scan {
  int direction;
  double range;
  int full;      /* covers 360 degrees */
  double *dbeta; /* nviews */
  double *beta;  /* nviews: azimuth relative to the scan start, along the direction */
  int *u_sign;   /* nviews */
} ctr__scan;

/* The mirrored row index 2 v0 shared by every view (the principal row of a
 * circular orbit at an integer or half-integer index), or -1. */
int ctr__pair_mirror(const ctr_geometry *g);
/* Whether a geometry/slab admits the mirrored-pair backprojection (circular
 * orbit, shared principal row, volume symmetric about the source plane, the
 * whole volume reconstructed). */
int ctr__bp_pair_possible(const ctr_geometry *g, int64_t z0, int64_t nz);

ctr_status ctr__scan_analyse(const ctr_geometry *g, ctr__scan *out);
/* The fan angle a short scan needs beyond 180 degrees (radians): twice the
 * widest angle between a view's principal ray and a detector edge. */
double ctr__geometry_fan(const ctr_geometry *g);
/* ctr_geometry_offset_detector's rule on an analysed scan. */
int ctr__offset_detector(const ctr_geometry *g, const ctr__scan *sc);
/* What FDK does with a geometry it cannot reconstruct (ctr_geometry_fdk_check):
 * unless o->geometry_checked, a warning through ctx's log, or with o->strict
 * a CTR_E_GEOMETRY error. ctr_fdk, ctr_fdk_stream and ctr_fdk_stream_memory call it
 * once a run. */
ctr_status ctr__fdk_geometry_report(const ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *o);
void ctr__scan_free(ctr__scan *s);

/* The detector rows a backprojection of slices [z0, z0 + nz) samples:
 * [*row0, *row0 + *nrows) of g's detector, with two rows to spare on each
 * side for rounding and the bilinear neighbour (clamped to the detector).
 * The image of the slab's box of voxel centres under a view's projective
 * map lies in the convex hull of its corners' images (the box is in front
 * of the source, c > 0), so its v range is theirs. */
void ctr__geometry_row_band(const ctr_geometry *g, int64_t z0, int64_t nz, int64_t *row0,
                            int64_t *nrows);
/* A copy of g that sees rows [row0, row0 + nrows) of its detector only
 * (nv = nrows, row0 set; views, volume and matrices unchanged). */
ctr_status ctr__geometry_rows(const ctr_geometry *g, int64_t row0, int64_t nrows,
                              ctr_geometry **out);
/* A copy of g whose detector has nu columns, the first `pad_lo` of them
 * before g's column 0: column u of g is column u + pad_lo of the copy (each
 * view's matrix gets pad_lo x its third row added to its first, u0 moves by
 * pad_lo); rows, volume and the other view parameters are unchanged, the
 * vectors dropped. The virtual detector of an offset (half-fan) FDK's
 * extended filtered rows (ctr__fdk_filter_extend). */
ctr_status ctr__geometry_columns(const ctr_geometry *g, int64_t pad_lo, int64_t nu,
                                 ctr_geometry **out);

/* 1 when g's detector is cylindrical; then *out (if not NULL) gets view i's
 * maps (core/cylmath.h) from its source azimuth, distance, height (a helix's;
 * 0 on a circular orbit) and principal point, which follow a window of rows or columns (ctr__geometry_rows,
 * ctr__geometry_columns) as the matrices do. 0 for a flat detector. */
int ctr__geometry_cyl_view(const ctr_geometry *g, int64_t i, ctr__cyl_view *out);
/* Fails with CTR_E_UNSUPPORTED, naming `what` (the operation) and `field`,
 * when g has a cylindrical detector: for the code paths that map points
 * through the views' matrices and have no curved form. */
ctr_status ctr__geometry_require_flat(const ctr_geometry *g, const char *what, const char *field);
/* The fan angle (radians) of a ray `cols` columns from view v's principal
 * point: atan(cols / |fu|) on a flat detector, cols / |fu| on a cylindrical one. */
static inline double ctr__geometry_fan_angle(const ctr_geometry *g, const ctr__view *v,
                                             double cols) {
  return g->curved ? cols / fabs(v->fu) : atan(cols / fabs(v->fu));
}
/* Point p's detector position in view i, flat or cylindrical, and its depth
 * c (> 0 in front of the source; the matrix's third row on either shape). */
void ctr__geometry_project(const ctr_geometry *g, int64_t i, const double p[3], double *u,
                           double *v, double *c);

/* Voxel centre coordinate along an axis. */
static inline double ctr__voxel_coord(int64_t i, int64_t n, double size, double offset) {
  return offset + ((double)i - 0.5 * (double)(n - 1)) * size;
}

#ifdef __cplusplus
}
#endif

#endif
