/* Headerless little-endian image data at a byte offset: the RAW format, and
 * the data part of NRRD files (io_nrrd.c only parses and writes headers).
 * Aligned requests go through a second, O_DIRECT descriptor. */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Direct I/O --------------------------------------------------------- */

/* A second descriptor of the file opened with O_DIRECT, used for requests
 * whose offset, length and buffer address are multiples of CTR__IO_ALIGN.
 * Off for good (silently) when it cannot be opened (e.g. EINVAL on file
 * systems without O_DIRECT) or once the kernel refuses a request; off until
 * turned on again after ctr_stack_reader_set_direct_io(r, 0) or
 * ctr_stack_writer_set_direct_io(w, 0) (ctr_fdk_stream's, for
 * ctr_tuning.direct_io = -1). Everything then goes through the buffered
 * descriptor. Linux keeps both views of the file coherent. */
typedef struct direct_fd {
  int fd;        /* -1: none */
  atomic_int off; /* set from any thread once a request was refused */
} direct_fd;

/* Opens `path` again with O_DIRECT; it must be the file behind `fd`. */
static void direct_open(direct_fd *d, int fd, const char *path, int flags) {
  d->fd = -1;
  atomic_init(&d->off, 1);
  int dfd;
  do {
    dfd = open(path, flags | O_DIRECT | O_CLOEXEC);
  } while (dfd < 0 && errno == EINTR);
  if (dfd < 0) return;
  struct stat a, b;
  if (fstat(fd, &a) != 0 || fstat(dfd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    close(dfd);
    return;
  }
  d->fd = dfd;
  atomic_store(&d->off, 0);
}

static void direct_close(direct_fd *d) {
  if (d->fd >= 0) close(d->fd);
  d->fd = -1;
  atomic_store(&d->off, 1);
}

/* Off: closes the direct descriptor; on: opens it again if it is closed. */
static void direct_set(direct_fd *d, int on, int fd, const char *path, int flags) {
  if (!on) direct_close(d);
  else if (d->fd < 0) direct_open(d, fd, path, flags);
}

static int direct_usable(direct_fd *d, const void *buf, size_t n, int64_t off) {
  return n > 0 && !atomic_load(&d->off) && (uintptr_t)buf % CTR__IO_ALIGN == 0 &&
         n % CTR__IO_ALIGN == 0 && off % CTR__IO_ALIGN == 0;
}

/* Reads n bytes at off: directly when possible, the rest buffered from fd. */
static ctr_status raw_pread(direct_fd *d, int fd, void *buf, size_t n, int64_t off,
                            const char *path) {
  size_t done = 0;
  if (direct_usable(d, buf, n, off)) {
    CTR_CHECK(ctr__pread_direct(d->fd, buf, n, off, path, &done));
    if (done == n) return CTR_OK;
    atomic_store(&d->off, 1);
  }
  return ctr__pread_full(fd, (char *)buf + done, n - done, off + (int64_t)done, path);
}

static ctr_status raw_pwrite(direct_fd *d, int fd, const void *buf, size_t n, int64_t off,
                             const char *path) {
  size_t done = 0;
  if (direct_usable(d, buf, n, off)) {
    CTR_CHECK(ctr__pwrite_direct(d->fd, buf, n, off, path, &done));
    if (done == n) return CTR_OK;
    atomic_store(&d->off, 1);
  }
  return ctr__pwrite_full(fd, (const char *)buf + done, n - done, off + (int64_t)done, path);
}

/* ---- Reading ------------------------------------------------------------ */

typedef struct raw_in {
  int fd;
  direct_fd direct;
  char *data_path;
  int64_t offset;
} raw_in;

static ctr_status raw_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  raw_in *in = r->impl;
  const size_t img = ctr__image_bytes(&r->info);
  return raw_pread(&in->direct, in->fd, buf, img * (size_t)n, in->offset + first * (int64_t)img,
                   in->data_path);
}

static void raw_close(ctr_stack_reader *r) {
  raw_in *in = r->impl;
  if (!in) return;
  direct_close(&in->direct);
  close(in->fd);
  free(in->data_path);
  free(in);
  r->impl = NULL;
}

/* Rows of each image: one pread per image (the rows are contiguous). */
static ctr_status raw_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                                int64_t nrows, void *buf) {
  raw_in *in = r->impl;
  const size_t img = ctr__image_bytes(&r->info);
  const size_t row = img / (size_t)r->info.height, len = row * (size_t)nrows;
  for (int64_t i = 0; i < n; i++)
    CTR_CHECK(raw_pread(&in->direct, in->fd, (char *)buf + (size_t)i * len, len,
                        in->offset + (first + i) * (int64_t)img + row0 * (int64_t)row,
                        in->data_path));
  return CTR_OK;
}

static const ctr__reader_ops raw_reader_ops = {raw_read, raw_close, raw_read_rows, NULL, NULL};

/* Raw and NRRD readers (both use raw_reader_ops); other formats: no-op. */
void ctr_stack_reader_set_direct_io(ctr_stack_reader *r, int on) {
  if (!r || r->ops != &raw_reader_ops || !r->impl) return;
  raw_in *in = r->impl;
  direct_set(&in->direct, on, in->fd, in->data_path, O_RDONLY);
}

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
  direct_open(&in->direct, fd, data_path, O_RDONLY);
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
  direct_fd direct;
  int64_t offset;
  int names_synced; /* a resumable writer's first flush syncs its names */
} raw_out;

static ctr_status raw_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  raw_out *o = w->impl;
  const size_t img = ctr__image_bytes(&w->info);
  return raw_pwrite(&o->direct, o->data.fd, buf, img * (size_t)n,
                    o->offset + first * (int64_t)img, o->data.path);
}

static void raw_abort(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  direct_close(&o->direct);
  ctr__atomic_discard(&o->data);
  ctr__atomic_discard(&o->companion);
  free(o);
  w->impl = NULL;
}

static ctr_status raw_commit(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  direct_close(&o->direct);
  /* Data first: a header must never point at data that is not there yet.
   * The fsync of the buffered descriptor covers the direct writes too. */
  o->data.no_replace = o->companion.no_replace = !w->overwrite;
  ctr_status st = ctr__atomic_commit(&o->data);
  if (st == CTR_OK && o->companion.tmp) {
    st = ctr__atomic_commit(&o->companion);
    if (st != CTR_OK) unlink(o->data.path); /* no header: no data either */
  }
  raw_abort(w);
  return st;
}

static ctr_status raw_flush(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  const int names = w->mode != CTR__OUT_TEMP && !o->names_synced;
  CTR_CHECK(ctr__atomic_sync(&o->data, names));
  if (names && o->companion.tmp) CTR_CHECK(ctr__atomic_sync(&o->companion, 1));
  if (names) o->names_synced = 1;
  return CTR_OK;
}

static void raw_suspend(ctr_stack_writer *w) {
  raw_out *o = w->impl;
  direct_close(&o->direct);
  ctr__atomic_keep(&o->data);
  ctr__atomic_keep(&o->companion);
  free(o);
  w->impl = NULL;
}

static ctr_status raw_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf) {
  raw_out *o = w->impl;
  const size_t img = ctr__image_bytes(&w->info);
  CTR_CHECK(ctr__pread_full(o->data.fd, buf, img * (size_t)n, o->offset + first * (int64_t)img,
                            o->data.tmp));
  if (w->swap)
    ctr__byteswap(buf, ctr_dtype_size(w->info.dtype),
                  img / ctr_dtype_size(w->info.dtype) * (size_t)n);
  return CTR_OK;
}

static const ctr__writer_ops raw_writer_ops = {raw_write, raw_commit,  raw_abort,
                                               raw_flush, raw_suspend, raw_read_back};

/* Raw and NRRD writers (both use raw_writer_ops); other formats: no-op. */
void ctr_stack_writer_set_direct_io(ctr_stack_writer *w, int on) {
  if (!w || w->ops != &raw_writer_ops || !w->impl) return;
  raw_out *o = w->impl;
  direct_set(&o->direct, on, o->data.fd, o->data.tmp, O_WRONLY);
}

static ctr_status file_size(const ctr__atomic_file *f, int64_t *size) {
  struct stat sb;
  if (fstat(f->fd, &sb) != 0)
    CTR_FAIL(CTR_E_IO, "cannot stat '%s': %s", f->tmp, strerror(errno));
  *size = (int64_t)sb.st_size;
  return CTR_OK;
}

/* A resumed file must start with `text` (a NRRD header; `whole`: and hold
 * nothing else). A cut-short copy of it (a crash while it was written) is
 * completed; anything else belongs to another stack. */
static ctr_status resume_text(ctr__atomic_file *f, const char *text, int whole) {
  ctr_status st = CTR_OK;
  const size_t len = strlen(text);
  int64_t size = 0;
  char *buf = NULL;
  CTR_CHECK(file_size(f, &size));
  const size_t have = size < (int64_t)len ? (size_t)size : len;
  buf = ctr__malloc(have + 1, "NRRD header");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  CTR_CHECK_GOTO(st, ctr__pread_full(f->fd, buf, have, 0, f->tmp));
  if (memcmp(buf, text, have) != 0 || (whole && size > (int64_t)len))
    CTR_FAIL_GOTO(st, CTR_E_SIZE_MISMATCH,
                  "cannot resume writing '%s': the header in its partial file '%s' is not the "
                  "one of this stack; the run cannot be resumed",
                  f->path, f->tmp);
  if (have < len)
    CTR_CHECK_GOTO(st, ctr__pwrite_full(f->fd, text + have, len - have, (int64_t)have, f->tmp));
cleanup:
  free(buf);
  return st;
}

/* The resumed data file must fit the stack and hold the images marked
 * written. */
static ctr_status resume_data(const ctr_stack_writer *w, raw_out *o) {
  int64_t size = 0, last = -1;
  CTR_CHECK(file_size(&o->data, &size));
  const int64_t img = (int64_t)ctr__image_bytes(&w->info);
  const int64_t end = o->offset + img * w->info.count;
  char d[96];
  if (size > end)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "cannot resume writing '%s': its partial file '%s' holds %lld bytes, more than the "
             "%lld of %s; the run cannot be resumed",
             o->data.path, o->data.tmp, (long long)size, (long long)end,
             ctr__stack_describe(&w->info, d, sizeof d));
  for (int64_t i = 0; i < w->info.count; i++)
    if (w->written[i]) last = i;
  if (last >= 0 && size < o->offset + (last + 1) * img)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "cannot resume writing '%s': its partial file '%s' ends at byte %lld, before the "
             "end of image %lld, which is marked written; the run cannot be resumed",
             o->data.path, o->data.tmp, (long long)size, (long long)last);
  return CTR_OK;
}

ctr_status ctr__raw_writer_init(ctr_stack_writer *w, const char *data_path, const char *prefix,
                                const char *companion_path, const char *companion_text) {
  ctr_status st = CTR_OK;
  const int resume = w->mode == CTR__OUT_PARTIAL_RESUME;
  raw_out *o = ctr__calloc(1, sizeof *o, "raw writer");
  if (!o) return CTR_E_OUT_OF_MEMORY;
  o->data = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  o->companion = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  o->direct.fd = -1;
  o->offset = prefix ? (int64_t)strlen(prefix) : 0;
  CTR_CHECK_GOTO(st, ctr__output_create(&o->data, data_path, w->mode));
  if (companion_path) CTR_CHECK_GOTO(st, ctr__output_create(&o->companion, companion_path, w->mode));
  if (resume) {
    if (prefix) CTR_CHECK_GOTO(st, resume_text(&o->data, prefix, 0));
    CTR_CHECK_GOTO(st, resume_data(w, o));
    if (companion_path) CTR_CHECK_GOTO(st, resume_text(&o->companion, companion_text, 1));
  } else {
    if (prefix)
      CTR_CHECK_GOTO(st, ctr__pwrite_full(o->data.fd, prefix, strlen(prefix), 0, data_path));
    if (companion_path)
      CTR_CHECK_GOTO(st, ctr__pwrite_full(o->companion.fd, companion_text,
                                          strlen(companion_text), 0, companion_path));
  }
  direct_open(&o->direct, o->data.fd, o->data.tmp, O_WRONLY);
  w->impl = o;
  w->ops = &raw_writer_ops;
  w->swap = !ctr__host_is_little_endian();
  return CTR_OK;
cleanup:
  /* A failed resume leaves the partial files for another try. */
  if (resume) {
    ctr__atomic_keep(&o->data);
    ctr__atomic_keep(&o->companion);
  } else {
    ctr__atomic_discard(&o->data);
    ctr__atomic_discard(&o->companion);
  }
  free(o);
  return st;
}

ctr_status ctr__raw_create(ctr_stack_writer *w) {
  return ctr__raw_writer_init(w, w->path, NULL, NULL, NULL);
}

void ctr__raw_remove_partial(const char *path, int64_t count) {
  (void)count;
  char *partial = ctr__partial_path(path);
  if (partial) unlink(partial);
  free(partial);
}
