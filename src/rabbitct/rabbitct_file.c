/* RabbitCT data files: a little-endian header (with or without a leading
 * version word), per view 12 float64 matrix elements and width x height
 * float32 pixels, then uint16 reference volumes of L^3 voxels. The header
 * carries no reference list, so the variant and the volumes present are
 * worked out from the file size. Files are large (2.4 GB of views and 2 GB of
 * references), so nothing is read whole: every access is a pread at a 64-bit
 * offset. Scoring lives in rabbitct_score.c; docs/rabbitct.md describes the
 * format. */
#include "io/io_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RCT_HEADER_V 24   /* version, width, height, nviews, hu0, hu1 */
#define RCT_HEADER_OLD 20 /* the same without the version word */
#define RCT_MATRIX_BYTES 96
#define RCT_DEFAULT_VERSION 103u
#define RCT_MAX_SIDE 65536
#define RCT_MAX_VIEWS (1 << 20)
#define RCT_MAX_VERSION 65535u
#define RCT_MAX_L 1024
#define RCT_MAX_REFS 8

/* ---- Layout ------------------------------------------------------------- */

/* One interpretation of the first bytes of a file. */
typedef struct rct_layout {
  const char *name; /* "versioned" or "old" */
  int plausible;
  ctr_rabbitct_header h;
  int64_t header_bytes, view_bytes;
  int64_t need; /* header + views: the references start here */
} rct_layout;

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float get_f32(const unsigned char *p) {
  const uint32_t u = get_u32(p);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static void put_f32(unsigned char *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  put_u32(p, u);
}

static int64_t ref_bytes(int64_t L) { return L * L * L * (int64_t)sizeof(uint16_t); }

/* Bounds shared by the reader's plausibility test and the writer's argument
 * checks, so that every file the writer accepts can be read back. */
static int dims_plausible(int64_t w, int64_t h, int64_t n, float hu0, float hu1) {
  return w >= 1 && w <= RCT_MAX_SIDE && h >= 1 && h <= RCT_MAX_SIDE && n >= 1 &&
         n <= RCT_MAX_VIEWS && isfinite(hu0) && isfinite(hu1);
}

/* Fills *L from the 24 header bytes b (zero-padded when the file is shorter),
 * read with or without the version word. The header fields are checked before
 * any arithmetic on them: only a plausible header (a view at most 96 + 2^34
 * bytes, at most 2^20 views) gets sizes, so nothing overflows; an implausible
 * one keeps view_bytes = need = 0 and is never used. */
static void parse_layout(const unsigned char *b, int versioned, rct_layout *L) {
  memset(L, 0, sizeof *L);
  L->name = versioned ? "versioned" : "old";
  const unsigned char *p = versioned ? b + 4 : b;
  L->h.version = versioned ? get_u32(b) : 0;
  L->h.width = get_u32(p);
  L->h.height = get_u32(p + 4);
  L->h.nviews = get_u32(p + 8);
  L->h.hu0 = get_f32(p + 12);
  L->h.hu1 = get_f32(p + 16);
  L->plausible = dims_plausible(L->h.width, L->h.height, L->h.nviews, L->h.hu0, L->h.hu1) &&
                 (!versioned || (L->h.version >= 1 && L->h.version <= RCT_MAX_VERSION));
  L->header_bytes = versioned ? RCT_HEADER_V : RCT_HEADER_OLD;
  if (!L->plausible) return;
  const uint64_t pixels = (uint64_t)L->h.width * (uint64_t)L->h.height; /* <= 2^32 */
  const uint64_t view = RCT_MATRIX_BYTES + pixels * sizeof(float);      /* <= 2^34 + 96 */
  L->view_bytes = (int64_t)view;
  L->need = L->header_bytes + (int64_t)((uint64_t)L->h.nviews * view); /* < 2^55 */
}

/* 1 if sizes[0..n) is a list the reader can recognise: L doubling from 16,
 * 32, 64 or 128 up to at most 1024 (n = 0 too). */
static int ref_list_valid(int n, const int64_t *sizes) {
  if (n < 0 || n > RCT_MAX_REFS) return 0;
  if (n == 0) return 1;
  if (sizes[0] != 16 && sizes[0] != 32 && sizes[0] != 64 && sizes[0] != 128) return 0;
  for (int k = 1; k < n; k++)
    if (sizes[k] != 2 * sizes[k - 1]) return 0;
  return sizes[n - 1] <= RCT_MAX_L;
}

/* Works out the reference volumes from the bytes after the views. The
 * 128-based prefixes (the published data sets) are tried first, then the
 * small sizes of test files; no two of these sums coincide. */
static int match_refs(int64_t remainder, int *nref, int64_t *sizes) {
  static const int64_t starts[] = {128, 16, 32, 64};
  *nref = 0;
  if (remainder == 0) return 1;
  for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
    int64_t sum = 0;
    int n = 0;
    for (int64_t L = starts[s]; L <= RCT_MAX_L && sum < remainder; L *= 2) {
      sizes[n++] = L;
      sum += ref_bytes(L);
    }
    if (sum == remainder) {
      *nref = n;
      return 1;
    }
  }
  return 0;
}

/* "versioned header (version 103, 37 x 23 px, 5 views): 17524 bytes of
 * header and views, 3 bytes left for references" and the like, for error
 * messages. */
static void describe(const rct_layout *L, int64_t size, char *buf, size_t n) {
  char version[32] = "";
  if (L->header_bytes == RCT_HEADER_V)
    snprintf(version, sizeof version, "version %u, ", L->h.version);
  if (!L->plausible) {
    snprintf(buf, n, "%s header implausible (%swidth %lld, height %lld, %lld views, hu %g %g)",
             L->name, version, (long long)L->h.width, (long long)L->h.height,
             (long long)L->h.nviews, (double)L->h.hu0, (double)L->h.hu1);
    return;
  }
  snprintf(buf, n, "%s header (%s%lld x %lld px, %lld views): %lld bytes of header and views, %s",
           L->name, version, (long long)L->h.width, (long long)L->h.height,
           (long long)L->h.nviews, (long long)L->need,
           size >= L->need ? "" : "more than the file holds");
  if (size >= L->need) {
    const size_t m = strlen(buf);
    snprintf(buf + m, n - m, "%lld bytes left for references", (long long)(size - L->need));
  }
}

/* Why no interpretation fits: a plausible header whose views are all there
 * but whose tail is no reference list is a format error; if the only
 * plausible headers ask for more bytes than the file has, it is truncated. */
static ctr_status diagnose(const char *path, int64_t size, const rct_layout *cand, int ncand) {
  char d[2][256];
  for (int k = 0; k < ncand; k++) describe(&cand[k], size, d[k], sizeof d[k]);
  for (int k = 0; k < ncand; k++)
    if (cand[k].plausible && size >= cand[k].need)
      CTR_FAIL(CTR_E_FORMAT,
               "'%s' (%lld bytes) is no RabbitCT file: %s; %s; expected the bytes after the "
               "views to be 0 or uint16 L^3 reference volumes for L doubling from 128 "
               "(4194304 bytes for 128, 37748736 for 128 + 256, 306184192 for up to 512, "
               "2453667840 for up to 1024) or from 16, 32 or 64",
               path, (long long)size, d[0], d[1]);
  for (int k = 0; k < ncand; k++)
    if (cand[k].plausible)
      CTR_FAIL(CTR_E_SIZE_MISMATCH,
               "'%s' is truncated: it holds %lld bytes, expected at least %lld for the %s "
               "header and %lld views of %lld x %lld floats",
               path, (long long)size, (long long)cand[k].need, cand[k].name,
               (long long)cand[k].h.nviews, (long long)cand[k].h.width,
               (long long)cand[k].h.height);
  CTR_FAIL(CTR_E_FORMAT, "'%s' (%lld bytes) is no RabbitCT file: %s; %s", path,
           (long long)size, d[0], d[1]);
}

/* ---- Reading ------------------------------------------------------------ */

struct ctr_rabbitct {
  ctr_rabbitct_header h;
  char *path;
  int fd;
  int64_t header_bytes, view_bytes;
  int64_t ref_offset[RCT_MAX_REFS];
};

/* Picks the first interpretation (versioned, then old) whose views fit and
 * whose tail is a reference list. */
static ctr_status detect_layout(int fd, int64_t size, const char *path, rct_layout *out) {
  if (size < RCT_HEADER_OLD)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "'%s' is truncated: it holds %lld bytes, expected at least %d for a RabbitCT header",
             path, (long long)size, RCT_HEADER_OLD);
  unsigned char b[RCT_HEADER_V] = {0};
  CTR_CHECK(ctr__pread_full(fd, b, size < RCT_HEADER_V ? RCT_HEADER_OLD : RCT_HEADER_V, 0, path));
  rct_layout cand[2];
  parse_layout(b, 1, &cand[0]);
  parse_layout(b, 0, &cand[1]);
  for (int k = 0; k < 2; k++) {
    if (!cand[k].plausible || size < cand[k].need) continue;
    if (!match_refs(size - cand[k].need, &cand[k].h.nref, cand[k].h.ref_sizes)) continue;
    *out = cand[k];
    return CTR_OK;
  }
  return diagnose(path, size, cand, 2);
}

ctr_status ctr_rabbitct_open(const char *path, ctr_rabbitct **out) {
  ctr_status st = CTR_OK;
  ctr_rabbitct *r = NULL;
  int fd = -1;
  int64_t size;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_open: out is NULL");
  *out = NULL;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_open: path is empty");
  CTR_CHECK(ctr__file_open_read(path, &fd, &size));
  rct_layout L = {0};
  CTR_CHECK_GOTO(st, detect_layout(fd, size, path, &L));
  r = ctr__calloc(1, sizeof *r, "RabbitCT reader");
  if (!r) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  r->path = strdup(path);
  if (!r->path) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  r->h = L.h;
  r->fd = fd;
  r->header_bytes = L.header_bytes;
  r->view_bytes = L.view_bytes;
  int64_t off = L.need;
  for (int k = 0; k < r->h.nref; k++) {
    r->ref_offset[k] = off;
    off += ref_bytes(r->h.ref_sizes[k]);
  }
  *out = r;
  return CTR_OK;
cleanup:
  if (r) free(r->path);
  free(r);
  close(fd);
  return st;
}

const ctr_rabbitct_header *ctr_rabbitct_get_header(const ctr_rabbitct *r) {
  return r ? &r->h : NULL;
}

/* Reads n little-endian elements of `elem` bytes at off into buf. */
static ctr_status read_le(ctr_rabbitct *r, void *buf, size_t elem, size_t n, int64_t off) {
  CTR_CHECK(ctr__pread_full(r->fd, buf, elem * n, off, r->path));
  if (!ctr__host_is_little_endian()) ctr__byteswap(buf, elem, n);
  return CTR_OK;
}

/* matrix or image may be NULL to read only the other; the matrix is checked
 * either way, since a non-finite one would poison a whole reconstruction. */
ctr_status ctr_rabbitct_read_view(ctr_rabbitct *r, int64_t i, double matrix[12], float *image) {
  if (!r) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_read_view: reader is NULL");
  if (i < 0 || i >= r->h.nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': view %lld out of range, expected 0..%lld", r->path,
             (long long)i, (long long)r->h.nviews - 1);
  const int64_t off = r->header_bytes + i * r->view_bytes;
  double m[12];
  CTR_CHECK(read_le(r, m, sizeof(double), 12, off));
  for (int k = 0; k < 12; k++)
    if (!isfinite(m[k]))
      CTR_FAIL(CTR_E_FORMAT, "'%s': matrix element %d of view %lld is %g, expected a finite "
               "number", r->path, k, (long long)i, m[k]);
  if (matrix) memcpy(matrix, m, sizeof m);
  if (!image) return CTR_OK;
  return read_le(r, image, sizeof(float), (size_t)(r->h.width * r->h.height),
                 off + RCT_MATRIX_BYTES);
}

/* "128, 256" or "none" into buf. */
static const char *list_sizes(int n, const int64_t *sizes, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0; k < n && used < len; k++) {
    int m = snprintf(buf + used, len - used, "%s%lld", k ? ", " : "", (long long)sizes[k]);
    if (m < 0) break;
    used += (size_t)m;
  }
  if (n == 0) snprintf(buf, len, "none");
  return buf;
}

ctr_status ctr_rabbitct_read_reference(ctr_rabbitct *r, int64_t L, uint16_t *out) {
  if (!r || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_read_reference: NULL argument");
  for (int k = 0; k < r->h.nref; k++)
    if (r->h.ref_sizes[k] == L)
      return read_le(r, out, sizeof(uint16_t), (size_t)(L * L * L), r->ref_offset[k]);
  char present[128];
  CTR_FAIL(CTR_E_FORMAT, "'%s' has no reference volume of L = %lld; sizes present: %s", r->path,
           (long long)L, list_sizes(r->h.nref, r->h.ref_sizes, present, sizeof present));
}

void ctr_rabbitct_close(ctr_rabbitct *r) {
  if (!r) return;
  close(r->fd);
  free(r->path);
  free(r);
}

/* ---- Writing ------------------------------------------------------------ */

struct ctr_rabbitct_writer {
  ctr__atomic_file f;
  ctr_rabbitct_header h;
  int64_t view_bytes;
  int64_t next_view; /* views are written in order ... */
  int next_ref;      /* ... then the declared references */
  int64_t off;       /* where the next item goes */
  int failed;        /* an I/O error left a partial item: only abort is left */
};

/* Writes n elements of `elem` bytes little-endian at w->off and advances it.
 * Big-endian hosts go through a bounded scratch buffer rather than a copy of
 * a whole (up to 2 GB) volume. */
static ctr_status write_le(ctr_rabbitct_writer *w, const void *buf, size_t elem, size_t n) {
  ctr_status st = CTR_OK;
  const size_t bytes = elem * n;
  if (ctr__host_is_little_endian()) {
    st = ctr__pwrite_full(w->f.fd, buf, bytes, w->off, w->f.path);
  } else {
    const size_t chunk = ((size_t)1 << 20) / elem * elem;
    unsigned char *tmp = ctr__malloc(chunk, "RabbitCT byte-swap buffer");
    if (!tmp) return CTR_E_OUT_OF_MEMORY;
    for (size_t done = 0; done < bytes && st == CTR_OK; done += chunk) {
      const size_t k = bytes - done < chunk ? bytes - done : chunk;
      memcpy(tmp, (const unsigned char *)buf + done, k);
      ctr__byteswap(tmp, elem, k / elem);
      st = ctr__pwrite_full(w->f.fd, tmp, k, w->off + (int64_t)done, w->f.path);
    }
    free(tmp);
  }
  if (st != CTR_OK) {
    w->failed = 1;
    return st;
  }
  w->off += (int64_t)bytes;
  return CTR_OK;
}

static ctr_status check_create_args(const char *path, const ctr_rabbitct_header *h) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_create: path is empty");
  if (!h) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_create '%s': header is NULL", path);
  if (!dims_plausible(h->width, h->height, h->nviews, h->hu0, h->hu1))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_rabbitct_create '%s': %lld x %lld px, %lld views, hu %g %g: expected sizes "
             "in 1..%d, 1..%d views and finite hu scales",
             path, (long long)h->width, (long long)h->height, (long long)h->nviews,
             (double)h->hu0, (double)h->hu1, RCT_MAX_SIDE, RCT_MAX_VIEWS);
  if (h->version > RCT_MAX_VERSION)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_create '%s': version %u, expected 0..%u",
             path, h->version, RCT_MAX_VERSION);
  /* Only lists the reader can recognise from the file size. */
  if (!ref_list_valid(h->nref, h->ref_sizes)) {
    char got[160];
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_rabbitct_create '%s': reference sizes [%s] (nref %d): expected at most %d "
             "sizes doubling from 16, 32, 64 or 128 up to %d",
             path,
             h->nref >= 0 && h->nref <= RCT_MAX_REFS
                 ? list_sizes(h->nref, h->ref_sizes, got, sizeof got) : "?",
             h->nref, RCT_MAX_REFS, RCT_MAX_L);
  }
  return CTR_OK;
}

ctr_status ctr_rabbitct_create(const char *path, const ctr_rabbitct_header *h, int overwrite,
                               ctr_rabbitct_writer **out) {
  ctr_status st = CTR_OK;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_create: out is NULL");
  *out = NULL;
  CTR_CHECK(check_create_args(path, h));
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  ctr_rabbitct_writer *w = ctr__calloc(1, sizeof *w, "RabbitCT writer");
  if (!w) return CTR_E_OUT_OF_MEMORY;
  w->f = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  w->h = *h;
  if (w->h.version == 0) w->h.version = RCT_DEFAULT_VERSION;
  w->view_bytes = RCT_MATRIX_BYTES + h->width * h->height * (int64_t)sizeof(float);
  CTR_CHECK_GOTO(st, ctr__atomic_create(&w->f, path));
  w->f.no_replace = !overwrite;
  unsigned char b[RCT_HEADER_V];
  put_u32(b, w->h.version);
  put_u32(b + 4, (uint32_t)h->width);
  put_u32(b + 8, (uint32_t)h->height);
  put_u32(b + 12, (uint32_t)h->nviews);
  put_f32(b + 16, h->hu0);
  put_f32(b + 20, h->hu1);
  CTR_CHECK_GOTO(st, write_le(w, b, 1, sizeof b));
  *out = w;
  return CTR_OK;
cleanup:
  ctr__atomic_discard(&w->f);
  free(w);
  return st;
}

static ctr_status check_usable(const ctr_rabbitct_writer *w, const char *fn) {
  if (!w) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: writer is NULL", fn);
  if (w->failed)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "an earlier write to '%s' failed; the writer can only be "
             "aborted", w->f.path);
  return CTR_OK;
}

ctr_status ctr_rabbitct_write_view(ctr_rabbitct_writer *w, const double matrix[12],
                                   const float *image) {
  CTR_CHECK(check_usable(w, "ctr_rabbitct_write_view"));
  if (!matrix || !image)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_write_view '%s': matrix or image is NULL",
             w->f.path);
  if (w->next_view >= w->h.nviews) {
    if (w->next_ref < w->h.nref)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': all %lld views are written, expected reference "
               "volume L = %lld next", w->f.path, (long long)w->h.nviews,
               (long long)w->h.ref_sizes[w->next_ref]);
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': all %lld views and references are written, "
             "expected ctr_rabbitct_commit", w->f.path, (long long)w->h.nviews);
  }
  /* The reader rejects non-finite matrices; refuse to write such a file. */
  for (int k = 0; k < 12; k++)
    if (!isfinite(matrix[k]))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': matrix element %d of view %lld is %g, expected "
               "a finite number", w->f.path, k, (long long)w->next_view, matrix[k]);
  CTR_CHECK(write_le(w, matrix, sizeof(double), 12));
  CTR_CHECK(write_le(w, image, sizeof(float), (size_t)(w->h.width * w->h.height)));
  w->next_view++;
  return CTR_OK;
}

ctr_status ctr_rabbitct_write_reference(ctr_rabbitct_writer *w, int64_t L, const uint16_t *vol) {
  CTR_CHECK(check_usable(w, "ctr_rabbitct_write_reference"));
  if (!vol)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_write_reference '%s': volume is NULL",
             w->f.path);
  if (w->next_view < w->h.nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': reference L = %lld given before all views, "
             "expected view %lld of 0..%lld next", w->f.path, (long long)L,
             (long long)w->next_view, (long long)w->h.nviews - 1);
  char declared[128];
  list_sizes(w->h.nref, w->h.ref_sizes, declared, sizeof declared);
  if (w->next_ref >= w->h.nref)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': reference L = %lld given but all declared "
             "references (%s) are written", w->f.path, (long long)L, declared);
  if (L != w->h.ref_sizes[w->next_ref])
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': reference L = %lld given, expected L = %lld next "
             "(declared order: %s)", w->f.path, (long long)L,
             (long long)w->h.ref_sizes[w->next_ref], declared);
  CTR_CHECK(write_le(w, vol, sizeof(uint16_t), (size_t)(L * L * L)));
  w->next_ref++;
  return CTR_OK;
}

/* Names the first item never written into buf; 0 if all are there. */
static int describe_missing(const ctr_rabbitct_writer *w, char *buf, size_t n) {
  if (w->next_view < w->h.nviews) {
    snprintf(buf, n, "views %lld..%lld of %lld were never written", (long long)w->next_view,
             (long long)w->h.nviews - 1, (long long)w->h.nviews);
    return 1;
  }
  if (w->next_ref < w->h.nref) {
    snprintf(buf, n, "reference volume L = %lld (%d of %d declared) was never written",
             (long long)w->h.ref_sizes[w->next_ref], w->next_ref + 1, w->h.nref);
    return 1;
  }
  return 0;
}

ctr_status ctr_rabbitct_commit(ctr_rabbitct_writer *w) {
  ctr_status st = CTR_OK;
  char missing[160];
  if (!w) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_commit: writer is NULL");
  if (w->failed)
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT, "'%s' was not saved: an earlier write failed",
                        w->f.path);
  else if (describe_missing(w, missing, sizeof missing))
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT, "'%s' was not saved: %s", w->f.path, missing);
  else
    st = ctr__atomic_commit(&w->f);
  /* After a successful commit there is no temporary left to remove. */
  ctr__atomic_discard(&w->f);
  free(w);
  return st;
}

void ctr_rabbitct_abort(ctr_rabbitct_writer *w) {
  if (!w) return;
  ctr__atomic_discard(&w->f);
  free(w);
}
