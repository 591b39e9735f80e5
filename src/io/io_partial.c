/* Resumable stack output (stack_partial.h): writers whose files have fixed
 * "<name>.partial" names, flushing, suspending, and cleaning up after them.
 * The backends name their files through ctr__output_create (io_output.c). */
#include "io/io_internal.h"

#include <string.h>
#include <unistd.h>

ctr_status ctr__stack_create_partial(const char *path, ctr_file_format fmt,
                                     const ctr_stack_info *info, int resume,
                                     const unsigned char *done, ctr_stack_writer **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial: out is NULL");
  *out = NULL;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial: empty path");
  if (!info)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial '%s': info is NULL", path);
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  if (fmt == CTR_FORMAT_TIFF)
    CTR_FAIL(CTR_E_UNSUPPORTED,
             "multi-page TIFF '%s' cannot be written resumably (its pages are appended in "
             "order): use raw, nrrd or a TIFF stack pattern such as 'img_%%04d.tif'",
             path);
  return ctr__stack_writer_open(path, fmt, info,
                                resume ? CTR__OUT_PARTIAL_RESUME : CTR__OUT_PARTIAL_NEW,
                                resume ? done : NULL, out);
}

ctr_status ctr__stack_flush(ctr_stack_writer *w) {
  if (!w) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_flush: writer is NULL");
  return w->ops->flush ? w->ops->flush(w) : CTR_OK;
}

void ctr__stack_suspend(ctr_stack_writer *w) {
  if (!w) return;
  if (w->mode == CTR__OUT_TEMP || !w->ops->suspend) {
    ctr_stack_abort(w); /* temporaries of ctr_stack_create cannot be resumed */
    return;
  }
  w->ops->suspend(w);
  ctr__stack_writer_free(w);
}

ctr_status ctr__stack_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf) {
  if (!w || !buf || first < 0 || n < 0 || first + n > w->info.count)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_read_back: bad writer or range");
  if (!w->ops->read_back || w->mode == CTR__OUT_TEMP)
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': only a resumable writer's images can be read back",
             w->path);
  return w->ops->read_back(w, first, n, buf);
}

void ctr__stack_forget(ctr_stack_writer *w, int64_t first, int64_t n) {
  if (w && first >= 0 && n > 0 && first + n <= w->info.count)
    memset(w->written + first, 0, (size_t)n);
}

void ctr__stack_remove_partial(const char *path, ctr_file_format fmt, int64_t count) {
  char *partial = NULL, *data = NULL, *data_partial = NULL;
  if (!path || !*path) return;
  if (fmt == CTR_FORMAT_AUTO && ctr_format_guess(path, &fmt) != CTR_OK) return;
  switch (fmt) {
    case CTR_FORMAT_RAW:
    case CTR_FORMAT_NRRD:
      partial = ctr__partial_path(path);
      if (partial) unlink(partial);
      if (fmt == CTR_FORMAT_NRRD && ctr__nrrd_data_path(path, &data) == CTR_OK && data) {
        data_partial = ctr__partial_path(data);
        if (data_partial) unlink(data_partial);
      }
      break;
    case CTR_FORMAT_TIFF_STACK: ctr__tiff_stack_remove_partial(path, count); break;
    default: break; /* multi-page TIFF: never partial */
  }
  free(partial);
  free(data);
  free(data_partial);
}

char *ctr__stack_partial_name(const char *path, ctr_file_format fmt) {
  char *first = NULL, *name = NULL;
  if (!path || !*path) {
    ctr__error_set(CTR_E_INVALID_ARGUMENT, "ctr__stack_partial_name: empty path");
    return NULL;
  }
  if (fmt == CTR_FORMAT_AUTO && ctr_format_guess(path, &fmt) != CTR_OK) return NULL;
  switch (fmt) {
    case CTR_FORMAT_RAW:
    case CTR_FORMAT_NRRD: name = ctr__partial_path(path); break;
    case CTR_FORMAT_TIFF_STACK:
      first = ctr__tiff_stack_file(path, 0);
      if (first) name = ctr__partial_path(first);
      break;
    case CTR_FORMAT_TIFF:
      ctr__error_set(CTR_E_UNSUPPORTED, "multi-page TIFF '%s' has no partial file: use raw, "
                     "nrrd or a TIFF stack pattern", path);
      break;
    default:
      ctr__error_set(CTR_E_INVALID_ARGUMENT,
                     "'%s': unknown file format %d: expected raw, tiff-stack or nrrd", path,
                     (int)fmt);
      break;
  }
  free(first);
  return name;
}
