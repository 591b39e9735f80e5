/* Shared pieces of `ctrecon pet simulate | recon | metrics` and `ctrecon
 * demo --pet` (cli_pet.h): option parsers, phantoms, the image description,
 * the per-iteration metrics curve and its CSV. Calls no command. */
#include "cli_pet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Option parsers ---------------------------------------------------------- */

#define to_double cli_to_real

/* "A" or "A:B" into doubles; -1 when malformed. */
static int split_pair(const char *value, double *a, double *b, int *has_b) {
  char buf[128];
  if (strlen(value) >= sizeof buf) return -1;
  strcpy(buf, value);
  char *colon = strchr(buf, ':');
  *has_b = colon != NULL;
  if (colon) {
    *colon = '\0';
    if (to_double(colon + 1, b)) return -1;
  }
  return to_double(buf, a);
}

int pet_parse_fwhm_pair(const char *cmd, const char *name, const char *value, void *dst) {
  pet_pair *p = dst;
  if (split_pair(value, &p->a, &p->b, &p->has_b) || !(p->a > 0) || (p->has_b && !(p->b > 0)))
    return cli_usage_error(cmd, "%s '%s': expected CENTRE or CENTRE:EDGE (FWHM in mm, > 0)", name,
                           value);
  if (!p->has_b) p->b = p->a;
  return 0;
}

int pet_parse_relax(const char *cmd, const char *name, const char *value, void *dst) {
  pet_pair *p = dst;
  if (split_pair(value, &p->a, &p->b, &p->has_b) || !(p->a > 0) || (p->has_b && !(p->b >= 0)))
    return cli_usage_error(cmd, "%s '%s': expected LAMBDA0 or LAMBDA0:DECAY (LAMBDA0 > 0, DECAY "
                           ">= 0)", name, value);
  return 0;
}

int pet_parse_lattice(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b, c;
  int used = 0;
  if (sscanf(value, "%lldx%lldx%lld%n", &a, &b, &c, &used) != 3 || value[used] || a < 1 ||
      b < 1 || c < 1 || a > 65536 || b > 65536 || c > 65536)
    return cli_usage_error(cmd, "%s '%s': expected NXxNYxNZ (voxels, each 1 .. 65536), e.g. "
                           "144x144x48", name, value);
  int64_t *d = dst;
  d[0] = a;
  d[1] = b;
  d[2] = c;
  return 0;
}

int pet_parse_views(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b;
  int used = 0;
  if (sscanf(value, "%lldx%lld%n", &a, &b, &used) != 2 || value[used] || a < 1 || b < 1 ||
      a > 100000 || b > 100000)
    return cli_usage_error(cmd, "%s '%s': expected NAZIMUTHxNCOPOLAR (view intervals, each >= 1), "
                           "e.g. 40x3", name, value);
  int *d = dst;
  d[0] = (int)a;
  d[1] = (int)b;
  return 0;
}

int pet_parse_int(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (end == value || *end || errno || v < 1 || v > 100000)
    return cli_usage_error(cmd, "%s '%s': expected an integer in 1 .. 100000", name, value);
  *(int *)dst = (int)v;
  return 0;
}

int pet_parse_seed(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(value, &end, 10);
  if (end == value || *end || errno || value[0] == '-')
    return cli_usage_error(cmd, "%s '%s': expected an unsigned integer", name, value);
  *(uint64_t *)dst = (uint64_t)v;
  return 0;
}

int pet_parse_phantom(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "spheres"))
    *(pet_phantom_kind *)dst = PET_PHANTOM_SPHERES;
  else if (!strcmp(value, "points"))
    *(pet_phantom_kind *)dst = PET_PHANTOM_POINTS;
  else
    return cli_usage_error(cmd, "%s '%s': expected spheres or points", name, value);
  return 0;
}

void pet_make_phantom(pet_phantom_kind kind, double contrast, ctr_pet_phantom *ph) {
  if (kind == PET_PHANTOM_POINTS)
    ctr_pet_phantom_points(ph);
  else
    ctr_pet_phantom_spheres(ph, contrast);
}

const char *pet_phantom_name(pet_phantom_kind kind) {
  return kind == PET_PHANTOM_POINTS ? "points" : "spheres";
}

ctr_stack_info pet_image_info(const ctr_pet_params *p) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = p->nx;
  info.height = p->ny;
  info.count = p->nz;
  info.dtype = CTR_DTYPE_FLOAT32;
  info.spacing[0] = info.spacing[1] = info.spacing[2] = p->voxel;
  info.origin[0] = -0.5 * (double)(p->nx - 1) * p->voxel;
  info.origin[1] = -0.5 * (double)(p->ny - 1) * p->voxel;
  info.origin[2] = -0.5 * (double)(p->nz - 1) * p->voxel;
  return info;
}

const char *pet_replace_ext(const char *path, const char *suffix, char *buf, size_t n) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t len = strlen(path);
  if (dot && (!slash || dot > slash) && dot != path && dot[-1] != '/') len = (size_t)(dot - path);
  snprintf(buf, n, "%.*s%s", (int)len, path, suffix);
  return buf;
}

int pet_check_raw_size(const char *cmd, const char *option, const char *path, int64_t nx,
                       int64_t ny, int64_t nz) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0; /* the reader reports it */
  const long long want = (long long)(nx * ny * nz) * 4;
  if ((long long)sb.st_size != want)
    return cli_error(cmd, CLI_EXIT_INPUT, "%s '%s' holds %lld bytes, expected %lld for %lld x %lld "
                     "x %lld float32 voxels (--lattice)", option, path, (long long)sb.st_size,
                     want, (long long)nx, (long long)ny, (long long)nz);
  return 0;
}

/* ---- Metrics curve ------------------------------------------------------------ */

int pet_curve_add(const char *cmd, pet_curve *c, int iteration, const ctr_pet_metrics *m) {
  if (c->n == c->cap) {
    const int cap = c->cap ? 2 * c->cap : 32;
    int *it = realloc(c->iteration, sizeof(int) * (size_t)cap);
    if (it) c->iteration = it;
    double *no = realloc(c->noise, sizeof(double) * (size_t)cap);
    if (no) c->noise = no;
    double *cr = realloc(c->crc, sizeof(double) * (size_t)cap);
    if (cr) c->crc = cr;
    double *cs = realloc(c->crc_sphere, sizeof(double) * (size_t)cap * CTR_PET_MAX_SPHERES);
    if (cs) c->crc_sphere = cs;
    if (!it || !no || !cr || !cs) return cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory");
    c->cap = cap;
  }
  c->iteration[c->n] = iteration;
  c->noise[c->n] = m->noise;
  c->crc[c->n] = m->crc;
  c->nspheres = m->nspheres;
  for (int s = 0; s < m->nspheres; s++)
    c->crc_sphere[(size_t)c->n * CTR_PET_MAX_SPHERES + (size_t)s] = m->crc_sphere[s];
  c->n++;
  return 0;
}

void pet_curve_free(pet_curve *c) {
  free(c->iteration);
  free(c->noise);
  free(c->crc);
  free(c->crc_sphere);
  memset(c, 0, sizeof *c);
}

int pet_curve_write_csv(const char *cmd, const pet_curve *c, const char *path, int force) {
  char tmp[4200];
  FILE *f = NULL;
  const int rc = cli_text_create(cmd, path, tmp, sizeof tmp, &f);
  if (rc) return rc;
  fprintf(f, "iteration,noise,crc");
  for (int s = 0; s < c->nspheres; s++) fprintf(f, ",crc_sphere%d", s + 1);
  fputc('\n', f);
  for (int i = 0; i < c->n; i++) {
    fprintf(f, "%d,%.9g,%.9g", c->iteration[i], c->noise[i], c->crc[i]);
    for (int s = 0; s < c->nspheres; s++)
      fprintf(f, ",%.9g", c->crc_sphere[(size_t)i * CTR_PET_MAX_SPHERES + (size_t)s]);
    fputc('\n', f);
  }
  return cli_text_commit(cmd, f, tmp, path, force);
}
