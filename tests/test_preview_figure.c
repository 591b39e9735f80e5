/* ctr_png_preview_figure (io.h): the previews as figures. Read back as RGB:
 * each plane's values where the layout puts them (enlarged by whole pixels,
 * y and z up), a thin plane stretched to a quarter of its long side, the
 * colourbar's ends at the window's, the scale bar there exactly when the
 * voxel size is given, the file rules of the bare previews (all three or
 * none, an existing one refused), and the options' errors. The layout's
 * numbers (margins, a 256-pixel long side) are those of src/plot/preview.c. */
#include "harness.h"
#include "scratch_dir.h"
#include "png_read.h"

#include <stdint.h>
#include <unistd.h>

enum { IMG_X = 8, IMG_Y = 8 + 14 + 10, BAR_GAP = 14, BAR_W = 18 };

static unsigned char *read_rgb(const char *path, unsigned *w, unsigned *h) {
  return png_read_as(path, PNG_FORMAT_RGB, w, h);
}

static const unsigned char *at(const unsigned char *px, unsigned w, unsigned x, unsigned y) {
  return px + 3 * ((size_t)y * w + x);
}

static int is_grey(const unsigned char *p, int g) { return p[0] == g && p[1] == g && p[2] == g; }

/* Pixels of the scale bar's yellow in rows y0 .. h-1. */
static int yellow_below(const unsigned char *px, unsigned w, unsigned h, unsigned y0) {
  int n = 0;
  for (unsigned y = y0; y < h; y++)
    for (unsigned x = 0; x < w; x++) n += at(px, w, x, y)[0] == 255 && at(px, w, x, y)[1] == 210;
  return n;
}

/* A 20 x 12 x 8 volume whose value is x + 20 y (z: 0): the planes' values
 * say where each pixel came from. */
static void test_layout_and_values(void) {
  enum { NX = 20, NY = 12, NZ = 8 };
  float xy[NX * NY], xz[NX * NZ], yz[NY * NZ];
  for (int y = 0; y < NY; y++)
    for (int x = 0; x < NX; x++) xy[y * NX + x] = (float)(x + 20 * y);
  for (int z = 0; z < NZ; z++) {
    for (int x = 0; x < NX; x++) xz[z * NX + x] = (float)(10 * z);
    for (int y = 0; y < NY; y++) yz[z * NY + y] = (float)(10 * z);
  }
  ctr_preview_options o = CTR_PREVIEW_OPTIONS_INIT;
  o.lo = 0.0f;
  o.hi = 255.0f; /* a value v shows as grey v */
  o.voxel[0] = o.voxel[1] = 0.5;
  o.voxel[2] = 2.0;
  CHECK_OK(ctr_png_preview_figure(P("f"), xy, xz, yz, NX, NY, NZ, &o));
  unsigned w = 0, h = 0;
  unsigned char *px = read_rgb(P("f_xy.png"), &w, &h);
  REQUIRE(px);
  /* 20 pixels enlarged x13 to 260 (at least 256), 12 rows to 156, y up */
  const int k = 13;
  CHECK(w > IMG_X + 20 * k + BAR_GAP + BAR_W && h > IMG_Y + 12 * k);
  int bad = 0;
  for (int y = 0; y < NY; y++)
    for (int x = 0; x < NX; x++) {
      const unsigned c = IMG_X + x * k + k / 2, r = IMG_Y + (NY - 1 - y) * k + k / 2;
      bad += !is_grey(at(px, w, c, r), x + 20 * y);
      bad += !is_grey(at(px, w, IMG_X + x * k, IMG_Y + (NY - 1 - y) * k), x + 20 * y);
    }
  CHECK_MSG(bad == 0, "%d pixels of the enlarged xy plane differ", bad);
  /* the colourbar: the window's top (255) at the image's top, 0 at its bottom */
  const unsigned bar = IMG_X + 20 * k + BAR_GAP + BAR_W / 2;
  CHECK(is_grey(at(px, w, bar, IMG_Y), 255) && is_grey(at(px, w, bar, IMG_Y + 12 * k - 1), 0));
  CHECK(yellow_below(px, w, h, IMG_Y + 12 * k) > 50); /* the scale bar */
  CHECK(yellow_below(px, w, h, 0) == yellow_below(px, w, h, IMG_Y + 12 * k));
  free(px);
  /* xz: 20 x 8 (a side of 8 >= 20 / 4: not thin), z up: the last slice on top */
  px = read_rgb(P("f_xz.png"), &w, &h);
  REQUIRE(px);
  CHECK(is_grey(at(px, w, IMG_X + 3, IMG_Y + 3), 70) &&
        is_grey(at(px, w, IMG_X + 3, IMG_Y + 8 * k - 1), 0));
  free(px);
  /* an existing figure is refused, all three kept */
  CHECK_FAILS(ctr_png_preview_figure(P("f"), xy, xz, yz, NX, NY, NZ, &o), CTR_E_INVALID_ARGUMENT,
              "f_xy.png");
  o.overwrite = 1;
  CHECK_OK(ctr_png_preview_figure(P("f"), xy, xz, yz, NX, NY, NZ, &o));
  CHECK(count_temporaries() == 0);
}

/* 64 x 64 x 4: xz and yz are 64 x 4, enlarged x4 to 256 x 16 and stretched
 * x4 more in z to 256 x 64, a quarter of the long side; without a voxel
 * size, no scale bar. NULL options: the defaults (automatic window). */
static void test_thin_stack(void) {
  enum { N = 64, NZ = 4 };
  static float xy[N * N], xz[N * NZ], yz[N * NZ];
  for (int i = 0; i < N * NZ; i++) xz[i] = yz[i] = (float)(i / N); /* z */
  CHECK_OK(ctr_png_preview_figure(P("thin"), xy, xz, yz, N, N, NZ, NULL));
  unsigned w = 0, h = 0;
  unsigned char *px = read_rgb(P("thin_xz.png"), &w, &h);
  REQUIRE(px);
  /* rows IMG_Y .. IMG_Y + 63: z = 3 (white, the window's top) in the first 16 */
  CHECK(is_grey(at(px, w, IMG_X, IMG_Y), 255) && is_grey(at(px, w, IMG_X + 255, IMG_Y + 15), 255));
  CHECK(!is_grey(at(px, w, IMG_X, IMG_Y + 16), 255));
  CHECK(is_grey(at(px, w, IMG_X, IMG_Y + 63), 0) && !is_grey(at(px, w, IMG_X, IMG_Y + 64), 0));
  CHECK(yellow_below(px, w, h, 0) == 0);
  free(px);
}

static void test_errors(void) {
  float v[8] = {0};
  ctr_preview_options o = CTR_PREVIEW_OPTIONS_INIT;
  o.voxel[0] = 1.0; /* y and z unknown */
  CHECK_FAILS(ctr_png_preview_figure(P("e"), v, v, v, 2, 2, 2, &o), CTR_E_INVALID_ARGUMENT,
              "voxel size 1 x 0 x 0 mm: expected all three > 0");
  o = (ctr_preview_options)CTR_PREVIEW_OPTIONS_INIT;
  o.lo = 2.0f;
  o.hi = 1.0f;
  CHECK_FAILS(ctr_png_preview_figure(P("e"), v, v, v, 2, 2, 2, &o), CTR_E_INVALID_ARGUMENT,
              "lo <= hi");
  CHECK_FAILS(ctr_png_preview_figure(P("e"), v, NULL, v, 2, 2, 2, NULL), CTR_E_INVALID_ARGUMENT,
              "a plane is NULL");
  CHECK_FAILS(ctr_png_preview_figure(P("e"), v, v, v, 2, 0, 2, NULL), CTR_E_INVALID_ARGUMENT,
              "expected 1 .. 1048576");
  o = (ctr_preview_options)CTR_PREVIEW_OPTIONS_INIT;
  o.version = 2;
  CHECK_FAILS(ctr_png_preview_figure(P("e"), v, v, v, 2, 2, 2, &o), CTR_E_INVALID_ARGUMENT,
              "ctr_preview_options versions 1 to 1");
  CHECK_FAILS(ctr_png_preview_figure(P("nodir/e"), v, v, v, 2, 2, 2, NULL), CTR_E_IO, "nodir");
  CHECK(access(P("e_xy.png"), F_OK) != 0 && count_temporaries() == 0);
}

int main(void) {
  if (!scratch_open("ctr_test_preview_figure")) return 1;
  test_layout_and_values();
  test_thin_stack();
  test_errors();
  scratch_close();
  return th_finish("test_preview_figure");
}
