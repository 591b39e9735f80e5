/* A small DXchange file for the CLI tests (tests/cli_sync.sh): a Shepp-Logan
 * head scanned in parallel beam, uint16 counts with flat and dark fields.
 *   make_dxchange OUT.h5 WIDTH ROWS PROJECTIONS AXIS RANGE_DEG [RADIUS [UNITS]]
 * writes /exchange/data (PROJECTIONS x ROWS x WIDTH uint16),
 * /exchange/data_white and /exchange/data_dark (2 x ROWS x WIDTH uint16)
 * and /exchange/theta (degrees). A bin is 1 mm; RADIUS (mm, default 0.3 x
 * WIDTH; 0 = the default) sizes the head. UNITS: theta's "units" attribute
 * (default none): "rad" stores theta in radians with units = "rad" (a
 * variable-length string, as h5py writes), any other word is stored as a
 * fixed-length string with theta in degrees. CTRECON_NO_THETA=1 in the
 * environment leaves /exchange/theta out (a file whose angles come from the
 * command line); CTRECON_LZF=1 stores the 3D datasets through HDF5 filter 32000, the LZF
 * plugin's id, here a pass-through registered for the writing only (a file
 * a reader without the plugin cannot decode). */
#include <ctrecon.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LZF_ID 32000

static size_t pass_through(unsigned flags, size_t nelmts, const unsigned cd[], size_t nbytes,
                           size_t *buf_size, void **buf) {
  (void)flags, (void)nelmts, (void)cd, (void)buf_size, (void)buf;
  return nbytes;
}

static int put(hid_t f, const char *name, hid_t type, int rank, const hsize_t *dims, const void *v) {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  if (rank == 3 && getenv("CTRECON_LZF")) {
    const hsize_t chunk[3] = {1, dims[1], dims[2]};
    H5Pset_chunk(dcpl, 3, chunk);
    H5Pset_filter(dcpl, LZF_ID, H5Z_FLAG_MANDATORY, 0, NULL);
  }
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t d = H5Dcreate2(f, name, type == H5T_NATIVE_DOUBLE ? H5T_IEEE_F64LE : H5T_STD_U16LE, sp, lcpl,
                       dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  const int ok = d >= 0 && H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  if (d >= 0) H5Dclose(d);
  H5Sclose(sp);
  H5Pclose(lcpl);
  return ok;
}

/* theta's "units" attribute: a variable-length string (h5py's) or a fixed one. */
static int put_units(hid_t f, const char *units, int variable) {
  hid_t d = H5Dopen2(f, "/exchange/theta", H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
  hid_t sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, variable ? H5T_VARIABLE : strlen(units));
  hid_t a = H5Acreate2(d, "units", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  const int ok = a >= 0 && (variable ? H5Awrite(a, t, &units) : H5Awrite(a, t, units)) >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
  H5Dclose(d);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: make_dxchange OUT.h5 WIDTH ROWS PROJECTIONS AXIS RANGE_DEG [RADIUS]\n");
    return 2;
  }
  const int w = atoi(argv[2]), h = atoi(argv[3]), np = atoi(argv[4]);
  const double axis = atof(argv[5]), range = atof(argv[6]);
  const double radius = argc > 7 && atof(argv[7]) > 0 ? atof(argv[7]) : 0.3 * w;
  const char *units = argc > 8 ? argv[8] : NULL;
  const int rad = units && !strcmp(units, "rad");
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = w;
  p.nangles = np;
  p.angle_range_deg = range;
  p.axis = axis;
  ctr_parallel_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  if (ctr_parallel_create(&p, &g) != CTR_OK || ctr_phantom_shepp_logan(radius, 0.05, &ph) != CTR_OK)
    return 1;
  float *sino = malloc(sizeof(float) * (size_t)w * np * h);
  double *z = malloc(sizeof(double) * (size_t)h), *theta = malloc(sizeof(double) * (size_t)np);
  uint16_t *data = malloc(sizeof(uint16_t) * (size_t)w * h * np);
  uint16_t *white = malloc(sizeof(uint16_t) * (size_t)w * h * 2), *dark = malloc(sizeof(uint16_t) * (size_t)w * h * 2);
  for (int s = 0; s < h; s++) z[s] = (s - 0.5 * (h - 1)) * 0.5 * radius / h;
  if (ctr_phantom_sinogram(ph, g, h, z, 2, sino) != CTR_OK) return 1;
  for (int a = 0; a < np; a++) theta[a] = range * a / np * (rad ? M_PI / 180.0 : 1.0);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < w * h; i++) {
      white[k * w * h + i] = (uint16_t)(20000 + (i * 7 + k) % 13);
      dark[k * w * h + i] = (uint16_t)(100 + (i + k) % 3);
    }
  for (int a = 0; a < np; a++)
    for (int y = 0; y < h; y++)
      for (int b = 0; b < w; b++) {
        const double t = exp(-sino[((size_t)y * np + a) * w + b]);
        data[((size_t)a * h + y) * w + b] = (uint16_t)lround(100.0 + 19906.0 * t + (a * 13 + b) % 9 - 4);
      }
  if (getenv("CTRECON_LZF")) {
    const H5Z_class2_t lzf = {H5Z_CLASS_T_VERS, LZF_ID, 1, 1, "lzf", NULL, NULL, pass_through};
    H5Zregister(&lzf);
  }
  hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dd[3] = {(hsize_t)np, (hsize_t)h, (hsize_t)w}, fd[3] = {2, (hsize_t)h, (hsize_t)w};
  const hsize_t td[1] = {(hsize_t)np};
  const int ok = f >= 0 && put(f, "/exchange/data", H5T_NATIVE_UINT16, 3, dd, data) &&
                 put(f, "/exchange/data_white", H5T_NATIVE_UINT16, 3, fd, white) &&
                 put(f, "/exchange/data_dark", H5T_NATIVE_UINT16, 3, fd, dark) &&
                 (getenv("CTRECON_NO_THETA") ||
                  (put(f, "/exchange/theta", H5T_NATIVE_DOUBLE, 1, td, theta) &&
                   (!units || put_units(f, units, rad))));
  if (f >= 0) H5Fclose(f);
  free(sino);
  free(z);
  free(theta);
  free(data);
  free(white);
  free(dark);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
  return ok ? 0 : 1;
}
