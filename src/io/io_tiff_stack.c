/* TIFF stacks: one single-page TIFF per image, named by a printf-style
 * pattern with one integer conversion ("dir/img_%04d.tif"). */
#include "io/io_tiff.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- Patterns ----------------------------------------------------------- */

/* The pattern split around its conversion. Names are built here rather than
 * by handing a user string to printf as a format. */
typedef struct pattern {
  char *prefix, *suffix; /* "%%" already turned into "%" */
  int width;             /* minimum digits */
  int zero_pad;
} pattern;

static void pattern_free(pattern *p) {
  free(p->prefix);
  free(p->suffix);
  p->prefix = p->suffix = NULL;
}

static ctr_status pattern_parse(const char *pat, pattern *p) {
  ctr_status st = CTR_OK;
  const size_t len = strlen(pat);
  char *parts[2] = {ctr__calloc(len + 1, 1, "pattern"), ctr__calloc(len + 1, 1, "pattern")};
  size_t n[2] = {0, 0};
  int conversions = 0;
  memset(p, 0, sizeof *p);
  if (!parts[0] || !parts[1]) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  for (const char *c = pat; *c; c++) {
    const int part = conversions > 0;
    if (*c != '%') {
      parts[part][n[part]++] = *c;
      continue;
    }
    if (c[1] == '%') {
      parts[part][n[part]++] = '%';
      c++;
      continue;
    }
    const char *spec = c++;
    if (*c == '0') {
      p->zero_pad = 1;
      c++;
    }
    while (*c >= '0' && *c <= '9' && p->width < 1000) p->width = p->width * 10 + (*c++ - '0');
    if (*c != 'd' && *c != 'i' && *c != 'u')
      CTR_FAIL_GOTO(st, CTR_E_INVALID_ARGUMENT,
                    "TIFF stack pattern '%s': conversion '%.*s' is not supported: expected %%d, "
                    "%%Nd, %%0Nd, %%i or %%u",
                    pat, (int)(c - spec + (*c != '\0')), spec);
    if (++conversions > 1)
      CTR_FAIL_GOTO(st, CTR_E_INVALID_ARGUMENT,
                    "TIFF stack pattern '%s' has more than one conversion: expected exactly one "
                    "such as %%04d",
                    pat);
  }
  if (conversions != 1)
    CTR_FAIL_GOTO(st, CTR_E_INVALID_ARGUMENT,
                  "TIFF stack pattern '%s' has no integer conversion: expected one such as "
                  "'img_%%04d.tif'",
                  pat);
  p->prefix = parts[0];
  p->suffix = parts[1];
  return CTR_OK;
cleanup:
  free(parts[0]);
  free(parts[1]);
  return st;
}

static char *pattern_name(const pattern *p, int64_t index) {
  return p->zero_pad
             ? ctr__io_sprintf("%s%0*lld%s", p->prefix, p->width, (long long)index, p->suffix)
             : ctr__io_sprintf("%s%*lld%s", p->prefix, p->width, (long long)index, p->suffix);
}

/* "<file of image index>.partial" */
static char *pattern_partial(const pattern *p, int64_t index) {
  char *name = pattern_name(p, index);
  char *partial = name ? ctr__partial_path(name) : NULL;
  free(name);
  return partial;
}

static void remove_partial(const pattern *p, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    char *partial = pattern_partial(p, i);
    if (partial) unlink(partial);
    free(partial);
  }
}

char *ctr__tiff_stack_file(const char *pat, int64_t index) {
  pattern p;
  if (pattern_parse(pat, &p) != CTR_OK) return NULL;
  char *name = pattern_name(&p, index);
  pattern_free(&p);
  return name;
}

char *ctr__tiff_stack_partial_name(const char *pat) {
  char *first = ctr__tiff_stack_file(pat, 0);
  char *name = first ? ctr__partial_path(first) : NULL;
  free(first);
  return name;
}

/* The length of the part of `name` that the pattern's conversion wrote: an
 * integer as printf writes %d with p's width (blanks, or zeros, then
 * digits); 0 when there is none. */
static size_t number_length(const pattern *p, const char *name) {
  size_t k = 0;
  while (!p->zero_pad && name[k] == ' ') k++;
  const size_t digits = strspn(name + k, "0123456789");
  return digits ? k + digits : 0;
}

ctr_status ctr__tiff_stack_existing(const char *pat, char **found) {
  pattern p;
  *found = NULL;
  CTR_CHECK(pattern_parse(pat, &p));
  /* the directory the numbered names are in, the name's part before the
   * number, and the part after it up to its end (or, when the number is in
   * a directory's name, up to that directory's end: the rest is a path
   * inside each such directory) */
  const char *slash = strrchr(p.prefix, '/');
  char *dir = slash ? strndup(p.prefix, slash == p.prefix ? 1 : (size_t)(slash - p.prefix))
                    : strdup(".");
  const char *head = slash ? slash + 1 : p.prefix, *rest = strchr(p.suffix, '/');
  const size_t tail = rest ? (size_t)(rest - p.suffix) : strlen(p.suffix);
  ctr_status st = dir ? CTR_OK : ctr__error_set(CTR_E_OUT_OF_MEMORY, "a TIFF stack's directory");
  DIR *d = dir ? opendir(dir) : NULL;
  unsigned long long least = 0; /* the lowest number found: the message names it */
  for (struct dirent *e = d ? readdir(d) : NULL; e && st == CTR_OK; e = readdir(d)) {
    const char *n = e->d_name;
    if (strncmp(n, head, strlen(head)) != 0) continue;
    n += strlen(head);
    const size_t digits = number_length(&p, n);
    if (!digits || strlen(n + digits) != tail || strncmp(n + digits, p.suffix, tail) != 0)
      continue;
    const unsigned long long number = strtoull(n, NULL, 10);
    if (*found && number >= least) continue;
    char *name = ctr__io_sprintf("%s%s%s%s", slash ? dir : "", slash && strcmp(dir, "/") ? "/" : "",
                                 e->d_name, rest ? rest : "");
    if (!name) {
      st = CTR_E_OUT_OF_MEMORY;
    } else if (ctr__file_exists(name)) {
      free(*found);
      *found = name;
      least = number;
    } else {
      free(name);
    }
  }
  if (d) closedir(d);
  if (st != CTR_OK) {
    free(*found);
    *found = NULL;
  }
  free(dir);
  pattern_free(&p);
  return st;
}

void ctr__tiff_stack_remove_partial(const char *pat, int64_t count) {
  pattern p;
  if (pattern_parse(pat, &p) != CTR_OK) return;
  remove_partial(&p, count);
  pattern_free(&p);
}

/* ---- Reading ------------------------------------------------------------ */

typedef struct stack_in {
  pattern pat;
  int64_t start; /* index of the first file: 0 or 1 */
  char *first_name;
  int64_t *data_offsets; /* per image: ctr__tiff_page_data_offset (-1: decode) */
  unsigned char *swapped; /* per image: its byte order is not the host's */
  int64_t cap;
  int64_t row_block;     /* the largest ctr__tiff_page_row_block of the files */
} stack_in;

static void stack_close(ctr_stack_reader *r) {
  stack_in *in = r->impl;
  if (!in) return;
  pattern_free(&in->pat);
  free(in->first_name);
  free(in->data_offsets);
  free(in->swapped);
  free(in);
  r->impl = NULL;
}

/* Where a file keeps its pixels (ctr__tiff_page_data_offset), for row
 * reads; NULL where not wanted. */
typedef struct file_layout {
  int64_t offset;
  int swapped;
  int64_t row_block;
} file_layout;

/* Opens one file of the stack, checks it against `want` (when given) and
 * decodes it into buf (when given) or rows [row0, row0 + nrows) of it into
 * rows (when given); *info gets what the file holds, *layout (when given)
 * where its pixels are. */
static ctr_status read_file_rows(const char *name, const ctr_stack_info *want, const char *like,
                                 ctr_stack_info *info, void *buf, file_layout *layout,
                                 int64_t row0, int64_t nrows, void *rows) {
  ctr_status st = CTR_OK;
  TIFF *tif = NULL;
  char what[4200];
  snprintf(what, sizeof what, "'%s'", name);
  CTR_CHECK(ctr__tiff_open_read(name, &tif));
  CTR_CHECK_GOTO(st, ctr__tiff_page_info(tif, what, info));
  if (want) CTR_CHECK_GOTO(st, ctr__tiff_check_like(info, want, what, like));
  if (buf) CTR_CHECK_GOTO(st, ctr__tiff_read_page(tif, what, info, buf));
  if (rows) CTR_CHECK_GOTO(st, ctr__tiff_read_page_rows(tif, what, info, row0, nrows, rows));
  if (layout) {
    layout->offset = ctr__tiff_page_data_offset(tif, info, &layout->swapped);
    layout->row_block = ctr__tiff_page_row_block(tif, info);
  }
cleanup:
  TIFFClose(tif);
  return st;
}

static ctr_status read_file(const char *name, const ctr_stack_info *want, const char *like,
                            ctr_stack_info *info, void *buf) {
  return read_file_rows(name, want, like, info, buf, NULL, 0, 0, NULL);
}

/* Records image i's layout (grows the arrays as the open pass counts). */
static ctr_status keep_layout(stack_in *in, int64_t i, const file_layout *l) {
  if (i >= in->cap) {
    const int64_t cap = in->cap ? 2 * in->cap : 64;
    int64_t *off = realloc(in->data_offsets, (size_t)cap * sizeof *off);
    if (off) in->data_offsets = off;
    unsigned char *sw = off ? realloc(in->swapped, (size_t)cap) : NULL;
    if (!off || !sw) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot list the files of a TIFF stack");
    in->swapped = sw;
    in->cap = cap;
  }
  in->data_offsets[i] = l->offset;
  in->swapped[i] = (unsigned char)l->swapped;
  if (l->row_block > in->row_block) in->row_block = l->row_block;
  return CTR_OK;
}

/* Images [first, first + n) of a stack into buf, each from the file that
 * name_of(user, index, &name) names (malloc'd). */
static ctr_status read_images(const ctr_stack_info *info, const char *like, int64_t first,
                              int64_t n, void *buf,
                              ctr_status (*name_of)(void *, int64_t, char **), void *user) {
  const size_t img = ctr__image_bytes(info);
  for (int64_t i = 0; i < n; i++) {
    char *name = NULL;
    CTR_CHECK(name_of(user, first + i, &name));
    ctr_stack_info got;
    ctr_status st = read_file(name, info, like, &got, (char *)buf + (size_t)i * img);
    free(name);
    CTR_CHECK(st);
  }
  return CTR_OK;
}

static ctr_status input_name(void *user, int64_t index, char **name) {
  const stack_in *in = user;
  *name = pattern_name(&in->pat, in->start + index);
  return *name ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

static ctr_status stack_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  stack_in *in = r->impl;
  char like[4200];
  snprintf(like, sizeof like, "'%s'", in->first_name);
  return read_images(&r->info, like, first, n, buf, input_name, in);
}

/* Rows of images [first, first + n): one pread of each file stored
 * uncompressed in order (found at open), the strips or tiles that hold the
 * rows decoded otherwise. */
static ctr_status stack_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                                  int64_t nrows, void *buf) {
  stack_in *in = r->impl;
  const size_t block = (size_t)nrows * (size_t)r->info.width * ctr_dtype_size(r->info.dtype);
  char like[4200];
  snprintf(like, sizeof like, "'%s'", in->first_name);
  for (int64_t i = 0; i < n; i++) {
    const int64_t k = first + i;
    char *dst = (char *)buf + (size_t)i * block;
    char *name = pattern_name(&in->pat, in->start + k);
    if (!name) return CTR_E_OUT_OF_MEMORY;
    ctr_status st = CTR_OK;
    if (in->data_offsets[k] >= 0) {
      int fd = -1;
      int64_t size = 0;
      st = ctr__file_open_read(name, &fd, &size);
      if (st == CTR_OK) {
        st = ctr__tiff_pread_rows(fd, name, &r->info, in->data_offsets[k], in->swapped[k], row0,
                                  nrows, dst);
        close(fd);
      }
    } else {
      ctr_stack_info got;
      st = read_file_rows(name, &r->info, like, &got, NULL, NULL, row0, nrows, dst);
    }
    free(name);
    CTR_CHECK(st);
  }
  return CTR_OK;
}

static int64_t stack_row_block(const ctr_stack_reader *r) {
  return ((const stack_in *)r->impl)->row_block;
}

static const ctr__reader_ops stack_reader_ops = {stack_read, stack_close, stack_read_rows,
                                                  stack_row_block, NULL};

ctr_status ctr__tiff_stack_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  ctr_status st = CTR_OK;
  char *name = NULL, *second = NULL;
  stack_in *in = ctr__calloc(1, sizeof *in, "TIFF stack reader");
  if (!in) return CTR_E_OUT_OF_MEMORY;
  r->impl = in;
  CTR_CHECK_GOTO(st, pattern_parse(r->path, &in->pat));
  /* Numbering starts at 0 or at 1. */
  in->first_name = pattern_name(&in->pat, 0);
  second = pattern_name(&in->pat, 1);
  if (!in->first_name || !second) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  if (!ctr__file_exists(in->first_name)) {
    int e = errno;
    if (!ctr__file_exists(second))
      CTR_FAIL_GOTO(st, CTR_E_IO, "TIFF stack '%s': neither '%s' nor '%s' can be found: %s",
                    r->path, in->first_name, second, strerror(e));
    in->start = 1;
    free(in->first_name);
    in->first_name = second;
    second = NULL;
  }
  file_layout layout;
  CTR_CHECK_GOTO(st, read_file_rows(in->first_name, NULL, NULL, &r->info, NULL, &layout, 0, 0,
                                    NULL));
  CTR_CHECK_GOTO(st, keep_layout(in, 0, &layout));
  r->info.count = 1;
  char like[4200];
  snprintf(like, sizeof like, "'%s'", in->first_name);
  /* Every file is checked now (headers only) so that a mismatch is reported
   * before any work is done on the stack. */
  for (;; r->info.count++) {
    name = pattern_name(&in->pat, in->start + r->info.count);
    if (!name) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    if (!ctr__file_exists(name)) break;
    ctr_stack_info got;
    CTR_CHECK_GOTO(st, read_file_rows(name, &r->info, like, &got, NULL, &layout, 0, 0, NULL));
    CTR_CHECK_GOTO(st, keep_layout(in, r->info.count, &layout));
    free(name);
    name = NULL;
  }
  r->ops = &stack_reader_ops;
cleanup:
  free(name);
  free(second);
  if (st != CTR_OK) stack_close(r);
  return st;
}

/* ---- Writing ------------------------------------------------------------ */

/* Each image goes to its own temporary beside its target (synced when it is
 * written); commit renames them all. Resumable writers use the fixed names
 * "<file>.partial". */
typedef struct stack_out {
  pattern pat;
  ctr__atomic_file *files; /* one per image */
  unsigned char *unsynced; /* partial files whose names the next flush syncs */
} stack_out;

/* Frees the writer's state; `remove`: and its files. */
static void stack_release(ctr_stack_writer *w, int remove) {
  stack_out *o = w->impl;
  for (int64_t i = 0; o->files && i < w->info.count; i++) {
    if (remove)
      ctr__atomic_discard(&o->files[i]);
    else
      ctr__atomic_keep(&o->files[i]);
  }
  /* Partial files of images this writer never touched go too. */
  if (remove && w->mode != CTR__OUT_TEMP && o->pat.prefix) remove_partial(&o->pat, w->info.count);
  free(o->files);
  free(o->unsynced);
  pattern_free(&o->pat);
  free(o);
  w->impl = NULL;
}

static void stack_abort(ctr_stack_writer *w) { stack_release(w, 1); }

static void stack_suspend(ctr_stack_writer *w) { stack_release(w, 0); }

static ctr_status write_file(ctr_stack_writer *w, int64_t index, const void *buf) {
  stack_out *o = w->impl;
  ctr__atomic_file *f = &o->files[index];
  ctr_status st = CTR_OK;
  TIFF *tif = NULL;
  char what[4200];
  char *name = pattern_name(&o->pat, index);
  if (!name) return CTR_E_OUT_OF_MEMORY;
  snprintf(what, sizeof what, "'%s'", name);
  ctr__atomic_discard(f); /* an image written twice: the last one wins */
  CTR_CHECK_GOTO(st, ctr__output_create(f, name, w->mode == CTR__OUT_TEMP ? CTR__OUT_TEMP
                                                                           : CTR__OUT_PARTIAL_NEW));
  CTR_CHECK_GOTO(st, ctr__tiff_open_write(f, (int64_t)ctr__image_bytes(&w->info), &tif));
  st = ctr__tiff_write_page(tif, what, &w->info, 0, 1, buf);
  if (st == CTR_OK)
    st = ctr__tiff_finish(tif, name);
  else
    ctr__tiff_abandon(tif);
  if (st == CTR_OK) st = ctr__atomic_close(f);
  if (st == CTR_OK) o->unsynced[index] = 1;
cleanup:
  if (st != CTR_OK) ctr__atomic_discard(f);
  free(name);
  return st;
}

static ctr_status stack_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  const size_t img = ctr__image_bytes(&w->info);
  for (int64_t i = 0; i < n; i++)
    CTR_CHECK(write_file(w, first + i, (const char *)buf + (size_t)i * img));
  return CTR_OK;
}

/* Images are synced as they are written; what is left is the names of new
 * partial files, in their directories (usually one). */
static ctr_status stack_flush(ctr_stack_writer *w) {
  stack_out *o = w->impl;
  char *dir = NULL;
  for (int64_t i = 0; w->mode != CTR__OUT_TEMP && i < w->info.count; i++) {
    if (!o->unsynced[i] || !o->files[i].tmp) continue;
    const char *tmp = o->files[i].tmp, *slash = strrchr(tmp, '/');
    const size_t n = slash ? (size_t)(slash - tmp) : 0;
    if (!dir || strlen(dir) != n || strncmp(dir, tmp, n) != 0) {
      ctr__sync_parent_dir(tmp);
      free(dir);
      dir = strndup(tmp, n);
    }
    o->unsynced[i] = 0;
  }
  free(dir);
  return CTR_OK;
}

static ctr_status stack_commit(ctr_stack_writer *w) {
  stack_out *o = w->impl;
  ctr_status st = CTR_OK;
  char *name = NULL;
  CTR_CHECK_GOTO(st, ctr__atomic_rename_all(o->files, w->info.count, !w->overwrite));
  /* Files numbered past the new stack would make readers count a longer,
   * mixed stack: they belong to the replaced one and go too (a stack that
   * was to be new replaced none). */
  for (int64_t i = w->info.count; w->overwrite; i++) {
    name = pattern_name(&o->pat, i);
    if (!name || !ctr__file_exists(name)) break;
    if (unlink(name) != 0)
      CTR_FAIL_GOTO(st, CTR_E_IO, "cannot remove '%s' left from an older, longer stack: %s",
                    name, strerror(errno));
    free(name);
    name = NULL;
  }
cleanup:
  free(name);
  stack_abort(w);
  return st;
}

/* The partial file of an image written (or resumed) by this writer. */
static ctr_status written_name(void *user, int64_t index, char **name) {
  const ctr_stack_writer *w = user;
  const stack_out *o = w->impl;
  if (!o->files[index].tmp)
    CTR_FAIL(CTR_E_IO, "image %lld of '%s' has no file to read back", (long long)index, w->path);
  *name = strdup(o->files[index].tmp);
  if (!*name) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy the name '%s'", o->files[index].tmp);
  return CTR_OK;
}

static ctr_status stack_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf) {
  char like[4200];
  snprintf(like, sizeof like, "the stack '%s' being written", w->path);
  return read_images(&w->info, like, first, n, buf, written_name, w);
}

static const ctr__writer_ops stack_writer_ops = {stack_write, stack_commit,  stack_abort,
                                                 stack_flush, stack_suspend, stack_read_back};

/* Takes over the partial file of an image marked written: it must exist and
 * be a TIFF of the stack's image size and dtype. */
static ctr_status resume_file(ctr_stack_writer *w, int64_t index) {
  stack_out *o = w->impl;
  ctr_status st = CTR_OK;
  ctr__atomic_file *f = &o->files[index];
  f->path = pattern_name(&o->pat, index);
  f->tmp = f->path ? ctr__partial_path(f->path) : NULL;
  if (!f->tmp) return CTR_E_OUT_OF_MEMORY;
  if (!ctr__file_exists(f->tmp))
    CTR_FAIL(CTR_E_IO,
             "cannot resume writing '%s': image %lld is marked written but its partial file "
             "'%s' cannot be found: %s; the run cannot be resumed",
             w->path, (long long)index, f->tmp, strerror(errno));
  char like[4200];
  snprintf(like, sizeof like, "the stack '%s' being written", w->path);
  ctr_stack_info got;
  st = read_file(f->tmp, &w->info, like, &got, NULL);
  if (st != CTR_OK) {
    char detail[4096];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    CTR_FAIL(st, "cannot resume writing '%s': %s; the run cannot be resumed", w->path, detail);
  }
  return CTR_OK;
}

ctr_status ctr__tiff_stack_create(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  char *name = NULL;
  ctr__atomic_file probe = CTR__ATOMIC_FILE_INIT;
  CTR_CHECK(ctr__tiff_check_dims(&w->info, w->path));
  stack_out *o = ctr__calloc(1, sizeof *o, "TIFF stack writer");
  if (!o) return CTR_E_OUT_OF_MEMORY;
  w->impl = o;
  CTR_CHECK_GOTO(st, pattern_parse(w->path, &o->pat));
  o->files = ctr__calloc((size_t)w->info.count, sizeof *o->files, "TIFF stack file list");
  o->unsynced = ctr__calloc((size_t)w->info.count, 1, "TIFF stack flags");
  if (!o->files || !o->unsynced) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  for (int64_t i = 0; i < w->info.count; i++) o->files[i] = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  /* Files are created as images arrive; a trial temporary makes a missing or
   * read-only directory fail here rather than at the first write. */
  name = pattern_name(&o->pat, 0);
  if (!name) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  CTR_CHECK_GOTO(st, ctr__atomic_create(&probe, name));
  ctr__atomic_discard(&probe);
  if (w->mode == CTR__OUT_PARTIAL_NEW) remove_partial(&o->pat, w->info.count);
  if (w->mode == CTR__OUT_PARTIAL_RESUME)
    for (int64_t i = 0; i < w->info.count; i++)
      if (w->written[i]) CTR_CHECK_GOTO(st, resume_file(w, i));
  w->ops = &stack_writer_ops;
cleanup:
  free(name);
  /* A failed resume leaves the partial files for another try. */
  if (st != CTR_OK) stack_release(w, w->mode != CTR__OUT_PARTIAL_RESUME);
  return st;
}
