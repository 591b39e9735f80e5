/* 8-bit grey PNG previews through libpng, written atomically. */
#include "io/io_internal.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Percentiles come from at most this many evenly spaced samples, so a
 * preview of a huge volume neither copies nor sorts all of it. */
#define CTR__WINDOW_SAMPLES ((size_t)1 << 20)

/* ---- Window ------------------------------------------------------------- */

/* The 0.5 / 99.5 % percentiles of the finite values of v[0..n). */
ctr_status ctr__png_window(const float *v, size_t n, float *lo, float *hi) {
  const size_t step = n > CTR__WINDOW_SAMPLES ? (n + CTR__WINDOW_SAMPLES - 1) / CTR__WINDOW_SAMPLES
                                              : 1;
  float *s = ctr__malloc((n / step + 1) * sizeof *s, "preview window samples");
  if (!s) return CTR_E_OUT_OF_MEMORY;
  size_t m = 0;
  for (size_t i = 0; i < n; i += step)
    if (isfinite(v[i])) s[m++] = v[i];
  if (m == 0) {
    *lo = 0.0f;
    *hi = 1.0f;
  } else {
    const int64_t klo = (int64_t)floor(0.005 * (double)(m - 1));
    const int64_t khi = (int64_t)ceil(0.995 * (double)(m - 1));
    *hi = ctr__select_kth(s, (int64_t)m, khi);
    *lo = ctr__select_kth(s, khi + 1, klo); /* s[0..khi] holds the khi + 1 smallest */
  }
  free(s);
  return CTR_OK;
}

static ctr_status check_window(float lo, float hi, const char *what) {
  if (!isfinite(lo) || !isfinite(hi) || lo > hi)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s: window [%g, %g] must be finite with lo <= hi (lo == hi: automatic)", what,
             (double)lo, (double)hi);
  return CTR_OK;
}

/* ---- PNG encoding ------------------------------------------------------- */

typedef struct png_sink {
  int fd;
  int64_t offset;
  const char *path;
  ctr_status status;
} png_sink;

/* libpng must not print and its error handler must not return: record the
 * message, then unwind to png_encode's setjmp. */
static void on_png_error(png_structp png, png_const_charp msg) {
  png_sink *s = png_get_error_ptr(png);
  if (s->status == CTR_OK)
    s->status = ctr__error_set(CTR_E_INTERNAL, "libpng cannot write '%s': %s", s->path, msg);
  png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void on_png_write(png_structp png, png_bytep data, size_t n) {
  png_sink *s = png_get_io_ptr(png);
  ctr_status st = ctr__pwrite_full(s->fd, data, n, s->offset, s->path);
  if (st != CTR_OK) {
    s->status = st;
    png_error(png, "write failed");
  }
  s->offset += (int64_t)n;
}

static void on_png_flush(png_structp png) { (void)png; }

/* `sink` lives in the caller's frame: after longjmp only objects that were
 * not modified in this frame since setjmp are reliable. */
static ctr_status png_encode(png_sink *sink, const uint8_t *pix, uint32_t w, uint32_t h,
                             int channels, int fast) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, on_png_error, on_png_warning);
  if (!png) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot start the PNG '%s'", sink->path);
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, NULL);
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot start the PNG '%s'", sink->path);
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return sink->status;
  }
  png_set_write_fn(png, sink, on_png_write, on_png_flush);
  if (fast) { /* zlib's fastest level, no per-row filter search (the live previews') */
    png_set_compression_level(png, 1);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  }
  png_set_IHDR(png, info, w, h, 8, channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (uint32_t y = 0; y < h; y++) png_write_row(png, pix + (size_t)y * w * channels);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return CTR_OK;
}

static ctr_status png_save(const char *path, const uint8_t *pix, uint32_t w, uint32_t h,
                           int channels, int overwrite, int fast) {
  ctr__atomic_file f = CTR__ATOMIC_FILE_INIT;
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  CTR_CHECK(ctr__atomic_create(&f, path));
  f.no_replace = !overwrite;
  png_sink sink = {f.fd, 0, path, CTR_OK};
  ctr_status st = png_encode(&sink, pix, w, h, channels, fast);
  if (st == CTR_OK) st = ctr__atomic_commit(&f);
  ctr__atomic_discard(&f);
  return st;
}

ctr_status ctr__png_save(const char *path, const uint8_t *pix, uint32_t w, uint32_t h,
                         int channels, int overwrite) {
  return png_save(path, pix, w, h, channels, overwrite, 0);
}

/* ---- Views -------------------------------------------------------------- */

/* Writes the w x h view whose pixel (c, r) is data[base + c * sx + r * sy]
 * (negative sy flips vertically), mapping [lo, hi] to 0..255. */
static ctr_status write_view(const char *path, const float *data, int64_t base, int64_t sx,
                             int64_t sy, int64_t w, int64_t h, float lo, float hi, int overwrite,
                             int fast) {
  if (w > (int64_t)PNG_UINT_31_MAX || h > (int64_t)PNG_UINT_31_MAX)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PNG '%s': %lld x %lld exceeds the PNG limit", path,
             (long long)w, (long long)h);
  uint8_t *pix = ctr__malloc((size_t)w * (size_t)h, "PNG pixels");
  if (!pix) return CTR_E_OUT_OF_MEMORY;
  /* A constant image (hi == lo) maps to black instead of dividing by 0. */
  const double scale = hi > lo ? 255.0 / ((double)hi - (double)lo) : 0.0;
  for (int64_t r = 0; r < h; r++)
    for (int64_t c = 0; c < w; c++) {
      const float v = data[base + c * sx + r * sy];
      const double t = ((double)v - (double)lo) * scale;
      /* !(t > 0) also sends NaN to black. */
      pix[r * w + c] = !(t > 0.0) ? 0 : t >= 255.0 ? 255 : (uint8_t)(t + 0.5);
    }
  ctr_status st = png_save(path, pix, (uint32_t)w, (uint32_t)h, 1, overwrite, fast);
  free(pix);
  return st;
}

static ctr_status write_gray(const char *path, const float *img, int64_t width, int64_t height,
                             float lo, float hi, int overwrite, int fast) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_png_write_gray: empty path");
  if (!img) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PNG '%s': image is NULL", path);
  if (width <= 0 || height <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PNG '%s': size must be > 0, got %lld x %lld", path,
             (long long)width, (long long)height);
  CTR_CHECK(check_window(lo, hi, path));
  if (lo == hi) CTR_CHECK(ctr__png_window(img, (size_t)width * (size_t)height, &lo, &hi));
  return write_view(path, img, 0, 1, width, width, height, lo, hi, overwrite, fast);
}

ctr_status ctr_png_write_gray(const char *path, const float *img, int64_t width, int64_t height,
                              float lo, float hi, int overwrite) {
  return write_gray(path, img, width, height, lo, hi, overwrite, 0);
}

ctr_status ctr__png_write_gray_fast(const char *path, const float *img, int64_t width,
                                    int64_t height) {
  return write_gray(path, img, width, height, 0, 0, 1, 1);
}

/* The three views of a preview, each "<prefix><suffix>". */
typedef struct view {
  const char *suffix;
  const float *data;
  int64_t base, sx, sy, w, h;
} view;

ctr_status ctr__png_save_three(const char *prefix, const char *const suffix[3],
                               ctr_status (*write)(void *user, int k, const char *path),
                               void *user, int overwrite) {
  ctr_status st = CTR_OK;
  char *path[3] = {NULL, NULL, NULL};
  int i = 0;
  for (int k = 0; k < 3; k++)
    if (!(path[k] = ctr__io_sprintf("%s%s", prefix, suffix[k]))) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
  for (int k = 0; k < 3; k++) CTR_CHECK_GOTO(st, ctr_file_check_output(path[k], overwrite));
  for (; i < 3; i++) CTR_CHECK_GOTO(st, write(user, i, path[i]));
cleanup:
  for (int k = 0; st != CTR_OK && !overwrite && k < i; k++) unlink(path[k]);
  for (int k = 0; k < 3; k++) free(path[k]);
  return st;
}

/* The three grey views of a bare preview (ctr__png_save_three's writer). */
typedef struct views_job {
  const view *v;
  float lo, hi;
  int overwrite;
} views_job;

static ctr_status write_one_view(void *user, int k, const char *path) {
  const views_job *j = user;
  const view *v = &j->v[k];
  return write_view(path, v->data, v->base, v->sx, v->sy, v->w, v->h, j->lo, j->hi, j->overwrite,
                    0);
}

static ctr_status write_views(const char *prefix, const view v[3], float lo, float hi,
                              int overwrite) {
  const char *const suffix[3] = {v[0].suffix, v[1].suffix, v[2].suffix};
  views_job j = {v, lo, hi, overwrite};
  return ctr__png_save_three(prefix, suffix, write_one_view, &j, overwrite);
}

ctr_status ctr_png_preview(const char *prefix, const float *vol, int64_t nx, int64_t ny,
                           int64_t nz, float lo, float hi, int overwrite) {
  if (!prefix || !*prefix) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_png_preview: empty prefix");
  if (!vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "preview '%s': volume is NULL", prefix);
  if (nx <= 0 || ny <= 0 || nz <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "preview '%s': size must be > 0, got %lld x %lld x %lld",
             prefix, (long long)nx, (long long)ny, (long long)nz);
  CTR_CHECK(check_window(lo, hi, prefix));
  const int64_t plane = nx * ny, top = (nz - 1) * plane;
  if (lo == hi) CTR_CHECK(ctr__png_window(vol, (size_t)plane * (size_t)nz, &lo, &hi));
  /* Central slices; in xz and yz, z points up (row 0 is the last slice). */
  const view views[3] = {
      {"_xy.png", vol, (nz / 2) * plane, 1, nx, nx, ny},
      {"_xz.png", vol, top + (ny / 2) * nx, 1, -plane, nx, nz},
      {"_yz.png", vol, top + nx / 2, nx, -plane, ny, nz},
  };
  return write_views(prefix, views, lo, hi, overwrite);
}

ctr_status ctr_png_preview_planes(const char *prefix, const float *xy, const float *xz,
                                  const float *yz, int64_t nx, int64_t ny, int64_t nz, float lo,
                                  float hi, int overwrite) {
  ctr_status st = CTR_OK;
  float *all = NULL;
  if (!prefix || !*prefix) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_png_preview_planes: empty prefix");
  if (!xy || !xz || !yz) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "preview '%s': a plane is NULL", prefix);
  if (nx <= 0 || ny <= 0 || nz <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "preview '%s': size must be > 0, got %lld x %lld x %lld",
             prefix, (long long)nx, (long long)ny, (long long)nz);
  CTR_CHECK(check_window(lo, hi, prefix));
  if (lo == hi) {
    const size_t a = (size_t)(nx * ny), b = (size_t)(nx * nz), c = (size_t)(ny * nz);
    all = ctr__malloc((a + b + c) * sizeof(float), "preview window");
    if (!all) return CTR_E_OUT_OF_MEMORY;
    memcpy(all, xy, a * sizeof(float));
    memcpy(all + a, xz, b * sizeof(float));
    memcpy(all + a + b, yz, c * sizeof(float));
    CTR_CHECK_GOTO(st, ctr__png_window(all, a + b + c, &lo, &hi));
  }
  {
    /* In xz and yz, z points up (row 0 is the last slice), as ctr_png_preview. */
    const view views[3] = {
        {"_xy.png", xy, 0, 1, nx, nx, ny},
        {"_xz.png", xz, (nz - 1) * nx, 1, -nx, nx, nz},
        {"_yz.png", yz, (nz - 1) * ny, 1, -ny, ny, nz},
    };
    st = write_views(prefix, views, lo, hi, overwrite);
  }
cleanup:
  free(all);
  return st;
}
