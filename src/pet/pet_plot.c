/* The CRC-versus-noise plot (Ha et al. 2013, Fig. 9) as a 640 x 480 RGB PNG: white
 * background, a framed plot area with grid lines, ticks with numeric labels,
 * the axis titles "noise (%)" and "CRC", an optional title, and a line
 * through the points in order with a marker on each. Labels use the 5 x 7
 * font of pet_font.c; the PNG goes to a temporary name and is renamed. */
#include "core/internal.h"
#include "io/io_internal.h"
#include "pet/pet_font.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PLOT_W 640
#define PLOT_H 480
/* The plot area (frame) inside the image. */
#define AREA_X0 92
#define AREA_X1 (PLOT_W - 24)
#define AREA_Y0 48
#define AREA_Y1 (PLOT_H - 72)
#define TICK_LEN 6
#define TEXT_SCALE 2
#define MARKER_RADIUS 4

static const uint8_t C_BLACK[3] = {0, 0, 0};
static const uint8_t C_GRID[3] = {225, 225, 225};
static const uint8_t C_LINE[3] = {31, 119, 180};
static const uint8_t C_MARK[3] = {12, 60, 120};

typedef struct canvas {
  uint8_t *px; /* PLOT_W x PLOT_H x RGB */
} canvas;

static void put(canvas *c, int x, int y, const uint8_t rgb[3]) {
  if (x < 0 || y < 0 || x >= PLOT_W || y >= PLOT_H) return;
  uint8_t *p = c->px + 3 * ((size_t)y * PLOT_W + (size_t)x);
  memcpy(p, rgb, 3);
}

static void hline(canvas *c, int x0, int x1, int y, const uint8_t rgb[3]) {
  for (int x = x0; x <= x1; x++) put(c, x, y, rgb);
}

static void vline(canvas *c, int x, int y0, int y1, const uint8_t rgb[3]) {
  for (int y = y0; y <= y1; y++) put(c, x, y, rgb);
}

/* A line `thick` pixels wide from (x0, y0) to (x1, y1), clipped to the
 * plot area (points outside it cannot happen: the axes enclose the data). */
static void line(canvas *c, double x0, double y0, double x1, double y1, int thick,
                 const uint8_t rgb[3]) {
  const double dx = x1 - x0, dy = y1 - y0;
  const int steps = (int)ceil(fmax(fabs(dx), fabs(dy))) + 1;
  for (int s = 0; s <= steps; s++) {
    const double t = (double)s / (double)steps;
    const int x = (int)lround(x0 + t * dx), y = (int)lround(y0 + t * dy);
    for (int b = 0; b < thick; b++)
      for (int a = 0; a < thick; a++) {
        const int px = x + a - thick / 2, py = y + b - thick / 2;
        if (px >= AREA_X0 && px <= AREA_X1 && py >= AREA_Y0 && py <= AREA_Y1) put(c, px, py, rgb);
      }
  }
}

static void disc(canvas *c, double cx, double cy, int r, const uint8_t rgb[3]) {
  const int x0 = (int)lround(cx), y0 = (int)lround(cy);
  for (int y = -r; y <= r; y++)
    for (int x = -r; x <= r; x++)
      if (x * x + y * y <= r * r + r) put(c, x0 + x, y0 + y, rgb);
}

/* ---- Axes ------------------------------------------------------------------ */

typedef struct axis {
  double lo, hi, step; /* range (multiples of step) and tick spacing */
  int decimals;        /* of the tick labels */
} axis;

/* 1, 2 or 5 times a power of ten, near `raw`. */
static double nice_step(double raw, int *decimals) {
  const double e = floor(log10(raw)), base = pow(10.0, e), f = raw / base;
  const double m = f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0;
  const double step = m * base;
  const int d = -(int)floor(log10(step) + 1e-9);
  *decimals = d > 0 ? d : 0;
  return step;
}

/* Range of the values v[0..n) padded by 5 % and widened to whole ticks,
 * about five of them. */
static void make_axis(const double *v, int64_t n, double scale, axis *a) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    lo = fmin(lo, v[i] * scale);
    hi = fmax(hi, v[i] * scale);
  }
  double span = hi - lo;
  if (!(span > 1e-12 * fmax(1.0, fmax(fabs(lo), fabs(hi))))) {
    /* One value (or all equal): a window around it. */
    span = fmax(0.2 * fabs(hi), 1e-3);
    lo -= 0.5 * span;
    hi += 0.5 * span;
  }
  lo -= 0.05 * span;
  hi += 0.05 * span;
  a->step = nice_step((hi - lo) / 5.0, &a->decimals);
  a->lo = floor(lo / a->step) * a->step;
  a->hi = ceil(hi / a->step) * a->step;
  if (a->hi <= a->lo) a->hi = a->lo + a->step;
}

static double map_x(const axis *a, double v) {
  return AREA_X0 + (v - a->lo) / (a->hi - a->lo) * (double)(AREA_X1 - AREA_X0);
}

static double map_y(const axis *a, double v) {
  return AREA_Y1 - (v - a->lo) / (a->hi - a->lo) * (double)(AREA_Y1 - AREA_Y0);
}

static void tick_label(const axis *a, double v, char *buf, size_t n) {
  if (fabs(v) < 1e-9 * a->step) v = 0.0; /* no "-0.0" */
  snprintf(buf, n, "%.*f", a->decimals, v);
}

static void draw_axes(canvas *c, const axis *ax, const axis *ay) {
  const int th = CTR__FONT_H * TEXT_SCALE;
  char buf[64];
  const int nx = (int)lround((ax->hi - ax->lo) / ax->step);
  const int ny = (int)lround((ay->hi - ay->lo) / ay->step);
  int widest = 0;
  for (int i = 0; i <= nx; i++) {
    const double v = ax->lo + i * ax->step;
    const int x = (int)lround(map_x(ax, v));
    if (i > 0 && i < nx) vline(c, x, AREA_Y0 + 1, AREA_Y1 - 1, C_GRID);
    vline(c, x, AREA_Y1, AREA_Y1 + TICK_LEN, C_BLACK);
    tick_label(ax, v, buf, sizeof buf);
    const int w = ctr__font_text_width(buf, TEXT_SCALE);
    int lx = x - w / 2;
    if (lx + w > PLOT_W - 2) lx = PLOT_W - 2 - w; /* the last label stays in the image */
    ctr__font_draw(c->px, PLOT_W, PLOT_H, lx, AREA_Y1 + TICK_LEN + 4, buf, TEXT_SCALE, C_BLACK,
                   0);
  }
  for (int i = 0; i <= ny; i++) {
    const double v = ay->lo + i * ay->step;
    const int y = (int)lround(map_y(ay, v));
    if (i > 0 && i < ny) hline(c, AREA_X0 + 1, AREA_X1 - 1, y, C_GRID);
    hline(c, AREA_X0 - TICK_LEN, AREA_X0, y, C_BLACK);
    tick_label(ay, v, buf, sizeof buf);
    const int w = ctr__font_text_width(buf, TEXT_SCALE);
    if (w > widest) widest = w;
    ctr__font_draw(c->px, PLOT_W, PLOT_H, AREA_X0 - TICK_LEN - 4 - w, y - th / 2, buf,
                   TEXT_SCALE, C_BLACK, 0);
  }
  /* The frame. */
  hline(c, AREA_X0, AREA_X1, AREA_Y0, C_BLACK);
  hline(c, AREA_X0, AREA_X1, AREA_Y1, C_BLACK);
  vline(c, AREA_X0, AREA_Y0, AREA_Y1, C_BLACK);
  vline(c, AREA_X1, AREA_Y0, AREA_Y1, C_BLACK);
  /* Axis titles: below the x labels; left of the y labels, reading upwards. */
  const char *xt = "noise (%)", *yt = "CRC";
  int w = ctr__font_text_width(xt, TEXT_SCALE);
  ctr__font_draw(c->px, PLOT_W, PLOT_H, (AREA_X0 + AREA_X1) / 2 - w / 2,
                 AREA_Y1 + TICK_LEN + 4 + th + 14, xt, TEXT_SCALE, C_BLACK, 0);
  w = ctr__font_text_width(yt, TEXT_SCALE);
  int x = AREA_X0 - TICK_LEN - 4 - widest - 10 - th;
  if (x < 4) x = 4;
  ctr__font_draw(c->px, PLOT_W, PLOT_H, x, (AREA_Y0 + AREA_Y1) / 2 - w / 2, yt, TEXT_SCALE,
                 C_BLACK, 1);
}

static void draw_title(canvas *c, const char *title) {
  if (!title || !*title) return;
  int scale = TEXT_SCALE, w = ctr__font_text_width(title, scale);
  if (w > PLOT_W - 16) {
    scale = 1;
    w = ctr__font_text_width(title, scale);
  }
  int x = PLOT_W / 2 - w / 2;
  if (x < 8) x = 8; /* a title too long even at scale 1 is cut on the right */
  ctr__font_draw(c->px, PLOT_W, PLOT_H, x, (AREA_Y0 - CTR__FONT_H * scale) / 2, title, scale,
                 C_BLACK, 0);
}

/* ---- Entry point ----------------------------------------------------------- */

ctr_status ctr_pet_plot_crc_noise(const char *path, const double *noise, const double *crc,
                                  int64_t n, const char *title) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_plot_crc_noise: empty path");
  if (!noise || !crc)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': %s is NULL", path, !noise ? "noise" : "crc");
  if (n < 1 || n > 1000000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': %lld points: expected 1 .. 1000000", path,
             (long long)n);
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(noise[i]) || !isfinite(crc[i]) || fabs(noise[i]) > 1e12 || fabs(crc[i]) > 1e12)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "plot '%s': point %lld (noise %g, crc %g): expected finite values of magnitude "
               "<= 1e12",
               path, (long long)i, noise[i], crc[i]);
  canvas c;
  c.px = ctr__malloc((size_t)PLOT_W * PLOT_H * 3, "plot pixels");
  if (!c.px) return CTR_E_OUT_OF_MEMORY;
  memset(c.px, 255, (size_t)PLOT_W * PLOT_H * 3);
  /* noise is a relative standard deviation (ctr_pet_metrics.noise), shown in %. */
  axis ax, ay;
  make_axis(noise, n, 100.0, &ax);
  make_axis(crc, n, 1.0, &ay);
  draw_axes(&c, &ax, &ay);
  draw_title(&c, title);
  for (int64_t i = 1; i < n; i++)
    line(&c, map_x(&ax, 100.0 * noise[i - 1]), map_y(&ay, crc[i - 1]), map_x(&ax, 100.0 * noise[i]),
         map_y(&ay, crc[i]), 2, C_LINE);
  for (int64_t i = 0; i < n; i++)
    disc(&c, map_x(&ax, 100.0 * noise[i]), map_y(&ay, crc[i]), MARKER_RADIUS, C_MARK);
  ctr_status st = ctr__png_save(path, c.px, PLOT_W, PLOT_H, 3);
  free(c.px);
  return st;
}
