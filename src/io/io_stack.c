/* Public stack reader/writer API: argument checks, dispatch to the format
 * backends, dtype conversion and byte swapping through a bounded buffer, and
 * the bookkeeping that lets commit refuse incomplete output. */
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Conversion buffers hold whole images, about this many bytes, so that a
 * converted slab never costs a second copy of the slab. */
#define CTR__CONVERT_CHUNK ((size_t)8 << 20)

/* Buffers for file data (free with free): CTR__IO_ALIGN-aligned, so that
 * their transfers can bypass the page cache (direct I/O in io_raw.c). */
static void *io_buffer(size_t bytes, const char *what) {
  void *p = NULL;
  if (posix_memalign(&p, CTR__IO_ALIGN, bytes ? bytes : 1) != 0) {
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", bytes, what);
    return NULL;
  }
  return p;
}

static ctr_status check_range(const char *path, const ctr_stack_info *info, int64_t first,
                              int64_t n, ctr_dtype dtype, const void *data) {
  if (first < 0 || n < 0 || first > info->count - n)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%lld image(s) from image %lld are outside '%s', which has images [0, %lld)",
             (long long)n, (long long)first, path, (long long)info->count);
  if (!ctr_dtype_size(dtype))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': unknown dtype %d: expected float32 or uint16", path,
             (int)dtype);
  if (n > 0 && !data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': data buffer is NULL", path);
  return CTR_OK;
}

static int64_t chunk_images(size_t image_bytes, int64_t n) {
  int64_t per = (int64_t)(CTR__CONVERT_CHUNK / image_bytes);
  if (per < 1) per = 1;
  return per < n ? per : n;
}

/* ---- Reading ------------------------------------------------------------ */

static ctr_status check_hint(const ctr_stack_reader *r, const ctr_stack_info *h) {
  static const char *names[3] = {"width", "height", "count"};
  const int64_t file[3] = {r->info.width, r->info.height, r->info.count};
  const int64_t hint[3] = {h->width, h->height, h->count};
  for (int i = 0; i < 3; i++)
    if (hint[i] != 0 && hint[i] != file[i])
      CTR_FAIL(CTR_E_SIZE_MISMATCH, "'%s' has %s %lld, the hint expects %s %lld", r->path,
               names[i], (long long)file[i], names[i], (long long)hint[i]);
  if (h->dtype != 0 && h->dtype != r->info.dtype)
    CTR_FAIL(CTR_E_SIZE_MISMATCH, "'%s' holds %s data, the hint expects %s", r->path,
             ctr_dtype_name(r->info.dtype), ctr_dtype_name(h->dtype));
  return CTR_OK;
}

ctr_status ctr_stack_open(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                          int64_t raw_offset, ctr_stack_reader **out) {
  ctr_status st = CTR_OK;
  ctr_stack_reader *r = NULL;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_open: out is NULL");
  *out = NULL;
  ctr_stack_info hc;
  if (hint) {
    CTR_CHECK(ctr__struct_copy(&ctr__struct_stack_info, &hc, hint));
    hint = &hc;
  }
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_open: empty path");
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  const ctr__format_row *row = ctr__format_row_of(fmt);
  if (!row) return CTR_E_INVALID_ARGUMENT;
  if (fmt != CTR_FORMAT_RAW && raw_offset != 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': raw_offset %lld applies to raw files only, not %s",
             path, (long long)raw_offset, ctr_format_name(fmt));
  r = ctr__calloc(1, sizeof *r, "stack reader");
  if (!r) return CTR_E_OUT_OF_MEMORY;
  r->path = strdup(path);
  if (!r->path) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  st = row->open(r, hint, raw_offset);
  if (st != CTR_OK) goto cleanup;
  if (hint && fmt != CTR_FORMAT_RAW) CTR_CHECK_GOTO(st, check_hint(r, hint));
  r->info.version = CTR_STACK_INFO_VERSION; /* what ctr_stack_reader_get_info gives */
  *out = r;
  return CTR_OK;
cleanup:
  ctr_stack_close(r);
  return st;
}

const ctr_stack_info *ctr_stack_reader_get_info(const ctr_stack_reader *r) {
  return r ? &r->info : NULL;
}

ctr_status ctr_stack_read(ctr_stack_reader *r, int64_t first, int64_t n, ctr_dtype dtype,
                          void *out) {
  ctr_status st = CTR_OK;
  void *tmp = NULL;
  if (!r) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_read: reader is NULL");
  CTR_CHECK(check_range(r->path, &r->info, first, n, dtype, out));
  if (n == 0) return CTR_OK;
  const size_t px = (size_t)r->info.width * (size_t)r->info.height;
  const size_t fes = ctr_dtype_size(r->info.dtype), oes = ctr_dtype_size(dtype);
  if (dtype == r->info.dtype) {
    CTR_CHECK(r->ops->read(r, first, n, out));
    if (r->swap) ctr__byteswap(out, fes, px * (size_t)n);
    return CTR_OK;
  }
  const int64_t per = chunk_images(px * fes, n);
  tmp = io_buffer((size_t)per * px * fes, "dtype conversion buffer");
  if (!tmp) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i += per) {
    const int64_t k = per < n - i ? per : n - i;
    CTR_CHECK_GOTO(st, r->ops->read(r, first + i, k, tmp));
    if (r->swap) ctr__byteswap(tmp, fes, px * (size_t)k);
    ctr__convert((char *)out + (size_t)i * px * oes, dtype, tmp, r->info.dtype, px * (size_t)k);
  }
cleanup:
  free(tmp);
  return st;
}

ctr_status ctr_stack_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                               int64_t nrows, ctr_dtype dtype, void *out) {
  ctr_status st = CTR_OK;
  void *tmp = NULL;
  if (!r) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_read_rows: reader is NULL");
  CTR_CHECK(check_range(r->path, &r->info, first, n, dtype, out));
  if (row0 < 0 || nrows < 1 || row0 > r->info.height - nrows)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': rows [%lld, %lld) outside the images' rows [0, %lld)",
             r->path, (long long)row0, (long long)(row0 + nrows), (long long)r->info.height);
  if (n == 0) return CTR_OK;
  const size_t w = (size_t)r->info.width, px = w * (size_t)nrows;
  const size_t fes = ctr_dtype_size(r->info.dtype), oes = ctr_dtype_size(dtype);
  if (r->ops->read_rows && dtype == r->info.dtype) {
    CTR_CHECK(r->ops->read_rows(r, first, n, row0, nrows, out));
    if (r->swap) ctr__byteswap(out, fes, px * (size_t)n);
    return CTR_OK;
  }
  /* Through one buffer: the rows (fast path) or the whole image. */
  const size_t tmp_px = r->ops->read_rows ? px : w * (size_t)r->info.height;
  tmp = io_buffer(tmp_px * fes, "row buffer");
  if (!tmp) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i++) {
    const char *rows = tmp;
    if (r->ops->read_rows) {
      CTR_CHECK_GOTO(st, r->ops->read_rows(r, first + i, 1, row0, nrows, tmp));
    } else {
      CTR_CHECK_GOTO(st, r->ops->read(r, first + i, 1, tmp));
      rows += (size_t)row0 * w * fes;
    }
    if (r->swap) ctr__byteswap((void *)rows, fes, px);
    ctr__convert((char *)out + (size_t)i * px * oes, dtype, rows, r->info.dtype, px);
  }
cleanup:
  free(tmp);
  return st;
}

/* Read by the backends that read with threads (HDF5, io_hdf5_pread.c). */
void ctr_stack_reader_set_read_threads(ctr_stack_reader *r, int n) {
  if (r) r->read_threads = n > 0 ? n : 0;
}

int64_t ctr__stack_row_block(const ctr_stack_reader *r) {
  const int64_t b = r && r->ops && r->ops->row_block ? r->ops->row_block(r) : 1;
  return b > 0 ? b : 1;
}

ctr_status ctr__stack_prepare_rows(ctr_stack_reader *r, int64_t n, int64_t nrows) {
  return r && r->ops && r->ops->prepare_rows ? r->ops->prepare_rows(r, n, nrows) : CTR_OK;
}

void ctr_stack_close(ctr_stack_reader *r) {
  if (!r) return;
  if (r->ops) r->ops->close(r);
  free(r->path);
  free(r);
}

/* ---- Writing ------------------------------------------------------------ */

void ctr__stack_writer_free(ctr_stack_writer *w) {
  free(w->written);
  free(w->path);
  free(w);
}

ctr_status ctr__stack_writer_open(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                                  ctr__out_mode mode, const unsigned char *done, int overwrite,
                                  ctr_stack_writer **out) {
  ctr_status st = CTR_OK;
  ctr_stack_writer *w = NULL;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_create: out is NULL");
  *out = NULL;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_create: empty path");
  if (!info) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_create '%s': info is NULL", path);
  CTR_CHECK(ctr__stack_info_check(info, path, CTR_E_INVALID_ARGUMENT));
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  const ctr__format_row *row = ctr__format_row_of(fmt);
  if (!row) return CTR_E_INVALID_ARGUMENT;
  CTR_CHECK(ctr__format_check_dtype(row, info->dtype, path));
  w = ctr__calloc(1, sizeof *w, "stack writer");
  if (!w) return CTR_E_OUT_OF_MEMORY;
  w->info = *info;
  w->mode = mode;
  w->overwrite = overwrite != 0;
  w->path = strdup(path);
  w->written = ctr__calloc((size_t)info->count, 1, "written-image flags");
  if (!w->path || !w->written)
    CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot allocate the writer for '%s'", path);
  for (int64_t i = 0; done && i < info->count; i++) w->written[i] = done[i] != 0;
  st = row->create(w);
  if (st != CTR_OK) goto cleanup;
  *out = w;
  return CTR_OK;
cleanup:
  ctr__stack_writer_free(w);
  return st;
}

ctr_status ctr_stack_check_output(const char *path, ctr_file_format fmt, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_check_output: empty path");
  if (overwrite) return CTR_OK;
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  const ctr__format_row *row = ctr__format_row_of(fmt);
  if (!row) return CTR_E_INVALID_ARGUMENT;
  char *found = NULL;
  CTR_CHECK(row->existing(path, &found));
  if (!found) return CTR_OK;
  const ctr_status st = ctr__output_exists(path, found, 0);
  free(found);
  return st;
}

ctr_status ctr_stack_create(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                            int overwrite, ctr_stack_writer **out) {
  ctr_stack_info ic;
  if (out) *out = NULL;
  if (info) {
    CTR_CHECK(ctr__struct_copy(&ctr__struct_stack_info, &ic, info));
    info = &ic;
  }
  if (out && path && *path) CTR_CHECK(ctr_stack_check_output(path, fmt, overwrite));
  return ctr__stack_writer_open(path, fmt, info, CTR__OUT_TEMP, NULL, overwrite, out);
}

static ctr_status write_converted(ctr_stack_writer *w, int64_t first, int64_t n, ctr_dtype dtype,
                                  const void *data) {
  ctr_status st = CTR_OK;
  const size_t px = (size_t)w->info.width * (size_t)w->info.height;
  const size_t fes = ctr_dtype_size(w->info.dtype), ies = ctr_dtype_size(dtype);
  const int64_t per = chunk_images(px * fes, n);
  void *tmp = io_buffer((size_t)per * px * fes, "dtype conversion buffer");
  if (!tmp) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i += per) {
    const int64_t k = per < n - i ? per : n - i;
    ctr__convert(tmp, w->info.dtype, (const char *)data + (size_t)i * px * ies, dtype,
                 px * (size_t)k);
    if (w->swap) ctr__byteswap(tmp, fes, px * (size_t)k);
    CTR_CHECK_GOTO(st, w->ops->write(w, first + i, k, tmp));
  }
cleanup:
  free(tmp);
  return st;
}

ctr_status ctr_stack_write(ctr_stack_writer *w, int64_t first, int64_t n, ctr_dtype dtype,
                           const void *data) {
  if (!w) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_write: writer is NULL");
  if (w->failed)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "an earlier write to '%s' failed; the writer can only be aborted", w->path);
  CTR_CHECK(check_range(w->path, &w->info, first, n, dtype, data));
  if (n == 0) return CTR_OK;
  ctr_status st = (dtype == w->info.dtype && !w->swap) ? w->ops->write(w, first, n, data)
                                                        : write_converted(w, first, n, dtype, data);
  if (st != CTR_OK) {
    /* Argument errors (e.g. out-of-order TIFF pages) leave the output
     * intact; anything else may have left a partial slab behind. */
    if (st != CTR_E_INVALID_ARGUMENT) w->failed = 1;
    return st;
  }
  memset(w->written + first, 1, (size_t)n);
  return CTR_OK;
}

ctr_status ctr_stack_commit(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  if (!w) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_commit: writer is NULL");
  int64_t missing = 0, first_missing = -1;
  for (int64_t i = 0; i < w->info.count; i++)
    if (!w->written[i] && missing++ == 0) first_missing = i;
  if (w->failed) {
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT,
                        "'%s' was not saved: an earlier write failed", w->path);
    w->ops->abort(w);
  } else if (missing) {
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT,
                        "'%s' was not saved: image %lld of 0..%lld was never written "
                        "(%lld image(s) missing)",
                        w->path, (long long)first_missing, (long long)w->info.count - 1,
                        (long long)missing);
    w->ops->abort(w);
  } else {
    st = w->ops->commit(w);
  }
  ctr__stack_writer_free(w);
  return st;
}

void ctr_stack_abort(ctr_stack_writer *w) {
  if (!w) return;
  w->ops->abort(w);
  ctr__stack_writer_free(w);
}

/* ---- Whole-array wrappers ----------------------------------------------- */

ctr_status ctr_stack_load(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                          ctr_dtype dtype, ctr_stack_info *info_out, void **data_out) {
  ctr_status st = CTR_OK;
  ctr_stack_reader *r = NULL;
  void *data = NULL;
  if (!data_out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_load: data_out is NULL");
  *data_out = NULL;
  if (!ctr_dtype_size(dtype))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stack_load '%s': unknown dtype %d: expected "
             "float32 or uint16", path ? path : "(null)", (int)dtype);
  if (info_out) CTR_CHECK(ctr__struct_check(&ctr__struct_stack_info, info_out));
  CTR_CHECK(ctr_stack_open(path, fmt, hint, 0, &r));
  size_t px = (size_t)r->info.width * (size_t)r->info.height, bytes;
  if (!ctr__mul_size(px * (size_t)r->info.count, ctr_dtype_size(dtype), &bytes)) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  data = io_buffer(bytes, "the loaded stack");
  if (!data) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  CTR_CHECK_GOTO(st, ctr_stack_read(r, 0, r->info.count, dtype, data));
  if (info_out) CTR_CHECK_GOTO(st, ctr__struct_store(&ctr__struct_stack_info, info_out, &r->info));
  *data_out = data;
  data = NULL;
cleanup:
  free(data);
  ctr_stack_close(r);
  return st;
}

ctr_status ctr_stack_save(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                          ctr_dtype dtype, const void *data, int overwrite) {
  ctr_stack_writer *w = NULL;
  CTR_CHECK(ctr_stack_create(path, fmt, info, overwrite, &w));
  ctr_status st = ctr_stack_write(w, 0, w->info.count, dtype, data);
  if (st != CTR_OK) {
    ctr_stack_abort(w);
    return st;
  }
  return ctr_stack_commit(w);
}

ctr_status ctr_hdf5_read_vector(const char *file, const char *dataset, double **out, int64_t *n) {
  if (!file || !dataset || !out || !n)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_hdf5_read_vector: NULL argument");
  return ctr__hdf5_read_vector(file, dataset, out, n);
}

/* The units an angle dataset may name, and degrees per unit. */
static const struct {
  const char *name;
  double deg;
} k_angle_units[] = {{"deg", 1.0},
                     {"degree", 1.0},
                     {"degrees", 1.0},
                     {"rad", 57.295779513082320876798},
                     {"radian", 57.295779513082320876798},
                     {"radians", 57.295779513082320876798}};

ctr_status ctr_hdf5_read_angles(const char *file, const char *dataset, double **out, int64_t *n,
                                int *units_given) {
  char units[64];
  if (units_given) *units_given = 0;
  CTR_CHECK(ctr_hdf5_read_vector(file, dataset, out, n));
  ctr_status st = ctr__hdf5_read_attr_string(file, dataset, "units", units, sizeof units);
  double scale = 0.0;
  for (size_t k = 0; st == CTR_OK && *units && k < sizeof k_angle_units / sizeof *k_angle_units; k++)
    if (!strcasecmp(units, k_angle_units[k].name)) scale = k_angle_units[k].deg;
  if (st == CTR_OK && *units && scale == 0.0)
    st = ctr__error_set(CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': units '%s': expected deg, "
                        "degree, degrees, rad, radian or radians", dataset, file, units);
  if (st != CTR_OK) {
    free(*out);
    *out = NULL;
    *n = 0;
    return st;
  }
  if (*units && scale != 1.0)
    for (int64_t i = 0; i < *n; i++) (*out)[i] *= scale;
  if (units_given) *units_given = *units != '\0';
  return CTR_OK;
}
