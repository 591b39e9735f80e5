/* Shared pieces of `ctrecon pet simulate | recon | metrics` and `ctrecon
 * demo --pet` (cli_pet.c): option parsers for lattices, views, kernel widths
 * and phantoms, the per-iteration metrics recorder, CSV output. Public API
 * only. */
#ifndef CTRECON_CLI_PET_H
#define CTRECON_CLI_PET_H

#include "cli.h"

/* "A" or "A:B" (two doubles > 0, B >= 0 for a decay): --radial-fwhm C[:E],
 * --relax R0[:DECAY]. */
typedef struct pet_pair {
  double a, b;
  int has_b;
} pet_pair;
int pet_parse_fwhm_pair(const char *cmd, const char *name, const char *value, void *dst);
int pet_parse_relax(const char *cmd, const char *name, const char *value, void *dst);

/* NXxNYxNZ (int64[3], each 1 .. 65536). */
int pet_parse_lattice(const char *cmd, const char *name, const char *value, void *dst);
/* NAZIMUTHxNCOPOLAR (int[2], each >= 1). */
int pet_parse_views(const char *cmd, const char *name, const char *value, void *dst);
/* An int >= 1 (iterations, --every). */
int pet_parse_int(const char *cmd, const char *name, const char *value, void *dst);
/* An unsigned 64-bit seed. */
int pet_parse_seed(const char *cmd, const char *name, const char *value, void *dst);
/* A double >= 0 (--acceptance, --edge-radius). */

/* --phantom spheres|points */
typedef enum pet_phantom_kind { PET_PHANTOM_SPHERES = 0, PET_PHANTOM_POINTS = 1 } pet_phantom_kind;
int pet_parse_phantom(const char *cmd, const char *name, const char *value, void *dst);
void pet_make_phantom(pet_phantom_kind kind, double contrast, ctr_pet_phantom *ph);
const char *pet_phantom_name(pet_phantom_kind kind);

/* The stack description of a PET image: spacing = voxel, origin = the
 * position of voxel (0, 0, 0) (lattice centred on the scanner). */
ctr_stack_info pet_image_info(const ctr_pet_params *p);

/* Per-iteration CRC and noise (cmd_pet_recon.c and the demo). */
typedef struct pet_curve {
  int n, cap;
  int *iteration;
  double *noise, *crc;
  double *crc_sphere; /* n x nspheres */
  int nspheres;
} pet_curve;
/* Appends m; returns 0 or an exit code (out of memory). */
int pet_curve_add(const char *cmd, pet_curve *c, int iteration, const ctr_pet_metrics *m);
void pet_curve_free(pet_curve *c);
/* CSV (iteration,noise,crc,crc_sphere1..n; noise as a fraction), written
 * to a temporary name beside `path` and renamed. Returns 0 or an exit code. */
int pet_curve_write_csv(const char *cmd, const pet_curve *c, const char *path, int force);

/* A raw float32 image file must hold exactly nx ny nz values (the reader
 * would accept a longer one): exit 3 naming the file and the sizes. */
int pet_check_raw_size(const char *cmd, const char *option, const char *path, int64_t nx,
                       int64_t ny, int64_t nz);

/* `path` with its extension (the last '.' after the last '/') replaced by
 * `suffix`, into buf; returns buf. */
const char *pet_replace_ext(const char *path, const char *suffix, char *buf, size_t n);

#endif
