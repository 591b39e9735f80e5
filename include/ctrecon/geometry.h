/* ctrecon/geometry.h — cone-beam geometry: circular orbits, projection matrices, JSON files. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_GEOMETRY_H
#define CTRECON_GEOMETRY_H

#include "ctrecon/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Geometry                                                                  */
/* ------------------------------------------------------------------------- */

typedef struct ctr_volume_geometry {
  int64_t nx, ny, nz;
  double voxel_x, voxel_y, voxel_z;    /* mm */
  double offset_x, offset_y, offset_z; /* volume centre in world mm */
} ctr_volume_geometry;

typedef enum ctr_rotation { CTR_ROTATION_CCW = 1, CTR_ROTATION_CW = -1 } ctr_rotation;

/* Circular cone-beam orbit. Source at angle t: s = sid * (cos t, sin t, 0);
 * the detector u axis is (-sin t, cos t, 0), v is +z; the principal ray hits
 * pixel ((nu-1)/2 - offset_u/du, (nv-1)/2 - offset_v/dv). Angles are either
 * the list `angles_deg` (nviews entries, not copied beyond the create call) or
 * angle_start_deg + direction * i * angle_range_deg / nviews.
 * Version 2 adds `detector`: CTR_DETECTOR_CYLINDRICAL puts the columns on an
 * arc of radius sdd about the source's vertical line, equally spaced in fan
 * angle (du is then the arc length of a column at sdd: dgamma = du / sdd,
 * offset_u an arc length too), rows along z (docs/geometry.md, "Curved
 * (cylindrical) detectors"). */
typedef enum ctr_detector_shape {
  CTR_DETECTOR_FLAT = 0,       /* a plane perpendicular to the principal ray (default) */
  CTR_DETECTOR_CYLINDRICAL = 1 /* clinical CT: an arc about the source */
} ctr_detector_shape;

#define CTR_CIRCULAR_PARAMS_VERSION 2u /* 2: detector */
typedef struct ctr_circular_params {
  unsigned version;
  double sid; /* source to isocentre, mm */
  double sdd; /* source to detector, mm */
  int64_t nu, nv;
  double du, dv;             /* pixel pitch, mm */
  double offset_u, offset_v; /* detector shift, mm */
  int64_t nviews;
  const double *angles_deg; /* optional list */
  double angle_start_deg;
  double angle_range_deg;
  ctr_rotation direction;
  ctr_detector_shape detector; /* version 2 */
} ctr_circular_params;

#define CTR_CIRCULAR_PARAMS_INIT                                                          \
  { CTR_CIRCULAR_PARAMS_VERSION, 0, 0, 0, 0, 1.0, 1.0, 0, 0, 0, NULL, 0.0, 360.0,          \
    CTR_ROTATION_CCW, CTR_DETECTOR_FLAT }
/* The defaults in the layout of `version`, 1 .. CTR_CIRCULAR_PARAMS_VERSION (core.h). */
CTR_API ctr_status ctr_circular_params_init(ctr_circular_params *s, unsigned version);

/* Helical cone-beam orbit (docs/geometry.md, "Helical orbits"): the circular
 * orbit's source, detector and angles (angle_start_deg + direction * i *
 * angle_range_deg / nviews; the range may exceed 360 degrees), with the
 * source and detector carried along z: view i's source sits at height
 * z0_mm + pitch_mm * i * angle_range_deg / (360 nviews), so it climbs
 * pitch_mm (the table feed per turn, either sign, not 0) per 360 degrees of
 * rotation whatever the direction. window_deg is helical FDK's smoothing
 * width s of its redundancy window (0 .. 90 degrees), or
 * CTR_HELIX_WINDOW_AUTO (-1, the default since version 2): the widest
 * window up to 10 degrees that the pitch allows (0 at a pitch of the
 * detector's height at the axis; ctr_geometry_get_helix_window); it plays no
 * part in the matrices. Version 2 adds `detector`, the detector's shape as
 * in ctr_circular_params (CTR_DETECTOR_CYLINDRICAL: the columns on an arc of
 * radius sdd about the source, carried along z with it). */
#define CTR_HELIX_WINDOW_AUTO (-1.0)
#define CTR_HELICAL_PARAMS_VERSION 2u /* 2: detector; window_deg CTR_HELIX_WINDOW_AUTO */
typedef struct ctr_helical_params {
  unsigned version;
  double sid; /* source to rotation axis, mm */
  double sdd; /* source to detector, mm */
  int64_t nu, nv;
  double du, dv;             /* pixel pitch, mm */
  double offset_u, offset_v; /* detector shift, mm */
  int64_t nviews;
  double angle_start_deg;
  double angle_range_deg; /* > 0, may exceed 360 */
  ctr_rotation direction;
  double pitch_mm;   /* source z climb per 360 degrees, mm */
  double z0_mm;      /* source z of view 0, mm */
  double window_deg; /* helical FDK's window smoothing width s, degrees, or CTR_HELIX_WINDOW_AUTO */
  ctr_detector_shape detector; /* version 2 */
} ctr_helical_params;

#define CTR_HELICAL_PARAMS_INIT                                                           \
  { CTR_HELICAL_PARAMS_VERSION, 0, 0, 0, 0, 1.0, 1.0, 0, 0, 0, 0.0, 360.0,                \
    CTR_ROTATION_CCW, 0.0, 0.0, CTR_HELIX_WINDOW_AUTO, CTR_DETECTOR_FLAT }
/* The defaults in the layout of `version`, 1 .. CTR_HELICAL_PARAMS_VERSION (core.h). */
CTR_API ctr_status ctr_helical_params_init(ctr_helical_params *s, unsigned version);

/* Threads: a geometry does not change under the calls that take it const;
 * any number of threads may use one at once. The setters
 * (ctr_geometry_set_*) need it to themselves. */
typedef struct ctr_geometry ctr_geometry;

/* Builds the canonical geometry of a circular orbit. Validates every field
 * (finite, positive sizes, source outside the volume). A detector that does
 * not cover the volume is allowed: check ctr_geometry_coverage and warn. */
CTR_API ctr_status ctr_geometry_create_circular(const ctr_circular_params *p,
                                                const ctr_volume_geometry *vol, ctr_geometry **out);
/* Builds the canonical geometry of a helical orbit: per-view matrices (each
 * view the circular orbit's matrix with the source and detector at the
 * view's height) and the helix kept for FDK (ctr_geometry_get_helical).
 * Validates every field as ctr_geometry_create_circular does, with errors
 * naming the field: pitch_mm finite and not 0 (0 is a circular orbit: use
 * ctr_geometry_create_circular), nviews >= 2, angle_range_deg in (0, 3.6e6],
 * window_deg in [0, 90] or CTR_HELIX_WINDOW_AUTO, detector flat or
 * cylindrical (the arc within +-90 degrees, as a circular orbit's). */
CTR_API ctr_status ctr_geometry_create_helical(const ctr_helical_params *p,
                                               const ctr_volume_geometry *vol, ctr_geometry **out);
/* 1 and *p (version CTR_HELICAL_PARAMS_VERSION; NULL: not written) the
 * helix when g was built by ctr_geometry_create_helical (or its JSON type
 * "helical"), else 0. */
CTR_API int ctr_geometry_get_helical(const ctr_geometry *g, ctr_helical_params *p);
/* The window smoothing width (degrees) helical FDK uses on g: window_deg as
 * given, or for CTR_HELIX_WINDOW_AUTO the widest up to 10 degrees whose
 * pitch limit (docs/geometry.md, "Helical orbits") the pitch keeps; -1 when
 * the pitch exceeds even window 0's limit (the detector's height at the axis:
 * FDK refuses it), NaN when g is not a helix. *automatic (may be NULL) gets 1
 * when the window was chosen here. */
CTR_API double ctr_geometry_get_helix_window(const ctr_geometry *g, int *automatic);
/* Builds the canonical geometry from arbitrary per-view 3x4 matrices
 * (row-major, nviews * 12 doubles, mapping world mm to pixel indices up to
 * scale). du, dv are informative (mm); pass 0 if unknown. */
CTR_API ctr_status ctr_geometry_create_matrices(int64_t nu, int64_t nv, double du, double dv,
                                                int64_t nviews, const double *matrices,
                                                const ctr_volume_geometry *vol, ctr_geometry **out);
/* Builds the canonical geometry from per-view vectors with the meaning of
 * ASTRA's `cone_vec` rows (docs/geometry.md, "Vector geometries"): 12 numbers
 * a view, nviews * 12 doubles,
 *   (srcX, srcY, srcZ, dX, dY, dZ, uX, uY, uZ, vX, vY, vZ)
 * in world mm: the source, the centre of the detector, the vector from the
 * centre of pixel (iu, iv) = (0, 0) to that of (1, 0) (u: along a row,
 * pitch included) and from (0, 0) to (0, 1) (v: along a column). Pixel
 * (iu, iv) is centred at d + (iu - (nu - 1)/2) u + (iv - (nv - 1)/2) v. Every
 * view is validated (finite, u and v non-zero and not parallel, the source
 * off the detector plane and outside the volume); errors carry the field
 * "vectors" (nu, nv, nviews for those) and name the view. The matrices are
 * derived exactly (P = [M^-1 | -M^-1 s] with M = [u v (pixel (0,0) - s)]);
 * vectors that are, bit for bit, those ctr_geometry_get_vectors gives for a
 * circular orbit build that circular orbit (the same matrices, the same
 * results). The vectors are kept: ctr_geometry_get_vectors returns them and
 * the JSON file is of type "vectors". du, dv are |u|, |v| of view 0. */
CTR_API ctr_status ctr_geometry_create_vectors(int64_t nu, int64_t nv, int64_t nviews,
                                               const double *vectors,
                                               const ctr_volume_geometry *vol, ctr_geometry **out);
/* View i as such a 12-number row: the vectors given to
 * ctr_geometry_create_vectors; for a circular orbit those of the formulas in
 * docs/geometry.md; for matrices derived from the matrix, with |u| = du when
 * the pitch is known (du > 0), else the detector plane through the world
 * origin. A cylindrical detector has no such rows: its view's are those of
 * the flat detector tangent to the arc at the principal ray. */
CTR_API void ctr_geometry_get_vectors(const ctr_geometry *g, int64_t i, double out[12]);
/* Deep copy. */
CTR_API ctr_status ctr_geometry_clone(const ctr_geometry *g, ctr_geometry **out);
CTR_API void ctr_geometry_free(ctr_geometry *g);

/* Reads / writes a JSON geometry file (docs/geometry.md). Errors name the
 * file and the bad field. Save writes to a temporary name and renames; an
 * existing path is refused unless overwrite (as ctr_stack_create). */
CTR_API ctr_status ctr_geometry_load_json(const char *path, ctr_geometry **out);
CTR_API ctr_status ctr_geometry_save_json(const ctr_geometry *g, const char *path, int overwrite);
/* Same from / to a string (the caller frees the string with free()). */
CTR_API ctr_status ctr_geometry_from_json_string(const char *json, const char *name,
                                                 ctr_geometry **out);
CTR_API ctr_status ctr_geometry_to_json_string(const ctr_geometry *g, char **out);

CTR_API int64_t ctr_geometry_get_view_count(const ctr_geometry *g);
CTR_API void ctr_geometry_get_detector(const ctr_geometry *g, int64_t *nu, int64_t *nv, double *du,
                                   double *dv);
CTR_API ctr_volume_geometry ctr_geometry_get_volume(const ctr_geometry *g);
/* Replaces the volume grid (same checks as create). */
CTR_API ctr_status ctr_geometry_set_volume(ctr_geometry *g, const ctr_volume_geometry *vol);
/* The canonical matrix of view i (12 doubles, row-major). */
CTR_API void ctr_geometry_get_matrix(const ctr_geometry *g, int64_t i, double out[12]);
/* Source position of view i, mm. */
CTR_API void ctr_geometry_get_source(const ctr_geometry *g, int64_t i, double out[3]);
/* 1 for a circular orbit (u, c independent of z), else 0. A cylindrical
 * detector's orbit is circular too. */
CTR_API int ctr_geometry_is_circular(const ctr_geometry *g);
/* The detector's shape: CTR_DETECTOR_CYLINDRICAL for a circular or helical
 * orbit built with that `detector`, else CTR_DETECTOR_FLAT. A cylindrical detector's
 * pixels do not follow a 3x4 matrix: ctr_geometry_get_matrix then gives the
 * matrix of the flat detector tangent to the arc at the principal ray (the
 * same principal point, sdd and pitch; docs/geometry.md). */
CTR_API ctr_detector_shape ctr_geometry_get_detector_shape(const ctr_geometry *g);
/* Angles meant as degrees that look like radians: n >= 2 angles (the list
 * angles_deg, or if NULL a uniform scan of n angles over range_deg) whose
 * whole span (largest - smallest) is below CTR_RADIANS_SPAN_DEG = 2 pi +
 * 0.01 "degrees": a scan in radians read as degrees (no CT scan covers
 * 6.3 degrees). 1 if so (*span_deg, if not NULL, gets the span), else 0.
 * The one check behind every interface's warning (CLI, Python). */
#define CTR_RADIANS_SPAN_DEG 6.2931853071795862
CTR_API int ctr_angles_look_like_radians(const double *angles_deg, int64_t n, double range_deg,
                                         double *span_deg);
/* The same check on a geometry: a circular orbit (ctr_geometry_is_circular)
 * whose sources, seen from the rotation axis, span less than
 * CTR_RADIANS_SPAN_DEG (a JSON "angles_deg" list or "range_deg" written in
 * radians). 1 if so (*span_deg gets the span), else 0; 0 for matrices. */
CTR_API int ctr_geometry_angles_look_like_radians(const ctr_geometry *g, double *span_deg);

/* Fraction of the voxel centres inside the volume's inscribed cylinder (about
 * the z axis through the volume centre) that project inside the detector in
 * every view (1.0 = the field of view is fully covered); for a helical
 * geometry, inside the detector's columns (its fan) in every view, the rows
 * being the helix's to move along. */
CTR_API double ctr_geometry_coverage(const ctr_geometry *g);
/* 1 when g is an offset (half-fan) detector on a full turn, which FDK
 * reconstructs with Wang 2002's redundancy weights (docs/geometry.md,
 * "Offset detectors"): the views cover 360 degrees (less half a step) and,
 * with R the largest distance from the rotation axis of the field of view
 * (the volume's inscribed cylinder) and d a view's source to axis distance,
 * in every view the detector's wide side (from the principal point u0 to
 * the farther detector edge) subtends at least asin(R / d), its narrow side
 * reaches past u0 (u0 inside the detector's columns), and in some view the
 * narrow side subtends less than asin(R / d). Else 0 (also for a NULL g or
 * when the scan cannot be analysed). */
CTR_API int ctr_geometry_offset_detector(const ctr_geometry *g);
/* Whether FDK can reconstruct g (docs/geometry.md, "What FDK can
 * reconstruct"): every source on one circle about the z axis in one plane
 * (heights and distances from the axis equal to 1 % of that distance), and
 * every sampled voxel centre of the field of view inside the fan of views
 * spanning 180 degrees plus the detector's fan angle (less half a view's
 * step), or an offset detector on a full turn (ctr_geometry_offset_detector:
 * FDK weights its redundancy and extends its filtered rows, docs/geometry.md,
 * "Offset detectors"; ctr_fdk_check_geometry for FDK run with its weights
 * off). *ok = 1 when it can; else *ok = 0 and `why` (cap bytes,
 * NUL-terminated; NULL: not written) says what fails and what to use
 * instead. CTR_E_OUT_OF_MEMORY when the scan cannot be analysed. */
CTR_API ctr_status ctr_geometry_fdk_check(const ctr_geometry *g, int *ok, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_GEOMETRY_H */
