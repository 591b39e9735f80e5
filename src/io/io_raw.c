/* Headerless little-endian image data at a byte offset: the RAW format, and
 * the data part of NRRD files (io_nrrd.c only parses and writes headers). */
#include "io/io_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- Reading ------------------------------------------------------------ */

typedef struct raw_in {
  int fd;
  char *data_path;
  int64_t offset;
} raw_in;

static ctr_status raw_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  raw_in *in = r->impl;
  const size_t img = ctr__image_bytes(&r->info);
  return ctr__pread_full(in->fd, buf, img * (size_t)n, in->offset + first * (int64_t)img,
                         in->data_path);
}

static void raw_close(ctr_stack_reader *r) {
  raw_in *in = r->impl;
  if (!in) return;
  close(in->fd);
  free(in->data_path);
  free(in);
  r->impl = NULL;
}

static const ctr__reader_ops raw_reader_ops = {raw_read, raw_close};

ctr_status ctr__raw_reader_init(ctr_stack_reader *r, int fd, int64_t file_size,
                                const char *data_path, int64_t offset) {
  ctr_status st = CTR_OK;
  raw_in *in = NULL;
  const int64_t need = (int64_t)ctr__image_bytes(&r->info) * r->info.count;
  /* A longer file is accepted: reading the first images of a bigger
   * acquisition is a legitimate use of a raw hint. */
  if (offset < 0 || file_size < offset || file_size - offset < need) {
    char d[96];
    CTR_FAIL_GOTO(st, CTR_E_SIZE_MISMATCH,
                  "file '%s' holds %lld bytes, expected %lld for %s (+ %lld offset)", data_path,
                  (long long)file_size, (long long)need,
                  ctr__stack_describe(&r->info, d, sizeof d), (long long)offset);
  }
  in = ctr__calloc(1, sizeof *in, "raw reader");
  if (!in) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  in->data_path = strdup(data_path);
  if (!in->data_path) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", data_path);
  in->fd = fd;
  in->offset = offset;
  r->impl = in;
  r->ops = &raw_reader_ops;
  return CTR_OK;
cleanup:
  if (in) free(in->data_path);
  free(in);
  close(fd);
  return st;
}

ctr_status ctr__raw_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t offset) {
  if (!hint)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "raw file '%s' needs a hint giving width, height, count and dtype", r->path);
  if (offset < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "raw file '%s': raw_offset must be >= 0, got %lld",
             r->path, (long long)offset);
  char what[64 + 4096];
  snprintf(what, sizeof what, "raw file '%s' hint", r->path);
  CTR_CHECK(ctr__stack_info_check(hint, what, CTR_E_INVALID_ARGUMENT));
  r->info = *hint;
  r->swap = !ctr__host_is_little_endian();
  int fd;
  int64_t size;
  CTR_CHECK(ctr__file_open_read(r->path, &fd, &size));
  return ctr__raw_reader_init(r, fd, size, r->path, offset);
}

/* ---- Writing ------------------------------------------------------------ */

typedef struct raw_out {
  ctr__atomic_file data;
  ctr__atomic_file companion; /* detached header; unused when tmp is NULL */
  int64_t offset;
} raw_out;

static ctr_status raw_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  raw_out *o = w->impl;
  const size_t img = ctr__image_bytes(&w->info);
  return ctr__pwrite_full(o->data.fd, buf, img * (size_t)n, o->offset + first * (int64_t)img,
                          o->data.path);
}

static void raw_abort(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  ctr__atomic_discard(&o->data);
  ctr__atomic_discard(&o->companion);
  free(o);
  w->impl = NULL;
}

static ctr_status raw_commit(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  /* Data first: a header must never point at data that is not there yet. */
  ctr_status st = ctr__atomic_commit(&o->data);
  if (st == CTR_OK && o->companion.tmp) {
    st = ctr__atomic_commit(&o->companion);
    if (st != CTR_OK) unlink(o->data.path);
  }
  raw_abort(w);
  return st;
}

static const ctr__writer_ops raw_writer_ops = {raw_write, raw_commit, raw_abort};

ctr_status ctr__raw_writer_init(ctr_stack_writer *w, const char *data_path, const char *prefix,
                                const char *companion_path, const char *companion_text) {
  ctr_status st = CTR_OK;
  raw_out *o = ctr__calloc(1, sizeof *o, "raw writer");
  if (!o) return CTR_E_OUT_OF_MEMORY;
  o->data = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  o->companion = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  CTR_CHECK_GOTO(st, ctr__atomic_create(&o->data, data_path));
  if (prefix) {
    o->offset = (int64_t)strlen(prefix);
    CTR_CHECK_GOTO(st, ctr__pwrite_full(o->data.fd, prefix, strlen(prefix), 0, data_path));
  }
  if (companion_path) {
    CTR_CHECK_GOTO(st, ctr__atomic_create(&o->companion, companion_path));
    CTR_CHECK_GOTO(st, ctr__pwrite_full(o->companion.fd, companion_text, strlen(companion_text),
                                        0, companion_path));
  }
  w->impl = o;
  w->ops = &raw_writer_ops;
  w->swap = !ctr__host_is_little_endian();
  return CTR_OK;
cleanup:
  ctr__atomic_discard(&o->data);
  ctr__atomic_discard(&o->companion);
  free(o);
  return st;
}

ctr_status ctr__raw_create(ctr_stack_writer *w) {
  return ctr__raw_writer_init(w, w->path, NULL, NULL, NULL);
}
