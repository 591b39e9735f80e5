/* A tiny 5 x 7 bitmap font for the labels of the PET plots (digits, letters,
 * the punctuation of axis labels and titles). Not installed. */
#ifndef CTR_PET_FONT_H
#define CTR_PET_FONT_H

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

#ifdef __cplusplus
}
#endif
#endif
