/* HDF5 reading (CTR_FORMAT_HDF5, "file.h5:/dataset"): a DXchange-like file
 * written here with the HDF5 C API is read through ctr_stack_open /
 * ctr_stack_read (element types, conversions, hints, partial and concurrent
 * reads, chunked and big-endian data), the errors (no dataset part, missing
 * dataset, wrong rank, missing file, unsupported type, writing) and
 * ctr__hdf5_read_vector. Format names and guessing are checked in every
 * build; the file checks need HDF5 and are skipped (exit 77) without it. */
#include "harness.h"
#include "scratch_dir.h"

#include "io/io_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5
#include <hdf5.h>
#include <zlib.h>
#include "read_count.h"
#define TEST_HDF5 1
#else
#define TEST_HDF5 0
#endif

/* ---- Every build ---------------------------------------------------------- */

static void test_format_names(void) {
  ctr_file_format f = CTR_FORMAT_AUTO;
  CHECK_OK(ctr_format_parse("hdf5", &f));
  CHECK(f == CTR_FORMAT_HDF5);
  CHECK_OK(ctr_format_parse("HDF5", &f));
  CHECK(f == CTR_FORMAT_HDF5);
  CHECK(!strcmp(ctr_format_name(CTR_FORMAT_HDF5), "hdf5"));
  CHECK_FAILS(ctr_format_parse("h5x", &f), CTR_E_INVALID_ARGUMENT, "hdf5");
  static const struct {
    const char *path;
    ctr_file_format fmt;
  } guesses[] = {
      {"scan.h5:/exchange/data", CTR_FORMAT_HDF5},
      {"d/scan.H5:/exchange/data", CTR_FORMAT_HDF5},
      {"d.x/scan.hdf5:/entry/data/data", CTR_FORMAT_HDF5},
      {"scan.hdf:/a.raw", CTR_FORMAT_HDF5},       /* the dataset's name does not count */
      {"scan.nxs:/entry/x.tif", CTR_FORMAT_HDF5},
      {"a:b/scan.h5:/exchange/data", CTR_FORMAT_HDF5},
      {"scan.h5", CTR_FORMAT_HDF5},               /* refused when opened: no dataset */
      {"scan.h5:exchange/data", CTR_FORMAT_HDF5}, /* refused when opened: no '/' */
      {"d.h5/img.raw", CTR_FORMAT_RAW},
      {"d.h5/img_%04d.tif", CTR_FORMAT_TIFF_STACK},
      {"v.nrrd", CTR_FORMAT_NRRD},
  };
  for (size_t i = 0; i < sizeof guesses / sizeof guesses[0]; i++) {
    f = CTR_FORMAT_AUTO;
    CHECK_OK(ctr_format_guess(guesses[i].path, &f));
    CHECK_MSG(f == guesses[i].fmt, "%s guessed as %s", guesses[i].path, ctr_format_name(f));
  }
  CHECK_FAILS(ctr_format_guess("scan.h5x:/data", &f), CTR_E_INVALID_ARGUMENT, ".hdf5");
  CHECK_FAILS(ctr_format_guess("d/.h5", &f), CTR_E_INVALID_ARGUMENT, "d/.h5");
}

/* Writing: a round trip through the HDF5 writer (dataset given or the
 * default /data, float32 and uint16), refusals that leave nothing behind; a
 * build without HDF5 says so. */
static void test_write(int have) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = 5;
  info.height = 3;
  info.count = 4;
  info.dtype = CTR_DTYPE_FLOAT32;
  float data[60];
  uint16_t u16[60];
  for (int i = 0; i < 60; i++) data[i] = 0.25f * i - 3.0f, u16[i] = (uint16_t)(1000 + 7 * i);
  if (!have) {
    CHECK_FAILS(ctr_stack_save(P("out.h5"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, data, 0),
                CTR_E_UNSUPPORTED, "no HDF5 support");
    CHECK(!exists(P("out.h5")));
    CHECK(count_temporaries() == 0);
    return;
  }
  const char *paths[] = {P("rec.h5:/exchange/recon"), P("plain.h5")};
  const char *reads[] = {P("rec.h5:/exchange/recon"), P("plain.h5:/data")};
  for (int k = 0; k < 2; k++) {
    CHECK_OK(ctr_stack_save(paths[k], CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, data, 0));
    ctr_stack_info got = CTR_STACK_INFO_INIT;
    float *back = NULL;
    CHECK_OK(ctr_stack_load(reads[k], CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &got,
                            (void **)&back));
    CHECK(got.width == 5 && got.height == 3 && got.count == 4 && got.dtype == CTR_DTYPE_FLOAT32);
    CHECK(back && !memcmp(back, data, sizeof data));
    free(back);
  }
  info.dtype = CTR_DTYPE_UINT16;
  CHECK_OK(ctr_stack_save(P("u16.h5:/volume"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, u16, 0));
  ctr_stack_info got = CTR_STACK_INFO_INIT;
  uint16_t *ub = NULL;
  CHECK_OK(ctr_stack_load(P("u16.h5:/volume"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_UINT16, &got,
                          (void **)&ub));
  CHECK(got.dtype == CTR_DTYPE_UINT16 && ub && !memcmp(ub, u16, sizeof u16));
  free(ub);
  /* a writer abandoned half way and a missing directory leave nothing */
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P("half.h5"), CTR_FORMAT_AUTO, &info, 0, &w));
  if (w) {
    CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_UINT16, u16));
    ctr_stack_abort(w);
  }
  CHECK(!exists(P("half.h5")));
  CHECK_FAILS(ctr_stack_save(P("no/such/dir/x.h5"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, u16,
                             0),
              CTR_E_IO, "no/such/dir");
  CHECK(count_temporaries() == 0);
}

#if TEST_HDF5
/* Writing into an existing HDF5 file adds the dataset and keeps the file's
 * other datasets; a dataset already there is refused and left as it was; a
 * writer abandoned half way leaves the file as it was (no dataset, nothing
 * half written); a file that is not HDF5 is refused and kept. */
static void test_write_adds(void) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = 4, info.height = 2, info.count = 3, info.dtype = CTR_DTYPE_FLOAT32;
  float a[24], b[24];
  for (int i = 0; i < 24; i++) a[i] = (float)i, b[i] = 100.0f - (float)i;
  CHECK_OK(ctr_stack_save(P("multi.h5:/exchange/data"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32,
                          a, 0));
  CHECK_OK(ctr_stack_save(P("multi.h5:/exchange/recon"), CTR_FORMAT_AUTO, &info,
                          CTR_DTYPE_FLOAT32, b, 0));
  static const char *names[] = {"multi.h5:/exchange/data", "multi.h5:/exchange/recon"};
  const float *want[] = {a, b};
  for (int k = 0; k < 2; k++) {
    ctr_stack_info got = CTR_STACK_INFO_INIT;
    float *back = NULL;
    CHECK_OK(ctr_stack_load(P(names[k]), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &got,
                            (void **)&back));
    CHECK_MSG(back && got.count == 3 && !memcmp(back, want[k], sizeof a), "%s lost", names[k]);
    free(back);
  }
  CHECK_FAILS(ctr_stack_save(P("multi.h5:/exchange/recon"), CTR_FORMAT_AUTO, &info,
                             CTR_DTYPE_FLOAT32, a, 0), CTR_E_INVALID_ARGUMENT,
              "exists and is kept: set overwrite to replace it");
  CHECK(strstr(ctr_error_detail(), "/exchange/recon") != NULL);
  CHECK(!strcmp(ctr_error_get_field(), "overwrite") &&
        !strcmp(ctr_error_get_value(), P("multi.h5:/exchange/recon")));
  /* overwrite replaces that dataset (another size), the file's others kept */
  info.count = 2;
  CHECK_OK(ctr_stack_save(P("multi.h5:/exchange/recon"), CTR_FORMAT_AUTO, &info,
                          CTR_DTYPE_FLOAT32, a, 1));
  for (int k = 0; k < 2; k++) {
    ctr_stack_info got = CTR_STACK_INFO_INIT;
    float *back = NULL;
    CHECK_OK(ctr_stack_load(P(names[k]), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &got,
                            (void **)&back));
    CHECK_MSG(back && got.count == 3 - k &&
                  !memcmp(back, a, sizeof(float) * 8 * (size_t)got.count),
              "%s after replacing /exchange/recon", names[k]);
    free(back);
  }
  info.count = 3;
  CHECK_OK(ctr_stack_save(P("multi.h5:/exchange/recon"), CTR_FORMAT_AUTO, &info,
                          CTR_DTYPE_FLOAT32, b, 1));
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P("multi.h5:/more"), CTR_FORMAT_AUTO, &info, 0, &w));
  if (w) {
    CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_FLOAT32, a));
    ctr_stack_abort(w);
  }
  ctr_stack_reader *r = NULL;
  CHECK_FAILS(ctr_stack_open(P("multi.h5:/more"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT, "/more");
  float *back = NULL;
  ctr_stack_info got = CTR_STACK_INFO_INIT;
  CHECK_OK(ctr_stack_load(P("multi.h5:/exchange/recon"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32,
                          &got, (void **)&back));
  CHECK(back && !memcmp(back, b, sizeof b));
  free(back);
  FILE *f = fopen(P("text.h5"), "w");
  CHECK(f != NULL);
  if (f) fputs("not hdf5\n", f), fclose(f);
  CHECK_FAILS(ctr_stack_save(P("text.h5:/data"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, a, 0),
              CTR_E_IO, "is not an HDF5 file");
  CHECK(file_size(P("text.h5")) == 9);
  CHECK(count_temporaries() == 0);
}
#endif

/* A build without HDF5 says so; one with it names the missing file. */
static void test_missing_file(int have) {
  ctr_stack_reader *r = NULL;
  double *v = (double *)&r;
  int64_t n = -1;
  if (have) {
    CHECK_FAILS(ctr_stack_open(P("missing.h5:/exchange/data"), CTR_FORMAT_AUTO, NULL, 0, &r),
                CTR_E_IO, "missing.h5");
    CHECK(strstr(ctr_error_detail(), "/exchange/data") != NULL);
    CHECK(strstr(ctr_error_detail(), "No such file") != NULL);
    CHECK_FAILS(ctr__hdf5_read_vector(P("missing.h5"), "/exchange/theta", &v, &n), CTR_E_IO,
                "missing.h5");
    CHECK(strstr(ctr_error_detail(), "/exchange/theta") != NULL);
  } else {
    CHECK_FAILS(ctr_stack_open(P("missing.h5:/exchange/data"), CTR_FORMAT_AUTO, NULL, 0, &r),
                CTR_E_UNSUPPORTED, "no HDF5 support");
    CHECK(strstr(ctr_error_detail(), "missing.h5:/exchange/data") != NULL);
    CHECK_FAILS(ctr__hdf5_read_vector(P("missing.h5"), "/exchange/theta", &v, &n),
                CTR_E_UNSUPPORTED, "no HDF5 support");
  }
  CHECK(r == NULL);
  CHECK(v == NULL);
  CHECK(n == 0);
}

#if TEST_HDF5

/* ---- The test file ---------------------------------------------------------- */

enum { NX = 9, NY = 7, NZ = 5, NC = 6 };
#define NPIX ((size_t)NX * NY)

static uint16_t g_data[NZ * NPIX], g_white[2 * NPIX], g_dark[2 * NPIX], g_chunked[NC * NPIX];
static float g_f32[NZ * NPIX];
static double g_f64[NZ * NPIX];
static uint8_t g_u8[NZ * NPIX];
static int16_t g_i16[NZ * NPIX];
static uint32_t g_u32[NZ * NPIX];
static const double g_theta[NZ] = {0.0, 45.5, 90.0, 135.25, 179.999};
static const float g_theta32[NZ] = {0.0f, 36.125f, 72.0f, 108.3f, 144.0f};
static const int32_t g_index[4] = {-3, 0, 7, 100000};
static int g_have_deflate;

static void make_data(void) {
  for (size_t k = 0; k < NZ; k++)
    for (size_t i = 0; i < NPIX; i++) {
      const size_t j = k * NPIX + i;
      g_data[j] = (uint16_t)(k * 1000 + i * 3 + 1);
      g_f32[j] = (float)th_uniform(-1e4, 1e4);
      g_f64[j] = (double)(float)th_uniform(-1e3, 1e3) + (i % 7 == 0 ? 0.1 : 0.0);
      g_u8[j] = (uint8_t)(j * 7 % 256);
      g_i16[j] = (int16_t)((int)j * 97 % 65536 - 32768);
      g_u32[j] = (uint32_t)(j * 70001 % 16777216);
    }
  g_data[3] = 65535;
  g_data[NZ * NPIX - 1] = 0;
  g_f32[0] = -0.0f;
  g_f32[1] = 1e-42f;
  g_f32[2] = NAN;
  g_f32[3] = -INFINITY;
  g_f64[5] = 1e300; /* becomes inf in float32 */
  for (size_t i = 0; i < 2 * NPIX; i++) {
    g_white[i] = (uint16_t)(50000 + i);
    g_dark[i] = (uint16_t)(100 + i % 13);
  }
  for (size_t i = 0; i < NC * NPIX; i++) g_chunked[i] = (uint16_t)(i * 11 + 5);
}

/* Writes a dataset (intermediate groups created). */
static void put(hid_t file, const char *name, hid_t ftype, hid_t mtype, int rank,
                const hsize_t *dims, const void *data, hid_t dcpl) {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t d = H5Dcreate2(file, name, ftype, space, lcpl, dcpl, H5P_DEFAULT);
  CHECK_MSG(d >= 0, "cannot create %s", name);
  if (d >= 0) {
    hsize_t total = 1;
    for (int i = 0; i < rank; i++) total *= dims[i];
    if (total) CHECK_MSG(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
                         "cannot write %s", name);
    H5Dclose(d);
  }
  H5Sclose(space);
  H5Pclose(lcpl);
}

static int make_file(const char *path) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CHECK_MSG(f >= 0, "cannot create %s", path);
  if (f < 0) return 0;
  const hsize_t d3[3] = {NZ, NY, NX}, d2[2] = {NY, NX}, wd[3] = {2, NY, NX}, t[1] = {NZ};
  const hsize_t dc[3] = {NC, NY, NX}, chunk[3] = {2, 4, 5}, e3[3] = {0, NY, NX}, i1[1] = {4};
  put(f, "/exchange/data", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, d3, g_data, H5P_DEFAULT);
  put(f, "/exchange/data_white", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, wd, g_white, H5P_DEFAULT);
  put(f, "/exchange/data_dark", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, wd, g_dark, H5P_DEFAULT);
  put(f, "/exchange/theta", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, t, g_theta, H5P_DEFAULT);
  put(f, "/other/f32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, g_f32, H5P_DEFAULT);
  put(f, "/other/f64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, d3, g_f64, H5P_DEFAULT);
  put(f, "/other/u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, 3, d3, g_u8, H5P_DEFAULT);
  put(f, "/other/i16", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, d3, g_i16, H5P_DEFAULT);
  put(f, "/other/u32", H5T_STD_U32LE, H5T_NATIVE_UINT32, 3, d3, g_u32, H5P_DEFAULT);
  put(f, "/other/i32", H5T_STD_I32LE, H5T_NATIVE_UINT32, 3, d3, g_u32, H5P_DEFAULT);
  put(f, "/other/u16be", H5T_STD_U16BE, H5T_NATIVE_UINT16, 3, d3, g_data, H5P_DEFAULT);
  put(f, "/other/img2d", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, g_f32, H5P_DEFAULT);
  put(f, "/other/empty", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, e3, g_data, H5P_DEFAULT);
  put(f, "/other/theta32", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, 1, t, g_theta32, H5P_DEFAULT);
  put(f, "/other/index", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, i1, g_index, H5P_DEFAULT);
  /* Chunked, deflated where the filter is built in. */
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  g_have_deflate = H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0;
  if (g_have_deflate) H5Pset_deflate(dcpl, 4);
  put(f, "/other/chunked", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, dc, g_chunked, dcpl);
  H5Pclose(dcpl);
  /* A 1D fixed-length string dataset. */
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 4);
  const char words[3][4] = {"abc", "def", "ghi"};
  const hsize_t s1[1] = {3};
  put(f, "/other/str", st, st, 1, s1, words, H5P_DEFAULT);
  H5Tclose(st);
  H5Fclose(f);

  /* An HDF5 file with no 3D dataset, and a file that is not HDF5. */
  f = H5Fcreate(P("flat.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  put(f, "/theta", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, t, g_theta, H5P_DEFAULT);
  H5Fclose(f);
  FILE *fake = fopen(P("fake.h5"), "w");
  if (fake) {
    fputs("not an HDF5 file\n", fake);
    fclose(fake);
  }
  return 1;
}

/* ---- Reading ---------------------------------------------------------------- */

static char g_path[600];
static const char *DS(const char *dataset) {
  snprintf(g_path, sizeof g_path, "%s:%s", P("scan.h5"), dataset);
  return g_path;
}

static void test_read_uint16(void) {
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (!r) return;
  const ctr_stack_info *info = ctr_stack_reader_get_info(r);
  CHECK(info->width == NX && info->height == NY && info->count == NZ);
  CHECK(info->dtype == CTR_DTYPE_UINT16);
  CHECK(info->spacing[0] == 0.0 && info->spacing[2] == 0.0);
  uint16_t u[NZ * NPIX];
  memset(u, 0xAB, sizeof u);
  CHECK_OK(ctr_stack_read(r, 0, NZ, CTR_DTYPE_UINT16, u));
  CHECK(memcmp(u, g_data, sizeof u) == 0);
  /* Partial reads, as uint16 and converted. */
  memset(u, 0, sizeof u);
  CHECK_OK(ctr_stack_read(r, 2, 2, CTR_DTYPE_UINT16, u));
  CHECK(memcmp(u, g_data + 2 * NPIX, 2 * NPIX * sizeof(uint16_t)) == 0);
  CHECK_OK(ctr_stack_read(r, 4, 1, CTR_DTYPE_UINT16, u));
  CHECK(memcmp(u, g_data + 4 * NPIX, NPIX * sizeof(uint16_t)) == 0);
  float fl[NZ * NPIX];
  CHECK_OK(ctr_stack_read(r, 1, 3, CTR_DTYPE_FLOAT32, fl));
  int bad = 0;
  for (size_t i = 0; i < 3 * NPIX; i++) bad += fl[i] != (float)g_data[NPIX + i];
  CHECK_MSG(bad == 0, "%d values differ after uint16 -> float32", bad);
  CHECK_OK(ctr_stack_read(r, 0, 0, CTR_DTYPE_FLOAT32, fl));
  CHECK_FAILS(ctr_stack_read(r, 4, 2, CTR_DTYPE_UINT16, u), CTR_E_INVALID_ARGUMENT, "[0, 5)");
  CHECK_FAILS(ctr_stack_read(r, -1, 1, CTR_DTYPE_UINT16, u), CTR_E_INVALID_ARGUMENT, "outside");
  ctr_stack_close(r);

  /* Explicit format, flats and darks, whole-stack load. */
  r = NULL;
  CHECK_OK(ctr_stack_open(DS("/exchange/data_white"), CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK(ctr_stack_reader_get_info(r)->count == 2);
    CHECK_OK(ctr_stack_read(r, 0, 2, CTR_DTYPE_UINT16, u));
    CHECK(memcmp(u, g_white, 2 * NPIX * sizeof(uint16_t)) == 0);
    ctr_stack_close(r);
  }
  ctr_stack_info got = CTR_STACK_INFO_INIT;
  void *all = NULL;
  CHECK_OK(ctr_stack_load(DS("/exchange/data_dark"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32,
                          &got, &all));
  CHECK(got.count == 2 && got.width == NX && got.dtype == CTR_DTYPE_UINT16);
  if (all) {
    bad = 0;
    for (size_t i = 0; i < 2 * NPIX; i++) bad += ((float *)all)[i] != (float)g_dark[i];
    CHECK(bad == 0);
  }
  free(all);

  /* Big-endian storage reads as the same numbers. */
  r = NULL;
  CHECK_OK(ctr_stack_open(DS("/other/u16be"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK(ctr_stack_reader_get_info(r)->dtype == CTR_DTYPE_UINT16);
    CHECK_OK(ctr_stack_read(r, 0, NZ, CTR_DTYPE_UINT16, u));
    CHECK(memcmp(u, g_data, sizeof u) == 0);
    ctr_stack_close(r);
  }
}

static void test_read_chunked(void) {
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(DS("/other/chunked"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (!r) return;
  CHECK(ctr_stack_reader_get_info(r)->count == NC);
  uint16_t u[NC * NPIX];
  /* Every slab [first, first + n): across the 2-image chunks. */
  int bad = 0;
  for (int64_t first = 0; first < NC; first++)
    for (int64_t n = 1; first + n <= NC; n++) {
      memset(u, 0, sizeof u);
      CHECK_OK(ctr_stack_read(r, first, n, CTR_DTYPE_UINT16, u));
      bad += memcmp(u, g_chunked + first * NPIX, (size_t)n * NPIX * sizeof(uint16_t)) != 0;
    }
  CHECK_MSG(bad == 0, "%d slab reads of the chunked dataset differ (deflate %d)", bad,
            g_have_deflate);
  ctr_stack_close(r);
}

static void test_read_float(void) {
  ctr_stack_reader *r = NULL;
  float f[NZ * NPIX];
  CHECK_OK(ctr_stack_open(DS("/other/f32"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK(ctr_stack_reader_get_info(r)->dtype == CTR_DTYPE_FLOAT32);
    CHECK_OK(ctr_stack_read(r, 0, NZ, CTR_DTYPE_FLOAT32, f));
    CHECK(memcmp(f, g_f32, sizeof f) == 0); /* bit-exact, NaN and -0 included */
    uint16_t u[NPIX];
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_UINT16, u));
    CHECK(u[2] == 0 && u[3] == 0); /* NaN -> 0, -inf clamps to 0 */
    CHECK(u[10] == ctr__float_to_u16(g_f32[10]));
    ctr_stack_close(r);
  }
  /* float64 -> float32 */
  r = NULL;
  CHECK_OK(ctr_stack_open(DS("/other/f64"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK(ctr_stack_reader_get_info(r)->dtype == CTR_DTYPE_FLOAT32);
    CHECK_OK(ctr_stack_read(r, 1, NZ - 1, CTR_DTYPE_FLOAT32, f));
    int bad = 0;
    for (size_t i = 0; i < (NZ - 1) * NPIX; i++) bad += f[i] != (float)g_f64[NPIX + i];
    CHECK_MSG(bad == 0, "%d float64 values differ", bad);
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, f));
    CHECK(f[0] == (float)g_f64[0]);
    CHECK(f[7] == (float)g_f64[7]); /* rounded: 0.1 was added */
    CHECK(isinf(f[5]) && f[5] > 0);
    ctr_stack_close(r);
  }
}

static void test_read_converted(void) {
  static const struct {
    const char *ds;
    int kind; /* 0 u8, 1 i16, 2 u32 */
  } cases[] = {{"/other/u8", 0}, {"/other/i16", 1}, {"/other/u32", 2}};
  for (size_t c = 0; c < 3; c++) {
    ctr_stack_reader *r = NULL;
    CHECK_OK(ctr_stack_open(DS(cases[c].ds), CTR_FORMAT_AUTO, NULL, 0, &r));
    if (!r) continue;
    CHECK_MSG(ctr_stack_reader_get_info(r)->dtype == CTR_DTYPE_FLOAT32, "%s: dtype %s", cases[c].ds,
              ctr_dtype_name(ctr_stack_reader_get_info(r)->dtype));
    float f[NZ * NPIX];
    CHECK_OK(ctr_stack_read(r, 0, NZ, CTR_DTYPE_FLOAT32, f));
    int bad = 0, negative = 0;
    for (size_t i = 0; i < NZ * NPIX; i++) {
      const double want = cases[c].kind == 0   ? (double)g_u8[i]
                          : cases[c].kind == 1 ? (double)g_i16[i]
                                               : (double)g_u32[i];
      bad += f[i] != (float)want;
      negative += f[i] < 0;
    }
    CHECK_MSG(bad == 0, "%s: %d values differ", cases[c].ds, bad);
    if (cases[c].kind == 1) CHECK(negative > 0);
    /* Partial read of the converted data. */
    CHECK_OK(ctr_stack_read(r, 3, 1, CTR_DTYPE_FLOAT32, f));
    const size_t k = 3 * NPIX + 5;
    const double want = cases[c].kind == 0   ? (double)g_u8[k]
                        : cases[c].kind == 1 ? (double)g_i16[k]
                                             : (double)g_u32[k];
    CHECK(f[5] == (float)want);
    ctr_stack_close(r);
  }
}

static void test_hints(void) {
  ctr_stack_info h = CTR_STACK_INFO_INIT;
  h.width = NX;
  h.height = NY;
  h.count = NZ;
  h.dtype = CTR_DTYPE_UINT16;
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, &h, 0, &r));
  ctr_stack_close(r);
  h.width = NX + 1;
  CHECK_FAILS(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, &h, 0, &r),
              CTR_E_SIZE_MISMATCH, "width 9");
  CHECK(r == NULL);
  h.width = 0;
  h.count = 4;
  CHECK_FAILS(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, &h, 0, &r),
              CTR_E_SIZE_MISMATCH, "count 5");
  h.count = 0;
  h.dtype = CTR_DTYPE_FLOAT32;
  CHECK_FAILS(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, &h, 0, &r),
              CTR_E_SIZE_MISMATCH, "holds uint16 data");
  /* Converted datasets present themselves as float32. */
  r = NULL;
  CHECK_OK(ctr_stack_open(DS("/other/f64"), CTR_FORMAT_AUTO, &h, 0, &r));
  ctr_stack_close(r);
  CHECK_FAILS(ctr_stack_open(DS("/exchange/data"), CTR_FORMAT_AUTO, NULL, 12, &r),
              CTR_E_INVALID_ARGUMENT, "raw_offset");
}

/* ---- Errors ----------------------------------------------------------------- */

static int g_app_handler_calls;
static herr_t app_handler(hid_t stack, void *data) {
  (void)stack, (void)data;
  g_app_handler_calls++;
  return 0;
}

static void test_errors(void) {
  ctr_stack_reader *r = NULL;
  const char *file = P("scan.h5");

  /* The application's own HDF5 error handler is neither called by ctrecon's
   * failing calls nor replaced by them. */
  H5Eset_auto2(H5E_DEFAULT, app_handler, NULL);
  g_app_handler_calls = 0;

  /* No dataset part: the syntax, and the 3D datasets of the file. */
  CHECK_FAILS(ctr_stack_open(file, CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_INVALID_ARGUMENT,
              "'file.h5:/group/dataset'");
  const char *d = ctr_error_detail();
  CHECK_MSG(strstr(d, file) && strstr(d, "/exchange/data (5 x 7 x 9)") &&
                strstr(d, "/exchange/data_white (2 x 7 x 9)") &&
                strstr(d, "/exchange/data_dark (2 x 7 x 9)") && strstr(d, "/other/chunked") &&
                !strstr(d, "img2d") && !strstr(d, "theta"),
            "listing: %s", d);
  CHECK(r == NULL);
  CHECK_FAILS(ctr_stack_open(P("flat.h5"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_INVALID_ARGUMENT,
              "it has no 3D dataset");
  CHECK_FAILS(ctr_stack_open(P("nofile.h5"), CTR_FORMAT_AUTO, NULL, 0, &r),
              CTR_E_INVALID_ARGUMENT, "names no dataset");
  /* A dataset without its leading '/'. */
  char rel[600];
  snprintf(rel, sizeof rel, "%s:exchange/data", file);
  CHECK_FAILS(ctr_stack_open(rel, CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_INVALID_ARGUMENT,
              "must be an absolute path starting with '/'");

  /* Missing dataset / group: name the file and the dataset, list the 3D ones. */
  CHECK_FAILS(ctr_stack_open(DS("/exchange/nope"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "has no dataset '/exchange/nope'");
  d = ctr_error_detail();
  CHECK_MSG(strstr(d, file) && strstr(d, "HDF5: ") && strstr(d, "/exchange/data_dark"), "%s", d);
  CHECK_FAILS(ctr_stack_open(DS("/nogroup/data"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "has no dataset '/nogroup/data'");
  CHECK_FAILS(ctr_stack_open(DS("/exchange"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "'/exchange' in HDF5 file");
  CHECK(strstr(ctr_error_detail(), "is a group, not a dataset") != NULL);

  /* Wrong rank, empty, unsupported element type. */
  CHECK_FAILS(ctr_stack_open(DS("/other/img2d"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "'/other/img2d'");
  d = ctr_error_detail();
  CHECK_MSG(strstr(d, file) && strstr(d, "is 2D (7 x 9)") && strstr(d, "expected a 3D dataset"),
            "%s", d);
  CHECK_FAILS(ctr_stack_open(DS("/exchange/theta"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "is 1D (5)");
  CHECK_FAILS(ctr_stack_open(DS("/other/empty"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "must be > 0");
  CHECK_FAILS(ctr_stack_open(DS("/other/i32"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "holds int32 elements");
  CHECK(strstr(ctr_error_detail(), "uint8, int16, uint32, float16, float64") != NULL);

  /* Missing file, a directory, not an HDF5 file. */
  char path[600];
  snprintf(path, sizeof path, "%s:/exchange/data", P("nofile.h5"));
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_IO, "nofile.h5");
  CHECK(strstr(ctr_error_detail(), "'/exchange/data'") != NULL);
  snprintf(path, sizeof path, "%s:/exchange/data", g_dir);
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r), CTR_E_IO, "directory");
  snprintf(path, sizeof path, "%s:/exchange/data", P("fake.h5"));
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "as an HDF5 file");
  CHECK(strstr(ctr_error_detail(), "fake.h5") != NULL);
  CHECK(r == NULL);

  CHECK_MSG(g_app_handler_calls == 0, "the application's HDF5 error handler ran %d times",
            g_app_handler_calls);
  H5E_auto2_t func = NULL;
  void *data = (void *)&func;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  CHECK(func == app_handler && data == NULL);
  /* ... and it still works for the application's own calls. */
  hid_t bad = H5Fopen(P("nofile.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK(bad < 0);
  CHECK(g_app_handler_calls == 1);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* Nothing is printed on stderr by failing opens (HDF5's default handler). */
static H5E_auto2_t g_default_func;
static void *g_default_data;

static void test_quiet(void) {
  H5E_auto2_t old_func;
  void *old_data;
  H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
  H5Eset_auto2(H5E_DEFAULT, g_default_func, g_default_data); /* HDF5's printing default */
  fflush(stderr);
  const int saved = dup(2);
  const int fd = open(P("stderr.txt"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ctr_stack_reader *r = NULL;
  ctr_status s1 = CTR_OK, s2 = CTR_OK;
  if (saved >= 0 && fd >= 0 && dup2(fd, 2) >= 0) {
    s1 = ctr_stack_open(DS("/exchange/nope"), CTR_FORMAT_AUTO, NULL, 0, &r);
    char fake[600];
    snprintf(fake, sizeof fake, "%s:/x", P("fake.h5"));
    s2 = ctr_stack_open(fake, CTR_FORMAT_AUTO, NULL, 0, &r);
    fflush(stderr);
    dup2(saved, 2);
  }
  if (fd >= 0) close(fd);
  if (saved >= 0) close(saved);
  H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
  CHECK(s1 == CTR_E_FORMAT && s2 == CTR_E_FORMAT);
  CHECK_MSG(file_size(P("stderr.txt")) == 0, "HDF5 printed %lld bytes on stderr",
            file_size(P("stderr.txt")));
}

/* ---- Concurrency -------------------------------------------------------------- */

typedef struct reader_job {
  ctr_stack_reader *r;
  int id, bad;
} reader_job;

static void *reader_thread(void *arg) {
  reader_job *j = arg;
  uint16_t u[2 * NPIX];
  for (int it = 0; it < 200; it++) {
    const int64_t first = (j->id + it) % (NC - 1);
    if (ctr_stack_read(j->r, first, 2, CTR_DTYPE_UINT16, u) != CTR_OK ||
        memcmp(u, g_chunked + first * NPIX, sizeof u) != 0)
      j->bad++;
  }
  return NULL;
}

static void test_concurrent(void) {
  ctr_stack_reader *r1 = NULL, *r2 = NULL;
  CHECK_OK(ctr_stack_open(DS("/other/chunked"), CTR_FORMAT_AUTO, NULL, 0, &r1));
  CHECK_OK(ctr_stack_open(DS("/other/chunked"), CTR_FORMAT_AUTO, NULL, 0, &r2));
  if (!r1 || !r2) {
    ctr_stack_close(r1);
    ctr_stack_close(r2);
    return;
  }
  pthread_t t[6];
  reader_job jobs[6];
  int started = 0;
  for (int i = 0; i < 6; i++) {
    jobs[i] = (reader_job){i % 2 ? r2 : r1, i, 0};
    if (pthread_create(&t[i], NULL, reader_thread, &jobs[i]) == 0) started++;
    else break;
  }
  int bad = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    bad += jobs[i].bad;
  }
  CHECK(started == 6);
  CHECK_MSG(bad == 0, "%d concurrent reads failed or differ", bad);
  ctr_stack_close(r1);
  ctr_stack_close(r2);
}

/* ---- Vectors ------------------------------------------------------------------ */

static void test_vector(void) {
  const char *file = P("scan.h5");
  double *v = NULL;
  int64_t n = 0;
  CHECK_OK(ctr__hdf5_read_vector(file, "/exchange/theta", &v, &n));
  CHECK(n == NZ);
  if (v && n == NZ) CHECK(memcmp(v, g_theta, sizeof g_theta) == 0);
  free(v);
  v = NULL;
  CHECK_OK(ctr__hdf5_read_vector(file, "/other/theta32", &v, &n));
  CHECK(n == NZ);
  int bad = 0;
  for (int64_t i = 0; v && i < n && i < NZ; i++) bad += v[i] != (double)g_theta32[i];
  CHECK(v && bad == 0);
  free(v);
  v = NULL;
  CHECK_OK(ctr__hdf5_read_vector(file, "/other/index", &v, &n));
  CHECK(n == 4 && v && v[0] == -3.0 && v[3] == 100000.0);
  free(v);

  v = (double *)&n;
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/exchange/data", &v, &n), CTR_E_FORMAT,
              "is 3D (5 x 7 x 9): expected a 1D dataset");
  CHECK(v == NULL && n == 0);
  CHECK(strstr(ctr_error_detail(), file) != NULL);
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/exchange/nope", &v, &n), CTR_E_FORMAT,
              "has no dataset '/exchange/nope'");
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/other/str", &v, &n), CTR_E_FORMAT,
              "holds string elements");
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/exchange", &v, &n), CTR_E_FORMAT, "is a group");
  CHECK_FAILS(ctr__hdf5_read_vector(P("fake.h5"), "/theta", &v, &n), CTR_E_FORMAT,
              "as an HDF5 file");
  CHECK_FAILS(ctr__hdf5_read_vector(file, NULL, &v, &n), CTR_E_INVALID_ARGUMENT, "must be given");
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/exchange/theta", NULL, &n), CTR_E_INVALID_ARGUMENT,
              "must be given");
}

/* The "units" attribute of an angle dataset in the string forms the C API
 * writes: fixed-length ASCII, variable-length ASCII and UTF-8. (h5py's str,
 * which the reader once could not read because its memory type was ASCII,
 * is tested from Python: test_api.py, test_hdf5_angle_units_written_by_h5py.) */
static void test_angle_units(void) {
  const char *file = P("units.h5");
  static const char *const forms[3] = {"fixed ASCII", "variable ASCII", "variable UTF-8"};
  const double theta[3] = {0.0, 0.5, 1.0};
  for (int f = 0; f < 3; f++) {
    hid_t fid = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dim = 3;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    hid_t d = H5Dcreate2(fid, "/theta", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, theta);
    hid_t st = H5Tcopy(H5T_C_S1), as = H5Screate(H5S_SCALAR);
    const char *value = "radians";
    if (f == 0) H5Tset_size(st, strlen(value));
    else H5Tset_size(st, H5T_VARIABLE);
    if (f == 2) H5Tset_cset(st, H5T_CSET_UTF8);
    hid_t a = H5Acreate2(d, "units", st, as, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, st, f == 0 ? (const void *)value : (const void *)&value);
    H5Aclose(a), H5Sclose(as), H5Tclose(st), H5Dclose(d), H5Sclose(sp), H5Fclose(fid);
    double *v = NULL;
    int64_t n = 0;
    int given = 0;
    const ctr_status r = ctr_hdf5_read_angles(file, "/theta", &v, &n, &given);
    CHECK_MSG(r == CTR_OK, "units as %s: %s", forms[f], ctr_error_detail());
    CHECK(n == 3 && given == 1 && v && fabs(v[2] - 57.29577951308232) < 1e-12);
    free(v);
  }
}

/* ---- Damaged raw data (found by tests/fuzz/fuzz_hdf5.c) ----------------------- */

/* HDF5 copies a chunk's elements out of however many bytes the file stores
 * for it: a short unfiltered chunk, or one placed inside the superblock,
 * made H5Dread read past a heap buffer and return garbage as data. */
/* file:/data, uint16 of dims (3D) with dcpl's layout, whose chunks are
 * written as they are (H5Dwrite_chunk: filter mask, offset and byte count
 * each), as a damaged writer would leave them. */
typedef struct raw_chunk {
  unsigned mask;
  hsize_t off[3];
  size_t bytes;
  const void *data; /* NULL: write_raw_chunks' data */
} raw_chunk;
static void write_raw_chunks(const char *file, const hsize_t *dims, hid_t dcpl, int n,
                             const raw_chunk *c, const void *data) {
  hid_t fid = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(3, dims, NULL);
  hid_t d = H5Dcreate2(fid, "/data", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CHECK(d >= 0);
  for (int i = 0; i < n && d >= 0; i++)
    CHECK(H5Dwrite_chunk(d, H5P_DEFAULT, c[i].mask, c[i].off, c[i].bytes,
                         c[i].data ? c[i].data : data) >= 0);
  if (d >= 0) H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(fid);
}

static void test_damaged_chunks(void) {
  const char *file = P("short_chunk.h5");
  const hsize_t dims[3] = {2, 3, 4}, chunk[3] = {1, 3, 4};
  uint16_t v[12];
  for (int i = 0; i < 12; i++) v[i] = (uint16_t)(i + 1);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  const raw_chunk chunks[2] = {{0, {0, 0, 0}, sizeof v, NULL}, {0, {1, 0, 0}, 8, NULL}}; /* 8 of 24 bytes */
  write_raw_chunks(file, dims, dcpl, 2, chunks, v);
  H5Pclose(dcpl);
  char path[600];
  snprintf(path, sizeof path, "%s:/data", file);
  ctr_stack_reader *r = NULL;
  float img[12];
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img));
    CHECK(img[0] == 1.0f && img[11] == 12.0f);
    CHECK_FAILS(ctr_stack_read(r, 1, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                "is damaged: the chunk at element 1 of axis 0");
    CHECK(strstr(ctr_error_detail(), "with 8 bytes) does not fit: its elements take 24 bytes") &&
          strstr(ctr_error_detail(), file));
    ctr_stack_close(r);
  }
  /* the whole-dataset readers check every chunk */
  double *vec = NULL;
  int64_t n = 0;
  hsize_t one = 4, c1 = 2;
  hid_t fid = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(1, &one, NULL);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &c1);
  hid_t d = H5Dcreate2(fid, "/theta", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  const double th[2] = {1, 2};
  const hsize_t t0 = 0, t1 = 2;
  CHECK(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &t0, sizeof th, th) >= 0);
  CHECK(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &t1, 4, th) >= 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(fid);
  CHECK_FAILS(ctr__hdf5_read_vector(file, "/theta", &vec, &n), CTR_E_FORMAT,
              "is damaged: the chunk at element 2 of axis 0");
  CHECK(vec == NULL);

  /* the fuzzer's input: a chunk stored at byte 0, inside the superblock */
  snprintf(path, sizeof path, "%s/hdf5/regress-chunk-in-superblock.h5:/exchange/data",
           CTR_TEST_FUZZ_CORPUS);
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                "(stored at byte 0 with 24 bytes) does not fit");
    ctr_stack_close(r);
  }

  /* the fuzzer's input: chunks of rank 2 for 2 x 3 x 4 data (HDF5 1.14 read
   * past its chunk buffer on it) */
  snprintf(path, sizeof path, "%s/hdf5/regress-chunk-rank.h5:/exchange/data", CTR_TEST_FUZZ_CORPUS);
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                "is damaged: its chunks have 2 dimensions, its data 3");
    ctr_stack_close(r);
  }

  /* the 1.14 long runs' inputs: a chunk that skips the dataset's only filter
   * (deflate) with 38 of its 1024 bytes, and a Fletcher-32 chunk without its
   * checksum (HDF5 1.14 read past its chunk buffer on both) */
  const char *pet[2] = {"regress-filter-mask.h5", "regress-fletcher-short.h5"};
  for (int i = 0; i < 2; i++) {
    ctr_pet_histo *h = NULL;
    snprintf(path, sizeof path, "%s/pet_hdf5/%s", CTR_TEST_FUZZ_CORPUS, pet[i]);
    CHECK_FAILS(ctr_pet_histo_load(path, &h), CTR_E_FORMAT, "dataset '/pet/counts'");
    CHECK(strstr(ctr_error_detail(), "does not fit: its elements take 1024 bytes"));
    CHECK(h == NULL);
  }
}

/* ---- Damaged structures: the checked file driver (io_hdf5_driver.c) ----------- */

static void spit(const char *file, const unsigned char *b, size_t n) {
  FILE *f = fopen(file, "wb");
  CHECK(f && fwrite(b, 1, n, f) == n);
  if (f) fclose(f);
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Every local heap of a copy of `src` (the symbol tables' name heaps of a
 * file with HDF5's earliest format, the default), changed by `how`:
 * 0: a free list whose block points to itself (HDF5 walks it allocating a
 * node per step, without end); 1: a data segment claiming four times the
 * file's size. Returns how many heaps were changed. */
static int damage_heaps(const char *src, const char *dst, int how) {
  long long len = 0;
  unsigned char *b = read_all(src, &len);
  const size_t n = b ? (size_t)len : 0;
  int changed = 0;
  /* superblock version 0 at byte 0 with 8-byte addresses and lengths */
  if (!b || n < 64 || b[8] != 0 || b[13] != 8 || b[14] != 8) {
    CHECK_MSG(0, "%s: expected a version-0 superblock with 8-byte addresses and lengths", src);
    free(b);
    return 0;
  }
  for (size_t i = 0; i + 32 <= n; i++) {
    if (memcmp(b + i, "HEAP", 4) != 0 || b[i + 4] != 0) continue;
    const uint64_t len = le64(b + i + 8), seg = le64(b + i + 24);
    if (how == 1) {
      put_le64(b + i + 8, 4 * (uint64_t)n);
      changed++;
    } else if (len >= 24 && seg + len <= n) {
      put_le64(b + i + 16, 8);    /* head of the free list: offset 8 */
      put_le64(b + seg + 8, 8);   /* its next block: itself */
      put_le64(b + seg + 16, 16); /* its size */
      changed++;
    }
  }
  spit(dst, b, n);
  free(b);
  return changed;
}

static void test_damaged_structures(void) {
  char path[600];
  ctr_stack_reader *r = NULL;
  /* a loop in a local heap's free list: before the driver, HDF5 grew until
   * out of memory inside H5Oopen (the 1.14 long runs, 2.2 GB) */
  CHECK(damage_heaps(P("scan.h5"), P("heap-loop.h5"), 0) > 0);
  snprintf(path, sizeof path, "%s:/exchange/data", P("heap-loop.h5"));
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r), CTR_E_FORMAT,
              "is damaged (looking for dataset '/exchange/data')");
  CHECK(strstr(ctr_error_detail(), "its free list loops") && strstr(ctr_error_detail(), "heap-loop.h5"));
  CHECK(r == NULL);
  double *vec = NULL;
  int64_t nv = 0;
  CHECK_FAILS(ctr__hdf5_read_vector(P("heap-loop.h5"), "/exchange/theta", &vec, &nv), CTR_E_FORMAT,
              "free list loops");
  /* a heap larger than the file: sec2 gave HDF5 zeros past the end */
  CHECK(damage_heaps(P("scan.h5"), P("heap-big.h5"), 1) > 0);
  snprintf(path, sizeof path, "%s:/exchange/data", P("heap-big.h5"));
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r), CTR_E_FORMAT,
              "lies past the end of the file");
  /* a truncated file: its structures claim more bytes than it has */
  long long n = 0;
  unsigned char *b = read_all(P("scan.h5"), &n);
  CHECK(b != NULL);
  if (b) spit(P("cut.h5"), b, (size_t)n * 2 / 3);
  free(b);
  snprintf(path, sizeof path, "%s:/exchange/data", P("cut.h5"));
  CHECK_FAILS(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r), CTR_E_FORMAT, "truncated");
  /* the same for the PET histo-image reader, on the fuzzer's inputs
   * (fuzz_pet_hdf5: 4 of the 1.14 runs' out-of-memory inputs) */
  static const char *pet[] = {"regress-heap-loop-1.h5", "regress-heap-loop-2.h5"};
  for (int i = 0; i < 2; i++) {
    ctr_pet_histo *h = NULL;
    snprintf(path, sizeof path, "%s/pet_hdf5/%s", CTR_TEST_FUZZ_CORPUS, pet[i]);
    CHECK_FAILS(ctr_pet_histo_load(path, &h), CTR_E_FORMAT, "free list loops");
    CHECK(h == NULL);
  }
}

/* A chunk's size against its filters (its filter mask says which applied):
 * none applied -> exactly its elements; shuffle and Fletcher-32 only -> its
 * elements plus 4 bytes; a compressing filter -> any size. Built here with
 * H5Dwrite_chunk, as a damaged writer would leave them. */
static void test_filtered_chunk_sizes(void) {
  const hsize_t dims[3] = {3, 2, 4}, chunk[3] = {1, 2, 4};
  uint16_t v[10];
  for (int i = 0; i < 10; i++) v[i] = (uint16_t)(i + 1);
  const char *file = P("filtered_chunks.h5");
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  H5Pset_shuffle(dcpl);
  H5Pset_fletcher32(dcpl);
  /* chunk 0: shuffle skipped (mask bit 0), Fletcher-32 applied: 16 + 4 bytes
   * expected, and given (the checksum is not verified here: HDF5 does); chunk
   * 1: both skipped, 16 bytes: fine; chunk 2: Fletcher-32 applied, 16 bytes:
   * 4 short */
  const raw_chunk chunks[3] = {{1u, {0, 0, 0}, 20, NULL}, {3u, {1, 0, 0}, 16, NULL},
                               {0u, {2, 0, 0}, 16, NULL}};
  write_raw_chunks(file, dims, dcpl, 3, chunks, v);
  H5Pclose(dcpl);
  char path[600];
  snprintf(path, sizeof path, "%s:/data", file);
  ctr_stack_reader *r = NULL;
  float img[8];
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_OK(ctr_stack_read(r, 1, 1, CTR_DTYPE_FLOAT32, img));
    CHECK(img[0] == 1.0f && img[7] == 8.0f);
    /* chunk 0's size is right; HDF5 then finds its checksum wrong */
    CHECK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img) != CTR_OK);
    CHECK(!strstr(ctr_error_detail(), "does not fit"));
    CHECK_FAILS(ctr_stack_read(r, 2, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                "the chunk at element 2 of axis 0 (stored at byte");
    CHECK(strstr(ctr_error_detail(), "with 16 bytes) does not fit: its elements take 16 bytes "
                                     "before its 2 filter(s)"));
    ctr_stack_close(r);
  }
}


/* Behind deflate a chunk must inflate to exactly its elements (HDF5 1.14 copies
 * a whole chunk out of what the filter gave back: the 1.14 long runs' 1216 of
 * 130176 bytes). Chunks built here with zlib and H5Dwrite_chunk: chunk 0
 * deflates its 16 bytes (reads), chunk 1 deflates 10 (short), chunk 2 deflates
 * 20 (long), chunk 3 is 12 bytes that are no zlib stream. */
static void test_inflate_sizes(void) {
  const hsize_t dims[3] = {4, 2, 4}, chunk[3] = {1, 2, 4};
  uint16_t v[10];
  for (int i = 0; i < 10; i++) v[i] = (uint16_t)(100 + i);
  const char *file = P("inflate_chunks.h5");
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  H5Pset_deflate(dcpl, 1);
  const size_t plain[3] = {16, 10, 20};
  unsigned char z[3][64];
  raw_chunk chunks[4] = {{0, {3, 0, 0}, 12, NULL}};
  for (int c = 0; c < 3; c++) {
    uLongf n = sizeof z[c];
    REQUIRE(compress2(z[c], &n, (const Bytef *)v, plain[c], 1) == Z_OK);
    chunks[c + 1] = (raw_chunk){0, {(hsize_t)c, 0, 0}, n, z[c]};
  }
  write_raw_chunks(file, dims, dcpl, 4, chunks, v);
  H5Pclose(dcpl);
  char path[600];
  snprintf(path, sizeof path, "%s:/data", file);
  ctr_stack_reader *r = NULL;
  float img[8];
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img));
    CHECK(img[0] == 100.0f && img[7] == 107.0f);
    const char *want[3] = {"does not decode to its elements' size (10 bytes: 16 expected)",
                           "does not decode to its elements' size (20 bytes: 16 expected)",
                           "is no zlib stream of at most its elements' size (deflate)"};
    for (int i = 1; i <= 3; i++) {
      char where[64];
      snprintf(where, sizeof where, "is damaged: the chunk at element %d of axis 0 (", i);
      CHECK_FAILS(ctr_stack_read(r, (size_t)i, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT, where);
      CHECK_MSG(strstr(ctr_error_detail(), want[i - 1]) && strstr(ctr_error_detail(), file),
                "chunk %d: %s", i, ctr_error_detail());
    }
    /* row by row (each chunk read in two pieces): the healthy chunk reads,
     * the short one fails each time */
    for (int row = 0; row < 2; row++) {
      CHECK_OK(ctr_stack_read_rows(r, 0, 1, row, 1, CTR_DTYPE_FLOAT32, img));
      CHECK(img[0] == (float)(100 + 4 * row));
      CHECK_FAILS(ctr_stack_read_rows(r, 1, 1, row, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                  "(10 bytes: 16 expected)");
    }
    ctr_stack_close(r);
  }
  /* the whole-dataset readers check such chunks before HDF5 reads them */
  const hsize_t vdims[1] = {8}, vchunk[1] = {4};
  const double th[4] = {0.5, 1.5, 2.5, 3.5};
  hid_t fid = H5Fcreate(P("inflate_vector.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(1, vdims, NULL);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, vchunk);
  H5Pset_deflate(dcpl, 1);
  hid_t d = H5Dcreate2(fid, "/theta", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(d >= 0);
  for (int c = 0; c < 2; c++) {
    unsigned char zz[96];
    uLongf n = sizeof zz;
    REQUIRE(compress2(zz, &n, (const Bytef *)th, c ? 24 : 32, 1) == Z_OK); /* 3 of 4 values */
    const hsize_t off[1] = {(hsize_t)(4 * c)};
    CHECK(H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, n, zz) >= 0);
  }
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(fid);
  double *vec = NULL;
  int64_t nvec = 0;
  CHECK_FAILS(ctr__hdf5_read_vector(P("inflate_vector.h5"), "/theta", &vec, &nvec), CTR_E_FORMAT,
              "the chunk at element 4 of axis 0");
  CHECK(strstr(ctr_error_detail(),
               "does not decode to its elements' size (its elements take 32 bytes") &&
        vec == NULL);

  /* the 1.14 long run's input: (1, 4, 8, 1017) chunks of 2 x 4 x 8 x 8 data,
   * the first inflating to 1216 bytes */
  ctr_pet_histo *h = NULL;
  snprintf(path, sizeof path, "%s/pet_hdf5/regress-inflate-short.h5", CTR_TEST_FUZZ_CORPUS);
  CHECK_FAILS(ctr_pet_histo_load(path, &h), CTR_E_FORMAT, "dataset '/pet/counts'");
  CHECK(strstr(ctr_error_detail(), "its chunks are 1017 long on axis 3, longer than the axis "
                                   "(at most 8)"));
  CHECK(h == NULL);

  /* the 1.14 long runs of 2026-11-27 (64 cores): a chunk index whose entry
   * for chunk 0 says 38 bytes to H5Dget_chunk_info_by_coord and 1840 to the
   * lookup H5Dread_chunk reads by, into a buffer of 1093 (HDF5 1.10 corrupts
   * its heap on it: bad-free, without the check) */
  h = NULL;
  snprintf(path, sizeof path, "%s/pet_hdf5/regress-chunk-sizes-disagree.h5", CTR_TEST_FUZZ_CORPUS);
  CHECK_FAILS(ctr_pet_histo_load(path, &h), CTR_E_FORMAT, "dataset '/pet/counts'");
  CHECK(strstr(ctr_error_detail(), "the chunk at element 0 of axis 0 (38 bytes stored) has "
                                   "index entries that disagree on its stored size"));
  CHECK(h == NULL);
}


/* Chunks decoded by ctrecon (io_hdf5_chunks.c) against HDF5's own writer:
 * deflate alone, shuffle + deflate, shuffle + deflate + Fletcher-32, and
 * Fletcher-32 alone, over uint16, big-endian int16 and float64 (converted),
 * 5 x 7 x 9 data in 2 x 3 x 4 chunks (partial chunks at every edge), one
 * chunk never written (fill value 7): whole reads and bands of 2 rows equal
 * the data. Then a Fletcher-32 chunk whose checksum is wrong. */
static void test_decoded_chunks(void) {
  enum { Z = 5, Y = 7, X = 9 };
  const hsize_t dims[3] = {Z, Y, X}, chunk[3] = {2, 3, 4};
  double v[Z * Y * X];
  for (int i = 0; i < Z * Y * X; i++) v[i] = (double)((i * 37) % 1000) - (i % 3 ? 0 : 300);
  const hid_t types[3] = {H5T_STD_U16LE, H5T_STD_I16BE, H5T_IEEE_F64LE};
  for (int pipeline = 0; pipeline < 4; pipeline++)
    for (int t = 0; t < 3; t++) {
      char file[64];
      snprintf(file, sizeof file, "decoded_%d_%d.h5", pipeline, t);
      hid_t fid = H5Fcreate(P(file), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      hid_t sp = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(dcpl, 3, chunk);
      if (pipeline == 1 || pipeline == 2) H5Pset_shuffle(dcpl);
      if (pipeline < 3) H5Pset_deflate(dcpl, 4);
      if (pipeline >= 2) H5Pset_fletcher32(dcpl);
      const double fill = 7;
      H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill);
      hid_t d = H5Dcreate2(fid, "/data", types[t], sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      REQUIRE(d >= 0);
      /* everything but chunk (2, 1, 1): images 4, rows 3-5, columns 4-7 */
      double w[Z * Y * X];
      for (int i = 0; i < Z * Y * X; i++) {
        const int z = i / (Y * X), y = i / X % Y, x = i % X;
        const int hole = z == 4 && y >= 3 && y < 6 && x >= 4 && x < 8;
        w[i] = t == 0 && v[i] < 0 ? -v[i] : v[i]; /* uint16 holds no negatives */
        if (hole) w[i] = fill;
      }
      const hsize_t s0[3] = {0, 0, 0}, c0[3] = {4, Y, X};
      hsize_t s1[3] = {4, 0, 0}, c1[3] = {1, 3, X};
      H5Sselect_hyperslab(sp, H5S_SELECT_SET, s0, NULL, c0, NULL);
      H5Sselect_hyperslab(sp, H5S_SELECT_OR, s1, NULL, c1, NULL);
      s1[1] = 6;
      c1[1] = 1;
      H5Sselect_hyperslab(sp, H5S_SELECT_OR, s1, NULL, c1, NULL);
      const hsize_t s2[3] = {4, 3, 0}, c2[3] = {1, 3, 4}, s3[3] = {4, 3, 8}, c3[3] = {1, 3, 1};
      H5Sselect_hyperslab(sp, H5S_SELECT_OR, s2, NULL, c2, NULL);
      H5Sselect_hyperslab(sp, H5S_SELECT_OR, s3, NULL, c3, NULL);
      CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, sp, sp, H5P_DEFAULT, w) >= 0);
      hsize_t hole_bytes = 1;
      const hsize_t hole_off[3] = {4, 3, 4};
      CHECK(H5Dget_chunk_storage_size(d, hole_off, &hole_bytes) >= 0 || hole_bytes == 0);
      H5Eclear2(H5E_DEFAULT);
      H5Dclose(d);
      H5Pclose(dcpl);
      H5Sclose(sp);
      H5Fclose(fid);
      char path[600];
      snprintf(path, sizeof path, "%s:/data", P(file));
      ctr_stack_reader *r = NULL;
      CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
      if (!r) continue;
      float got[Z * Y * X], band[Z * 2 * X];
      int bad = 0;
      CHECK_OK(ctr_stack_read(r, 0, Z, CTR_DTYPE_FLOAT32, got));
      for (int i = 0; i < Z * Y * X; i++) bad += got[i] != (float)w[i];
      for (int row = 0; row < Y; row += 2) {
        const int rows = Y - row < 2 ? Y - row : 2;
        CHECK_OK(ctr_stack_read_rows(r, 1, Z - 1, row, rows, CTR_DTYPE_FLOAT32, band));
        for (int z = 1; z < Z; z++)
          for (int y = 0; y < rows; y++)
            for (int x = 0; x < X; x++)
              bad += band[((z - 1) * rows + y) * X + x] != (float)w[(z * Y + row + y) * X + x];
      }
      CHECK_MSG(bad == 0, "pipeline %d, type %d: %d values differ", pipeline, t, bad);
      ctr_stack_close(r);
    }
  /* Fletcher-32 alone: chunk 0's checksum right (HDF5 wrote it), chunk 1's
   * last byte changed */
  const hsize_t fd[3] = {2, 2, 4}, fc[3] = {1, 2, 4};
  uint16_t u[16];
  for (int i = 0; i < 16; i++) u[i] = (uint16_t)(3 * i + 1);
  hid_t fid = H5Fcreate(P("fletcher.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(3, fd, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, fc);
  H5Pset_fletcher32(dcpl);
  hid_t d = H5Dcreate2(fid, "/data", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(d >= 0);
  CHECK(H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, u) >= 0);
  unsigned char rawc[20];
  uint32_t mask = 0;
  const hsize_t c1off[3] = {1, 0, 0};
  CHECK(H5Dread_chunk(d, H5P_DEFAULT, c1off, &mask, rawc) >= 0);
  rawc[19] ^= 0x5a;
  CHECK(H5Dwrite_chunk(d, H5P_DEFAULT, 0, c1off, sizeof rawc, rawc) >= 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Fclose(fid);
  char path[600];
  snprintf(path, sizeof path, "%s:/data", P("fletcher.h5"));
  ctr_stack_reader *r = NULL;
  float img[8];
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  if (r) {
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, img));
    CHECK(img[0] == 1.0f && img[7] == 22.0f);
    CHECK_FAILS(ctr_stack_read(r, 1, 1, CTR_DTYPE_FLOAT32, img), CTR_E_FORMAT,
                "the chunk at element 1 of axis 0 (20 bytes stored) fails its Fletcher-32 "
                "checksum");
    ctr_stack_close(r);
  }
}

#endif /* TEST_HDF5 */

/* Tiny chunks: HDF5 allocates per chunk a read touches, so reads are split to
 * at most 65536 chunks (io_hdf5.c): 1 x 1 x 1 chunks of 40 images of 64 x 64
 * (4096 chunks an image) are read in pieces and equal the data; 1 x 1 x 1
 * chunks of 260 x 260 images (67600 an image) are refused, naming h5repack. */
static void test_tiny_chunks(void) {
  enum { TN = 40, TY = 64, TX = 64, BY = 260, BX = 260 };
  uint16_t *d = malloc(sizeof(uint16_t) * TN * TY * TX), *got = malloc(sizeof(uint16_t) * TN * TY * TX);
  uint16_t *big = calloc(BY * BX, sizeof(uint16_t));
  REQUIRE(d && got && big);
  for (int i = 0; i < TN * TY * TX; i++) d[i] = (uint16_t)(i * 7 + 3);
  hid_t f = H5Fcreate(P("tiny.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(f >= 0);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t one[3] = {1, 1, 1}, td[3] = {TN, TY, TX}, bd[3] = {1, BY, BX};
  H5Pset_chunk(dcpl, 3, one);
  put(f, "/tiny", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, td, d, dcpl);
  put(f, "/big", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, bd, big, dcpl);
  H5Pclose(dcpl);
  /* a whole-dataset read (vectors, PET histo-images) of more chunks is refused */
  enum { NV = 70000 };
  double *vec = calloc(NV, sizeof(double));
  REQUIRE(vec);
  hid_t vcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t vone[1] = {1}, vd[1] = {NV};
  H5Pset_chunk(vcpl, 1, vone);
  put(f, "/vec", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, vd, vec, vcpl);
  H5Pclose(vcpl);
  free(vec);
  H5Fclose(f);
  char path[700];
  snprintf(path, sizeof path, "%s:/tiny", P("tiny.h5"));
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    memset(got, 0, sizeof(uint16_t) * TN * TY * TX);
    CHECK_OK(ctr_stack_read(r, 0, TN, CTR_DTYPE_UINT16, got));
    CHECK_MSG(!memcmp(got, d, sizeof(uint16_t) * TN * TY * TX), "tiny chunks: the split read differs");
    memset(got, 0, sizeof(uint16_t) * TN * TY * TX);
    CHECK_OK(ctr_stack_read_rows(r, 3, TN - 3, 5, 9, CTR_DTYPE_UINT16, got));
    int bad = 0;
    for (int i = 0; i < TN - 3; i++)
      bad += memcmp(got + i * 9 * TX, d + ((3 + i) * TY + 5) * TX, sizeof(uint16_t) * 9 * TX) != 0;
    CHECK_MSG(bad == 0, "tiny chunks: %d images of a row band differ", bad);
    ctr_stack_close(r);
  }
  snprintf(path, sizeof path, "%s:/big", P("tiny.h5"));
  r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_UINT16, big), CTR_E_FORMAT, "h5repack");
    ctr_stack_close(r);
  }
  double *v = NULL;
  int64_t nv = 0;
  CHECK_FAILS(ctr_hdf5_read_vector(P("tiny.h5"), "/vec", &v, &nv), CTR_E_FORMAT, "70000 chunks");
  free(v);
  free(d);
  free(got);
  free(big);
}

/* ---- Row bands read with threads (io_hdf5_pread.c) ------------------------------ */

/* Images of 70 rows of 1000 columns: a band of all 26 images is 3.6 MB of
 * uint16, enough for eight threads of 256 KiB. */
enum { BN = 26, BH = 70, BW = 1000 };
#define BPIX ((size_t)BN * BH * BW)

/* bands.h5: the same numbers stored every way the threads read or leave to
 * H5Dread. */
static void make_bands(const char *file, const uint16_t *u, const float *f) {
  hid_t fid = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(fid >= 0);
  const hsize_t dims[3] = {BN, BH, BW}, image[3] = {1, BH, BW}, tile[3] = {4, 16, 300};
  hid_t img = H5Pcreate(H5P_DATASET_CREATE), til = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(img, 3, image);
  H5Pset_chunk(til, 3, tile);
  put(fid, "/u16", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, dims, u, img);
  put(fid, "/u16be", H5T_STD_U16BE, H5T_NATIVE_UINT16, 3, dims, u, img);
  put(fid, "/f32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dims, f, img);
  put(fid, "/f32be", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, 3, dims, f, img);
  put(fid, "/contig", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, dims, u, H5P_DEFAULT);
  put(fid, "/tiles", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, dims, u, til);
  if (g_have_deflate) {
    hid_t z = H5Pcopy(img);
    H5Pset_deflate(z, 1);
    put(fid, "/deflate", H5T_STD_U16LE, H5T_NATIVE_UINT16, 3, dims, u, z);
    H5Pclose(z);
  }
  /* images [0, 8) written, the chunks of the others never (the fill value) */
  const uint16_t fill = 7;
  H5Pset_fill_value(til, H5T_NATIVE_UINT16, &fill);
  hid_t sp = H5Screate_simple(3, dims, NULL);
  hid_t d = H5Dcreate2(fid, "/holes", H5T_STD_U16LE, sp, H5P_DEFAULT, til, H5P_DEFAULT);
  const hsize_t start[3] = {0, 0, 0}, part[3] = {8, BH, BW};
  hid_t ms = H5Screate_simple(3, part, NULL);
  H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, part, NULL);
  CHECK(d >= 0 && H5Dwrite(d, H5T_NATIVE_UINT16, ms, sp, H5P_DEFAULT, u) >= 0);
  H5Sclose(ms);
  H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  H5Pclose(img);
  H5Pclose(til);
  H5Fclose(fid);
}

typedef struct band_case {
  int64_t first, n, row0, nrows;
} band_case;
static const band_case g_bands[] = {
    {0, BN, 0, 16},  {0, BN, 16, 16}, {0, BN, 64, 6}, /* the last, partial band */
    {0, BN, 0, BH},  {3, 17, 5, 23},  {1, 24, 30, 33}, {25, 1, 69, 1}, {0, 8, 10, 40}};

/* Every band of g_bands through H5Dread (read_threads 1) and through the
 * threads (the default): the same bytes, those of truth (BPIX elements of
 * es bytes; NULL: not compared). *other: the bytes threads other than the
 * caller read from the file. */
static void compare_bands(const char *file, const char *dset, const void *truth, size_t es,
                          long long *other) {
  char path[700];
  snprintf(path, sizeof path, "%s:%s", file, dset);
  ctr_stack_reader *r1 = NULL, *rn = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r1));
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &rn));
  unsigned char *a = malloc(BPIX * es), *b = malloc(BPIX * es);
  REQUIRE(a && b);
  *other = 0;
  if (r1 && rn) {
    ctr_stack_reader_set_read_threads(r1, 1);
    const ctr_dtype dt = ctr_stack_reader_get_info(r1)->dtype;
    for (size_t k = 0; k < sizeof g_bands / sizeof g_bands[0]; k++) {
      const band_case *c = &g_bands[k];
      const size_t row = (size_t)BW * es, bytes = (size_t)(c->n * c->nrows) * row;
      memset(a, 0x11, bytes);
      memset(b, 0x22, bytes);
      CHECK_OK(ctr_stack_read_rows(r1, c->first, c->n, c->row0, c->nrows, dt, a));
      read_count_start(file);
      CHECK_OK(ctr_stack_read_rows(rn, c->first, c->n, c->row0, c->nrows, dt, b));
      *other += read_count_other();
      CHECK_MSG(!memcmp(a, b, bytes), "%s: rows [%lld, %lld) of images [%lld, %lld) differ "
                "between H5Dread and the threads", dset, (long long)c->row0,
                (long long)(c->row0 + c->nrows), (long long)c->first, (long long)(c->first + c->n));
      int bad = 0;
      for (int64_t i = 0; truth && i < c->n; i++)
        bad += memcmp(b + (size_t)(i * c->nrows) * row,
                      (const unsigned char *)truth + ((size_t)(c->first + i) * BH + (size_t)c->row0) * row,
                      (size_t)c->nrows * row) != 0;
      CHECK_MSG(bad == 0, "%s: %d images of rows [%lld, %lld) differ from the data", dset, bad,
                (long long)c->row0, (long long)(c->row0 + c->nrows));
    }
  }
  ctr_stack_close(r1);
  ctr_stack_close(rn);
  free(a);
  free(b);
}

/* All rows of dset in bands of `rows` through the threads: the bytes read
 * from the file are its data once (plus HDF5's index: 2 % + 16 KiB). */
static void check_read_once(const char *file, const char *dset, int64_t rows) {
  char path[700];
  snprintf(path, sizeof path, "%s:%s", file, dset);
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
  uint16_t *buf = malloc(sizeof(uint16_t) * BN * (size_t)rows * BW);
  REQUIRE(buf);
  if (r) {
    CHECK_OK(ctr__stack_prepare_rows(r, BN, rows));
    read_count_start(file);
    for (int64_t r0 = 0; r0 < BH; r0 += rows)
      CHECK_OK(ctr_stack_read_rows(r, 0, BN, r0, BH - r0 < rows ? BH - r0 : rows,
                                   CTR_DTYPE_UINT16, buf));
    const long long got = read_count_bytes(), data = (long long)(BPIX * sizeof(uint16_t));
    CHECK_MSG(got >= data && got <= data + data / 50 + 16384 && read_count_other() > 0,
              "%s: %lld bytes read (%lld by other threads) in bands of %lld rows for %lld bytes "
              "of data", dset, got, read_count_other(), (long long)rows, data);
    printf("  %s in bands of %lld rows: %lld bytes read for %lld of data, %lld by other "
           "threads\n", dset, (long long)rows, got, data, read_count_other());
    ctr_stack_close(r);
  }
  free(buf);
}

/* The address of chunk `off` of dset in file replaced, where the chunk index
 * holds it, by one past the end of the file; 0 if it cannot be found once. */
static int move_chunk_past_eof(const char *file, const char *dset, const hsize_t *off) {
  hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = fid >= 0 ? H5Dopen2(fid, dset, H5P_DEFAULT) : -1;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  unsigned mask = 0;
  if (d < 0 || H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0) addr = HADDR_UNDEF;
  if (d >= 0) H5Dclose(d);
  if (fid >= 0) H5Fclose(fid);
  FILE *f = fopen(file, "r+b");
  if (!f || addr == HADDR_UNDEF) {
    if (f) fclose(f);
    return 0;
  }
  fseek(f, 0, SEEK_END);
  const long len = ftell(f);
  unsigned char *all = malloc((size_t)len), want[8], past[8];
  const uint64_t moved = (uint64_t)len + 4096;
  for (int i = 0; i < 8; i++) {
    want[i] = (unsigned char)((uint64_t)addr >> (8 * i));
    past[i] = (unsigned char)(moved >> (8 * i));
  }
  long at = -1, hits = 0;
  rewind(f);
  if (all && fread(all, 1, (size_t)len, f) == (size_t)len)
    for (long i = 0; i + 8 <= len; i++)
      if (!memcmp(all + i, want, 8)) at = i, hits++;
  int ok = hits == 1 && fseek(f, at, SEEK_SET) == 0 && fwrite(past, 1, 8, f) == 8;
  ok &= fclose(f) == 0;
  free(all);
  return ok;
}

static void test_pread_bands(void) {
  uint16_t *u = malloc(sizeof(uint16_t) * BPIX), *fills = malloc(sizeof(uint16_t) * BPIX);
  float *f = malloc(sizeof(float) * BPIX);
  REQUIRE(u && f && fills);
  for (size_t i = 0; i < BPIX; i++) {
    u[i] = (uint16_t)((i * 2654435761u) >> 13);
    f[i] = (float)th_uniform(-1e4, 1e4);
  }
  f[5] = NAN;
  f[6] = -0.0f;
  f[7] = 1e-42f;
  const char *file = P("bands.h5");
  make_bands(file, u, f);
  long long other = 0;
  /* through the threads: chunked per image, float32, contiguous, chunks of 4
   * images x 16 rows x 300 columns (edge chunks partial on every axis), and
   * big-endian uint16 (swapped here) */
  const char *fast[] = {"/u16", "/f32", "/contig", "/tiles", "/u16be"};
  for (int i = 0; i < 5; i++) {
    compare_bands(file, fast[i], i == 1 ? (const void *)f : u, i == 1 ? 4 : 2, &other);
    CHECK_MSG(other > 0, "%s: no byte read by another thread", fast[i]);
  }
  /* left to HDF5: big-endian floats (converted), deflate, and chunks never
   * written (the bands that touch them) */
  compare_bands(file, "/f32be", f, 4, &other);
  CHECK_MSG(other == 0, "/f32be: %lld bytes read by other threads", other);
  if (g_have_deflate) {
    compare_bands(file, "/deflate", u, 2, &other);
    CHECK_MSG(other == 0, "/deflate: %lld bytes read by other threads", other);
  }
  for (size_t i = 0; i < BPIX; i++) fills[i] = i < 8 * (size_t)BH * BW ? u[i] : 7;
  compare_bands(file, "/holes", fills, 2, &other);
  CHECK_MSG(other > 0, "/holes: images [0, 8) are written: no byte read by another thread");

  /* each byte read once */
  check_read_once(file, "/u16", 16);
  check_read_once(file, "/contig", 16);
  check_read_once(file, "/tiles", 20);

  /* a damaged file: a chunk's index entry past the end of the file is the
   * check's error, through either path */
  const char *bad = P("bands_past_eof.h5");
  const hsize_t off[3] = {5, 0, 0};
  {
    FILE *in = fopen(file, "rb"), *out = fopen(bad, "wb");
    char chunk[1 << 16];
    size_t k;
    while (in && out && (k = fread(chunk, 1, sizeof chunk, in)) > 0) fwrite(chunk, 1, k, out);
    if (in) fclose(in);
    if (out) fclose(out);
  }
  CHECK_MSG(move_chunk_past_eof(bad, "/u16", off), "cannot move a chunk of %s", bad);
  char path[700];
  snprintf(path, sizeof path, "%s:/u16", bad);
  for (int threads = 0; threads <= 1; threads++) {
    ctr_stack_reader *r = NULL;
    CHECK_OK(ctr_stack_open(path, CTR_FORMAT_HDF5, NULL, 0, &r));
    if (!r) continue;
    ctr_stack_reader_set_read_threads(r, threads);
    CHECK_FAILS(ctr_stack_read_rows(r, 0, BN, 0, 16, CTR_DTYPE_UINT16, fills), CTR_E_FORMAT,
                "is damaged: the chunk at element 5 of axis 0");
    CHECK(strstr(ctr_error_detail(), "does not fit") && strstr(ctr_error_detail(), bad));
    ctr_stack_close(r);
  }
  free(u);
  free(f);
  free(fills);
}

int main(void) {
  if (!scratch_open("ctr_test_hdf5")) return 1;
  const int have = (ctr_features() & CTR_FEATURE_HDF5) != 0;
  test_format_names();
  test_write(have);
  test_missing_file(have);
#if TEST_HDF5
  CHECK_MSG(have, "the test was built with HDF5 but the library reports no CTR_FEATURE_HDF5");
  make_data();
  H5Eget_auto2(H5E_DEFAULT, &g_default_func, &g_default_data);
  CHECK(g_default_func != NULL); /* printing is on by default */
  if (have && make_file(P("scan.h5"))) {
    test_read_uint16();
    test_read_chunked();
    test_read_float();
    test_read_converted();
    test_hints();
    test_errors();
    test_quiet();
    test_concurrent();
    test_vector();
  test_angle_units();
    test_damaged_chunks();
    test_damaged_structures();
    test_filtered_chunk_sizes();
    test_inflate_sizes();
    test_decoded_chunks();
    test_tiny_chunks();
    test_pread_bands();
    test_write_adds();
  }
  scratch_close();
  return th_finish("test_hdf5");
#else
  scratch_close();
  const int rc = th_finish("test_hdf5");
  if (rc) return rc;
  printf("test_hdf5: SKIPPED the HDF5 file checks: %s\n",
         have ? "the library has HDF5 but this test was compiled without CTR_HAVE_HDF5 and the "
                "HDF5 include directories (tests/CMakeLists.txt)"
              : "ctrecon was built without HDF5 (-DCTRECON_HDF5=off or libhdf5-dev missing)");
  return 77;
#endif
}
