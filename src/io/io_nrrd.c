/* NRRD headers (http://teem.sourceforge.net/nrrd/format.html): parsing and
 * writing. The image data itself is raw and served by io_raw.c. */
#include "io/io_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Headers are a few hundred bytes; a bound keeps a wrong file from being read
 * whole while looking for the end of the header. */
#define NRRD_MAX_HEADER ((int64_t)1 << 20)

typedef struct nrrd_header {
  ctr_dtype dtype;
  int dimension;
  int64_t sizes[3];
  int nsizes;
  int big_endian;
  int64_t byte_skip;
  double spacing[3];
  double origin[3];
  char *data_file; /* points into the header text */
  int sizes_line;
} nrrd_header;

/* ---- Header text -------------------------------------------------------- */

/* Reads the header of `path` into a NUL-terminated string; *data_start is the
 * offset after the blank line that ends it, or -1 when the whole file is
 * header (a detached .nhdr). */
static ctr_status read_header_text(int fd, int64_t size, const char *path, char **out,
                                   int64_t *data_start) {
  ctr_status st = CTR_OK;
  char *buf = NULL;
  for (int64_t want = 4096;; want *= 2) {
    int64_t n = want < size ? want : size;
    if (n > NRRD_MAX_HEADER) n = NRRD_MAX_HEADER;
    char *grown = realloc(buf, (size_t)n + 1);
    if (!grown) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot allocate the header of '%s'", path);
    buf = grown;
    CTR_CHECK_GOTO(st, ctr__pread_full(fd, buf, (size_t)n, 0, path));
    buf[n] = '\0';
    if (n < 7 || memcmp(buf, "NRRD000", 7) != 0)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s' is not a NRRD file: it does not start with 'NRRD000'",
                    path);
    /* The first blank line ends the header; binary data may follow. */
    char *end = memmem(buf, (size_t)n, "\n\n", 2);
    char *end_crlf = memmem(buf, (size_t)n, "\n\r\n", 3);
    if (end_crlf && (!end || end_crlf < end)) {
      *end_crlf = '\0';
      *data_start = end_crlf - buf + 3;
      break;
    }
    if (end) {
      *end = '\0';
      *data_start = end - buf + 2;
      break;
    }
    if (n == size) {
      if (memchr(buf, '\0', (size_t)n))
        CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': binary data follows the header without the "
                      "blank line that must separate them", path);
      *data_start = -1;
      break;
    }
    if (n == NRRD_MAX_HEADER)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': no blank line ends the header within its first "
                    "%lld bytes", path, (long long)NRRD_MAX_HEADER);
  }
  *out = buf;
  return CTR_OK;
cleanup:
  free(buf);
  return st;
}

/* ---- Field parsing ------------------------------------------------------ */

static ctr_status parse_type(const char *v, ctr_dtype *t) {
  static const char *u16[] = {"ushort", "unsigned short", "unsigned short int", "uint16",
                              "uint16_t"};
  if (!strcmp(v, "float")) {
    *t = CTR_DTYPE_FLOAT32;
    return CTR_OK;
  }
  for (size_t i = 0; i < sizeof u16 / sizeof u16[0]; i++)
    if (!strcmp(v, u16[i])) {
      *t = CTR_DTYPE_UINT16;
      return CTR_OK;
    }
  return CTR_E_FORMAT;
}

/* Parses up to `max` integers; returns how many, or -1 on junk. */
static int parse_ints(const char *v, int64_t *out, int max) {
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*v)) v++;
    if (!*v) return n;
    if (n == max) return -1;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v) return -1;
    out[n++] = x;
    v = end;
  }
}

/* Parses up to `max` doubles separated by spaces or commas ("nan" allowed). */
static int parse_doubles(const char *v, double *out, int max, char sep) {
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*v) || (n > 0 && *v == sep)) v++;
    if (!*v) return n;
    if (n == max) return -1;
    char *end;
    double x = strtod(v, &end);
    if (end == v) return -1;
    out[n++] = x;
    v = end;
  }
}

/* "(a,b,c) none (d,e,f)": one vector per axis; `norms` gets each length
 * (0 for "none"), `comps` the components of the first vector for origins. */
static int parse_vectors(const char *v, double *norms, int max, double *comps, int *ncomps) {
  int n = 0;
  for (;;) {
    while (isspace((unsigned char)*v)) v++;
    if (!*v) return n;
    if (n == max) return -1;
    if (!strncmp(v, "none", 4)) {
      norms[n++] = 0.0;
      v += 4;
      continue;
    }
    if (*v != '(') return -1;
    const char *close = strchr(v, ')');
    if (!close) return -1;
    char inner[256];
    size_t len = (size_t)(close - v - 1);
    if (len >= sizeof inner) return -1;
    memcpy(inner, v + 1, len);
    inner[len] = '\0';
    double c[3];
    int k = parse_doubles(inner, c, 3, ',');
    if (k < 1) return -1;
    double s = 0;
    for (int i = 0; i < k; i++) s += c[i] * c[i];
    norms[n] = sqrt(s);
    if (n == 0 && comps) {
      memcpy(comps, c, (size_t)k * sizeof c[0]);
      *ncomps = k;
    }
    n++;
    v = close + 1;
  }
}

static ctr_status parse_field(nrrd_header *h, const char *path, int line, const char *key,
                              const char *v) {
#define BAD(...) CTR_FAIL(CTR_E_FORMAT, __VA_ARGS__)
  if (!strcmp(key, "type")) {
    if (parse_type(v, &h->dtype) != CTR_OK)
      BAD("'%s' line %d: type '%s' is not supported: expected float or uint16 (ushort)", path,
          line, v);
  } else if (!strcmp(key, "dimension")) {
    int64_t d;
    if (parse_ints(v, &d, 1) != 1 || (d != 2 && d != 3))
      BAD("'%s' line %d: dimension '%s' is not supported: expected 2 or 3", path, line, v);
    h->dimension = (int)d;
  } else if (!strcmp(key, "sizes")) {
    h->nsizes = parse_ints(v, h->sizes, 3);
    h->sizes_line = line;
    if (h->nsizes < 2)
      BAD("'%s' line %d: cannot parse sizes '%s': expected 2 or 3 positive integers", path, line,
          v);
  } else if (!strcmp(key, "encoding")) {
    if (strcmp(v, "raw") != 0)
      BAD("'%s' line %d: encoding '%s' is not supported: only raw encoding is", path, line, v);
  } else if (!strcmp(key, "endian")) {
    if (strcmp(v, "little") && strcmp(v, "big"))
      BAD("'%s' line %d: endian '%s': expected little or big", path, line, v);
    h->big_endian = !strcmp(v, "big");
  } else if (!strcmp(key, "byte skip") || !strcmp(key, "byteskip")) {
    if (parse_ints(v, &h->byte_skip, 1) != 1 || h->byte_skip < -1)
      BAD("'%s' line %d: byte skip '%s': expected an integer >= -1", path, line, v);
  } else if (!strcmp(key, "line skip") || !strcmp(key, "lineskip")) {
    int64_t s;
    if (parse_ints(v, &s, 1) != 1 || s != 0)
      BAD("'%s' line %d: line skip '%s' is not supported: expected 0", path, line, v);
  } else if (!strcmp(key, "data file") || !strcmp(key, "datafile")) {
    if (!strncmp(v, "LIST", 4) || strchr(v, '%'))
      BAD("'%s' line %d: multi-file data '%s' is not supported: expected one file name", path,
          line, v);
    h->data_file = (char *)v;
  } else if (!strcmp(key, "space directions")) {
    double norms[3];
    if (parse_vectors(v, norms, 3, NULL, NULL) < 2)
      BAD("'%s' line %d: cannot parse space directions '%s': expected (x,y,z) vectors", path,
          line, v);
    memcpy(h->spacing, norms, sizeof norms);
  } else if (!strcmp(key, "spacings")) {
    double s[3] = {0, 0, 0};
    if (parse_doubles(v, s, 3, ' ') < 2)
      BAD("'%s' line %d: cannot parse spacings '%s': expected numbers", path, line, v);
    for (int i = 0; i < 3; i++)
      if (h->spacing[i] == 0 && isfinite(s[i])) h->spacing[i] = fabs(s[i]);
  } else if (!strcmp(key, "space origin")) {
    double norm, c[3] = {0, 0, 0};
    int k = 0;
    if (parse_vectors(v, &norm, 1, c, &k) != 1)
      BAD("'%s' line %d: cannot parse space origin '%s': expected (x,y,z)", path, line, v);
    memcpy(h->origin, c, sizeof c);
  }
  /* Other fields (kinds, space, units, content, ...) do not affect the data. */
  return CTR_OK;
#undef BAD
}

static ctr_status parse_header(char *text, const char *path, nrrd_header *h) {
  /* Line 1, the magic, was checked when reading. */
  char *p = strchr(text, '\n');
  p = p ? p + 1 : NULL;
  for (int line = 2; p && *p; line++) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    size_t len = strlen(p);
    if (len && p[len - 1] == '\r') p[--len] = '\0';
    char *next = nl ? nl + 1 : NULL;
    if (p[0] != '#' && !strstr(p, ":=")) {
      char *colon = strstr(p, ": ");
      if (!colon)
        CTR_FAIL(CTR_E_FORMAT, "'%s' line %d: expected 'field: value', got '%s'", path, line, p);
      *colon = '\0';
      char *v = colon + 2;
      while (isspace((unsigned char)*v)) v++;
      for (char *e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);) *--e = '\0';
      CTR_CHECK(parse_field(h, path, line, p, v));
    }
    p = next;
  }
  if (!h->dtype) CTR_FAIL(CTR_E_FORMAT, "'%s': the header has no 'type' field", path);
  if (!h->dimension) CTR_FAIL(CTR_E_FORMAT, "'%s': the header has no 'dimension' field", path);
  if (h->nsizes != h->dimension)
    CTR_FAIL(CTR_E_FORMAT, "'%s' line %d: 'sizes' gives %d sizes for dimension %d", path,
             h->sizes_line, h->nsizes, h->dimension);
  return CTR_OK;
}

/* ---- Reading ------------------------------------------------------------ */

/* Raw data longer than the header describes: a wrong 'type' (a ushort header
 * over float data reads garbage) or 'sizes', never accepted silently. */
static ctr_status longer_than_header(const ctr_stack_reader *r, const char *data_path,
                                     int64_t have, int64_t need) {
  char d[96];
  CTR_FAIL(CTR_E_SIZE_MISMATCH,
           "'%s' holds %lld data bytes, the header of '%s' describes %lld (%s): check its "
           "'type' and 'sizes' fields (%lld bytes too many)",
           data_path, (long long)have, r->path, (long long)need,
           ctr__stack_describe(&r->info, d, sizeof d), (long long)(have - need));
}

ctr_status ctr__nrrd_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  ctr_status st = CTR_OK;
  char *text = NULL, *data_path = NULL;
  int fd = -1, dfd = -1;
  int64_t size, data_start = -1;
  nrrd_header h;
  memset(&h, 0, sizeof h);
  CTR_CHECK(ctr__file_open_read(r->path, &fd, &size));
  CTR_CHECK_GOTO(st, read_header_text(fd, size, r->path, &text, &data_start));
  CTR_CHECK_GOTO(st, parse_header(text, r->path, &h));

  r->info.width = h.sizes[0];
  r->info.height = h.sizes[1];
  r->info.count = h.dimension == 3 ? h.sizes[2] : 1;
  r->info.dtype = h.dtype;
  memcpy(r->info.spacing, h.spacing, sizeof h.spacing);
  memcpy(r->info.origin, h.origin, sizeof h.origin);
  CTR_CHECK_GOTO(st, ctr__stack_info_check(&r->info, r->path, CTR_E_FORMAT));
  r->swap = h.big_endian == ctr__host_is_little_endian();
  const int64_t need = (int64_t)ctr__image_bytes(&r->info) * r->info.count;
  int64_t have = 0; /* bytes from the data's start to the end of its file */

  if (h.data_file) {
    const char *slash = strrchr(r->path, '/');
    data_path = h.data_file[0] == '/' || !slash
                    ? ctr__io_sprintf("%s", h.data_file)
                    : ctr__io_sprintf("%.*s/%s", (int)(slash - r->path), r->path, h.data_file);
    if (!data_path) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    int64_t dsize;
    CTR_CHECK_GOTO(st, ctr__file_open_read(data_path, &dfd, &dsize));
    const int64_t off = h.byte_skip == -1 ? dsize - need : h.byte_skip;
    have = dsize - off;
    if (have > need) { /* raw encoding: the data are exactly what the header says */
      st = longer_than_header(r, data_path, have, need);
      goto cleanup;
    }
    st = ctr__raw_reader_init(r, dfd, dsize, data_path, off);
    dfd = -1; /* taken over, even on failure */
  } else {
    if (data_start < 0)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s' has neither data after its header nor a 'data file' "
                    "field", r->path);
    const int64_t off = h.byte_skip == -1 ? size - need : data_start + h.byte_skip;
    have = size - off;
    if (have > need) {
      st = longer_than_header(r, r->path, have, need);
      goto cleanup;
    }
    st = ctr__raw_reader_init(r, fd, size, r->path, off);
    fd = -1;
  }
cleanup:
  if (fd >= 0) close(fd);
  if (dfd >= 0) close(dfd);
  free(data_path);
  free(text);
  return st;
}

/* ---- Writing ------------------------------------------------------------ */

/* The shortest of %.15g / %.17g that reads back as the same double. */
static const char *fmt_double(char *buf, size_t n, double v) {
  snprintf(buf, n, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
  return buf;
}

static char *make_header(const ctr_stack_info *info, const char *data_file) {
  char s[3][32], o[3][32];
  for (int i = 0; i < 3; i++) {
    /* Readers need non-degenerate directions; unknown spacing becomes 1. */
    fmt_double(s[i], sizeof s[i], info->spacing[i] > 0 ? info->spacing[i] : 1.0);
    fmt_double(o[i], sizeof o[i], info->origin[i]);
  }
  return ctr__io_sprintf("NRRD0004\n"
                         "# Complete NRRD file format specification at:\n"
                         "# http://teem.sourceforge.net/nrrd/format.html\n"
                         "type: %s\n"
                         "dimension: 3\n"
                         "space dimension: 3\n"
                         "sizes: %lld %lld %lld\n"
                         "space directions: (%s,0,0) (0,%s,0) (0,0,%s)\n"
                         "kinds: domain domain domain\n"
                         "endian: little\n"
                         "encoding: raw\n"
                         "space origin: (%s,%s,%s)\n"
                         "%s%s%s\n",
                         info->dtype == CTR_DTYPE_FLOAT32 ? "float" : "uint16",
                         (long long)info->width, (long long)info->height,
                         (long long)info->count, s[0], s[1], s[2], o[0], o[1], o[2],
                         data_file ? "data file: " : "", data_file ? data_file : "",
                         data_file ? "\n" : "");
}

/* The data of an attached NRRD start at a multiple of CTR__IO_ALIGN, so that
 * slabs of whole blocks can go through direct I/O: '#' comment lines before
 * the blank line that ends the header fill it up. Frees h on failure. */
static char *pad_header(char *h) {
  if (!h) return NULL;
  const size_t len = strlen(h); /* ends with "\n\n" */
  size_t pad = (CTR__IO_ALIGN - len % CTR__IO_ALIGN) % CTR__IO_ALIGN;
  if (pad == 1) pad += CTR__IO_ALIGN; /* a comment line takes at least "#\n" */
  if (!pad) return h;
  char *out = realloc(h, len + pad + 1);
  if (!out) {
    free(h);
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate a NRRD header of %zu bytes", len + pad);
    return NULL;
  }
  char *p = out + len - 1; /* the blank line */
  for (size_t left = pad; left > 0;) {
    size_t k = left > 64 ? 64 : left;
    if (left - k == 1) k--; /* never leave a single byte */
    memset(p, '#', k - 1);
    p[k - 1] = '\n';
    p += k;
    left -= k;
  }
  p[0] = '\n';
  p[1] = '\0';
  return out;
}

ctr_status ctr__nrrd_data_path(const char *path, char **out) {
  const char *slash = strrchr(path, '/');
  const char *ext = strrchr(slash ? slash + 1 : path, '.');
  *out = NULL;
  if (!ext || strcasecmp(ext, ".nhdr") != 0) return CTR_OK;
  *out = ctr__io_sprintf("%.*s.raw", (int)(ext - path), path);
  return *out ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

ctr_status ctr__nrrd_create(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  char *header = NULL, *data_path = NULL;
  /* float16 (no NRRD type) is refused by ctr__stack_writer_open from the
   * format table's dtypes, with the formats that store it */
  CTR_CHECK(ctr__nrrd_data_path(w->path, &data_path));
  if (data_path) {
    const char *base = strrchr(data_path, '/');
    header = make_header(&w->info, base ? base + 1 : data_path);
    if (!header) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    st = ctr__raw_writer_init(w, data_path, NULL, w->path, header);
  } else {
    header = pad_header(make_header(&w->info, NULL));
    if (!header) return CTR_E_OUT_OF_MEMORY;
    st = ctr__raw_writer_init(w, w->path, header, NULL, NULL);
  }
cleanup:
  free(header);
  free(data_path);
  return st;
}

ctr_status ctr__nrrd_existing(const char *path, char **found) {
  CTR_CHECK(ctr__file_existing(path, found));
  char *data = NULL;
  if (!*found) CTR_CHECK(ctr__nrrd_data_path(path, &data));
  ctr_status st = data ? ctr__file_existing(data, found) : CTR_OK;
  free(data);
  return st;
}

void ctr__nrrd_remove_partial(const char *path, int64_t count) {
  char *data = NULL;
  ctr__raw_remove_partial(path, count);
  if (ctr__nrrd_data_path(path, &data) == CTR_OK && data) ctr__raw_remove_partial(data, count);
  free(data);
}
