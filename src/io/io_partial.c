/* Resumable stack output (stack_partial.h): writers whose files have fixed
 * "<name>.partial" names, flushing, suspending, and cleaning up after them.
 * The backends name their files through ctr__output_create (io_output.c). */
#include "io/io_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The row of a resumable format into *out; CTR_E_UNSUPPORTED naming `path`
 * and the formats that are resumable for the others. */
static ctr_status resumable_row(const char *path, ctr_file_format fmt,
                                const ctr__format_row **out) {
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  const ctr__format_row *row = ctr__format_row_of(fmt);
  if (!row) return CTR_E_INVALID_ARGUMENT;
  if (!row->info.resumable) {
    char list[256];
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s' (%s) cannot be written resumably (%s): use %s", path,
             row->info.name, row->info.in_order ? "its images are written in order"
                                                : "it is written to a temporary name",
             ctr__format_list(CTR__CAP_RESUMABLE, "img", list, sizeof list));
  }
  *out = row;
  return CTR_OK;
}

ctr_status ctr__stack_create_partial(const char *path, ctr_file_format fmt,
                                     const ctr_stack_info *info, int resume,
                                     const unsigned char *done, ctr_stack_writer **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial: out is NULL");
  *out = NULL;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial: empty path");
  if (!info)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__stack_create_partial '%s': info is NULL", path);
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(path, &fmt));
  const ctr__format_row *row = NULL;
  CTR_CHECK(resumable_row(path, fmt, &row));
  return ctr__stack_writer_open(path, fmt, info,
                                resume ? CTR__OUT_PARTIAL_RESUME : CTR__OUT_PARTIAL_NEW,
                                resume ? done : NULL, 0, out);
}

void ctr__stack_set_zarr_shard(ctr_stack_writer *w, int n) {
  if (w) w->zarr_shard = n;
}

void ctr__stack_set_overwrite(ctr_stack_writer *w, int on) {
  if (w) w->overwrite = on != 0;
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
  const ctr__format_row *row = NULL;
  if (!path || !*path) return;
  char saved[1024]; /* a cleanup: the caller's error stays */
  snprintf(saved, sizeof saved, "%s", ctr_error_detail());
  if (resumable_row(path, fmt, &row) == CTR_OK) row->remove_partial(path, count);
  else ctr__error_set(CTR_OK, "%s", saved);
}

char *ctr__stack_partial_name(const char *path, ctr_file_format fmt) {
  if (!path || !*path) {
    ctr__error_set(CTR_E_INVALID_ARGUMENT, "ctr__stack_partial_name: empty path");
    return NULL;
  }
  const ctr__format_row *row = NULL;
  return resumable_row(path, fmt, &row) == CTR_OK ? row->partial_name(path) : NULL;
}
