/* The previews as figures (ctr_png_preview_figure, io.h): each central plane
 * enlarged and, when thin, stretched by whole pixels (nearest neighbour),
 * under a caption, beside a grey colourbar with value labels and over a scale
 * bar in mm; RGB PNGs drawn with the 5 x 7 font of font.c, written as the
 * bare previews are (ctr__png_save_three). */
#include "io/io_internal.h"
#include "plot/plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FIG_LONG_SIDE 256 /* a plane is enlarged to at least this many pixels */
#define FIG_MAX_ZOOM 64
#define FIG_THIN 4        /* a side under 1/FIG_THIN of the other is stretched to it */
#define FIG_TEXT 2        /* font scale */
#define FIG_MARGIN 8
#define FIG_BAR_W 18      /* the colourbar's width */
#define FIG_GAP 14        /* between the image and the colourbar */

static const uint8_t C_PAPER[3] = {24, 24, 24};
static const uint8_t C_INK[3] = {235, 235, 235};
static const uint8_t C_SCALE[3] = {255, 210, 0}; /* the scale bar, seen on any grey */

/* One plane: w x h values, pixel (c, r) at data[base + c * sx + r * sy]
 * (rows top first), axes named h_axis (across) and v_axis (up), pitches in
 * mm (0: unknown), cut at `cut_axis` = cut. */
typedef struct fig_plane {
  const char *suffix;
  const float *data;
  int64_t base, sx, sy, w, h;
  char h_axis, v_axis, cut_axis;
  int64_t cut;
  double dh, dv;
} fig_plane;

/* How a plane is drawn: zoom per axis (whole pixels), the image's size. */
typedef struct fig_layout {
  int64_t kh, kv, stretch_h, stretch_v, img_w, img_h;
  int canvas_w, canvas_h, img_x, img_y, bar_x, nlabels, label_w;
  int scale_px;      /* the scale bar's length (0: none) */
  double scale_mm;
  double tick[8];    /* the labelled values: multiples of a 1, 2 or 5 step, or the window's ends */
  char caption[128], labels[8][32], scale_text[32];
} fig_layout;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* 1, 2 or 5 times a power of ten, at most x (> 0). */
static double nice_below(double x) {
  const double base = pow(10.0, floor(log10(x))), f = x / base;
  return (f >= 5.0 ? 5.0 : f >= 2.0 ? 2.0 : 1.0) * base;
}

static void layout(const fig_plane *p, float lo, float hi, const char *units, fig_layout *L) {
  const int64_t long_side = p->w > p->h ? p->w : p->h;
  int64_t k = long_side < FIG_LONG_SIDE ? ceil_div(FIG_LONG_SIDE, long_side) : 1;
  if (k > FIG_MAX_ZOOM) k = FIG_MAX_ZOOM;
  L->stretch_h = p->w * FIG_THIN < p->h ? ceil_div(p->h, FIG_THIN * p->w) : 1;
  L->stretch_v = p->h * FIG_THIN < p->w ? ceil_div(p->w, FIG_THIN * p->h) : 1;
  L->kh = k * L->stretch_h;
  L->kv = k * L->stretch_v;
  L->img_w = p->w * L->kh;
  L->img_h = p->h * L->kv;
  int n = snprintf(L->caption, sizeof L->caption, "%c%c, %c = %lld", p->h_axis, p->v_axis,
                   p->cut_axis, (long long)p->cut);
  if (L->stretch_h > 1 || L->stretch_v > 1)
    snprintf(L->caption + n, sizeof L->caption - (size_t)n, " (%c stretched x%lld)",
             L->stretch_v > 1 ? p->v_axis : p->h_axis,
             (long long)(L->stretch_v > 1 ? L->stretch_v : L->stretch_h));
  /* value labels down the colourbar: round values, as many as fit (at most
   * 6); a window too narrow for two round values gets its ends */
  const int th = CTR__FONT_H * FIG_TEXT;
  const int fit = (int)(L->img_h / (th + 6));
  const double span = (double)hi - (double)lo;
  L->nlabels = 0;
  const int most = fit < 6 ? fit : 6;
  double step = span > 0 ? nice_below(span / 6.0) : 0.0;
  for (int tries = 0; step > 0 && tries < 8; tries++) {
    const double first = ceil((double)lo / step - 1e-9), last = floor((double)hi / step + 1e-9);
    const int n = (int)(last - first) + 1;
    if (n > most) { /* the next step of 1, 2, 5, 10, ... */
      const double m = step / pow(10.0, floor(log10(step) + 1e-9));
      step *= m < 1.5 ? 2.0 : m < 3.5 ? 2.5 : 2.0;
      continue;
    }
    if (n < 2) break;
    const int d = (int)fmax(0.0, -floor(log10(step) + 1e-9));
    const int plain = step >= 1e-4 && fmax(fabs(lo), fabs(hi)) < 1e6;
    for (int i = 0; i < n; i++) {
      const double v = (first + i) * step;
      L->tick[i] = v;
      if (plain)
        snprintf(L->labels[i], sizeof L->labels[i], "%.*f", d, fabs(v) < 0.5 * step ? 0.0 : v);
      else
        snprintf(L->labels[i], sizeof L->labels[i], "%.3g", v);
    }
    L->nlabels = n;
    break;
  }
  if (L->nlabels < 2) { /* the window's ends */
    L->nlabels = 2;
    L->tick[0] = lo;
    L->tick[1] = hi;
    snprintf(L->labels[0], sizeof L->labels[0], "%.4g", (double)lo);
    snprintf(L->labels[1], sizeof L->labels[1], "%.4g", (double)hi);
  }
  L->label_w = units ? ctr__font_text_width(units, FIG_TEXT) : 0;
  for (int i = 0; i < L->nlabels; i++) {
    const int w = ctr__font_text_width(L->labels[i], FIG_TEXT);
    if (w > L->label_w) L->label_w = w;
  }
  /* the scale bar: a round length near a quarter of the image's width */
  L->scale_px = 0;
  if (p->dh > 0) {
    const double mm_per_px = p->dh / (double)L->kh;
    L->scale_mm = nice_below(mm_per_px * (double)L->img_w / 4.0);
    L->scale_px = (int)lround(L->scale_mm / mm_per_px);
    snprintf(L->scale_text, sizeof L->scale_text, "%g mm", L->scale_mm);
  }
  L->img_x = FIG_MARGIN;
  L->img_y = FIG_MARGIN + th + 10;
  L->bar_x = L->img_x + (int)L->img_w + FIG_GAP;
  int w = L->bar_x + FIG_BAR_W + 10 + L->label_w + FIG_MARGIN;
  const int cw = FIG_MARGIN * 2 + ctr__font_text_width(L->caption, FIG_TEXT);
  L->canvas_w = w > cw ? w : cw;
  L->canvas_h = L->img_y + (int)L->img_h + th / 2 + FIG_MARGIN;
  if (L->scale_px > 0 || units) L->canvas_h = L->img_y + (int)L->img_h + 12 + th + FIG_MARGIN;
}

static void fill(uint8_t *px, int cw, int x0, int y0, int x1, int y1, const uint8_t rgb[3]) {
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) memcpy(px + 3 * ((size_t)y * (size_t)cw + (size_t)x), rgb, 3);
}

static uint8_t grey(float v, float lo, float hi) {
  const double t = hi > lo ? ((double)v - (double)lo) * 255.0 / ((double)hi - (double)lo) : 0.0;
  return !(t > 0.0) ? 0 : t >= 255.0 ? 255 : (uint8_t)(t + 0.5); /* NaN: black */
}

static void draw(const fig_plane *p, float lo, float hi, const char *units, const fig_layout *L,
                 uint8_t *px) {
  const int cw = L->canvas_w, ch = L->canvas_h, th = CTR__FONT_H * FIG_TEXT;
  fill(px, cw, 0, 0, cw, ch, C_PAPER);
  ctr__font_draw(px, cw, ch, FIG_MARGIN, FIG_MARGIN, L->caption, FIG_TEXT, C_INK, 0);
  for (int64_t y = 0; y < L->img_h; y++)
    for (int64_t x = 0; x < L->img_w; x++) {
      const float v = p->data[p->base + (x / L->kh) * p->sx + (y / L->kv) * p->sy];
      const uint8_t g = grey(v, lo, hi), rgb[3] = {g, g, g};
      memcpy(px + 3 * ((size_t)(L->img_y + y) * (size_t)cw + (size_t)(L->img_x + x)), rgb, 3);
    }
  /* the colourbar: hi at the top, lo at the bottom, a tick and a value per label */
  for (int64_t y = 0; y < L->img_h; y++) {
    const float v = (float)((double)hi - ((double)hi - (double)lo) * (double)y /
                                             (double)(L->img_h > 1 ? L->img_h - 1 : 1));
    const uint8_t g = grey(v, lo, hi), rgb[3] = {g, g, g};
    fill(px, cw, L->bar_x, L->img_y + (int)y, L->bar_x + FIG_BAR_W, L->img_y + (int)y + 1, rgb);
  }
  for (int i = 0; i < L->nlabels; i++) {
    const double t = hi > lo ? ((double)hi - L->tick[i]) / ((double)hi - (double)lo) : (double)i;
    const int y = L->img_y + (int)lround((double)(L->img_h - 1) * t);
    fill(px, cw, L->bar_x + FIG_BAR_W, y, L->bar_x + FIG_BAR_W + 4, y + 1, C_INK);
    ctr__font_draw(px, cw, ch, L->bar_x + FIG_BAR_W + 10, y - th / 2, L->labels[i], FIG_TEXT,
                   C_INK, 0);
  }
  const int below = L->img_y + (int)L->img_h + 12;
  if (units) ctr__font_draw(px, cw, ch, L->bar_x, below, units, FIG_TEXT, C_INK, 0);
  if (L->scale_px > 0) { /* a bar with end ticks, its length beside it */
    const int y = below + th / 2;
    fill(px, cw, L->img_x, y - 1, L->img_x + L->scale_px, y + 2, C_SCALE);
    fill(px, cw, L->img_x, y - 5, L->img_x + 2, y + 6, C_SCALE);
    fill(px, cw, L->img_x + L->scale_px - 2, y - 5, L->img_x + L->scale_px, y + 6, C_SCALE);
    ctr__font_draw(px, cw, ch, L->img_x + L->scale_px + 8, below, L->scale_text, FIG_TEXT,
                   C_SCALE, 0);
  }
}

typedef struct fig_job {
  const fig_plane *planes;
  float lo, hi;
  const char *units;
  int overwrite;
} fig_job;

static ctr_status write_figure(void *user, int k, const char *path) {
  const fig_job *j = user;
  const fig_plane *p = &j->planes[k];
  fig_layout L;
  layout(p, j->lo, j->hi, j->units, &L);
  uint8_t *px = ctr__malloc((size_t)L.canvas_w * (size_t)L.canvas_h * 3, "preview figure");
  if (!px) return CTR_E_OUT_OF_MEMORY;
  draw(p, j->lo, j->hi, j->units, &L, px);
  ctr_status st = ctr__png_save(path, px, (uint32_t)L.canvas_w, (uint32_t)L.canvas_h, 3,
                                j->overwrite);
  free(px);
  return st;
}

static ctr_status check(const char *prefix, const float *xy, const float *xz, const float *yz,
                        int64_t nx, int64_t ny, int64_t nz, const ctr_preview_options *o) {
  if (!prefix || !*prefix) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_png_preview_figure: empty prefix");
  if (!xy || !xz || !yz) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "preview '%s': a plane is NULL", prefix);
  /* 1 << 20 pixels a side: the figure's pixel counts stay far inside int */
  if (nx <= 0 || ny <= 0 || nz <= 0 || nx > (1 << 20) || ny > (1 << 20) || nz > (1 << 20))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "preview '%s': size %lld x %lld x %lld: expected 1 .. 1048576 on each axis", prefix,
             (long long)nx, (long long)ny, (long long)nz);
  if (!isfinite(o->lo) || !isfinite(o->hi) || o->lo > o->hi)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "preview '%s': window [%g, %g] must be finite with lo <= hi (lo == hi: automatic)",
             prefix, (double)o->lo, (double)o->hi);
  const double *v = o->voxel;
  const int none = v[0] == 0 && v[1] == 0 && v[2] == 0;
  for (int i = 0; i < 3 && !none; i++)
    if (!(v[i] > 0 && v[i] < 1e9))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "preview '%s': voxel size %g x %g x %g mm: expected all three > 0 (or all 0: "
               "unknown)", prefix, v[0], v[1], v[2]);
  return CTR_OK;
}

ctr_status ctr_png_preview_figure(const char *prefix, const float *xy, const float *xz,
                                  const float *yz, int64_t nx, int64_t ny, int64_t nz,
                                  const ctr_preview_options *opts) {
  ctr_preview_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_preview_options, &o, opts));
  CTR_CHECK(check(prefix, xy, xz, yz, nx, ny, nz, &o));
  float lo = o.lo, hi = o.hi;
  if (lo == hi) { /* one window for the three planes */
    const size_t a = (size_t)(nx * ny), b = (size_t)(nx * nz), c = (size_t)(ny * nz);
    float *all = ctr__malloc((a + b + c) * sizeof(float), "preview window");
    if (!all) return CTR_E_OUT_OF_MEMORY;
    memcpy(all, xy, a * sizeof(float));
    memcpy(all + a, xz, b * sizeof(float));
    memcpy(all + a + b, yz, c * sizeof(float));
    ctr_status st = ctr__png_window(all, a + b + c, &lo, &hi);
    free(all);
    CTR_CHECK(st);
  }
  const double *v = o.voxel;
  /* rows top first: y up in xy, z up in xz and yz */
  const fig_plane planes[3] = {
      {"_xy.png", xy, (ny - 1) * nx, 1, -nx, nx, ny, 'x', 'y', 'z', nz / 2, v[0], v[1]},
      {"_xz.png", xz, (nz - 1) * nx, 1, -nx, nx, nz, 'x', 'z', 'y', ny / 2, v[0], v[2]},
      {"_yz.png", yz, (nz - 1) * ny, 1, -ny, ny, nz, 'y', 'z', 'x', nx / 2, v[1], v[2]},
  };
  const char *const suffix[3] = {planes[0].suffix, planes[1].suffix, planes[2].suffix};
  fig_job j = {planes, lo, hi, o.units, o.overwrite};
  return ctr__png_save_three(prefix, suffix, write_figure, &j, o.overwrite);
}
