/* Helpers shared by the compute commands: output paths, formats, geometry
 * loading, buffers and value ranges. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

/* The file part of a path option: "file.h5:/group/dataset" names file.h5. */
static int file_part(const char *cmd, const char *path, char *buf, size_t n) {
  const char *end = path + strlen(path), *colon = NULL;
  ctr_file_format fmt;
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  if (ctr_format_guess(path, &fmt) == CTR_OK && ctr_file_format_get_info(fmt, &fi) == CTR_OK &&
      fi.dataset_path)
    for (const char *p = strstr(path, ":/"); p; p = strstr(p + 1, ":/")) colon = p;
  if (colon) end = colon;
  if ((size_t)(end - path) >= n) return cli_error(cmd, CLI_EXIT_RUNTIME, "'%s': path too long", path);
  memcpy(buf, path, (size_t)(end - path));
  buf[end - path] = '\0';
  return 0;
}

int cli_beside_output(const char *cmd, const char *out, const char *suffix, char *buf, size_t n) {
  char file[4096], tail[4096];
  int rc = file_part(cmd, out, file, sizeof file);
  if (rc) return rc;
  /* "file.h5:/group/data" -> file.h5.group.data.SUFFIX: one per dataset */
  size_t k = 0;
  for (const char *d = out + strlen(file); *d && k + 1 < sizeof tail; d++)
    if (*d != ':') tail[k++] = *d == '/' ? '.' : *d;
  tail[k] = '\0';
  if ((size_t)snprintf(buf, n, "%s%s.%s", file, tail, suffix) >= n)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "'%s': path too long", out);
  return 0;
}

/* Splits a file path into its directory ("." when none) and its name. */
static void split_dir(const char *file, char *dir, size_t n, const char **base) {
  const char *slash = strrchr(file, '/');
  if (!slash) {
    snprintf(dir, n, ".");
    *base = file;
    return;
  }
  const size_t len = slash == file ? 1 : (size_t)(slash - file);
  snprintf(dir, n, "%.*s", (int)len, file);
  *base = slash + 1;
}

/* "<real directory>/<name>": the same for "./a.raw", "a.raw" and a path
 * through a symlinked directory. */
static void canonical_name(const char *file, char *out, size_t n) {
  char dir[4096];
  const char *base;
  split_dir(file, dir, sizeof dir, &base);
  char *real = realpath(dir, NULL);
  snprintf(out, n, "%s/%s", real ? real : dir, base);
  free(real);
}

/* Two path options name the same file: the same canonical name, or (both
 * existing) the same device and inode, i.e. a symlink or a hard link. */
static int same_file(const char *a, const char *b) {
  char ca[8192], cb[8192];
  canonical_name(a, ca, sizeof ca);
  canonical_name(b, cb, sizeof cb);
  if (!strcmp(ca, cb)) return 1;
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

/* "<file>.tmp.<pid>.<n>" (a temporary output) or "<file>.scratch.<pid>.<n>"
 * (fdk's filtered projections) of output `base`: <file> is base itself, a
 * file of its TIFF stack pattern (the part before '%', then anything) or of
 * its preview / iteration prefix ("<base>_..."). Gives *pid. */
static int temporary_of(const char *name, const char *base, long *pid) {
  const size_t ls = strcspn(base, "%");
  if (strncmp(name, base, ls) != 0) return 0;
  const char *t = NULL, *digits = NULL;
  static const char *const marks[] = {".tmp.", ".scratch."};
  for (int m = 0; m < 2; m++)
    for (const char *p = strstr(name + ls, marks[m]); p; p = strstr(p + 1, marks[m]))
      if (p > t) {
        t = p;
        digits = p + strlen(marks[m]);
      }
  if (!t) return 0;
  /* <file> = name up to t: base exactly, "<base>_...", or a pattern's file */
  const size_t lf = (size_t)(t - name);
  if (!base[ls] && !(lf == ls || name[ls] == '_')) return 0;
  char *end;
  errno = 0;
  const long p = strtol(digits, &end, 10);
  if (errno || p <= 0 || *end != '.' || end == digits) return 0;
  const char *num = end + 1;
  if (!*num) return 0;
  for (const char *c = num; *c; c++)
    if (*c < '0' || *c > '9') return 0;
  *pid = p;
  return 1;
}

/* Removes the temporaries "<name>.tmp.<pid>.<n>" (and fdk's scratch files
 * "<name>.scratch.<pid>.<n>") of `base` (a file name, a
 * TIFF stack pattern or a preview prefix) in `dir` that a process which no
 * longer runs left behind (SIGKILL, power loss), saying so. */
static void remove_stale_temporaries(const char *cmd, const char *option, const char *dir,
                                     const char *base) {
  /* under a launcher the other ranks' processes may run on other hosts,
   * where this one cannot see them */
  if (!*base || *base == '%' || cli_launch_size() > 1) return;
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    long pid;
    if (!temporary_of(e->d_name, base, &pid) || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* still running (or not ours) */
    char path[8192];
    snprintf(path, sizeof path, "%s%s%s", strcmp(dir, ".") ? dir : "", strcmp(dir, ".") ? "/" : "",
             e->d_name);
    if (unlink(path) == 0)
      cli_warn(cmd, "removed '%s', a temporary of %s left by process %ld, which no longer runs",
               path, option ? option : "the output", pid);
    else
      cli_warn(cmd, "'%s' is a temporary of %s left by process %ld, which no longer runs, and "
               "cannot be removed (%s): delete it", path, option ? option : "the output", pid,
               strerror(errno));
  }
  closedir(d);
}

/* The folder of an output exists, is a folder and takes new files: a probe
 * file is created and removed (access() says yes to root even on /proc). */
static int check_writable(const char *cmd, const char *option, const char *path) {
  char file[4096], dir[4096];
  const char *base;
  int rc = file_part(cmd, path, file, sizeof file);
  if (rc) return rc;
  split_dir(file, dir, sizeof dir, &base);
  char what[4200];
  if (option)
    snprintf(what, sizeof what, "%s '%s'", option, path);
  else
    snprintf(what, sizeof what, "'%s'", path);
  struct stat st;
  if (stat(dir, &st) != 0)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write %s: directory '%s': %s; create it or "
                     "choose another", what, dir, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write %s: '%s' is not a directory", what, dir);
  char probe[8192];
  snprintf(probe, sizeof probe, "%s/.ctrecon-probe.%ld", dir, (long)getpid());
  const int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write %s: directory '%s' takes no new files "
                     "(%s); choose a writable directory", what, dir, strerror(errno));
  if (fd >= 0) {
    close(fd);
    unlink(probe);
  }
  if (*base) remove_stale_temporaries(cmd, option, dir, base);
  return 0;
}

/* An output that exists is refused up front unless --force (the library
 * refuses it too, but only once the run has got that far): what exists is
 * the library's to say for data (a TIFF stack's files, the dataset of an
 * HDF5 file, which keeps its other datasets), for other files and a
 * preview's three PNGs the files themselves. */
int cli_check_new(const char *cmd, const char *option, const char *path, int kind, int force) {
  ctr_file_format fmt;
  ctr_status st = CTR_OK;
  if (force || kind == CLI_OUT_UNCHECKED) return 0;
  if (kind == CLI_OUT_PREVIEW) {
    static const char *const views[] = {"_xy.png", "_xz.png", "_yz.png"};
    for (int i = 0; i < 3 && st == CTR_OK; i++) {
      char name[4200];
      snprintf(name, sizeof name, "%s%s", path, views[i]);
      st = ctr_file_check_output(name, 0);
    }
  } else if (kind == CLI_OUT_DATA && ctr_format_guess(path, &fmt) == CTR_OK) {
    st = ctr_stack_check_output(path, fmt, 0);
  } else {
    st = ctr_file_check_output(path, 0);
  }
  if (st == CTR_OK) return 0;
  return cli_usage_error(cmd, "%s: %s", option ? option : "the output", cli_detail());
}

int cli_check_files(const char *cmd, const cli_file *inputs, const cli_output *outputs,
                    int force) {
  for (const cli_output *o = outputs; o && o->option; o++) {
    if (!o->path) continue;
    char out[4096], other[4096];
    int rc = check_writable(cmd, o->option, o->path);
    if (!rc) rc = file_part(cmd, o->path, out, sizeof out);
    if (rc) return rc;
    for (const cli_file *i = inputs; i && i->option; i++) {
      if (!i->path || file_part(cmd, i->path, other, sizeof other) || !same_file(out, other))
        continue;
      return cli_usage_error(cmd, "%s '%s' is the same file as the input %s '%s': writing it "
                             "would destroy the input; write the output elsewhere",
                             o->option, o->path, i->option, i->path);
    }
    for (const cli_output *p = outputs; p < o; p++) {
      if (!p->path || file_part(cmd, p->path, other, sizeof other) || !same_file(out, other))
        continue;
      return cli_usage_error(cmd, "%s '%s' and %s '%s' are the same file: one output would "
                             "overwrite the other; give them different names",
                             p->option, p->path, o->option, o->path);
    }
  }
  for (const cli_output *o = outputs; o && o->option; o++) {
    const int rc = o->path ? cli_check_new(cmd, o->option, o->path, o->kind, force) : 0;
    if (rc) return rc;
  }
  return 0;
}

int cli_text_create(const char *cmd, const char *path, char *tmp, size_t n, FILE **f) {
  /* NAME.tmp.PID.N as the library names its temporaries (cli_check_files) */
  snprintf(tmp, n, "%s.tmp.%ld.0", path, (long)getpid());
  *f = fopen(tmp, "w");
  return *f ? 0 : cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
}

/* rename(2) that keeps an existing `to` (errno EEXIST): a hard link, or
 * where the file system has none, a check just before the rename. */
static int rename_new(const char *from, const char *to) {
  if (link(from, to) == 0) return unlink(from), 0;
  struct stat s;
  if (errno == EEXIST || lstat(to, &s) == 0) return errno = EEXIST, -1;
  return rename(from, to);
}

int cli_text_commit(const char *cmd, FILE *f, const char *tmp, const char *path, int force) {
  const int bad = ferror(f) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
  if ((fclose(f) != 0) | bad || (force ? rename(tmp, path) : rename_new(tmp, path)) != 0) {
    const int e = errno;
    unlink(tmp);
    if (e == EEXIST && !force)
      return cli_error(cmd, CLI_EXIT_INPUT, "'%s' appeared while it was written: it is kept and "
                       "the output discarded: add --force to replace it, or write the output to "
                       "another name", path);
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(e));
  }
  return 0;
}

long cli_lock_holder(const char *path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  const int got = fcntl(fd, F_GETLK, &l);
  close(fd);
  return got == 0 && l.l_type != F_UNLCK ? (long)l.l_pid : 0;
}

int cli_format_is_stack(ctr_file_format fmt) {
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  return ctr_file_format_get_info(fmt, &fi) == CTR_OK && fi.stack_of_files;
}

int cli_format_needs_hint(ctr_file_format fmt) {
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  return ctr_file_format_get_info(fmt, &fi) == CTR_OK && fi.needs_hint;
}

int cli_resolve_format(const char *cmd, const char *path_option, const char *format_option,
                       const char *path, ctr_file_format given, ctr_file_format *out) {
  if (given != CTR_FORMAT_AUTO) {
    *out = given;
  } else if (ctr_format_guess(path, out) != CTR_OK) { /* the detail lists the known endings */
    const char *known = strstr(cli_detail(), "known: ");
    return cli_usage_error(cmd, "%s '%s': unknown extension; %s%s%s", path_option, path,
                           known ? known : cli_detail(), format_option ? " with " : "",
                           format_option ? format_option : "");
  }
  /* One file per image needs a place for the image number in the name. */
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  if (ctr_file_format_get_info(*out, &fi) == CTR_OK && fi.stack_of_files && !strchr(path, '%'))
    return cli_usage_error(cmd,
                           "%s '%s': a %s needs a file name pattern with %%d, "
                           "e.g. 'views/proj_%%04d%.*s'",
                           path_option, path, fi.title, (int)strcspn(fi.extensions, " "),
                           fi.extensions);
  return 0;
}

int cli_load_geometry(const char *cmd, const char *path, ctr_geometry **out) {
  ctr_status st = ctr_geometry_load_json(path, out);
  if (st != CTR_OK) return cli_fail_file(cmd, st, path);
  double span = 0;
  if (ctr_geometry_angles_look_like_radians(*out, &span))
    cli_warn(cmd, "'%s': the %lld views span only %.4g degrees: its angles look like radians, "
             "and \"angles_deg\" and \"range_deg\" take degrees (360 for a full turn)", path,
             (long long)ctr_geometry_get_view_count(*out), span);
  return 0;
}

/* Half of the cone angle (degrees) at which FDK's approximation is poor
 * enough to say so: beyond it the geometry is unusual, not impossible. */
#define CLI_CONE_WARN_DEG 20.0
#define CLI_PI 3.14159265358979323846

double cli_warn_coverage(const char *cmd, const ctr_geometry *g) {
  const double c = ctr_geometry_coverage(g);
  cli_warn_coverage_of(cmd, g, c);
  return c;
}

void cli_warn_coverage_of(const char *cmd, const ctr_geometry *g, double c) {
  if (ctr_geometry_is_circular(g)) {
    /* Circular canonical matrix: P[6] / P[11] = sdd / (sid dv), rows per mm of
     * z at the isocentre (docs/geometry.md). */
    int64_t nu, nv;
    double du, dv, P[12], s[3];
    ctr_geometry_get_detector(g, &nu, &nv, &du, &dv);
    ctr_geometry_get_matrix(g, 0, P);
    ctr_geometry_get_source(g, 0, s);
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
  /* an offset (half-fan) detector on a full turn sees every voxel in half
   * of the views or more; fdk weights it (docs/geometry.md) */
  if (c < 1.0 && !ctr_geometry_offset_detector(g)) {
    const double outside = 100.0 * (1.0 - c);
    cli_warn(cmd,
             "detector does not cover the volume's field of view: %.*f %% of the field of "
             "view is outside the detector in some views",
             outside < 1.0 ? 2 : 1, outside);
  }
}

int cli_check_raw_size(const char *cmd, const char *option, const char *path, int64_t w, int64_t h,
                       int64_t n, ctr_dtype dtype, int64_t offset, const char *dims) {
  struct stat st;
  if (stat(path, &st) != 0)
    return cli_error(cmd, CLI_EXIT_RUNTIME, "%s: cannot open '%s': %s", option, path,
                     strerror(errno));
  const int64_t need = offset + w * h * n * (int64_t)ctr_dtype_size(dtype);
  if ((int64_t)st.st_size == need) return 0;
  return cli_error(cmd, CLI_EXIT_INPUT,
                   "%s: '%s' holds %lld bytes, expected %lld for %lld x %lld x %lld %s (%s)%s%.0lld%s; "
                   "check --raw-dtype and the sizes",
                   option, path, (long long)st.st_size, (long long)need, (long long)w, (long long)h,
                   (long long)n, ctr_dtype_name(dtype), dims, offset ? " + " : "",
                   (long long)offset, offset ? " offset bytes" : "");
}

int cli_parse_angle_units(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "deg"))
    *(int *)dst = CLI_ANGLES_DEG;
  else if (!strcmp(value, "rad"))
    *(int *)dst = CLI_ANGLES_RAD;
  else
    return cli_usage_error(cmd, "%s '%s': expected deg or rad", name, value);
  return 0;
}

void cli_angles_in_degrees(const char *cmd, int units, int said, double *angles, int64_t n,
                           double *start, double *range, const char *from) {
  const double k = units == CLI_ANGLES_RAD ? 180.0 / CLI_PI : 1.0;
  for (int64_t i = 0; angles && i < n; i++) angles[i] *= k;
  if (start) *start *= k;
  if (range) *range *= k;
  double span = 0;
  if (units != CLI_ANGLES_UNSAID || said ||
      !ctr_angles_look_like_radians(angles, n, range ? *range : 0.0, &span))
    return;
  cli_warn(cmd, "the %lld angles (%s) span only %.4g degrees: they look like radians, and "
           "ctrecon reads degrees; say --angle-units rad if they are radians, --angle-units deg "
           "if they are degrees", (long long)n, from, span);
}

int cli_parallel_angles(const char *cmd, const char *path, int units, int64_t n, double **list,
                        double *start, double *range) {
  char from[4200];
  if (!path) {
    snprintf(from, sizeof from, "--angle-range %g", *range);
    cli_angles_in_degrees(cmd, units, 0, NULL, n, start, range, from);
    return 0;
  }
  int rc = cli_read_numbers(cmd, path, "angles", n, list);
  snprintf(from, sizeof from, "--angles '%s'", path);
  if (!rc) cli_angles_in_degrees(cmd, units, 0, *list, n, NULL, NULL, from);
  return rc;
}

int cli_tilt(const char *cmd, int units, double *tilt, int64_t slices) {
  if (units == CLI_ANGLES_RAD) *tilt *= 180.0 / 3.14159265358979323846;
  if (!(fabs(*tilt) < 90.0))
    return cli_usage_error(cmd, "--tilt %g: expected degrees in (-90, 90): 0 is tomography, 90 "
                           "would put the rotation axis along the beam", *tilt);
  if (slices > 0 && *tilt == 0.0)
    return cli_usage_error(cmd, "--slices applies to a tilted axis (--tilt DEG): without a tilt "
                           "every detector row is a slice; give --rows to choose them (fbp)");
  if (units == CLI_ANGLES_UNSAID && *tilt != 0.0 && fabs(*tilt) <= 1.5708)
    cli_warn(cmd, "--tilt %g is under 1.6 degrees: it looks like radians, and ctrecon reads "
             "degrees (laminography tilts are usually 10 to 60 degrees); say --angle-units rad "
             "if it is radians, --angle-units deg to silence this", *tilt);
  return 0;
}

void cli_warn_axis(const char *cmd, double axis, int64_t nbins) {
  if (!(axis >= 0 && axis <= (double)(nbins - 1)))
    cli_warn(cmd, "--axis %g lies outside the detector's bins 0 .. %lld: the rotation axis is "
             "never seen; check --axis (bins, not mm)", axis, (long long)(nbins - 1));
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
  ctr_stack_info info = CTR_STACK_INFO_INIT;
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

/* A text file of numbers (one or more per line, '#' comments); lines of any
 * length (getline: a number is never cut at a buffer's edge). */
int cli_read_numbers(const char *cmd, const char *path, const char *what, int64_t expect,
                     double **out) {
  FILE *f = fopen(path, "r");
  if (!f) return cli_error(cmd, CLI_EXIT_INPUT, "cannot open %s file '%s'", what, path);
  int64_t n = 0, cap = 1024;
  double *v = malloc(sizeof(double) * (size_t)cap);
  char *line = NULL;
  size_t line_cap = 0;
  int rc = 0;
  if (!v) {
    rc = cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory reading '%s'", path);
    goto done;
  }
  while (getline(&line, &line_cap, f) >= 0) {
    char *p = strchr(line, '#');
    if (p) *p = '\0';
    for (char *s = strtok(line, " \t\r\n,"); s; s = strtok(NULL, " \t\r\n,")) {
      char *end;
      const double x = strtod(s, &end);
      if (*end || !isfinite(x)) {
        rc = cli_error(cmd, CLI_EXIT_INPUT, "%s file '%s': '%s' is not a finite number", what,
                       path, s);
        goto done;
      }
      if (n == expect) {
        rc = cli_error(cmd, CLI_EXIT_INPUT, "%s file '%s' holds more than %lld numbers (one per "
                       "projection)", what, path, (long long)expect);
        goto done;
      }
      if (n == cap) {
        double *w = realloc(v, sizeof(double) * (size_t)(cap *= 2));
        if (!w) {
          rc = cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory reading '%s'", path);
          goto done;
        }
        v = w;
      }
      v[n++] = x;
    }
  }
  if (ferror(f))
    rc = cli_error(cmd, CLI_EXIT_INPUT, "cannot read %s file '%s': %s", what, path, strerror(errno));
  else if (n != expect)
    rc = cli_error(cmd, CLI_EXIT_INPUT, "%s file '%s' holds %lld numbers, expected %lld (one per "
                   "projection)", what, path, (long long)n, (long long)expect);
done:
  free(line);
  fclose(f);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  return 0;
}


/* ---- Previews ------------------------------------------------------------ */

int cli_preview(const char *cmd, const char *prefix, const float *xy, const float *xz,
                const float *yz, int64_t nx, int64_t ny, int64_t nz, const double *voxel,
                double lo, double hi, int force) {
  ctr_preview_options o = CTR_PREVIEW_OPTIONS_INIT;
  o.lo = (float)lo;
  o.hi = (float)hi;
  if (voxel) memcpy(o.voxel, voxel, sizeof o.voxel);
  o.overwrite = force;
  ctr_status st = ctr_png_preview_figure(prefix, xy, xz, yz, nx, ny, nz, &o);
  return st == CTR_OK ? 0 : cli_fail_file(cmd, st, prefix);
}

int cli_preview_volume(const char *cmd, const char *prefix, const float *vol, int64_t nx,
                       int64_t ny, int64_t nz, const double *voxel, double lo, double hi,
                       int force) {
  int rc = 0;
  float *xz = cli_alloc_floats(cmd, nx * nz, "the xz preview", &rc);
  float *yz = rc ? NULL : cli_alloc_floats(cmd, ny * nz, "the yz preview", &rc);
  if (!rc) {
    const int64_t plane = nx * ny;
    for (int64_t z = 0; z < nz; z++) {
      memcpy(xz + z * nx, vol + z * plane + (ny / 2) * nx, (size_t)nx * sizeof(float));
      for (int64_t y = 0; y < ny; y++) yz[z * ny + y] = vol[z * plane + y * nx + nx / 2];
    }
    rc = cli_preview(cmd, prefix, vol + (nz / 2) * plane, xz, yz, nx, ny, nz, voxel, lo, hi,
                     force);
  }
  cli_free_floats(xz);
  cli_free_floats(yz);
  return rc;
}
