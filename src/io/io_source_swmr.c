/* A DXchange file written while it is read: the source kind that follows
 * /exchange/data as it grows, under HDF5's single-writer / multiple-reader
 * mode (SWMR: the reader opens with H5F_ACC_SWMR_READ, H5Drefresh and
 * H5Dget_space give the projections flushed so far), and the writer
 * ctr_replay uses to make such a file. The contract with a writer
 * (docs/synchrotron.md, "A growing HDF5 file"): every dataset is created
 * and data_white, data_dark and theta written before SWMR writing starts;
 * /exchange/data then grows one projection at a time, each flushed. A file
 * not written under SWMR is read as it is (finished). */
#include "io/io_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if CTR_HAVE_HDF5
#include "io/io_hdf5_guard.h"

#include <unistd.h>

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

/* ---- The reader ----------------------------------------------------------------- */

typedef struct swmr_src {
  char file[4096], data_path[4200];
  hid_t f, data, cal[2];
  int64_t ncal[2], next_cal[2];
  int64_t W, H;
  ctr_dtype dtype;
  hid_t memtype;
  int64_t next, avail;  /* the next projection; projections seen at the last refresh */
  int swmr;             /* opened under SWMR (else finished: no refresh) */
  double *theta;
  int64_t ntheta;
  double poll;
  void *buf;
} swmr_src;

/* The stored type as uint16 or float32; -1 for anything else. */
static int type_of(hid_t dset, ctr_dtype *dt, hid_t *mem) {
  hid_t t = H5Dget_type(dset);
  int ok = 0;
  if (H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 2 && H5Tget_sign(t) == H5T_SGN_NONE) {
    *dt = CTR_DTYPE_UINT16;
    *mem = H5T_NATIVE_UINT16;
    ok = 1;
  } else if (H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4) {
    *dt = CTR_DTYPE_FLOAT32;
    *mem = H5T_NATIVE_FLOAT;
    ok = 1;
  }
  H5Tclose(t);
  return ok ? 0 : -1;
}

/* dims of a 3D dataset (0 when not 3D). */
static int dims3(hid_t dset, hsize_t d[3]) {
  hid_t sp = H5Dget_space(dset);
  const int ok = H5Sget_simple_extent_ndims(sp) == 3 && H5Sget_simple_extent_dims(sp, d, NULL) == 3;
  H5Sclose(sp);
  return ok;
}

/* /exchange/theta of the open file (through this handle: the writer's
 * file cannot be opened a second time), in degrees: its "units" attribute
 * rad or radians converts; absent, degrees (as ctr_hdf5_read_angles). No
 * theta: none (the caller's angles). Inside ctr__h5_enter. */
static ctr_status read_theta(swmr_src *s) {
  if (H5Lexists(s->f, "/exchange/theta", H5P_DEFAULT) <= 0) return CTR_OK;
  hid_t d = H5Dopen2(s->f, "/exchange/theta", H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  hsize_t n = 0;
  if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, &n, NULL) != 1) {
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    CTR_FAIL(CTR_E_FORMAT, "'%s':/exchange/theta is not a 1D dataset of angles", s->file);
  }
  H5Sclose(sp);
  s->theta = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!s->theta || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, s->theta) < 0) {
    H5Dclose(d);
    CTR_FAIL(CTR_E_FORMAT, "'%s':/exchange/theta cannot be read as numbers", s->file);
  }
  char units[32] = "";
  if (H5Aexists(d, "units") > 0) {
    hid_t a = H5Aopen(d, "units", H5P_DEFAULT), t = H5Aget_type(a);
    if (H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) && H5Tget_size(t) < sizeof units) {
      hid_t mt = H5Tcopy(t);
      H5Tset_size(mt, sizeof units - 1);
      H5Tset_strpad(mt, H5T_STR_NULLTERM);
      if (H5Aread(a, mt, units) < 0) units[0] = 0;
      H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
  }
  H5Dclose(d);
  if (!strncmp(units, "rad", 3))
    for (hsize_t i = 0; i < n; i++) s->theta[i] *= 180.0 / M_PI;
  s->ntheta = (int64_t)n;
  return CTR_OK;
}

/* Opens the file once it is there and readable: 1 opened, 0 not yet, or an
 * error (a file that is there and not a DXchange scan). */
static ctr_status try_open(swmr_src *s, int *opened) {
  *opened = 0;
  if (access(s->file, R_OK) != 0) return CTR_OK;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  ctr_status st = CTR_OK;
  s->swmr = 1;
  s->f = H5Fopen(s->file, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
  if (s->f < 0) { /* not written under SWMR (finished), or its writer not started yet */
    H5Eclear2(H5E_DEFAULT);
    s->swmr = 0;
    s->f = H5Fopen(s->file, H5F_ACC_RDONLY, H5P_DEFAULT);
  }
  if (s->f < 0) { /* still being created: try again later */
    H5Eclear2(H5E_DEFAULT);
    ctr__h5_leave(&g);
    return CTR_OK;
  }
  hsize_t d[3];
  s->data = H5Dopen2(s->f, "/exchange/data", H5P_DEFAULT);
  if (s->data < 0 || !dims3(s->data, d) || type_of(s->data, &s->dtype, &s->memtype) < 0) {
    st = ctr__error_set(CTR_E_FORMAT, "'%s' has no /exchange/data of uint16 or float32 "
                        "projections (a 3D dataset): not a DXchange scan", s->file);
    goto done;
  }
  s->H = (int64_t)d[1];
  s->W = (int64_t)d[2];
  s->avail = (int64_t)d[0];
  for (int k = 0; k < 2; k++) {
    const char *name = k ? "/exchange/data_dark" : "/exchange/data_white";
    s->cal[k] = -1;
    if (H5Lexists(s->f, name, H5P_DEFAULT) <= 0) continue;
    s->cal[k] = H5Dopen2(s->f, name, H5P_DEFAULT);
    hsize_t c[3];
    ctr_dtype dt;
    hid_t mt;
    if (s->cal[k] < 0 || !dims3(s->cal[k], c) || (int64_t)c[1] != s->H || (int64_t)c[2] != s->W ||
        type_of(s->cal[k], &dt, &mt) < 0) {
      st = ctr__error_set(CTR_E_FORMAT, "'%s':%s is not a stack of %lld x %lld uint16 or float32 "
                          "images (the projections' size)", s->file, name, (long long)s->W,
                          (long long)s->H);
      goto done;
    }
    s->ncal[k] = (int64_t)c[0];
  }
  st = read_theta(s);
  H5Eclear2(H5E_DEFAULT);
done:
  ctr__h5_leave(&g);
  if (st != CTR_OK) return st;
  s->buf = malloc((size_t)(s->W * s->H) * ctr_dtype_size(s->dtype));
  if (!s->buf) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a projection of '%s')", s->file);
  *opened = 1;
  return CTR_OK;
}

/* Image i of dset into s->buf. */
static ctr_status read_image(swmr_src *s, hid_t dset, int64_t i, const char *name) {
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  const hsize_t start[3] = {(hsize_t)i, 0, 0}, count[3] = {1, (hsize_t)s->H, (hsize_t)s->W};
  hid_t fs = H5Dget_space(dset), ms = H5Screate_simple(3, count, NULL);
  herr_t e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  if (e >= 0) e = H5Dread(dset, s->memtype, ms, fs, H5P_DEFAULT, s->buf);
  H5Sclose(ms);
  H5Sclose(fs);
  ctr__h5_msg m;
  const char *why = e < 0 ? ctr__h5_detail(&m, "HDF5 could not read it") : NULL;
  ctr__h5_leave(&g);
  if (why) CTR_FAIL(CTR_E_IO, "'%s':%s, image %lld: %s", s->file, name, (long long)i, why);
  return CTR_OK;
}

/* The projections flushed so far (a refresh of the dataset's extent). */
static ctr_status refresh(swmr_src *s) {
  if (!s->swmr) return CTR_OK;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  hsize_t d[3] = {0, 0, 0};
  const int ok = H5Drefresh(s->data) >= 0 && dims3(s->data, d);
  ctr__h5_msg m;
  const char *why = ok ? NULL : ctr__h5_detail(&m, "the refresh failed");
  ctr__h5_leave(&g);
  if (why) CTR_FAIL(CTR_E_IO, "'%s':/exchange/data: %s", s->file, why);
  s->avail = (int64_t)d[0];
  return CTR_OK;
}

static void fill(const swmr_src *s, ctr__raw_frame *f) {
  f->width = s->W;
  f->height = s->H;
  f->dtype = s->dtype;
  f->pixels = s->buf;
  f->bytes = (size_t)(s->W * s->H) * ctr_dtype_size(s->dtype);
  f->count = s->ntheta;
}

static ctr_status swmr_next(void *impl, double wait_s, ctr__raw_frame *f, int *got) {
  swmr_src *s = impl;
  const double deadline = ctr__now_s() + wait_s;
  *got = 0;
  for (;;) {
    int open = s->f >= 0;
    if (!open) CTR_CHECK(try_open(s, &open));
    if (open) {
      for (int k = 0; k < 2; k++)
        if (s->cal[k] >= 0 && s->next_cal[k] < s->ncal[k]) {
          CTR_CHECK(read_image(s, s->cal[k], s->next_cal[k]++,
                               k ? "/exchange/data_dark" : "/exchange/data_white"));
          f->kind = k ? CTR_FRAME_DARK : CTR_FRAME_FLAT;
          fill(s, f);
          *got = 1;
          return CTR_OK;
        }
      if (s->ntheta && s->next >= s->ntheta) { /* every projection theta announced */
        f->end = 1;
        *got = 1;
        return CTR_OK;
      }
      if (s->next >= s->avail) CTR_CHECK(refresh(s));
      if (s->next < s->avail) {
        CTR_CHECK(read_image(s, s->data, s->next, "/exchange/data"));
        f->kind = CTR_FRAME_PROJECTION;
        f->index = s->next;
        f->angle_deg = s->next < s->ntheta ? s->theta[s->next] : NAN;
        s->next++;
        fill(s, f);
        *got = 1;
        return CTR_OK;
      }
      if (!s->swmr) { /* a finished file holds no more */
        f->end = 1;
        *got = 1;
        return CTR_OK;
      }
    }
    const double left = deadline - ctr__now_s();
    if (left <= 0) return CTR_OK;
    sleep_s(left < s->poll ? left : s->poll);
  }
}

static const char *swmr_data_path(void *impl) { return ((swmr_src *)impl)->data_path; }
static const char *swmr_endpoint(void *impl) { return ((swmr_src *)impl)->file; }
static const double *swmr_angles(void *impl, int64_t *n) {
  const swmr_src *s = impl;
  *n = s->theta ? s->ntheta : 0;
  return s->theta;
}

static void swmr_release(void *impl) {
  swmr_src *s = impl;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  for (int k = 0; k < 2; k++)
    if (s->cal[k] >= 0) H5Dclose(s->cal[k]);
  if (s->data >= 0) H5Dclose(s->data);
  if (s->f >= 0) H5Fclose(s->f);
  s->cal[0] = s->cal[1] = s->data = s->f = -1;
  H5Eclear2(H5E_DEFAULT);
  ctr__h5_leave(&g);
}

static void swmr_close(void *impl) {
  swmr_src *s = impl;
  if (!s) return;
  swmr_release(s);
  free(s->theta);
  free(s->buf);
  free(s);
}

static const ctr__source_ops k_swmr_ops = {"hdf5-swmr", swmr_next, swmr_data_path, swmr_angles,
                                           swmr_endpoint, swmr_release,
                                           swmr_close};

ctr_status ctr__source_swmr_open(const char *path, const ctr_source_options *o,
                                 const ctr__source_ops **ops, void **impl, int64_t *count) {
  swmr_src *s = calloc(1, sizeof *s);
  if (!s) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a file source)");
  if (strlen(path) >= sizeof s->file) {
    free(s);
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "the path '%.60s...' is too long", path);
  }
  snprintf(s->file, sizeof s->file, "%s", path);
  snprintf(s->data_path, sizeof s->data_path, "%s:/exchange/data", path);
  s->f = s->data = s->cal[0] = s->cal[1] = -1;
  s->poll = o->poll_s;
  int open = 0;
  const ctr_status st = try_open(s, &open); /* may not exist yet: waited for by next */
  if (st != CTR_OK) {
    swmr_close(s);
    return st;
  }
  *count = s->ntheta;
  *ops = &k_swmr_ops;
  *impl = s;
  return CTR_OK;
}

/* ---- The writer ------------------------------------------------------------------ */

struct ctr__swmr_writer {
  char path[4096];
  hid_t f, data;
  hid_t memtype;
  int64_t W, H, n;
};

/* A dataset of dims with data (NULL: none written). */
static hid_t put(hid_t f, const char *name, hid_t type, hid_t memtype, int rank, const hsize_t *dims,
                 const hsize_t *maxdims, const hsize_t *chunk, const void *data) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk) H5Pset_chunk(dcpl, rank, chunk);
  hid_t sp = H5Screate_simple(rank, dims, maxdims);
  hid_t d = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(sp);
  if (d >= 0 && data && H5Dwrite(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    H5Dclose(d);
    return -1;
  }
  return d;
}

static int put_units(hid_t d) {
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, 3);
  hid_t a = H5Acreate2(d, "units", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  const int ok = a >= 0 && H5Awrite(a, t, "deg") >= 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
  return ok;
}

ctr_status ctr__swmr_writer_create(const char *path, int64_t width, int64_t height, ctr_dtype dtype,
                                   const void *flats, int64_t nflat, const void *darks,
                                   int64_t ndark, const double *theta, int64_t count,
                                   int overwrite, ctr__swmr_writer **out) {
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  ctr__swmr_writer *w = calloc(1, sizeof *w);
  if (!w) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (an HDF5 writer)");
  snprintf(w->path, sizeof w->path, "%s", path);
  w->W = width;
  w->H = height;
  w->memtype = dtype == CTR_DTYPE_UINT16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_FLOAT;
  const hid_t ftype = dtype == CTR_DTYPE_UINT16 ? H5T_STD_U16LE : H5T_IEEE_F32LE;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  ctr_status st = CTR_OK;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST); /* SWMR needs it */
  w->f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  w->data = -1;
  hid_t grp = w->f >= 0 ? H5Gcreate2(w->f, "/exchange", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = grp >= 0;
  if (grp >= 0) H5Gclose(grp);
  const hsize_t dims[3] = {0, (hsize_t)height, (hsize_t)width},
                maxd[3] = {H5S_UNLIMITED, (hsize_t)height, (hsize_t)width},
                chunk[3] = {1, (hsize_t)height, (hsize_t)width};
  if (ok) w->data = put(w->f, "/exchange/data", ftype, w->memtype, 3, dims, maxd, chunk, NULL);
  ok = ok && w->data >= 0;
  const void *cal[2] = {flats, darks};
  const int64_t ncal[2] = {nflat, ndark};
  for (int k = 0; ok && k < 2; k++) {
    if (ncal[k] < 1) continue;
    const hsize_t cd[3] = {(hsize_t)ncal[k], (hsize_t)height, (hsize_t)width};
    hid_t d = put(w->f, k ? "/exchange/data_dark" : "/exchange/data_white", ftype, w->memtype, 3,
                  cd, NULL, NULL, cal[k]);
    ok = d >= 0;
    if (d >= 0) H5Dclose(d);
  }
  if (ok && theta) {
    const hsize_t td[1] = {(hsize_t)count};
    hid_t d = put(w->f, "/exchange/theta", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, td, NULL, NULL, theta);
    ok = d >= 0 && put_units(d);
    if (d >= 0) H5Dclose(d);
  }
  ok = ok && H5Fstart_swmr_write(w->f) >= 0;
  if (!ok) {
    ctr__h5_msg m;
    st = ctr__error_set(CTR_E_IO, "cannot write '%s': %s", path,
                        ctr__h5_detail(&m, "HDF5 could not create the file"));
  }
  ctr__h5_leave(&g);
  if (st != CTR_OK) {
    ctr__swmr_writer_close(w);
    unlink(path);
    return st;
  }
  *out = w;
  return CTR_OK;
}

ctr_status ctr__swmr_writer_append(ctr__swmr_writer *w, const void *pixels) {
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  const hsize_t size[3] = {(hsize_t)(w->n + 1), (hsize_t)w->H, (hsize_t)w->W};
  const hsize_t start[3] = {(hsize_t)w->n, 0, 0}, count[3] = {1, (hsize_t)w->H, (hsize_t)w->W};
  herr_t e = H5Dset_extent(w->data, size);
  hid_t fs = e >= 0 ? H5Dget_space(w->data) : -1, ms = H5Screate_simple(3, count, NULL);
  if (fs >= 0) e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  if (fs >= 0 && e >= 0) e = H5Dwrite(w->data, w->memtype, ms, fs, H5P_DEFAULT, pixels);
  if (fs >= 0 && e >= 0) e = H5Dflush(w->data);
  if (fs >= 0) H5Sclose(fs);
  H5Sclose(ms);
  ctr__h5_msg m;
  const char *why = (fs < 0 || e < 0) ? ctr__h5_detail(&m, "the append failed") : NULL;
  ctr__h5_leave(&g);
  if (why) CTR_FAIL(CTR_E_IO, "'%s':/exchange/data, projection %lld: %s", w->path, (long long)w->n, why);
  w->n++;
  return CTR_OK;
}

ctr_status ctr__swmr_writer_close(ctr__swmr_writer *w) {
  if (!w) return CTR_OK;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  herr_t e = 0;
  if (w->data >= 0) e |= H5Dclose(w->data);
  if (w->f >= 0) e |= H5Fclose(w->f);
  H5Eclear2(H5E_DEFAULT);
  ctr__h5_leave(&g);
  const ctr_status st = e < 0 ? ctr__error_set(CTR_E_IO, "cannot close '%s'", w->path) : CTR_OK;
  free(w);
  return st;
}

#else /* !CTR_HAVE_HDF5 */

ctr_status ctr__source_swmr_open(const char *path, const ctr_source_options *o,
                                 const ctr__source_ops **ops, void **impl, int64_t *count) {
  (void)o, (void)ops, (void)impl, (void)count;
  CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': this build has no HDF5 (built without HDF5: install "
           "libhdf5-dev and configure with -DCTRECON_HDF5=on)", path);
}

ctr_status ctr__swmr_writer_create(const char *path, int64_t width, int64_t height, ctr_dtype dtype,
                                   const void *flats, int64_t nflat, const void *darks,
                                   int64_t ndark, const double *theta, int64_t count,
                                   int overwrite, ctr__swmr_writer **out) {
  (void)width, (void)height, (void)dtype, (void)flats, (void)nflat, (void)darks, (void)ndark;
  (void)theta, (void)count, (void)overwrite, (void)out;
  CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': this build has no HDF5 (built without HDF5: install "
           "libhdf5-dev and configure with -DCTRECON_HDF5=on)", path);
}
ctr_status ctr__swmr_writer_append(ctr__swmr_writer *w, const void *pixels) {
  (void)w, (void)pixels;
  return CTR_E_UNSUPPORTED;
}
ctr_status ctr__swmr_writer_close(ctr__swmr_writer *w) {
  (void)w;
  return CTR_OK;
}

#endif
