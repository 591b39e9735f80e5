/* Line plots as PNG (line_plot.c: axes with ticks and labels, a title, lines
 * with optional markers, a legend, linear or logarithmic y) and the tiny
 * 5 x 7 bitmap font of their labels (font.c: digits, letters, the
 * punctuation of axis labels and titles). Used by the PET CRC-noise plot
 * and the iterative convergence plot. Not installed. */
#ifndef CTR_PLOT_PLOT_H
#define CTR_PLOT_PLOT_H

#include "core/internal.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTR__FONT_W 5       /* glyph cell, pixels */
#define CTR__FONT_H 7
#define CTR__FONT_ADVANCE 6 /* cell + one pixel of spacing */

/* The glyph of c: CTR__FONT_W x CTR__FONT_H characters, row by row from the
 * top, '#' for ink and '.' for paper. Characters without a glyph get '?'. */
const char *ctr__font_glyph(char c);

/* Width in pixels of s drawn at `scale` (no trailing spacing). */
int ctr__font_text_width(const char *s, int scale);

/* Draws s into a w x h RGB image (3 bytes per pixel, rows top to bottom),
 * each font pixel a scale x scale block of `rgb`, clipped to the image.
 * (x, y) is the top-left corner of the text's box. vertical: rotated 90
 * degrees counterclockwise (reading upwards); the box is then
 * CTR__FONT_H * scale wide and ctr__font_text_width(s, scale) tall. */
void ctr__font_draw(uint8_t *img, int w, int h, int x, int y, const char *s, int scale,
                    const uint8_t rgb[3], int vertical);

/* One line of a plot: n points (x[i], y[i]) joined in order, drawn in
 * line_rgb, with a marker in mark_rgb on each when markers is set; label
 * (may be NULL) goes into the legend. */
typedef struct ctr__plot_series {
  const double *x, *y;
  int64_t n;
  uint8_t line_rgb[3], mark_rgb[3];
  int markers;
  const char *label;
} ctr__plot_series;

/* A plot of 640 x 480 pixels: the axes span every series' points (x values
 * shown times x_scale; x_from_zero: the x axis starts at 0 or above);
 * log_y: a logarithmic y axis in decades (values must be > 0). title may be
 * NULL. */
typedef struct ctr__plot {
  const char *title, *x_title, *y_title;
  double x_scale;
  int log_y;
  int x_from_zero;
} ctr__plot;

/* Draws the plot into a PNG at path (a temporary name, renamed when
 * complete; an existing path is refused unless overwrite, as
 * ctr_stack_create). The caller has checked the values (finite; > 0 for
 * log_y). */
ctr_status ctr__plot_png(const char *path, const ctr__plot *p, const ctr__plot_series *s, int ns,
                         int overwrite);

#ifdef __cplusplus
}
#endif
#endif
