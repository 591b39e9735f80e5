/* File format names and guessing a format from a path. */
#include "io/io_internal.h"

#include <string.h>
#include <strings.h>

#define CTR__KNOWN_EXTENSIONS                                                                  \
  ".raw, .bin, .dat (raw), .tif, .tiff (tiff; tiff-stack with a %%d pattern), .nrrd, .nhdr "   \
  "(nrrd), .h5, .hdf5, .hdf, .nxs (hdf5, as 'file.h5:/group/dataset')"

const char *ctr_format_name(ctr_file_format f) {
  switch (f) {
    case CTR_FORMAT_AUTO: return "auto";
    case CTR_FORMAT_RAW: return "raw";
    case CTR_FORMAT_TIFF: return "tiff";
    case CTR_FORMAT_TIFF_STACK: return "tiff-stack";
    case CTR_FORMAT_NRRD: return "nrrd";
    case CTR_FORMAT_HDF5: return "hdf5";
  }
  return "unknown";
}

ctr_status ctr_format_parse(const char *name, ctr_file_format *out) {
  static const ctr_file_format all[] = {CTR_FORMAT_AUTO, CTR_FORMAT_RAW, CTR_FORMAT_TIFF,
                                        CTR_FORMAT_TIFF_STACK, CTR_FORMAT_NRRD,
                                        CTR_FORMAT_HDF5};
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_format_parse: out is NULL");
  for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
    if (!strcasecmp(name, ctr_format_name(all[i]))) {
      *out = all[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "unknown file format '%s': expected raw, tiff, tiff-stack, nrrd, hdf5 or auto",
           name ? name : "(null)");
}

/* A printf integer conversion ("%d", "%04d", ...) marks a TIFF stack
 * pattern; "%%" is a literal percent sign. */
static int has_conversion(const char *path) {
  for (const char *p = path; (p = strchr(p, '%')) != NULL; p += 2)
    if (p[1] != '%') return 1;
  return 0;
}

/* 1 if the first `len` characters of `path` name a file with an HDF5
 * extension (.h5, .hdf5, .hdf, .nxs). */
static int hdf5_name(const char *path, size_t len) {
  static const char *exts[] = {".h5", ".hdf5", ".hdf", ".nxs"};
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
    const size_t n = strlen(exts[i]);
    if (len > n && path[len - n - 1] != '/' && !strncasecmp(path + len - n, exts[i], n))
      return 1;
  }
  return 0;
}

/* HDF5 paths carry a dataset after the file: "scan.h5:/exchange/data" (the
 * file ends at the last ':' followed by '/'). A bare "scan.h5", or
 * "scan.h5:data" (a dataset without its leading '/', refused when opened
 * with a hint at the syntax), is HDF5 too. */
static int is_hdf5_path(const char *path) {
  const char *split = NULL, *last = NULL;
  for (const char *p = strchr(path, ':'); p; p = strchr(p + 1, ':')) {
    last = p;
    if (p[1] == '/') split = p;
  }
  if (split) return hdf5_name(path, (size_t)(split - path));
  return hdf5_name(path, strlen(path)) || (last && hdf5_name(path, (size_t)(last - path)));
}

ctr_status ctr_format_guess(const char *path, ctr_file_format *out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_format_guess: out is NULL");
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "empty path: cannot guess its format");
  if (is_hdf5_path(path)) {
    *out = CTR_FORMAT_HDF5;
    return CTR_OK;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *ext = strrchr(base, '.');
  if (ext) {
    if (!strcasecmp(ext, ".raw") || !strcasecmp(ext, ".bin") || !strcasecmp(ext, ".dat")) {
      *out = CTR_FORMAT_RAW;
      return CTR_OK;
    }
    if (!strcasecmp(ext, ".tif") || !strcasecmp(ext, ".tiff")) {
      *out = has_conversion(path) ? CTR_FORMAT_TIFF_STACK : CTR_FORMAT_TIFF;
      return CTR_OK;
    }
    if (!strcasecmp(ext, ".nrrd") || !strcasecmp(ext, ".nhdr")) {
      *out = CTR_FORMAT_NRRD;
      return CTR_OK;
    }
  }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "cannot tell the format of '%s' from its extension; known: " CTR__KNOWN_EXTENSIONS
           "; or name the format explicitly",
           path);
}
