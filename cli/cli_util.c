/* Helpers shared by the compute commands: output paths, formats, geometry
 * loading, buffers and value ranges. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_check_output_dir(const char *cmd, const char *path) {
  /* "file.h5:/group/dataset": the file is what ends at the last ":/" */
  const char *end = path + strlen(path), *colon = NULL;
  ctr_file_format fmt;
  if (ctr_format_guess(path, &fmt) == CTR_OK && fmt == CTR_FORMAT_HDF5)
    for (const char *p = strstr(path, ":/"); p; p = strstr(p + 1, ":/")) colon = p;
  if (colon) end = colon;
  const char *slash = NULL;
  for (const char *p = path; p < end; p++)
    if (*p == '/') slash = p;
  if (!slash) return 0; /* the current directory */
  char dir[4096];
  const size_t len = slash == path ? 1 : (size_t)(slash - path);
  if (len >= sizeof dir) return cli_error(cmd, CLI_EXIT_RUNTIME, "'%s': path too long", path);
  memcpy(dir, path, len);
  dir[len] = '\0';
  struct stat st;
  if (stat(dir, &st) != 0)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': directory '%s': %s", path, dir,
                     strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': '%s' is not a directory", path,
                     dir);
  return 0;
}

int cli_resolve_format(const char *cmd, const char *path_option, const char *format_option,
                       const char *path, ctr_file_format given, ctr_file_format *out) {
  if (given != CTR_FORMAT_AUTO) {
    *out = given;
  } else if (ctr_format_guess(path, out) != CTR_OK) {
    return cli_usage_error(cmd,
                           "%s '%s': unknown extension; use .raw, .tif, .nrrd or "
                           "a %%04d pattern for a TIFF stack%s%s",
                           path_option, path, format_option ? ", or give " : "",
                           format_option ? format_option : "");
  }
  /* One file per image needs a place for the image number in the name. */
  if (*out == CTR_FORMAT_TIFF_STACK && !strchr(path, '%'))
    return cli_usage_error(cmd,
                           "%s '%s': a TIFF stack needs a file name pattern with %%d, "
                           "e.g. 'views/proj_%%04d.tif'",
                           path_option, path);
  return 0;
}

int cli_load_geometry(const char *cmd, const char *path, ctr_geometry **out) {
  ctr_status st = ctr_geometry_load_json(path, out);
  return st == CTR_OK ? 0 : cli_fail_file(cmd, st, path);
}

/* Half of the cone angle (degrees) at which FDK's approximation is poor
 * enough to say so: beyond it the geometry is unusual, not impossible. */
#define CLI_CONE_WARN_DEG 20.0
#define CLI_PI 3.14159265358979323846

double cli_warn_coverage(const char *cmd, const ctr_geometry *g) {
  if (ctr_geometry_is_circular(g)) {
    /* Circular canonical matrix: P[6] / P[11] = sdd / (sid dv), rows per mm of
     * z at the isocentre (docs/geometry.md). */
    int64_t nu, nv;
    double du, dv, P[12], s[3];
    ctr_geometry_detector(g, &nu, &nv, &du, &dv);
    ctr_geometry_matrix(g, 0, P);
    ctr_geometry_source(g, 0, s);
    const double rows_per_mm = P[11] != 0.0 ? fabs(P[6] / P[11]) : 0.0;
    const double sid = hypot(s[0], s[1]);
    if (rows_per_mm > 0 && sid > 0) {
      const double half = atan(0.5 * (double)nv / (rows_per_mm * sid)) * (180.0 / CLI_PI);
      if (half > CLI_CONE_WARN_DEG)
        cli_warn(cmd, "cone angle %.1f deg (half-angle %.1f deg above the %g deg this warning "
                 "starts at): FDK's cone-beam approximation is poor this far from the central "
                 "plane; check sid, sdd and dv", 2.0 * half, half, CLI_CONE_WARN_DEG);
    }
  }
  const double c = ctr_geometry_coverage(g);
  if (c < 1.0) {
    const double outside = 100.0 * (1.0 - c);
    cli_warn(cmd,
             "detector does not cover the volume's field of view: %.*f %% of the field of "
             "view is outside the detector in some views",
             outside < 1.0 ? 2 : 1, outside);
  }
  return c;
}

float *cli_alloc_floats(const char *cmd, int64_t n, const char *what, int *rc) {
  char b[32];
  if (n <= 0 || (uint64_t)n > SIZE_MAX / sizeof(float)) {
    *rc = cli_error(cmd, CLI_EXIT_RUNTIME, "%s: %lld values do not fit in memory", what,
                    (long long)n);
    return NULL;
  }
  /* Pinned when a GPU is usable: transfers run at full speed, in place. */
  float *p = ctr_host_alloc((size_t)n * sizeof(float));
  if (!p)
    *rc = cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory: %s needs %s", what,
                    cli_bytes((double)n * sizeof(float), b, sizeof b));
  return p;
}

void cli_free_floats(float *p) { ctr_host_free(p); }

int cli_parse_interp(const char *cmd, const char *name, const char *value, void *dst) {
  ctr_interp *i = dst;
  if (!strcmp(value, "auto"))
    *i = CTR_INTERP_DEFAULT;
  else if (!strcmp(value, "exact"))
    *i = CTR_INTERP_EXACT;
  else if (!strcmp(value, "texture"))
    *i = CTR_INTERP_TEXTURE;
  else if (!strcmp(value, "precise"))
    *i = CTR_INTERP_PRECISE;
  else
    return cli_usage_error(cmd, "%s '%s': expected auto, exact, precise or texture", name, value);
  return 0;
}

void cli_range(const float *v, int64_t n, float *lo, float *hi, int64_t *nonfinite) {
  float a = INFINITY, b = -INFINITY;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(v[i])) {
      bad++;
      continue;
    }
    if (v[i] < a) a = v[i];
    if (v[i] > b) b = v[i];
  }
  if (a > b) a = b = 0.0f; /* nothing finite */
  *lo = a;
  *hi = b;
  if (nonfinite) *nonfinite = bad;
}

void cli_scale_for_uint16(float *v, int64_t n, double scale, int64_t *below, int64_t *above) {
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = (double)v[i] * scale;
    /* Half a count of rounding slack: -0.4 rounds to 0 without loss. NaN
     * counts as below and becomes 0, as the library would store it. */
    if (!(x >= -0.5)) {
      x = 0.0;
      lo++;
    } else if (x > 65535.5) {
      x = 65535.0;
      hi++;
    }
    v[i] = (float)x;
  }
  *below += lo;
  *above += hi;
}

ctr_stack_info cli_volume_info(const ctr_volume_geometry *vol, int64_t z0, int64_t nz,
                               ctr_dtype dtype) {
  ctr_stack_info info;
  memset(&info, 0, sizeof info);
  info.width = vol->nx;
  info.height = vol->ny;
  info.count = nz;
  info.dtype = dtype;
  info.spacing[0] = vol->voxel_x;
  info.spacing[1] = vol->voxel_y;
  info.spacing[2] = vol->voxel_z;
  /* Voxel i sits at offset + (i - (n - 1) / 2) * voxel (ctrecon.h). */
  info.origin[0] = vol->offset_x - 0.5 * (double)(vol->nx - 1) * vol->voxel_x;
  info.origin[1] = vol->offset_y - 0.5 * (double)(vol->ny - 1) * vol->voxel_y;
  info.origin[2] = vol->offset_z + ((double)z0 - 0.5 * (double)(vol->nz - 1)) * vol->voxel_z;
  return info;
}

const char *cli_bytes(double bytes, char *buf, size_t n) {
  if (bytes >= 1024.0 * 1024.0 * 1024.0)
    snprintf(buf, n, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else if (bytes >= 1024.0 * 1024.0)
    snprintf(buf, n, "%.1f MiB", bytes / (1024.0 * 1024.0));
  else if (bytes >= 1024.0)
    snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
  else
    snprintf(buf, n, "%.0f B", bytes);
  return buf;
}
