/* ctrecon/rabbitct.h — RabbitCT data files, geometry and scoring. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_RABBITCT_H
#define CTRECON_RABBITCT_H

#include "ctrecon/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* RabbitCT (Rohkohl et al., Med. Phys. 36:3940, 2009)                       */
/* ------------------------------------------------------------------------- */

/* RabbitCT matrices are 12 doubles with element (row r, column c) at
 * A[c * 3 + r]; voxel (i, j, k) of an L^3 volume sits at (O_L + i R_L,
 * O_L + j R_L, O_L + k R_L); its value is sum_n Q_n(u, v) / w^2 with
 * (u w, v w, w) = A (x, y, z, 1). */

/* Canonical geometry of RabbitCT views with an L^3 volume of voxel R_L whose
 * first voxel sits at O_L. Backprojecting with weight ctr_rabbitct_weight(A)
 * per view reproduces RabbitCT's 1 / w^2. */
CTR_API ctr_status ctr_geometry_create_rabbitct(int64_t width, int64_t height, int64_t nviews,
                                              const double *const *matrices, int64_t L, double R_L,
                                              double O_L, ctr_geometry **out);
/* 1 / A[2][3]^2: converts the canonical 1 / c^2 weight into RabbitCT's 1 / w^2. */
CTR_API double ctr_rabbitct_weight(const double A[12]);

/* A record of the file format (positional, core.h): `version` is the file's
 * version word, not a struct version. */
typedef struct ctr_rabbitct_header {
  uint32_t version;       /* 0 for files with the old header (no version word) */
  int64_t width, height;  /* projection S_x, S_y */
  int64_t nviews;
  float hu0, hu1;         /* HU = round(hu0 * f + hu1) for f > 0, else 0; clipped at 4095 */
  int nref;               /* reference volumes present */
  int64_t ref_sizes[8];   /* their L, ascending (128, 256, ...) */
} ctr_rabbitct_header;

/* Threads: a RabbitCT file or writer serves one thread at a time. */
typedef struct ctr_rabbitct ctr_rabbitct;
typedef struct ctr_rabbitct_writer ctr_rabbitct_writer;

/* Opens a RabbitCT data file (header with or without the version word, then
 * per view 12 doubles + width x height floats, then uint16 reference volumes
 * of 128^3, 256^3, ... concatenated). Errors name the file and what is
 * inconsistent. */
CTR_API ctr_status ctr_rabbitct_open(const char *path, ctr_rabbitct **out);
CTR_API const ctr_rabbitct_header *ctr_rabbitct_get_header(const ctr_rabbitct *r);
/* View i: its matrix (RabbitCT order) and image (width x height floats). */
CTR_API ctr_status ctr_rabbitct_read_view(ctr_rabbitct *r, int64_t i, double matrix[12],
                                          float *image);
/* The L^3 uint16 reference volume; CTR_E_FORMAT naming the sizes present if
 * the file has none of that size. */
CTR_API ctr_status ctr_rabbitct_read_reference(ctr_rabbitct *r, int64_t L, uint16_t *out);
CTR_API void ctr_rabbitct_close(ctr_rabbitct *r);

/* Writes a RabbitCT file (with the version word). h->nref / ref_sizes
 * declare the reference volumes that will follow. Views in order 0, 1, ...,
 * then references in the declared order; temporary name + rename on commit.
 * An existing path is refused here, and one that appears before the commit
 * kept, unless overwrite (as ctr_stack_create). */
CTR_API ctr_status ctr_rabbitct_create(const char *path, const ctr_rabbitct_header *h,
                                       int overwrite, ctr_rabbitct_writer **out);
CTR_API ctr_status ctr_rabbitct_write_view(ctr_rabbitct_writer *w, const double matrix[12],
                                           const float *image);
CTR_API ctr_status ctr_rabbitct_write_reference(ctr_rabbitct_writer *w, int64_t L,
                                                const uint16_t *vol);
CTR_API ctr_status ctr_rabbitct_commit(ctr_rabbitct_writer *w); /* frees w */
CTR_API void ctr_rabbitct_abort(ctr_rabbitct_writer *w);        /* frees w; accepts NULL */

/* RabbitCT's scoring: HU conversion and errors against a reference. */
typedef struct ctr_rabbitct_score {
  double rmse, mse, max_error, psnr; /* in HU; PSNR with peak 4095 */
} ctr_rabbitct_score;
CTR_API void ctr_rabbitct_to_hu(const float *f, int64_t n, float hu0, float hu1, uint16_t *out);
CTR_API ctr_status ctr_rabbitct_score_volume(const float *f, const uint16_t *ref, int64_t L,
                                             float hu0, float hu1, ctr_rabbitct_score *out);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_RABBITCT_H */
