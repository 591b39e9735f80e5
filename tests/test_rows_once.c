/* Row blocks read every stored byte once (issue 24): ctr_stack_read_rows over
 * all rows, in blocks that follow the reader's row_block, returns the rows
 * of whole-image reads and reads (the process's rchar, /proc/self/io) about
 * the file's data bytes once: HDF5 contiguous, chunked (one image a chunk,
 * unfiltered) and deflate-compressed chunks; a multi-page TIFF and a TIFF
 * stack as ctrecon writes them (uncompressed strips), a deflate-compressed
 * multi-page TIFF and a tiled one. The same reads through whole images
 * would read each file once per block. Also float16 round trips. */
#include "harness.h"
#include "scratch_dir.h"
#include "io/io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <tiffio.h>
#if CTR_HAVE_HDF5
#include <hdf5.h>
#endif

enum { W = 96, H = 40, N = 12 };

static int64_t stored_bytes(const char *path) {
  struct stat s;
  return stat(path, &s) == 0 ? (int64_t)s.st_size : -1;
}

/* Reads every row of path in blocks of `rows` rounded up to the reader's
 * row block; checks the data and that the bytes read stay within
 * `data_bytes` x 1.02 + 16 KiB. */
static void check_once(const char *path, ctr_file_format fmt, const uint16_t *truth,
                       int64_t data_bytes, int64_t rows) {
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, fmt, NULL, 0, &r));
  if (!r) return;
  const int64_t rb = ctr__stack_row_block(r);
  const int64_t block = (rows + rb - 1) / rb * rb;
  CHECK_OK(ctr__stack_prepare_rows(r, N, block));
  uint16_t *buf = malloc(sizeof(uint16_t) * (size_t)(W * block * N));
  int same = 1;
  const int64_t before = bytes_read();
  for (int64_t r0 = 0; r0 < H; r0 += block) {
    const int64_t n = H - r0 < block ? H - r0 : block;
    CHECK_OK(ctr_stack_read_rows(r, 0, N, r0, n, CTR_DTYPE_UINT16, buf));
    for (int64_t i = 0; i < N; i++)
      same &= !memcmp(buf + i * n * W, truth + (i * H + r0) * W, sizeof(uint16_t) * (size_t)(n * W));
  }
  const int64_t got = bytes_read() - before;
  CHECK_MSG(same, "'%s': row blocks of %lld differ from the data", path, (long long)block);
  CHECK_MSG(before >= 0 && got >= data_bytes && got <= data_bytes + data_bytes / 50 + 16384,
            "'%s': read %lld bytes in blocks of %lld rows for %lld bytes of data (row block %lld)",
            path, (long long)got, (long long)block, (long long)data_bytes, (long long)rb);
  printf("  %-28s row block %2lld, blocks of %2lld rows: %lld bytes read for %lld stored\n",
         path + strlen(g_dir) + 1, (long long)rb, (long long)block, (long long)got,
         (long long)data_bytes);
  ctr_stack_close(r);
  free(buf);
}

/* A multi-page TIFF written with libtiff directly: compressed strips
 * (deflate, 7 rows each) or 16 x 16 tiles. */
static int64_t write_tiff(const char *path, const uint16_t *v, int tiled) {
  TIFF *t = TIFFOpen(path, "w");
  if (!t) return -1;
  for (int p = 0; p < N; p++) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)W);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)H);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    if (tiled) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
      TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
      uint16_t tile[16 * 16];
      for (int y0 = 0; y0 < H; y0 += 16)
        for (int x0 = 0; x0 < W; x0 += 16) {
          memset(tile, 0, sizeof tile);
          for (int y = 0; y < 16 && y0 + y < H; y++)
            for (int x = 0; x < 16 && x0 + x < W; x++)
              tile[y * 16 + x] = v[((int64_t)p * H + y0 + y) * W + x0 + x];
          TIFFWriteTile(t, tile, (uint32_t)x0, (uint32_t)y0, 0, 0);
        }
    } else {
      TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 7);
      for (int s = 0; s * 7 < H; s++) {
        const int rows = H - s * 7 < 7 ? H - s * 7 : 7;
        TIFFWriteEncodedStrip(t, (uint32_t)s, (void *)(v + ((int64_t)p * H + s * 7) * W),
                              (tmsize_t)(rows * W * 2));
      }
    }
    TIFFWriteDirectory(t);
  }
  TIFFClose(t);
  return 0;
}

/* Sum of the strip or tile byte counts of a TIFF: its stored pixel bytes. */
static int64_t tiff_data_bytes(const char *path) {
  TIFF *t = TIFFOpen(path, "r");
  int64_t sum = 0;
  if (!t) return -1;
  do {
    const uint32_t n = TIFFIsTiled(t) ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
    for (uint32_t i = 0; i < n; i++) sum += (int64_t)TIFFGetStrileByteCount(t, i);
  } while (TIFFReadDirectory(t));
  TIFFClose(t);
  return sum;
}

#if CTR_HAVE_HDF5
/* /exchange/data as N x H x W uint16: contiguous (chunk NULL), chunked, or
 * chunked and deflated. */
static int64_t write_h5(const char *path, const uint16_t *v, const hsize_t *chunk, int deflate) {
  hsize_t dims[3] = {N, H, W};
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  if (chunk) H5Pset_chunk(dcpl, 3, chunk);
  if (deflate) H5Pset_deflate(dcpl, 4);
  hid_t sp = H5Screate_simple(3, dims, NULL);
  hid_t d = H5Dcreate2(f, "/exchange/data", H5T_STD_U16LE, sp, lcpl, dcpl, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  const int64_t stored = (int64_t)H5Dget_storage_size(d);
  H5Dclose(d);
  H5Sclose(sp);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Fclose(f);
  return stored;
}
#endif

/* float16 through every format that stores it, and NRRD's refusal. */
static void check_float16(void) {
  const int64_t w = 7, h = 3, n = 2, px = w * h * n;
  float v[42], back[42];
  for (int64_t i = 0; i < px; i++) v[i] = (float)((i - 20) * 0.37);
  v[0] = 1e-7f;   /* subnormal in half */
  v[1] = 70000.f; /* beyond half: infinite */
  v[2] = 65504.f; /* the largest half */
  const ctr_stack_info info = {CTR_STACK_INFO_VERSION, w, h, n, CTR_DTYPE_FLOAT16, {1, 1, 1}, {0, 0, 0}};
  const char *names[] = {"h.raw", "h.tif", "hs_%d.tif", "h.h5:/exchange/recon"};
  const ctr_file_format fmts[] = {CTR_FORMAT_RAW, CTR_FORMAT_TIFF, CTR_FORMAT_TIFF_STACK,
                                  CTR_FORMAT_HDF5};
  for (int k = 0; k < (CTR_HAVE_HDF5 ? 4 : 3); k++) {
    CHECK_OK(ctr_stack_save(P(names[k]), fmts[k], &info, CTR_DTYPE_FLOAT32, v, 0));
    ctr_stack_info got = CTR_STACK_INFO_INIT;
    void *data = NULL;
    CHECK_OK(ctr_stack_load(P(names[k]), fmts[k], k == 0 ? &info : NULL, CTR_DTYPE_FLOAT32, &got,
                            &data));
    if (!data) continue;
    memcpy(back, data, sizeof back);
    free(data);
    int ok = back[1] > 1e38f && back[2] == 65504.f && fabsf(back[0] - 1e-7f) < 3e-8f;
    for (int64_t i = 3; i < px; i++) ok &= fabsf(back[i] - v[i]) <= fabsf(v[i]) * 0x1p-11f;
    CHECK_MSG(ok, "float16 '%s': values do not come back within half's rounding", names[k]);
  }
  CHECK(ctr_stack_save(P("h.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32, v, 0) ==
        CTR_E_UNSUPPORTED);
  CHECK(strstr(ctr_error_detail(), "float16") != NULL);
  /* the formats that store it come from the table */
  CHECK(strstr(ctr_error_detail(), "write float16 as raw, tiff, tiff-stack") != NULL);
}

int main(void) {
  if (!scratch_open("rows_once")) return 1;
  uint16_t *v = malloc(sizeof(uint16_t) * (size_t)(W * H * N));
  for (int64_t i = 0; i < W * H * N; i++) v[i] = (uint16_t)((i * 2654435761u) >> 20);
  const int64_t raw = (int64_t)sizeof(uint16_t) * W * H * N;
  const ctr_stack_info info = {CTR_STACK_INFO_VERSION, W, H, N, CTR_DTYPE_UINT16, {1, 1, 1}, {0, 0, 0}};

  /* ctrecon's own TIFF writers: uncompressed strips in order. */
  CHECK_OK(ctr_stack_save(P("a.tif"), CTR_FORMAT_TIFF, &info, CTR_DTYPE_UINT16, v, 0));
  check_once(P("a.tif"), CTR_FORMAT_TIFF, v, raw, 5);
  mkdir(P("st"), 0777);
  CHECK_OK(ctr_stack_save(P("st/a_%03d.tif"), CTR_FORMAT_TIFF_STACK, &info, CTR_DTYPE_UINT16, v,
                          0));
  check_once(P("st/a_%03d.tif"), CTR_FORMAT_TIFF_STACK, v, raw, 5);
  /* compressed strips of 7 rows, and 16 x 16 tiles */
  CHECK(write_tiff(P("z.tif"), v, 0) == 0);
  check_once(P("z.tif"), CTR_FORMAT_TIFF, v, tiff_data_bytes(P("z.tif")), 5);
  CHECK(write_tiff(P("t.tif"), v, 1) == 0);
  check_once(P("t.tif"), CTR_FORMAT_TIFF, v, tiff_data_bytes(P("t.tif")), 5);
#if CTR_HAVE_HDF5
  const hsize_t image[3] = {1, H, W}, small[3] = {3, 8, 32};
  CHECK(write_h5(P("c.h5"), v, NULL, 0) == raw);
  check_once(P("c.h5:/exchange/data"), CTR_FORMAT_HDF5, v, raw, 5);
  const int64_t chunked = write_h5(P("k.h5"), v, image, 0);
  check_once(P("k.h5:/exchange/data"), CTR_FORMAT_HDF5, v, chunked, 5);
  const int64_t zipped = write_h5(P("d.h5"), v, small, 1);
  CHECK(zipped > 0 && zipped < stored_bytes(P("d.h5")));
  check_once(P("d.h5:/exchange/data"), CTR_FORMAT_HDF5, v, zipped, 5);
#endif
  check_float16();
  free(v);
  scratch_close();
  return th_finish("test_rows_once");
}
