/* libtiff glue (silent error handlers, page decoding and encoding) and the
 * multi-page TIFF backend: one page per image. */
#include "io/io_tiff.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- Messages ----------------------------------------------------------- */

/* libtiff prints to stderr by default; the library must not print, so its
 * messages become the thread's error detail and are appended to ours. */
static void tiff_error_handler(const char *module, const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  ctr__error_set(CTR_E_FORMAT, "%s%s%s", module ? module : "", module ? ": " : "", msg);
}

/* A warning never hides an error already recorded for this operation. */
static void tiff_warning_handler(const char *module, const char *fmt, va_list ap) {
  if (ctr_error_detail()[0]) return;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  ctr__error_set(CTR_E_FORMAT, "libtiff warning: %s%s%s", module ? module : "",
                 module ? ": " : "", msg);
}

static pthread_once_t g_handlers_once = PTHREAD_ONCE_INIT;

static void install_handlers(void) {
  TIFFSetErrorHandler(tiff_error_handler);
  TIFFSetWarningHandler(tiff_warning_handler);
}

/* Starts a libtiff operation: handlers in place, no stale message. */
static void tiff_begin(void) {
  pthread_once(&g_handlers_once, install_handlers);
  ctr_error_clear();
}

/* Raises our message followed by what libtiff reported since tiff_begin. */
static ctr_status tiff_fail(ctr_status status, const char *fmt, ...) CTR__PRINTF(2, 3);
static ctr_status tiff_fail(ctr_status status, const char *fmt, ...) {
  char lib[512], own[1024];
  snprintf(lib, sizeof lib, "%s", ctr_error_detail());
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(own, sizeof own, fmt, ap);
  va_end(ap);
  return ctr__error_set(status, "%s%s%s", own, lib[0] ? ": " : "", lib);
}

/* ---- Files -------------------------------------------------------------- */

ctr_status ctr__tiff_check_dims(const ctr_stack_info *info, const char *path) {
  if (info->width > UINT32_MAX || info->height > UINT32_MAX)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': TIFF images are at most %u x %u, got %lld x %lld",
             path, UINT32_MAX, UINT32_MAX, (long long)info->width, (long long)info->height);
  return CTR_OK;
}

ctr_status ctr__tiff_open_read(const char *path, TIFF **out) {
  int fd;
  int64_t size;
  CTR_CHECK(ctr__file_open_read(path, &fd, &size));
  tiff_begin();
  /* "m": plain reads instead of mmap, so a file truncated under us gives an
   * error rather than SIGBUS. */
  TIFF *tif = TIFFFdOpen(fd, path, "rm");
  if (!tif) {
    close(fd); /* TIFFFdOpen does not take the descriptor when it fails */
    return tiff_fail(CTR_E_FORMAT, "'%s' is not a readable TIFF file", path);
  }
  *out = tif;
  return CTR_OK;
}

ctr_status ctr__tiff_open_write(ctr__atomic_file *f, int64_t data_bytes, TIFF **out) {
  tiff_begin();
  TIFF *tif = TIFFFdOpen(f->fd, f->path, data_bytes > CTR__BIGTIFF_BYTES ? "w8" : "w");
  if (!tif) return tiff_fail(CTR_E_IO, "cannot start TIFF '%s'", f->path);
  *out = tif;
  return CTR_OK;
}

ctr_status ctr__tiff_finish(TIFF *tif, const char *path) {
  tiff_begin();
  errno = 0;
  int ok = TIFFFlush(tif);
  int e = errno;
  /* TIFFCleanup frees without closing: the atomic file owns the fd. */
  TIFFCleanup(tif);
  if (!ok) return tiff_fail(CTR_E_IO, "cannot finish '%s' (%s)", path, e ? strerror(e) : "?");
  return CTR_OK;
}

void ctr__tiff_abandon(TIFF *tif) {
  /* Read-only mode keeps TIFFCleanup from flushing into a file that is about
   * to be removed, and from overwriting the error detail. */
  TIFFSetMode(tif, O_RDONLY);
  TIFFCleanup(tif);
}

/* ---- Pages -------------------------------------------------------------- */

static const char *sample_format_name(uint16_t f) {
  switch (f) {
    case SAMPLEFORMAT_UINT: return "unsigned integer";
    case SAMPLEFORMAT_INT: return "signed integer";
    case SAMPLEFORMAT_IEEEFP: return "IEEE float";
    case SAMPLEFORMAT_VOID: return "untyped";
    case SAMPLEFORMAT_COMPLEXINT: return "complex integer";
    case SAMPLEFORMAT_COMPLEXIEEEFP: return "complex IEEE float";
  }
  return "unknown-format";
}

ctr_status ctr__tiff_page_info(TIFF *tif, const char *what, ctr_stack_info *out) {
  uint32_t w = 0, h = 0;
  uint16_t bps = 1, spp = 1, fmt = SAMPLEFORMAT_UINT, photometric = 0, unit = RESUNIT_NONE;
  tiff_begin();
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h))
    return tiff_fail(CTR_E_FORMAT, "%s has no image width or length", what);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  memset(out, 0, sizeof *out);
  if (spp == 1 && bps == 16 && fmt == SAMPLEFORMAT_UINT) {
    out->dtype = CTR_DTYPE_UINT16;
  } else if (spp == 1 && bps == 32 && fmt == SAMPLEFORMAT_IEEEFP) {
    out->dtype = CTR_DTYPE_FLOAT32;
  } else if (spp == 1 && bps == 16 && fmt == SAMPLEFORMAT_IEEEFP) {
    out->dtype = CTR_DTYPE_FLOAT16;
  } else {
    CTR_FAIL(CTR_E_FORMAT,
             "%s is %u-bit %s with %u sample(s) per pixel%s; supported: one 16-bit unsigned "
             "integer, 32-bit or 16-bit IEEE float sample per pixel",
             what, bps, sample_format_name(fmt), spp,
             photometric == PHOTOMETRIC_RGB ? " (RGB)"
             : photometric == PHOTOMETRIC_PALETTE ? " (palette)" : "");
  }
  out->width = w;
  out->height = h;
  out->count = 1;
  /* Only centimetres are trusted: many writers put a meaningless 72 dpi. */
  float xres = 0, yres = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
  if (unit == RESUNIT_CENTIMETER && TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xres) &&
      TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yres) && xres > 0 && yres > 0) {
    out->spacing[0] = 10.0 / xres;
    out->spacing[1] = 10.0 / yres;
  }
  return CTR_OK;
}

ctr_status ctr__tiff_check_like(const ctr_stack_info *got, const ctr_stack_info *want,
                                const char *what, const char *like) {
  if (got->width == want->width && got->height == want->height && got->dtype == want->dtype)
    return CTR_OK;
  CTR_FAIL(CTR_E_SIZE_MISMATCH, "%s is %lld x %lld %s, expected %lld x %lld %s like %s", what,
           (long long)got->width, (long long)got->height, ctr_dtype_name(got->dtype),
           (long long)want->width, (long long)want->height, ctr_dtype_name(want->dtype), like);
}

static ctr_status read_tiles(TIFF *tif, const char *what, const ctr_stack_info *info,
                             unsigned char *dst) {
  ctr_status st = CTR_OK;
  const size_t es = ctr_dtype_size(info->dtype), row = (size_t)info->width * es;
  const uint32_t w = (uint32_t)info->width, h = (uint32_t)info->height;
  uint32_t tw = 0, th = 0;
  if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &th) ||
      !tw || !th)
    return tiff_fail(CTR_E_FORMAT, "%s is tiled but has no tile size", what);
  unsigned char *tile = ctr__malloc((size_t)TIFFTileSize64(tif), "a TIFF tile");
  if (!tile) return CTR_E_OUT_OF_MEMORY;
  for (uint32_t y0 = 0; y0 < h; y0 += th)
    for (uint32_t x0 = 0; x0 < w; x0 += tw) {
      if (TIFFReadTile(tif, tile, x0, y0, 0, 0) < 0) {
        st = tiff_fail(CTR_E_FORMAT, "cannot decode the tile at (%u, %u) of %s", x0, y0, what);
        goto cleanup;
      }
      const uint32_t rows = th < h - y0 ? th : h - y0, cols = tw < w - x0 ? tw : w - x0;
      for (uint32_t r = 0; r < rows; r++)
        memcpy(dst + (size_t)(y0 + r) * row + (size_t)x0 * es, tile + (size_t)r * tw * es,
               (size_t)cols * es);
    }
cleanup:
  free(tile);
  return st;
}

/* Rows per strip of the current page of h rows (0 or beyond h: h). */
static uint32_t rows_per_strip(TIFF *tif, uint32_t h) {
  uint32_t rps = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
  return rps == 0 || rps > h ? h : rps;
}

static ctr_status read_strips(TIFF *tif, const char *what, const ctr_stack_info *info,
                              unsigned char *dst) {
  const size_t row = (size_t)info->width * ctr_dtype_size(info->dtype);
  const uint32_t h = (uint32_t)info->height;
  const uint32_t rps = rows_per_strip(tif, h);
  const uint32_t nstrips = (h + rps - 1) / rps;
  if (TIFFNumberOfStrips(tif) < nstrips)
    return tiff_fail(CTR_E_FORMAT, "%s has %u strips, expected %u for %u rows of %u", what,
                     TIFFNumberOfStrips(tif), nstrips, h, rps);
  for (uint32_t s = 0; s < nstrips; s++) {
    const uint32_t rows = rps < h - s * rps ? rps : h - s * rps;
    const tmsize_t want = (tmsize_t)(rows * row);
    tmsize_t got = TIFFReadEncodedStrip(tif, s, dst + (size_t)s * rps * row, want);
    if (got < 0) return tiff_fail(CTR_E_FORMAT, "cannot decode strip %u of %s", s, what);
    if (got != want)
      return tiff_fail(CTR_E_SIZE_MISMATCH, "strip %u of %s holds %lld bytes, expected %lld", s,
                       what, (long long)got, (long long)want);
  }
  return CTR_OK;
}

ctr_status ctr__tiff_read_page(TIFF *tif, const char *what, const ctr_stack_info *info,
                               void *buf) {
  tiff_begin();
  return TIFFIsTiled(tif) ? read_tiles(tif, what, info, buf) : read_strips(tif, what, info, buf);
}

static int uncompressed(TIFF *tif) {
  uint16_t c = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &c);
  return c == COMPRESSION_NONE;
}

int64_t ctr__tiff_page_row_block(TIFF *tif, const ctr_stack_info *info) {
  uint32_t n = 0;
  if (TIFFIsTiled(tif)) TIFFGetField(tif, TIFFTAG_TILELENGTH, &n); /* tiles decode whole */
  else if (uncompressed(tif)) return 1;
  else TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &n);
  return n == 0 || n > (uint32_t)info->height ? info->height : (int64_t)n;
}

int64_t ctr__tiff_page_data_offset(TIFF *tif, const ctr_stack_info *info, int *swapped) {
  *swapped = TIFFIsByteSwapped(tif);
  uint16_t planar = PLANARCONFIG_CONTIG;
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  if (TIFFIsTiled(tif) || !uncompressed(tif) || planar != PLANARCONFIG_CONTIG) return -1;
  const uint64_t row = (uint64_t)info->width * ctr_dtype_size(info->dtype);
  const uint32_t h = (uint32_t)info->height, rps = rows_per_strip(tif, h);
  const uint32_t nstrips = (h + rps - 1) / rps;
  if (TIFFNumberOfStrips(tif) < nstrips) return -1;
  const uint64_t first = TIFFGetStrileOffset(tif, 0);
  uint64_t next = first;
  for (uint32_t s = 0; s < nstrips; s++) {
    const uint64_t rows = rps < h - s * rps ? rps : h - s * rps;
    int err = 0;
    const uint64_t off = TIFFGetStrileOffsetWithErr(tif, s, &err);
    const uint64_t bytes = TIFFGetStrileByteCountWithErr(tif, s, &err);
    if (err || off != next || bytes < rows * row) return -1;
    next = off + rows * row;
  }
  ctr_error_clear(); /* libtiff may have warned while loading the strip arrays */
  return first > (uint64_t)INT64_MAX / 2 ? -1 : (int64_t)first;
}

ctr_status ctr__tiff_pread_rows(int fd, const char *what, const ctr_stack_info *info, int64_t off,
                                int swapped, int64_t row0, int64_t nrows, void *buf) {
  const size_t es = ctr_dtype_size(info->dtype), row = (size_t)info->width * es;
  CTR_CHECK(ctr__pread_full(fd, buf, row * (size_t)nrows, off + row0 * (int64_t)row, what));
  if (swapped) ctr__byteswap(buf, es, (size_t)info->width * (size_t)nrows);
  return CTR_OK;
}

/* Rows [row0, row0 + nrows) from the strips or tiles (th rows each) that
 * hold them: each decoded once into `unit`. */
ctr_status ctr__tiff_read_page_rows(TIFF *tif, const char *what, const ctr_stack_info *info,
                                    int64_t row0, int64_t nrows, void *buf) {
  ctr_status st = CTR_OK;
  tiff_begin();
  const size_t es = ctr_dtype_size(info->dtype), row = (size_t)info->width * es;
  const uint32_t w = (uint32_t)info->width, h = (uint32_t)info->height;
  const int tiled = TIFFIsTiled(tif);
  uint32_t tw = w, th = 0;
  if (tiled) {
    if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &th) ||
        !tw || !th)
      return tiff_fail(CTR_E_FORMAT, "%s is tiled but has no tile size", what);
  } else {
    th = rows_per_strip(tif, h);
    if (TIFFNumberOfStrips(tif) < (h + th - 1) / th)
      return tiff_fail(CTR_E_FORMAT, "%s has %u strips, expected %u for %u rows of %u", what,
                       TIFFNumberOfStrips(tif), (h + th - 1) / th, h, th);
  }
  const tmsize_t unit_bytes = tiled ? TIFFTileSize(tif) : TIFFStripSize(tif);
  if (unit_bytes <= 0 || (uint64_t)unit_bytes < (uint64_t)th * (tiled ? (uint64_t)tw * es : row))
    return tiff_fail(CTR_E_FORMAT, "%s: a %s holds %lld bytes, expected %u rows", what,
                     tiled ? "tile" : "strip", (long long)unit_bytes, th);
  unsigned char *unit = ctr__malloc((size_t)unit_bytes, "a TIFF strip or tile");
  if (!unit) return CTR_E_OUT_OF_MEMORY;
  unsigned char *dst = buf;
  const uint32_t y_first = (uint32_t)row0 / th * th;
  for (uint32_t y0 = y_first; y0 < (uint32_t)(row0 + nrows); y0 += th) {
    const uint32_t rows = th < h - y0 ? th : h - y0;
    /* the unit's rows that the block wants */
    const uint32_t a = (uint32_t)row0 > y0 ? (uint32_t)row0 - y0 : 0;
    const uint32_t b = (uint32_t)(row0 + nrows) - y0 < rows ? (uint32_t)(row0 + nrows) - y0 : rows;
    for (uint32_t x0 = 0; x0 < w; x0 += tw) {
      if (tiled) {
        if (TIFFReadTile(tif, unit, x0, y0, 0, 0) < 0) {
          st = tiff_fail(CTR_E_FORMAT, "cannot decode the tile at (%u, %u) of %s", x0, y0, what);
          goto cleanup;
        }
      } else {
        const tmsize_t want = (tmsize_t)(rows * row);
        const tmsize_t got = TIFFReadEncodedStrip(tif, y0 / th, unit, want);
        if (got < 0) {
          st = tiff_fail(CTR_E_FORMAT, "cannot decode strip %u of %s", y0 / th, what);
          goto cleanup;
        }
        if (got != want) {
          st = tiff_fail(CTR_E_SIZE_MISMATCH, "strip %u of %s holds %lld bytes, expected %lld",
                         y0 / th, what, (long long)got, (long long)want);
          goto cleanup;
        }
      }
      const uint32_t cols = tw < w - x0 ? tw : w - x0;
      const size_t pitch = tiled ? (size_t)tw * es : row;
      for (uint32_t r = a; r < b; r++)
        memcpy(dst + (size_t)(y0 + r - (uint32_t)row0) * row + (size_t)x0 * es,
               unit + (size_t)r * pitch, (size_t)cols * es);
    }
  }
cleanup:
  free(unit);
  return st;
}

ctr_status ctr__tiff_write_page(TIFF *tif, const char *what, const ctr_stack_info *info,
                                int64_t page, int64_t npages, const void *buf) {
  const size_t es = ctr_dtype_size(info->dtype), row = (size_t)info->width * es;
  const uint32_t h = (uint32_t)info->height;
  /* Strips of about 256 KiB: few enough for small directories, small enough
   * for readers that decode a strip at a time. */
  uint32_t rps = (uint32_t)((256u << 10) / row);
  if (rps < 1) rps = 1;
  if (rps > h) rps = h;
  tiff_begin();
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)info->width);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(es * 8));
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)1);
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, (uint16_t)(info->dtype == CTR_DTYPE_UINT16
                                                         ? SAMPLEFORMAT_UINT
                                                         : SAMPLEFORMAT_IEEEFP));
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, (uint16_t)PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, (uint16_t)COMPRESSION_NONE);
  TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rps);
  if (npages > 1) {
    TIFFSetField(tif, TIFFTAG_SUBFILETYPE, (uint32_t)FILETYPE_PAGE);
    if (npages <= 65535) TIFFSetField(tif, TIFFTAG_PAGENUMBER, (uint16_t)page, (uint16_t)npages);
  }
  if (info->spacing[0] > 0 && info->spacing[1] > 0) {
    TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, (uint16_t)RESUNIT_CENTIMETER);
    TIFFSetField(tif, TIFFTAG_XRESOLUTION, 10.0 / info->spacing[0]);
    TIFFSetField(tif, TIFFTAG_YRESOLUTION, 10.0 / info->spacing[1]);
  }
  const unsigned char *src = buf;
  errno = 0;
  for (uint32_t s = 0, y = 0; y < h; s++, y += rps) {
    const uint32_t rows = rps < h - y ? rps : h - y;
    /* The cast drops const only: with native byte order and no compression
     * libtiff does not modify the caller's buffer. */
    if (TIFFWriteEncodedStrip(tif, s, (void *)(src + (size_t)y * row), (tmsize_t)(rows * row)) <
        0) {
      int e = errno;
      return tiff_fail(CTR_E_IO, "cannot write %s (%s)", what, e ? strerror(e) : "?");
    }
  }
  if (!TIFFWriteDirectory(tif)) {
    int e = errno;
    return tiff_fail(CTR_E_IO, "cannot write the directory of %s (%s)", what,
                     e ? strerror(e) : "?");
  }
  return CTR_OK;
}

/* ---- Multi-page reader -------------------------------------------------- */

typedef struct tiff_in {
  TIFF *tif;
  uint64_t *dir_offsets; /* one per page, for direct seeks */
  int64_t *data_offsets; /* one per page: ctr__tiff_page_data_offset (-1: decode) */
  int swapped;           /* byte order of the file differs from the host's */
  int64_t row_block;     /* the largest ctr__tiff_page_row_block of the pages */
  int64_t current;       /* page whose directory is loaded */
} tiff_in;

static void tiff_close(ctr_stack_reader *r) {
  tiff_in *in = r->impl;
  if (!in) return;
  if (in->tif) TIFFClose(in->tif);
  free(in->dir_offsets);
  free(in->data_offsets);
  free(in);
  r->impl = NULL;
}

/* Loads page `page`'s directory unless it is the current one. */
static ctr_status tiff_seek(tiff_in *in, int64_t page, const char *what) {
  if (page == in->current) return CTR_OK;
  tiff_begin();
  in->current = -1;
  if (!TIFFSetSubDirectory(in->tif, in->dir_offsets[page]))
    return tiff_fail(CTR_E_FORMAT, "cannot read the directory of %s", what);
  in->current = page;
  return CTR_OK;
}

/* Rows of pages [first, first + n): one pread per page stored uncompressed
 * in order (the offsets found at open), the strips or tiles that hold the
 * rows decoded otherwise. */
static ctr_status tiff_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                                 int64_t nrows, void *buf) {
  tiff_in *in = r->impl;
  const size_t block = (size_t)nrows * (size_t)r->info.width * ctr_dtype_size(r->info.dtype);
  char what[4200];
  for (int64_t i = 0; i < n; i++) {
    const int64_t page = first + i;
    char *dst = (char *)buf + (size_t)i * block;
    snprintf(what, sizeof what, "page %lld of '%s'", (long long)page, r->path);
    if (in->data_offsets[page] >= 0) {
      CTR_CHECK(ctr__tiff_pread_rows(TIFFFileno(in->tif), r->path, &r->info,
                                     in->data_offsets[page], in->swapped, row0, nrows, dst));
      continue;
    }
    CTR_CHECK(tiff_seek(in, page, what));
    ctr_stack_info pi;
    CTR_CHECK(ctr__tiff_page_info(in->tif, what, &pi));
    CTR_CHECK(ctr__tiff_check_like(&pi, &r->info, what, "page 0"));
    CTR_CHECK(ctr__tiff_read_page_rows(in->tif, what, &r->info, row0, nrows, dst));
  }
  return CTR_OK;
}

static int64_t tiff_row_block(const ctr_stack_reader *r) {
  return ((const tiff_in *)r->impl)->row_block;
}

static ctr_status tiff_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  tiff_in *in = r->impl;
  const size_t img = ctr__image_bytes(&r->info);
  char what[4200];
  for (int64_t i = 0; i < n; i++) {
    const int64_t page = first + i;
    snprintf(what, sizeof what, "page %lld of '%s'", (long long)page, r->path);
    CTR_CHECK(tiff_seek(in, page, what));
    ctr_stack_info pi;
    CTR_CHECK(ctr__tiff_page_info(in->tif, what, &pi));
    CTR_CHECK(ctr__tiff_check_like(&pi, &r->info, what, "page 0"));
    CTR_CHECK(ctr__tiff_read_page(in->tif, what, &r->info, (char *)buf + (size_t)i * img));
  }
  return CTR_OK;
}

static const ctr__reader_ops tiff_reader_ops = {tiff_read, tiff_close, tiff_read_rows,
                                                 tiff_row_block, NULL};

ctr_status ctr__tiff_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  ctr_status st = CTR_OK;
  tiff_in *in = ctr__calloc(1, sizeof *in, "TIFF reader");
  if (!in) return CTR_E_OUT_OF_MEMORY;
  r->impl = in;
  CTR_CHECK_GOTO(st, ctr__tiff_open_read(r->path, &in->tif));
  /* One pass over the directory chain checks every page and records where
   * each directory is, so later reads seek straight to any page. */
  char what[4200];
  int64_t cap = 0;
  for (int64_t page = 0;; page++) {
    snprintf(what, sizeof what, "page %lld of '%s'", (long long)page, r->path);
    ctr_stack_info pi;
    CTR_CHECK_GOTO(st, ctr__tiff_page_info(in->tif, what, &pi));
    if (page == 0) r->info = pi;
    CTR_CHECK_GOTO(st, ctr__tiff_check_like(&pi, &r->info, what, "page 0"));
    if (page == cap) {
      cap = cap ? 2 * cap : 64;
      uint64_t *grown = realloc(in->dir_offsets, (size_t)cap * sizeof *grown);
      if (grown) in->dir_offsets = grown;
      int64_t *data = grown ? realloc(in->data_offsets, (size_t)cap * sizeof *data) : NULL;
      if (!grown || !data)
        CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot list the pages of '%s'", r->path);
      in->data_offsets = data;
    }
    in->dir_offsets[page] = TIFFCurrentDirOffset(in->tif);
    in->data_offsets[page] = ctr__tiff_page_data_offset(in->tif, &r->info, &in->swapped);
    const int64_t rb = ctr__tiff_page_row_block(in->tif, &r->info);
    if (rb > in->row_block) in->row_block = rb;
    in->current = page;
    r->info.count = page + 1;
    if (TIFFLastDirectory(in->tif)) break;
    tiff_begin();
    if (!TIFFReadDirectory(in->tif)) {
      st = tiff_fail(CTR_E_FORMAT, "cannot read page %lld of '%s'", (long long)page + 1, r->path);
      goto cleanup;
    }
  }
  CTR_CHECK_GOTO(st, ctr__stack_info_check(&r->info, r->path, CTR_E_FORMAT));
  r->ops = &tiff_reader_ops;
  return CTR_OK;
cleanup:
  tiff_close(r);
  return st;
}

/* ---- Multi-page writer -------------------------------------------------- */

typedef struct tiff_out {
  ctr__atomic_file file;
  TIFF *tif;
  int64_t next; /* pages must arrive in order */
} tiff_out;

static ctr_status tiff_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  tiff_out *o = w->impl;
  if (first != o->next)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "multi-page TIFF '%s' is written in order: expected image %lld next, got %lld "
             "(use a TIFF stack, raw or NRRD to write in any order)",
             w->path, (long long)o->next, (long long)first);
  const size_t img = ctr__image_bytes(&w->info);
  char what[4200];
  for (int64_t i = 0; i < n; i++, o->next++) {
    snprintf(what, sizeof what, "page %lld of '%s'", (long long)o->next, w->path);
    CTR_CHECK(ctr__tiff_write_page(o->tif, what, &w->info, o->next, w->info.count,
                                   (const char *)buf + (size_t)i * img));
  }
  return CTR_OK;
}

static void tiff_abort(ctr_stack_writer *w) {
  tiff_out *o = w->impl;
  if (o->tif) ctr__tiff_abandon(o->tif);
  ctr__atomic_discard(&o->file);
  free(o);
  w->impl = NULL;
}

static ctr_status tiff_commit(ctr_stack_writer *w) {
  tiff_out *o = w->impl;
  ctr_status st = ctr__tiff_finish(o->tif, w->path);
  o->tif = NULL;
  o->file.no_replace = !w->overwrite;
  if (st == CTR_OK) st = ctr__atomic_commit(&o->file);
  tiff_abort(w);
  return st;
}

/* Every page written so far is in the file: libtiff writes a page's data and
 * directory before ctr__tiff_write_page returns. */
static ctr_status tiff_flush(ctr_stack_writer *w) {
  tiff_out *o = w->impl;
  return ctr__atomic_sync(&o->file, 0);
}

/* A multi-page TIFF cannot be resumed (no suspend). */
static const ctr__writer_ops tiff_writer_ops = {tiff_write, tiff_commit, tiff_abort, tiff_flush,
                                                NULL,       NULL};

ctr_status ctr__tiff_create(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  CTR_CHECK(ctr__tiff_check_dims(&w->info, w->path));
  tiff_out *o = ctr__calloc(1, sizeof *o, "TIFF writer");
  if (!o) return CTR_E_OUT_OF_MEMORY;
  o->file = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  CTR_CHECK_GOTO(st, ctr__atomic_create(&o->file, w->path));
  CTR_CHECK_GOTO(st, ctr__tiff_open_write(&o->file,
                                          (int64_t)ctr__image_bytes(&w->info) * w->info.count,
                                          &o->tif));
  w->impl = o;
  w->ops = &tiff_writer_ops;
  return CTR_OK;
cleanup:
  ctr__atomic_discard(&o->file);
  free(o);
  return st;
}
