/* PET metrics (Ha et al. 2013, section 6.1) and the CRC-versus-noise plot: exact
 * CRC on images built so that every ROI pixel holds a known value, the
 * partial-volume CRC of voxelised phantoms against an independent
 * finely-sampled reference, background-only images, noise of known
 * standard deviation, errors, and the PNG read back with libpng. */
#include "harness.h"
#include "plot/plot.h"

#include <png.h>
#include <stdint.h>
#include <unistd.h>

static ctr_pet_params lattice(int64_t nx, int64_t ny, int64_t nz, double voxel) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = nx;
  p.ny = ny;
  p.nz = nz;
  p.voxel = voxel;
  return p;
}

/* Pixel centres (mm). */
static double px_x(const ctr_pet_params *p, int64_t i) {
  return ((double)i - 0.5 * (double)(p->nx - 1)) * p->voxel;
}
static double px_y(const ctr_pet_params *p, int64_t j) {
  return ((double)j - 0.5 * (double)(p->ny - 1)) * p->voxel;
}

/* The slice nearest to z, ties upwards (as documented in docs/pet.md). */
static int64_t ref_slice(const ctr_pet_params *p, double z) {
  return (int64_t)floor(z / p->voxel + 0.5 * (double)(p->nz - 1) + 0.5);
}

/* Independent reference: every pixel of the slice, weight = fraction of 64 x
 * 64 point samples with r_in <= r < r_out; weighted mean and (with sd)
 * the unbiased weighted standard deviation. */
#define REF_SS 64
static double ref_roi(const ctr_pet_params *p, const float *img, int64_t k, double x0, double y0,
                      double r_in, double r_out, double *sd) {
  double sw = 0, sw2 = 0, swf = 0, swff = 0;
  const float *s = img + k * p->nx * p->ny;
  for (int64_t j = 0; j < p->ny; j++)
    for (int64_t i = 0; i < p->nx; i++) {
      /* Pixels farther than a diagonal from the ROI cannot meet it. */
      if (hypot(px_x(p, i) - x0, px_y(p, j) - y0) > r_out + p->voxel) continue;
      int in = 0;
      for (int b = 0; b < REF_SS; b++)
        for (int a = 0; a < REF_SS; a++) {
          const double x = px_x(p, i) + ((a + 0.5) / REF_SS - 0.5) * p->voxel - x0;
          const double y = px_y(p, j) + ((b + 0.5) / REF_SS - 0.5) * p->voxel - y0;
          const double r2 = x * x + y * y;
          in += r2 >= r_in * r_in && r2 < r_out * r_out;
        }
      if (!in) continue;
      const double w = (double)in / (REF_SS * REF_SS), f = s[j * p->nx + i];
      sw += w;
      sw2 += w * w;
      swf += w * f;
      swff += w * f * f;
    }
  const double m = swf / sw;
  if (sd) *sd = sqrt(fmax(0.0, (swff - sw * m * m) / (sw - sw2 / sw)));
  return m;
}

static double ref_crc(const ctr_pet_params *p, const ctr_pet_phantom *ph, const float *img, int s) {
  const ctr_pet_sphere *sp = &ph->spheres[s];
  const int64_t k = ref_slice(p, sp->z);
  const double r = 0.5 * sp->diameter, ri = r + 7.0;
  const double ps = ref_roi(p, img, k, sp->x, sp->y, 0.0, r, NULL);
  const double pb = ref_roi(p, img, k, sp->x, sp->y, ri, ri + 8.0, NULL);
  return (ps - pb) / pb / (sp->activity / ph->background - 1.0);
}

/* Box-Muller from the harness's generator. */
static double gauss(void) {
  const double u = th_uniform(1e-12, 1.0), v = th_uniform(0.0, 1.0);
  return sqrt(-2.0 * log(u)) * cos(2.0 * 3.14159265358979323846 * v);
}

/* ---- Exact geometry ---------------------------------------------------------- */

/* Every pixel that meets a sphere's ROI holds the sphere's activity, every
 * pixel that meets its annulus the background (1), a ring just beyond the
 * annulus 2.5, other slices and the rest 1: CRC is 1 exactly when the ROI,
 * the annulus and the slice are the documented ones, and differs when any
 * radius is too large or the slice is wrong. */
static void test_exact_geometry(void) {
  const ctr_pet_params p = lattice(72, 64, 9, 4.0);
  ctr_pet_phantom ph;
  memset(&ph, 0, sizeof ph);
  ph.background = 1.0;
  ph.nspheres = 4;
  const ctr_pet_sphere sp[4] = {{70, 0, 0, 10, 4.0},       /* central slice (4) */
                                {-30, 50, 8.0, 10, 2.5},   /* slice 6 */
                                {20, -70, -8.3, 20, 6.0},  /* slice 2 (nearest to -8.3) */
                                {-80, -40, 1.9, 12, 0.5}}; /* slice 4 (nearer 0 than 4); cold */
  memcpy(ph.spheres, sp, sizeof sp);
  const int64_t plane = p.nx * p.ny;
  float *img = malloc(sizeof(float) * (size_t)(plane * p.nz));
  for (int64_t i = 0; i < plane * p.nz; i++) img[i] = 1.0f;
  for (int s = 0; s < ph.nspheres; s++) {
    const int64_t k = ref_slice(&p, sp[s].z);
    const double r = 0.5 * sp[s].diameter;
    for (int64_t j = 0; j < p.ny; j++)
      for (int64_t i = 0; i < p.nx; i++) {
        const double d = hypot(px_x(&p, i) - sp[s].x, px_y(&p, j) - sp[s].y);
        /* A 4 mm pixel meets a circle of radius R when its centre is within
         * R + 2.83 mm; it lies wholly outside one when farther than R + 2.83. */
        float v = 1.0f;
        if (d < r + 3.5) v = (float)sp[s].activity;
        else if (d >= r + 15.0 + 2.9 && d < r + 30.0) v = 2.5f;
        if (v != 1.0f) img[k * plane + j * p.nx + i] = v;
      }
  }
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  CHECK(m.nspheres == 4);
  for (int s = 0; s < 4; s++) CHECK_NEAR(m.crc_sphere[s], 1.0, 1e-6);
  CHECK_NEAR(m.crc, 1.0, 1e-6);
  CHECK_NEAR(m.noise, 0.0, 1e-9);
  CHECK_NEAR(m.background_mean, 1.0, 1e-9);

  /* The same image with the spheres moved up one slice: CRC 0 for all
   * (their ROIs now see only the uniform slice), so the slice matters. */
  ctr_pet_phantom moved = ph;
  for (int s = 0; s < 4; s++) moved.spheres[s].z += 4.0;
  CHECK_OK(ctr_pet_metrics_compute(&p, &moved, img, &m));
  for (int s = 0; s < 4; s++) CHECK_NEAR(m.crc_sphere[s], 0.0, 1e-6);

  /* A sphere ROI 2 mm too large would reach the background: the exact
   * result above would fail. Shrinking the painted disc to the pixels
   * wholly inside R + 2 mm must lower the CRC of that sphere only. */
  {
    const int64_t k = ref_slice(&p, sp[0].z);
    for (int64_t j = 0; j < p.ny; j++)
      for (int64_t i = 0; i < p.nx; i++) {
        const double d = hypot(px_x(&p, i) - sp[0].x, px_y(&p, j) - sp[0].y);
        if (d >= 5.0 && d < 8.5) img[k * plane + j * p.nx + i] = 1.0f; /* partly inside the ROI */
      }
    CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
    CHECK_MSG(m.crc_sphere[0] < 0.99 && m.crc_sphere[0] > 0.2, "crc %g", m.crc_sphere[0]);
    CHECK_NEAR(m.crc_sphere[0], ref_crc(&p, &ph, img, 0), 0.01);
    for (int s = 1; s < 4; s++) CHECK_NEAR(m.crc_sphere[s], 1.0, 1e-6);
  }
  free(img);
}

/* ---- Partial volume ------------------------------------------------------------ */

static void check_against_reference(const ctr_pet_params *p, const ctr_pet_phantom *ph,
                                    const float *img, double lo, double hi) {
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(p, ph, img, &m));
  CHECK(m.nspheres == ph->nspheres);
  double mean = 0;
  for (int s = 0; s < ph->nspheres; s++) {
    const double ref = ref_crc(p, ph, img, s);
    mean += ref / ph->nspheres;
    CHECK_NEAR(m.crc_sphere[s], ref, 0.01);
    CHECK_MSG(m.crc_sphere[s] > lo && m.crc_sphere[s] < hi, "sphere %d: crc %g not in (%g, %g)", s,
              m.crc_sphere[s], lo, hi);
  }
  CHECK_NEAR(m.crc, mean, 0.01);
}

/* Ha et al. 2013's phantom voxelised (10 mm spheres in 4 mm voxels: strong partial
 * volume), and a large-sphere phantom where CRC must be close to 1. */
static void test_voxelised(void) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  const int64_t n = p.nx * p.ny * p.nz;
  float *img = malloc(sizeof(float) * (size_t)n);
  ctr_pet_phantom ph;
  ctr_pet_phantom_spheres(&ph, 4.0);
  CHECK(ph.nspheres == 6);
  CHECK_OK(ctr_pet_phantom_voxelize(&ph, &p, 4, img));
  check_against_reference(&p, &ph, img, 0.1, 0.95);
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  CHECK_NEAR(m.noise, 0.0, 1e-6); /* the centre of the cylinder is uniform */
  CHECK_NEAR(m.background_mean, 1.0, 1e-6);
  /* Every sphere sits alike (60 degrees apart at 75 mm): similar CRCs. */
  for (int s = 1; s < 6; s++) CHECK_NEAR(m.crc_sphere[s], m.crc_sphere[0], 0.08);

  /* Large spheres, centred on a slice: CRC ~ 1 up to the ROI's edge pixels. */
  ctr_pet_phantom big;
  memset(&big, 0, sizeof big);
  big.cylinder_diameter = 500;
  big.cylinder_length = 400;
  big.background = 2.0;
  big.nspheres = 2;
  big.spheres[0] = (ctr_pet_sphere){-70, 10, 2.0, 60.0, 8.0};
  big.spheres[1] = (ctr_pet_sphere){80, -20, 2.0, 50.0, 5.0};
  CHECK_OK(ctr_pet_phantom_voxelize(&big, &p, 4, img));
  check_against_reference(&p, &big, img, 0.9, 1.02);

  /* Background only: the uniform cylinder gives CRC 0 and noise 0. */
  ctr_pet_phantom flat = ph;
  flat.nspheres = 0;
  CHECK_OK(ctr_pet_phantom_voxelize(&flat, &p, 2, img));
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  for (int s = 0; s < 6; s++) CHECK_NEAR(m.crc_sphere[s], 0.0, 1e-6);
  CHECK_NEAR(m.crc, 0.0, 1e-6);
  CHECK_NEAR(m.noise, 0.0, 1e-9);
  free(img);
}

/* ---- Noise ------------------------------------------------------------------- */

static void test_noise(void) {
  const ctr_pet_params p = lattice(40, 40, 6, 4.0);
  const int64_t plane = p.nx * p.ny, n = plane * p.nz;
  ctr_pet_phantom ph;
  memset(&ph, 0, sizeof ph);
  ph.background = 1.0;
  ph.nspheres = 1;
  ph.spheres[0] = (ctr_pet_sphere){45, 0, 0, 10, 3.0};
  float *img = malloc(sizeof(float) * (size_t)n), *img3 = malloc(sizeof(float) * (size_t)n);
  /* Known noise: 10 + N(0, 1): relative standard deviation 0.1. */
  const int trials = 40;
  double sum = 0;
  for (int t = 0; t < trials; t++) {
    for (int64_t i = 0; i < n; i++) img[i] = (float)(10.0 + gauss());
    ctr_pet_metrics m = CTR_PET_METRICS_INIT, m3 = CTR_PET_METRICS_INIT;
    CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
    sum += m.noise;
    if (t == 0) {
      /* Against the independent weighted estimate of the same image. */
      double sd;
      const double mean = ref_roi(&p, img, p.nz / 2, 0, 0, 0, 25.0, &sd);
      CHECK_NEAR(m.noise, sd / mean, 0.002 * sd / mean); /* sampling: ~0.1 % */
      CHECK_NEAR(m.background_mean, mean, 1e-3);
      /* Scaling the image changes neither CRC nor noise. */
      for (int64_t i = 0; i < n; i++) img3[i] = 3.0f * img[i];
      CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img3, &m3));
      CHECK_NEAR(m3.noise, m.noise, 1e-6 * m.noise);
      CHECK_NEAR(m3.crc, m.crc, 1e-6);
      CHECK_NEAR(m3.background_mean, 3.0 * m.background_mean, 1e-4);
    }
  }
  CHECK_NEAR(sum / trials, 0.1, 0.003);

  /* Only the central slice (nz / 2) and the 50 mm disc count. */
  for (int64_t i = 0; i < n; i++) img[i] = 5.0f;
  for (int64_t k = 0; k < p.nz; k++)
    for (int64_t j = 0; j < p.ny; j++)
      for (int64_t i = 0; i < p.nx; i++) {
        const double d = hypot(px_x(&p, i), px_y(&p, j));
        if (k != p.nz / 2 || d > 25.0 + 2.9)
          img[(k * p.ny + j) * p.nx + i] = (float)(5.0 + 4.0 * gauss());
      }
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  CHECK_NEAR(m.noise, 0.0, 1e-9);
  CHECK_NEAR(m.background_mean, 5.0, 1e-6);
  /* ... and a pixel well inside it does. */
  img[(p.nz / 2 * p.ny + p.ny / 2) * p.nx + p.nx / 2 + 2] = 6.0f;
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  CHECK(m.noise > 1e-3);
  free(img);
  free(img3);
}

/* ---- Errors -------------------------------------------------------------------- */

static void test_errors(void) {
  const ctr_pet_params p = lattice(32, 32, 4, 4.0);
  const int64_t n = p.nx * p.ny * p.nz;
  float *img = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) img[i] = 1.0f;
  ctr_pet_phantom ph;
  memset(&ph, 0, sizeof ph);
  ph.background = 1.0;
  ph.nspheres = 1;
  ph.spheres[0] = (ctr_pet_sphere){30, 0, 0, 10, 4.0};
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(&p, &ph, img, &m));
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &ph, NULL, &m), CTR_E_INVALID_ARGUMENT, "image");
  ctr_pet_phantom bad = ph;
  bad.nspheres = 0;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT, "spheres");
  bad = ph;
  bad.spheres[0].x = 70; /* the lattice ends at 64 mm */
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT,
              "outside the lattice");
  bad = ph;
  bad.spheres[0].z = 9.0; /* slices end at 8 mm */
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT,
              "outside the lattice");
  bad = ph;
  bad.spheres[0].activity = 1.0;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT, "contrast");
  bad = ph;
  bad.background = 0.0;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT, "background");
  bad = ph;
  bad.spheres[0].diameter = 0.0;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &bad, img, &m), CTR_E_INVALID_ARGUMENT, "diameter");
  ctr_pet_params q = p;
  q.voxel = 0;
  CHECK_FAILS(ctr_pet_metrics_compute(&q, &ph, img, &m), CTR_E_INVALID_ARGUMENT, "voxel");
  /* An image whose background is 0 (nothing reconstructed). */
  for (int64_t i = 0; i < n; i++) img[i] = 0.0f;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &ph, img, &m), CTR_E_INVALID_ARGUMENT,
              "background mean");
  for (int64_t i = 0; i < n; i++) img[i] = 1.0f;
  img[(p.nz / 2 * p.ny + p.ny / 2) * p.nx + p.nx / 2] = NAN;
  CHECK_FAILS(ctr_pet_metrics_compute(&p, &ph, img, &m), CTR_E_INVALID_ARGUMENT, "not finite");
  free(img);
}

/* ---- Plot ---------------------------------------------------------------------- */

typedef struct rgb_image {
  png_image img;
  uint8_t *px;
} rgb_image;

static int read_png(const char *path, rgb_image *r) {
  memset(r, 0, sizeof *r);
  r->img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&r->img, path)) return 0;
  r->img.format = PNG_FORMAT_RGB;
  r->px = malloc(PNG_IMAGE_SIZE(r->img));
  if (!r->px || !png_image_finish_read(&r->img, NULL, r->px, 0, NULL)) {
    png_image_free(&r->img);
    free(r->px);
    r->px = NULL;
    return 0;
  }
  return 1;
}

static const uint8_t *pixel(const rgb_image *r, int x, int y) {
  return r->px + 3 * ((size_t)y * r->img.width + (size_t)x);
}

static void test_plot(void) {
  const char *path = "test_pet_plot.png";
  unlink(path);
  double noise[12], crc[12];
  for (int i = 0; i < 12; i++) { /* a curve like Fig. 9: CRC and noise rise with iterations */
    noise[i] = 0.03 + 0.012 * i;
    crc[i] = 0.9 * (1.0 - exp(-0.35 * (i + 1)));
  }
  CHECK_OK(ctr_pet_plot_crc_noise(path, noise, crc, 12, "RAMLA, 40x3 views: CRC vs noise", 1));
  rgb_image r;
  CHECK(read_png(path, &r));
  if (r.px) {
    CHECK(r.img.width == 640 && r.img.height == 480);
    const int w = (int)r.img.width, h = (int)r.img.height;
    int64_t nonwhite = 0, blue = 0, dark_left = 0, dark_below = 0, dark_top = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const uint8_t *c = pixel(&r, x, y);
        if (c[0] != 255 || c[1] != 255 || c[2] != 255) nonwhite++;
        if (c[2] > c[0] + 60) blue++; /* the line and markers */
        const int dark = c[0] < 60 && c[1] < 60 && c[2] < 60;
        if (dark && x < 80) dark_left++;     /* y tick labels, "CRC" */
        if (dark && y > 416) dark_below++;   /* x tick labels, "noise (%)" */
        if (dark && y < 40) dark_top++;      /* the title */
      }
    CHECK_MSG(nonwhite > 3000, "%lld non-white pixels", (long long)nonwhite);
    CHECK_MSG(blue > 300, "%lld line/marker pixels", (long long)blue);
    CHECK_MSG(dark_left > 150 && dark_below > 150 && dark_top > 150,
              "label pixels: left %lld, below %lld, title %lld", (long long)dark_left,
              (long long)dark_below, (long long)dark_top);
    const uint8_t *corner = pixel(&r, 0, 0), *corner2 = pixel(&r, w - 1, h - 1);
    CHECK(corner[0] == 255 && corner[1] == 255 && corner[2] == 255);
    CHECK(corner2[0] == 255 && corner2[1] == 255 && corner2[2] == 255);
    /* The curve rises to the right: the markers' blue mass in the right half
     * sits higher (smaller y) than in the left half. */
    double yl = 0, yr = 0, nl = 0, nr = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        const uint8_t *c = pixel(&r, x, y);
        if (!(c[2] > c[0] + 60)) continue;
        if (x < w / 2) yl += y, nl++;
        else yr += y, nr++;
      }
    CHECK_MSG(nl > 0 && nr > 0 && yr / nr < yl / nl, "left mean y %g, right mean y %g",
              nl ? yl / nl : -1, nr ? yr / nr : -1);
    free(r.px);
  }
  /* Two points far apart: the line between the two markers is drawn (its
   * pixels far outnumber the markers'). */
  {
    const double n2[2] = {0.01, 0.2}, c2[2] = {0.1, 0.9};
    CHECK_OK(ctr_pet_plot_crc_noise(path, n2, c2, 2, NULL, 1));
    CHECK(read_png(path, &r));
    int64_t blue = 0;
    for (unsigned y = 0; r.px && y < r.img.height; y++)
      for (unsigned x = 0; x < r.img.width; x++) {
        const uint8_t *c = pixel(&r, (int)x, (int)y);
        blue += c[2] > c[0] + 60;
      }
    CHECK_MSG(blue > 600, "%lld line/marker pixels for 2 points", (long long)blue);
    free(r.px);
  }
  /* One point, no title: the file is kept unless replacing it is asked. */
  CHECK_FAILS(ctr_pet_plot_crc_noise(path, noise, crc, 1, NULL, 0), CTR_E_INVALID_ARGUMENT,
              "exists and is kept");
  CHECK_OK(ctr_pet_plot_crc_noise(path, noise, crc, 1, NULL, 1));
  CHECK(read_png(path, &r) && r.img.width == 640);
  free(r.px);
  unlink(path);
  /* Errors: nothing is written. */
  CHECK_FAILS(ctr_pet_plot_crc_noise(path, noise, crc, 0, NULL, 0), CTR_E_INVALID_ARGUMENT, "points");
  crc[3] = NAN;
  CHECK_FAILS(ctr_pet_plot_crc_noise(path, noise, crc, 12, NULL, 0), CTR_E_INVALID_ARGUMENT,
              "point 3");
  crc[3] = 0.5;
  CHECK_FAILS(ctr_pet_plot_crc_noise("no-such-dir/p.png", noise, crc, 12, NULL, 0), CTR_E_IO,
              "no-such-dir/p.png");
  CHECK(access(path, F_OK) != 0);
}

/* Every glyph is a 5 x 7 pattern of '#' and '.'; the characters the plots
 * need all have their own. */
static void test_font(void) {
  const char *need = "0123456789.-+%(),:/=_ ' ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "abcdefghijklmnopqrstuvwxyz";
  const char *q = ctr__font_glyph('?');
  CHECK(q != NULL);
  for (const char *c = need; *c; c++) {
    const char *g = ctr__font_glyph(*c);
    CHECK_MSG(g && strlen(g) == 35 && strspn(g, "#.") == 35, "glyph '%c'", *c);
    CHECK_MSG(g != q, "no glyph for '%c'", *c);
  }
  CHECK(ctr__font_glyph('~') == q);
  for (char a = '0'; a <= '9'; a++)
    for (char b = a + 1; b <= '9'; b++) CHECK(strcmp(ctr__font_glyph(a), ctr__font_glyph(b)) != 0);
  CHECK(ctr__font_text_width("CRC", 2) == (2 * 6 + 5) * 2);
}

int main(void) {
  test_exact_geometry();
  test_voxelised();
  test_noise();
  test_errors();
  test_plot();
  test_font();
  return th_finish("test_pet_metrics");
}
