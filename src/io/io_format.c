/* The format table: one row per file format with its names, its backends
 * and what it can do (ctr_file_format_info), and the queries every other
 * part of the library asks instead of listing formats: names, guessing a
 * format from a path, and the capabilities. Adding a format is a row here
 * and its backend file. */
#include "io/io_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DT(d) (1u << (d))
#define ALL_DTYPES (DT(CTR_DTYPE_FLOAT32) | DT(CTR_DTYPE_UINT16) | DT(CTR_DTYPE_FLOAT16))

/* Rows in ctr_file_format order, CTR_FORMAT_AUTO first (no backend). The
 * tests check each row against what its writer does. */
static const ctr__format_row k_rows[] = {
    {CTR_FORMAT_AUTO,
     {CTR_FILE_FORMAT_INFO_VERSION, "auto", "", 0, 0u, 0u, 0, 0, 0, 0, NULL, 0, 0, "auto"},
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    {CTR_FORMAT_RAW,
     {CTR_FILE_FORMAT_INFO_VERSION, "raw", ".raw .bin .dat", 0, ALL_DTYPES, 0u, 0, 1, 1, 0,
      "OUT.partial", 1, 0, "raw"},
     "", "raw", NULL, ctr__raw_open, ctr__raw_create, ctr__partial_path,
     ctr__raw_remove_partial, ctr__file_existing, NULL},
    {CTR_FORMAT_TIFF,
     {CTR_FILE_FORMAT_INFO_VERSION, "tiff", ".tif .tiff", 0, ALL_DTYPES, CTR_FEATURE_TIFF, 1, 0,
      0, 0, NULL, 0, 0, "TIFF"},
     "; tiff-stack with a %d pattern", "multi-page TIFF", NULL, ctr__tiff_open,
     ctr__tiff_create, NULL, NULL, ctr__file_existing, NULL},
    {CTR_FORMAT_TIFF_STACK,
     {CTR_FILE_FORMAT_INFO_VERSION, "tiff-stack", ".tif .tiff", 1, ALL_DTYPES, CTR_FEATURE_TIFF,
      0, 1, 1, 0, "each image's FILE.partial", 0, 0, "TIFF stack"},
     NULL, "a TIFF stack pattern", "_%04d.tif", ctr__tiff_stack_open, ctr__tiff_stack_create,
     ctr__tiff_stack_partial_name, ctr__tiff_stack_remove_partial, ctr__tiff_stack_existing,
     NULL},
    {CTR_FORMAT_NRRD,
     {CTR_FILE_FORMAT_INFO_VERSION, "nrrd", ".nrrd .nhdr", 0,
      DT(CTR_DTYPE_FLOAT32) | DT(CTR_DTYPE_UINT16), 0u, 0, 1, 1, 0,
      "OUT.partial (a detached header's data file: DATA.partial too)", 0, 0, "NRRD"},
     "", "nrrd", NULL, ctr__nrrd_open, ctr__nrrd_create, ctr__partial_path,
     ctr__nrrd_remove_partial, ctr__nrrd_existing, NULL},
    {CTR_FORMAT_HDF5,
     {CTR_FILE_FORMAT_INFO_VERSION, "hdf5", ".h5 .hdf5 .hdf .nxs", 0, ALL_DTYPES,
      CTR_FEATURE_HDF5, 0, 0, 0, 1, NULL, 0, 1, "HDF5"},
     ", as 'file.h5:/group/dataset'", "HDF5", NULL, ctr__hdf5_open, ctr__hdf5_create, NULL, NULL,
     ctr__hdf5_existing, NULL},
    {CTR_FORMAT_ZARR,
     {CTR_FILE_FORMAT_INFO_VERSION, "zarr", ".zarr", 0, ALL_DTYPES, 0u, 0, 1, 0, 0,
      "OUT.partial (a directory; its complete rows of chunks are kept)", 0, 0, "OME-Zarr"},
     "", "OME-Zarr", NULL, ctr__zarr_open, ctr__zarr_create, ctr__partial_path,
     ctr__zarr_remove_partial, ctr__file_existing, ctr__zarr_writer_bytes},
};
#define NROWS (sizeof k_rows / sizeof k_rows[0])

/* "raw, tiff, tiff-stack, nrrd or hdf5" (with_auto: "..., hdf5 or auto"). */
static const char *format_names(char *buf, size_t n, int with_auto) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 1; i <= NROWS && len < n; i++) {
    const char *name = i < NROWS ? k_rows[i].info.name : with_auto ? k_rows[0].info.name : NULL;
    if (!name) break;
    const int last = i == NROWS || (i == NROWS - 1 && !with_auto);
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i == 1 ? "" : last ? " or " : ", ", name);
  }
  return buf;
}

static int has_cap(const ctr__format_row *row, ctr__format_cap cap) {
  switch (cap) {
    case CTR__CAP_RESUMABLE: return row->info.resumable;
    case CTR__CAP_MANY_RANKS: return row->info.many_ranks;
    case CTR__CAP_ANY_ORDER: return !row->info.in_order;
  }
  return 0;
}

const char *ctr__format_list(ctr__format_cap cap, const char *stem, char *buf, size_t n) {
  const ctr__format_row *in[NROWS];
  size_t k = 0, len = 0;
  for (int stacks = 0; stacks < 2; stacks++) /* one-file formats first, then stacks of files */
    for (size_t i = 1; i < NROWS; i++)
      if (has_cap(&k_rows[i], cap) && k_rows[i].info.stack_of_files == stacks) in[k++] = &k_rows[i];
  if (n) buf[0] = '\0';
  for (size_t i = 0; i < k && len < n; i++) {
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i == 0 ? "" : i + 1 == k ? " or " : ", ",
                            in[i]->listed);
    if (stem && in[i]->example && len < n)
      len += (size_t)snprintf(buf + len, n - len, " such as '%s%s'", stem, in[i]->example);
  }
  return buf;
}

/* "a, b or c" of n words. */
static size_t add_word(char *buf, size_t n, size_t len, size_t i, size_t k, const char *word) {
  if (len >= n) return len;
  return len + (size_t)snprintf(buf + len, n - len, "%s%s",
                                i == 0 ? "" : i + 1 == k ? " or " : ", ", word);
}

const char *ctr__format_names_storing(ctr_dtype d, char *buf, size_t n) {
  size_t k = 0, len = 0;
  for (size_t i = 1; i < NROWS; i++) k += (k_rows[i].info.dtypes & DT(d)) != 0;
  if (n) buf[0] = '\0';
  for (size_t i = 1, j = 0; i < NROWS; i++)
    if (k_rows[i].info.dtypes & DT(d)) len = add_word(buf, n, len, j++, k, k_rows[i].info.name);
  return buf;
}

ctr_status ctr__format_check_dtype(const ctr__format_row *row, ctr_dtype d, const char *path) {
  if (row->info.dtypes & DT(d)) return CTR_OK;
  char formats[256], dtypes[64];
  size_t k = 0, len = 0;
  for (int t = 0; t < 32; t++) k += (row->info.dtypes & DT(t)) != 0;
  dtypes[0] = '\0';
  for (int t = 0, j = 0; t < 32; t++)
    if (row->info.dtypes & DT(t))
      len = add_word(dtypes, sizeof dtypes, len, (size_t)j++, k, ctr_dtype_name((ctr_dtype)t));
  CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': %s has no %s type: write %s as %s, or choose %s", path,
           row->info.title, ctr_dtype_name(d), ctr_dtype_name(d),
           ctr__format_names_storing(d, formats, sizeof formats), dtypes);
}

const ctr__format_row *ctr__format_row_of(ctr_file_format f) {
  if ((unsigned)f < NROWS && f != CTR_FORMAT_AUTO) return &k_rows[f];
  char names[256];
  ctr__error_set(CTR_E_INVALID_ARGUMENT, "file format %d (%s): expected %s", (int)f,
                 ctr_format_name(f), format_names(names, sizeof names, 0));
  return NULL;
}

uint64_t ctr__format_writer_bytes(ctr_file_format f, int64_t nx, int64_t ny, int64_t nz,
                                  ctr_dtype d, int streams) {
  if (f == CTR_FORMAT_AUTO || (unsigned)f >= NROWS || !k_rows[f].writer_bytes) return 0;
  if (nx <= 0 || ny <= 0 || nz <= 0 || !ctr_dtype_size(d)) return 0;
  return k_rows[f].writer_bytes(nx, ny, nz, d, streams > 1 ? streams : 1);
}

uint64_t ctr_file_format_writer_bytes(ctr_file_format fmt, int64_t nx, int64_t ny, int64_t nz,
                                      ctr_dtype dtype) {
  return ctr__format_writer_bytes(fmt, nx, ny, nz, dtype, 1);
}

const ctr_file_format_info *ctr__format_info(ctr_file_format f) {
  const ctr__format_row *row = ctr__format_row_of(f);
  return row ? &row->info : NULL;
}

ctr_status ctr_file_format_get_info(ctr_file_format fmt, ctr_file_format_info *info) {
  CTR_CHECK(ctr__struct_check(&ctr__struct_file_format_info, info));
  if (fmt == CTR_FORMAT_AUTO)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_file_format_get_info: fmt is CTR_FORMAT_AUTO: expected "
             "a format (ctr_format_guess resolves a path's)");
  const ctr_file_format_info *row = ctr__format_info(fmt);
  if (!row) return CTR_E_INVALID_ARGUMENT; /* raised */
  return ctr__struct_store(&ctr__struct_file_format_info, info, row);
}

const char *ctr_format_name(ctr_file_format f) {
  return (unsigned)f < NROWS ? k_rows[f].info.name : "unknown";
}

ctr_status ctr_format_parse(const char *name, ctr_file_format *out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_format_parse: out is NULL");
  for (size_t i = 0; name && i < NROWS; i++)
    if (!strcasecmp(name, k_rows[i].info.name)) {
      *out = k_rows[i].fmt;
      return CTR_OK;
    }
  char names[256];
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "unknown file format '%s': expected %s",
           name ? name : "(null)", format_names(names, sizeof names, 1));
}

/* A printf integer conversion ("%d", "%04d", ...) marks a TIFF stack
 * pattern; "%%" is a literal percent sign. */
static int has_conversion(const char *path) {
  for (const char *p = path; (p = strchr(p, '%')) != NULL; p += 2)
    if (p[1] != '%') return 1;
  return 0;
}

/* 1 if the first `len` characters of `path` end in one of the row's
 * extensions (and are more than the extension: ".h5" alone is no name). */
static int has_extension(const ctr__format_row *row, const char *path, size_t len) {
  for (const char *e = row->info.extensions; *e;) {
    const size_t n = strcspn(e, " ");
    if (len > n && path[len - n - 1] != '/' && !strncasecmp(path + len - n, e, n)) return 1;
    e += n;
    e += strspn(e, " ");
  }
  return 0;
}

/* Formats whose path carries a dataset after the file: "scan.h5:/exchange/data"
 * (the file ends at the last ':' followed by '/'). A bare "scan.h5", or
 * "scan.h5:data" (a dataset without its leading '/', refused when opened
 * with a hint at the syntax), is theirs too. */
static int dataset_path_of(const ctr__format_row *row, const char *path) {
  const char *split = NULL, *last = NULL;
  for (const char *p = strchr(path, ':'); p; p = strchr(p + 1, ':')) {
    last = p;
    if (p[1] == '/') split = p;
  }
  if (split) return has_extension(row, path, (size_t)(split - path));
  return has_extension(row, path, strlen(path)) ||
         (last && has_extension(row, path, (size_t)(last - path)));
}

/* The endings of every row, for the message of a path no row takes:
 * ".raw, .bin, .dat (raw), .tif, .tiff (tiff; ...), ...". */
static void known_extensions(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NROWS && len < n; i++) {
    const ctr__format_row *row = &k_rows[i];
    if (!row->guess_note) continue; /* named in another row's note */
    for (const char *e = row->info.extensions; *e && len < n;) {
      const size_t k = strcspn(e, " ");
      len += (size_t)snprintf(buf + len, n - len, "%s%.*s", len ? ", " : "", (int)k, e);
      e += k;
      e += strspn(e, " ");
    }
    if (len < n) len += (size_t)snprintf(buf + len, n - len, " (%s", row->info.name);
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s", row->guess_note);
    if (len < n) len += (size_t)snprintf(buf + len, n - len, ")");
  }
}

/* 1 if `ext` (".tif") is one of the row's endings. */
static int takes_ending(const ctr__format_row *row, const char *ext) {
  const size_t len = strlen(ext);
  for (const char *e = row->info.extensions; *e;) {
    const size_t n = strcspn(e, " ");
    if (n == len && !strncasecmp(e, ext, n)) return 1;
    e += n;
    e += strspn(e, " ");
  }
  return 0;
}

ctr_status ctr_format_guess(const char *path, ctr_file_format *out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_format_guess: out is NULL");
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "empty path: cannot guess its format");
  for (size_t i = 0; i < NROWS; i++)
    if (k_rows[i].info.dataset_path && dataset_path_of(&k_rows[i], path)) {
      *out = k_rows[i].fmt;
      return CTR_OK;
    }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *ext = strrchr(base, '.');
  /* Of the rows that take the ending, the one that is a stack of files when
   * the path is a pattern ("img_%04d.tif"), else the first. */
  const ctr__format_row *found = NULL;
  const int pattern = has_conversion(path);
  for (size_t i = 0; ext && i < NROWS; i++) {
    const ctr__format_row *row = &k_rows[i];
    if (row->info.dataset_path || !takes_ending(row, ext)) continue;
    if (!found || (row->info.stack_of_files == pattern && found->info.stack_of_files != pattern))
      found = row;
  }
  if (found) {
    *out = found->fmt;
    return CTR_OK;
  }
  char known[512];
  known_extensions(known, sizeof known);
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "cannot tell the format of '%s' from its extension; known: %s; or name the format "
           "explicitly",
           path, known);
}
