/* Line plots as 640 x 480 RGB PNGs (plot/plot.h): white background, a framed
 * plot area with grid lines, ticks with numeric labels (on a logarithmic
 * axis decades, and 2 and 5 between them over up to four decades), the
 * axis titles, an optional title, lines through each
 * series' points in order with optional markers, and a legend of the
 * labelled series in the corner where it hides the least. Labels use the 5 x 7 font of font.c; the PNG goes to a
 * temporary name and is renamed. */
#include "io/io_internal.h"
#include "plot/plot.h"

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
#define LOG_LABELLED 4 /* decades a log axis may span and still label 2 and 5 */

static const uint8_t C_BLACK[3] = {0, 0, 0};
static const uint8_t C_GRID[3] = {225, 225, 225};
static const uint8_t C_WHITE[3] = {255, 255, 255};
static const uint8_t C_MINOR[3] = {242, 242, 242};

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
  double lo, hi, step; /* range (multiples of step) and tick spacing; log10 for log axes */
  int decimals;        /* of the tick labels */
  int log;             /* logarithmic: ticks at decades, labelled 1e<k> */
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

/* Range of the values of every series (x or y, times scale; log10 of them
 * for a logarithmic axis) padded by 5 % and widened to whole ticks, about
 * five of them; a logarithmic axis spans whole decades. */
static void make_axis(const ctr__plot_series *s, int ns, int use_y, double scale, int log,
                      axis *a) {
  double lo = INFINITY, hi = -INFINITY;
  for (int k = 0; k < ns; k++) {
    const double *v = use_y ? s[k].y : s[k].x;
    for (int64_t i = 0; i < s[k].n; i++) {
      const double t = log ? log10(v[i]) : v[i] * scale;
      lo = fmin(lo, t);
      hi = fmax(hi, t);
    }
  }
  a->log = log;
  if (log) {
    a->lo = floor(lo);
    a->hi = ceil(hi);
    if (a->hi <= a->lo) a->hi = a->lo + 1;
    a->step = ceil((a->hi - a->lo) / 6.0);
    a->hi = a->lo + a->step * ceil((a->hi - a->lo) / a->step);
    a->decimals = 0;
    return;
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

/* m x 10^e on a logarithmic axis: plain (0.002, 50) for e in -4 .. 3, else
 * "2e-7". */
static void log_label(int m, int e, char *buf, size_t n) {
  if (e >= -4 && e <= 3) snprintf(buf, n, "%g", m * pow(10.0, e));
  else snprintf(buf, n, "%de%d", m, e);
}

static void tick_label(const axis *a, double v, char *buf, size_t n) {
  if (a->log) {
    log_label(1, (int)lround(v), buf, n);
    return;
  }
  if (fabs(v) < 1e-9 * a->step) v = 0.0; /* no "-0.0" */
  snprintf(buf, n, "%.*f", a->decimals, v);
}

static void draw_axes(canvas *c, const axis *ax, const axis *ay, const char *xt, const char *yt) {
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
  if (ay->log && ay->step == 1.0) /* minor grid lines at 2 .. 9 in each decade */
    for (double d = ay->lo; d < ay->hi; d += 1.0)
      for (int m = 2; m <= 9; m++)
        hline(c, AREA_X0 + 1, AREA_X1 - 1, (int)lround(map_y(ay, d + log10((double)m))), C_MINOR);
  /* up to LOG_LABELLED decades: 2 and 5 labelled too, with a short tick */
  if (ay->log && ay->step == 1.0 && ay->hi - ay->lo <= LOG_LABELLED)
    for (double d = ay->lo; d < ay->hi; d += 1.0)
      for (int m = 2; m <= 5; m += 3) {
        const int y = (int)lround(map_y(ay, d + log10((double)m)));
        hline(c, AREA_X0 - TICK_LEN / 2, AREA_X0, y, C_BLACK);
        log_label(m, (int)lround(d), buf, sizeof buf);
        const int w = ctr__font_text_width(buf, TEXT_SCALE);
        if (w > widest) widest = w;
        ctr__font_draw(c->px, PLOT_W, PLOT_H, AREA_X0 - TICK_LEN - 4 - w, y - th / 2, buf,
                       TEXT_SCALE, C_BLACK, 0);
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

static double value(const axis *a, double v, double scale) { return a->log ? log10(v) : v * scale; }

/* How many of the series' drawn pixels (each segment sampled every few
 * pixels, and the points) fall in the box [x0, x1] x [y0, y1]. */
static int64_t covered(const ctr__plot *p, const axis *ax, const axis *ay,
                       const ctr__plot_series *s, int ns, int x0, int y0, int x1, int y1) {
  int64_t n = 0;
  for (int k = 0; k < ns; k++)
    for (int64_t i = 0; i < s[k].n; i++) {
      const double xb = map_x(ax, value(ax, s[k].x[i], p->x_scale)),
                   yb = map_y(ay, value(ay, s[k].y[i], 1.0));
      const double xa = i ? map_x(ax, value(ax, s[k].x[i - 1], p->x_scale)) : xb,
                   ya = i ? map_y(ay, value(ay, s[k].y[i - 1], 1.0)) : yb;
      const int steps = (int)(fmax(fabs(xb - xa), fabs(yb - ya)) / 4.0) + 1;
      for (int t = 1; t <= steps; t++) {
        const double x = xa + (xb - xa) * t / steps, y = ya + (yb - ya) * t / steps;
        n += x >= x0 - MARKER_RADIUS && x <= x1 + MARKER_RADIUS && y >= y0 - MARKER_RADIUS &&
             y <= y1 + MARKER_RADIUS;
      }
    }
  return n;
}

/* The labelled series' colours and names in a framed box in the corner of
 * the plot area that hides the fewest of the lines (top right on a tie). */
static void draw_legend(canvas *c, const ctr__plot *p, const axis *ax, const axis *ay,
                        const ctr__plot_series *s, int ns) {
  const int th = CTR__FONT_H * TEXT_SCALE, row = th + 8, swatch = 22;
  int n = 0, widest = 0;
  for (int k = 0; k < ns; k++)
    if (s[k].label) {
      const int w = ctr__font_text_width(s[k].label, TEXT_SCALE);
      if (w > widest) widest = w;
      n++;
    }
  if (!n) return;
  const int bw = widest + swatch + 18, bh = n * row + 6;
  /* top right, top left, bottom right, bottom left */
  const int cx[4] = {AREA_X1 - 8 - bw, AREA_X0 + 8, AREA_X1 - 8 - bw, AREA_X0 + 8};
  const int cy[4] = {AREA_Y0 + 8, AREA_Y0 + 8, AREA_Y1 - 8 - bh, AREA_Y1 - 8 - bh};
  int best = 0;
  int64_t least = -1;
  for (int i = 0; i < 4; i++) {
    const int64_t hidden = covered(p, ax, ay, s, ns, cx[i], cy[i], cx[i] + bw, cy[i] + bh);
    if (least < 0 || hidden < least) {
      least = hidden;
      best = i;
    }
  }
  const int x0 = cx[best], x1 = x0 + bw, y0 = cy[best], y1 = y0 + bh;
  for (int y = y0; y <= y1; y++) hline(c, x0, x1, y, C_WHITE);
  hline(c, x0, x1, y0, C_BLACK);
  hline(c, x0, x1, y1, C_BLACK);
  vline(c, x0, y0, y1, C_BLACK);
  vline(c, x1, y0, y1, C_BLACK);
  int y = y0 + 6;
  for (int k = 0; k < ns; k++) {
    if (!s[k].label) continue;
    line(c, x0 + 6, y + th / 2, x0 + 6 + swatch, y + th / 2, 2, s[k].line_rgb);
    ctr__font_draw(c->px, PLOT_W, PLOT_H, x0 + swatch + 12, y, s[k].label, TEXT_SCALE, C_BLACK, 0);
    y += row;
  }
}

/* ---- Entry point ----------------------------------------------------------- */


ctr_status ctr__plot_png(const char *path, const ctr__plot *p, const ctr__plot_series *s, int ns,
                         int overwrite) {
  CTR_CHECK(ctr_file_check_output(path, overwrite)); /* before drawing */
  canvas c;
  c.px = ctr__malloc((size_t)PLOT_W * PLOT_H * 3, "plot pixels");
  if (!c.px) return CTR_E_OUT_OF_MEMORY;
  memset(c.px, 255, (size_t)PLOT_W * PLOT_H * 3);
  axis ax, ay;
  make_axis(s, ns, 0, p->x_scale, 0, &ax);
  if (p->x_from_zero && ax.lo < 0) ax.lo = 0;
  make_axis(s, ns, 1, 1.0, p->log_y, &ay);
  draw_axes(&c, &ax, &ay, p->x_title, p->y_title);
  draw_title(&c, p->title);
  for (int k = 0; k < ns; k++) {
    const double *x = s[k].x, *y = s[k].y;
    for (int64_t i = 1; i < s[k].n; i++)
      line(&c, map_x(&ax, value(&ax, x[i - 1], p->x_scale)), map_y(&ay, value(&ay, y[i - 1], 1.0)),
           map_x(&ax, value(&ax, x[i], p->x_scale)), map_y(&ay, value(&ay, y[i], 1.0)), 2,
           s[k].line_rgb);
    for (int64_t i = 0; s[k].markers && i < s[k].n; i++)
      disc(&c, map_x(&ax, value(&ax, x[i], p->x_scale)), map_y(&ay, value(&ay, y[i], 1.0)),
           MARKER_RADIUS, s[k].mark_rgb);
  }
  draw_legend(&c, p, &ax, &ay, s, ns);
  ctr_status st = ctr__png_save(path, c.px, PLOT_W, PLOT_H, 3, overwrite);
  free(c.px);
  return st;
}
