/* Histo-image sets as HDF5 (docs/file-formats.md, "PET histo-images"):
 * group /pet with the parameters as attributes, datasets /pet/counts and
 * optionally /pet/factors (nviews x nz x ny x nx float32, one chunk per
 * view, deflate level 1 where the library has it: most voxels of a view
 * hold no event, so the files shrink several times at little cost).
 *
 * HDF5 calls hold a mutex and run with HDF5's automatic error printing off
 * (library code never prints), as in src/io/io_hdf5.c. That file's mutex is
 * private to it, so the two only exclude each other where the HDF5 library
 * itself is built thread-safe. */
#include "pet/pet_data.h"
#include "io/io_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define CTR__HISTO_FORMAT "ctrecon-pet-histo"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"

/* File access: lock where the file system can, go on where it cannot (NFS),
 * as ctr__h5_open_read does for reading. */
static hid_t access_list(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 12, 0)) || H5_VERSION_GE(1, 12, 1)
  if (fapl >= 0) H5Pset_file_locking(fapl, 1, 1);
#endif
  return fapl < 0 ? H5P_DEFAULT : fapl;
}

static void access_close(hid_t fapl) {
  if (fapl != H5P_DEFAULT) H5Pclose(fapl);
}

/* ---- Saving ------------------------------------------------------------------ */

/* A scalar attribute of file type ft written from *v in memory type mt. */
static int put_scalar(hid_t loc, const char *name, hid_t ft, hid_t mt, const void *v) {
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = sp >= 0 ? H5Acreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = a >= 0 && H5Awrite(a, mt, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  return ok;
}

static int put_double(hid_t loc, const char *name, double v) {
  return put_scalar(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static int put_int(hid_t loc, const char *name, int64_t v) {
  return put_scalar(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static int put_string(hid_t loc, const char *name, const char *v) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return 0;
  H5Tset_size(t, strlen(v) + 1);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = sp >= 0 ? H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = a >= 0 && H5Awrite(a, t, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  H5Tclose(t);
  return ok;
}

static int write_dataset(hid_t grp, const char *name, const ctr_pet_histo *h, const float *v) {
  const ctr_pet_params *p = &h->params;
  const hsize_t dims[4] = {(hsize_t)h->nviews, (hsize_t)p->nz, (hsize_t)p->ny, (hsize_t)p->nx};
  hid_t sp = H5Screate_simple(4, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (sp < 0 || dcpl < 0) goto fail;
  /* One view per chunk while a chunk stays under HDF5's 4 GiB chunk limit. */
  if (dims[1] * dims[2] * dims[3] * sizeof(float) < ((hsize_t)1 << 31)) {
    const hsize_t chunk[4] = {1, dims[1], dims[2], dims[3]};
    H5Pset_chunk(dcpl, 4, chunk);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) H5Pset_deflate(dcpl, 1);
  }
  hid_t d = H5Dcreate2(grp, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  if (d >= 0) H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  return ok;
fail:
  if (dcpl >= 0) H5Pclose(dcpl);
  if (sp >= 0) H5Sclose(sp);
  return 0;
}

ctr_status ctr__pet_histo_save_hdf5(const char *path, const ctr_pet_histo *h, int overwrite) {
  ctr_status st = CTR_OK;
  ctr__atomic_file f = CTR__ATOMIC_FILE_INIT;
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  /* The atomic file gives a unique temporary name; HDF5 then rewrites it. */
  CTR_CHECK(ctr__atomic_create(&f, path));
  f.no_replace = !overwrite;
  CTR_CHECK_GOTO(st, ctr__atomic_close(&f));
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr__h5_enter(&g);
  hid_t fapl = access_list();
  hid_t fid = H5Fcreate(f.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  /* Before any other call clears HDF5's error stack. */
  if (fid < 0)
    st = ctr__error_set(CTR_E_IO, "cannot create HDF5 file '%s' (temporary '%s'): %s", path,
                        f.tmp, ctr__h5_detail(&m, "create failed"));
  access_close(fapl);
  hid_t grp = fid >= 0 ? H5Gcreate2(fid, "pet", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  const ctr_pet_params *p = &h->params;
  int ok = grp >= 0 && put_string(grp, "format", CTR__HISTO_FORMAT) &&
           put_int(grp, "format_version", 1) && put_int(grp, "nx", p->nx) &&
           put_int(grp, "ny", p->ny) && put_int(grp, "nz", p->nz) &&
           put_double(grp, "voxel_mm", p->voxel) && put_int(grp, "n_azimuth", p->n_azimuth) &&
           put_int(grp, "n_copolar", p->n_copolar) &&
           put_double(grp, "acceptance_deg", p->acceptance_deg) &&
           put_int(grp, "nviews", h->nviews) && put_double(grp, "tof_fwhm_ps", h->tof_fwhm_ps) &&
           put_double(grp, "events", h->events) && write_dataset(grp, "counts", h, h->counts) &&
           (!h->factors || write_dataset(grp, "factors", h, h->factors));
  if (!ok && st == CTR_OK) st = ctr__error_set(CTR_E_IO, "cannot write HDF5 file '%s' (temporary '%s'): %s", path,
                               f.tmp, ctr__h5_detail(&m, "write failed"));
  if (grp >= 0) H5Gclose(grp);
  if (fid >= 0 && H5Fclose(fid) < 0 && st == CTR_OK)
    st = ctr__error_set(CTR_E_IO, "cannot close HDF5 file '%s' (temporary '%s'): %s", path, f.tmp,
                        ctr__h5_detail(&m, "close failed"));
  ctr__h5_leave(&g);
  if (st == CTR_OK) st = ctr__atomic_rename(&f);
cleanup:
  ctr__atomic_discard(&f);
  return st;
}

/* ---- Loading ------------------------------------------------------------------ */

/* Scalar numeric attribute /pet@name as a double. */
static ctr_status get_attr(const char *file, hid_t grp, const char *name, int required,
                           double dflt, double *out) {
  *out = dflt;
  if (H5Aexists(grp, name) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    if (!required) return CTR_OK;
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@%s is missing (expected a number)", file, name);
  }
  hid_t a = H5Aopen(grp, name, H5P_DEFAULT);
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
  hid_t t = a >= 0 ? H5Aget_type(a) : -1;
  const H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  int ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 &&
           (cls == H5T_INTEGER || cls == H5T_FLOAT) &&
           H5Aread(a, H5T_NATIVE_DOUBLE, out) >= 0 && isfinite(*out);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  H5Eclear2(H5E_DEFAULT);
  if (!ok)
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@%s is invalid (expected one finite number)",
             file, name);
  return CTR_OK;
}

static ctr_status get_count(const char *file, hid_t grp, const char *name, double max,
                            int64_t *out) {
  double v = 0;
  CTR_CHECK(get_attr(file, grp, name, 1, 0, &v));
  if (v != floor(v) || v < 1 || v > max)
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@%s is %g, expected an integer in 1 .. %.0f",
             file, name, v, max);
  *out = (int64_t)v;
  return CTR_OK;
}

static ctr_status read_params(const char *file, hid_t grp, ctr_pet_histo *h) {
  ctr_pet_params *p = &h->params;
  *p = (ctr_pet_params)CTR_PET_PARAMS_INIT;
  double ver = 0;
  CTR_CHECK(get_attr(file, grp, "format_version", 0, 1, &ver));
  if (ver != 1)
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@format_version is %g, expected 1", file, ver);
  int64_t na, nc, nv;
  CTR_CHECK(get_count(file, grp, "nx", 65536, &p->nx));
  CTR_CHECK(get_count(file, grp, "ny", 65536, &p->ny));
  CTR_CHECK(get_count(file, grp, "nz", 65536, &p->nz));
  CTR_CHECK(get_attr(file, grp, "voxel_mm", 1, 0, &p->voxel));
  if (!(p->voxel > 0))
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@voxel_mm is %g, expected a size > 0 (mm)", file,
             p->voxel);
  CTR_CHECK(get_count(file, grp, "n_azimuth", 100000, &na));
  CTR_CHECK(get_count(file, grp, "n_copolar", 100000, &nc));
  CTR_CHECK(get_attr(file, grp, "acceptance_deg", 1, 0, &p->acceptance_deg));
  if (!(p->acceptance_deg >= 0 && p->acceptance_deg < 90))
    CTR_FAIL(CTR_E_FORMAT, "'%s': attribute /pet@acceptance_deg is %g, expected 0 <= value < 90",
             file, p->acceptance_deg);
  CTR_CHECK(get_count(file, grp, "nviews", 1e10, &nv));
  if (nv != na * nc)
    CTR_FAIL(CTR_E_FORMAT,
             "'%s': attribute /pet@nviews is %lld, expected n_azimuth x n_copolar = %lld x %lld = "
             "%lld",
             file, (long long)nv, (long long)na, (long long)nc, (long long)(na * nc));
  p->n_azimuth = (int)na;
  p->n_copolar = (int)nc;
  h->nviews = nv;
  CTR_CHECK(get_attr(file, grp, "tof_fwhm_ps", 0, 0, &h->tof_fwhm_ps));
  CTR_CHECK(get_attr(file, grp, "events", 0, 0, &h->events));
  if (h->tof_fwhm_ps < 0 || h->events < 0)
    CTR_FAIL(CTR_E_FORMAT, "'%s': attributes /pet@tof_fwhm_ps %g / events %g: expected >= 0",
             file, h->tof_fwhm_ps, h->events);
  return CTR_OK;
}

/* /pet/<name>, which must be nviews x nz x ny x nx numbers, into v. */
static ctr_status read_dataset(const char *file, hid_t grp, const char *name,
                               const ctr_pet_histo *h, float *v) {
  ctr__h5_msg m;
  ctr_status st = CTR_OK;
  hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
  if (d < 0) {
    H5Eclear2(H5E_DEFAULT);
    CTR_FAIL(CTR_E_FORMAT, "'%s': dataset /pet/%s is missing (expected nviews x nz x ny x nx "
             "float32)", file, name);
  }
  hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
  const ctr_pet_params *p = &h->params;
  const hsize_t want[4] = {(hsize_t)h->nviews, (hsize_t)p->nz, (hsize_t)p->ny, (hsize_t)p->nx};
  hsize_t dims[H5S_MAX_RANK];
  const int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  if (rank >= 0 && rank <= H5S_MAX_RANK) H5Sget_simple_extent_dims(sp, dims, NULL);
  int same = rank == 4;
  for (int i = 0; same && i < 4; i++) same = dims[i] == want[i];
  if (!same) {
    char shown[160] = "";
    size_t used = 0;
    for (int i = 0; i < rank && used < sizeof shown; i++)
      used += (size_t)snprintf(shown + used, sizeof shown - used, "%s%llu", i ? " x " : "",
                               (unsigned long long)dims[i]);
    CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                  "'%s': dataset /pet/%s is %s (%dD), expected %llu x %llu x %llu x %llu "
                  "(nviews x nz x ny x nx from the attributes of /pet)",
                  file, name, rank > 0 ? shown : "(scalar)", rank < 0 ? 0 : rank,
                  (unsigned long long)want[0], (unsigned long long)want[1],
                  (unsigned long long)want[2], (unsigned long long)want[3]);
  }
  const H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': dataset /pet/%s does not hold numbers (expected "
                  "float32)", file, name);
  /* a number of another size is a damaged datatype message (a 252-byte
   * float behind deflate made HDF5 1.14 read past its chunk buffer: the
   * 2026-11-27 long run) */
  const size_t tsize = H5Tget_size(t);
  if (!(tsize == 1 || tsize == 2 || tsize == 4 || tsize == 8) || (cls == H5T_FLOAT && tsize < 2))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': dataset /pet/%s holds %zu-byte %s, not a number "
                  "type HDF5 writes (expected float32); the file is damaged", file, name, tsize,
                  cls == H5T_FLOAT ? "floats" : "integers");
  char dname[16];
  snprintf(dname, sizeof dname, "/pet/%s", name);
  CTR_CHECK_GOTO(st, ctr__h5_check_storage(d, file, dname, NULL, NULL, 1));
  if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
    CTR_FAIL_GOTO(st, CTR_E_IO, "'%s': cannot read dataset /pet/%s: %s", file, name,
                  ctr__h5_detail(&m, "read failed"));
cleanup:
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  H5Dclose(d);
  H5Eclear2(H5E_DEFAULT);
  return st;
}

ctr_status ctr__pet_histo_load_hdf5(const char *path, ctr_pet_histo **out) {
  struct stat sb;
  if (stat(path, &sb) != 0) CTR_FAIL(CTR_E_IO, "cannot open '%s': %s", path, strerror(errno));
  ctr_status st = CTR_OK;
  ctr_pet_histo desc, *h = NULL;
  memset(&desc, 0, sizeof desc);
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr__h5_enter(&g);
  hid_t fid = ctr__h5_open_read(path, &m), grp = -1;
  if (fid < 0)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                  "cannot open '%s' as HDF5 (%s): expected a histo-image file written by "
                  "ctr_pet_histo_save",
                  path, m.text);
  const unsigned long refused = ctr__h5_driver_refusals();
  grp = H5Gopen2(fid, "pet", H5P_DEFAULT);
  if (grp < 0 && ctr__h5_driver_refusals() != refused)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s' is damaged (opening group /pet): %s", path,
                  ctr__h5_detail(&m, "unknown error"));
  if (grp < 0) {
    H5Eclear2(H5E_DEFAULT);
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': group /pet is missing (expected a ctrecon histo-image "
                  "file: /pet/counts with the parameters as attributes of /pet)", path);
  }
  CTR_CHECK_GOTO(st, read_params(path, grp, &desc));
  const htri_t has_factors = H5Lexists(grp, "factors", H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  CTR_CHECK_GOTO(st, ctr_pet_histo_create(&desc.params, has_factors > 0, &h));
  h->tof_fwhm_ps = desc.tof_fwhm_ps;
  h->events = desc.events;
  CTR_CHECK_GOTO(st, read_dataset(path, grp, "counts", h, h->counts));
  if (h->factors) CTR_CHECK_GOTO(st, read_dataset(path, grp, "factors", h, h->factors));
cleanup:
  if (grp >= 0) H5Gclose(grp);
  if (fid >= 0) H5Fclose(fid);
  ctr__h5_leave(&g);
  if (st == CTR_OK) ctr__pet_histo_sanitize(h);
  if (st == CTR_OK) {
    *out = h;
    h = NULL;
  }
  ctr_pet_histo_free(h);
  return st;
}

#else /* !CTR_HAVE_HDF5 */

#define CTR__NO_HDF5_PET                                                                  \
  "this build of ctrecon has no HDF5 support; use a .json path instead (a JSON "          \
  "description beside raw float32 files), or configure with -DCTRECON_HDF5=on"

ctr_status ctr__pet_histo_save_hdf5(const char *path, const ctr_pet_histo *h, int overwrite) {
  (void)h, (void)overwrite;
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot write '%s': " CTR__NO_HDF5_PET, path);
}

ctr_status ctr__pet_histo_load_hdf5(const char *path, ctr_pet_histo **out) {
  (void)out;
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot read '%s': " CTR__NO_HDF5_PET, path);
}

#endif
