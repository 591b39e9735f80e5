/* HDF5 reader and writer (CTR_FORMAT_HDF5): a 3D dataset "file.h5:/group/dataset" of
 * dims (n0, n1, n2), the last index fastest, is a stack of n0 images of
 * height n1 and width n2 (DXchange: projections x rows x columns). uint16
 * and float32 are served as they are; uint8, int16, uint32 and float64 are
 * converted to float32 by HDF5 while reading. Images are read by hyperslab.
 * Also ctr__hdf5_read_vector for 1D datasets such as /exchange/theta.
 *
 * The serial HDF5 library is not thread-safe: every call into it holds one
 * process-wide mutex. HDF5's automatic error printing is off inside these
 * calls (the caller's setting is restored after each); the innermost message
 * of the HDF5 error stack goes into the error detail instead. */
#include "io/io_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* "file.h5:/dataset": the split is at the last ':' followed by '/'. */
#define CTR__HDF5_SYNTAX "'file.h5:/group/dataset', e.g. 'scan.h5:/exchange/data'"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"


/* HDF5 (1.10 and 1.14) trusts where and how large a dataset's raw data are
 * stored: a compact layout message or a chunk shorter than its elements
 * need, or a chunk placed inside the superblock, makes H5Dread copy past the
 * end of a heap buffer (found by tests/fuzz/fuzz_hdf5.c: a chunk at address
 * 0; by the 1.14 long runs: a chunk whose filter mask skips the dataset's
 * only filter, a Fletcher-32 chunk 4 bytes short, a second index entry for a
 * chunk at address 0, which HDF5's read found for another chunk). Checked
 * here before every read: with HDF5 1.14, every entry of the chunk index in
 * one walk (H5Dchunk_iter, up to CTR__H5_WALK_CHUNKS chunks); else the chunks
 * the read touches (start/count; NULL: the whole dataset), one lookup each.
 * Each stored chunk lies after the superblock, inside the file, and holds the
 * bytes its filters give back: exactly one chunk of elements when no filter
 * applies to it (its filter mask says which do), that plus 4 bytes when
 * Fletcher-32 is the only one that changes the size (shuffle does not).
 * Behind deflate (the compressing filter HDF5 always has, and the one
 * ctrecon writes), HDF5 1.14 does not check what a filter returns: a chunk
 * that inflates short is read past its buffer inside HDF5 (found by the 1.14
 * long runs: 1216 of a chunk's 130176 bytes). The stack reader therefore
 * decodes chunks behind deflate, shuffle and Fletcher-32 itself
 * (io_hdf5_chunks.c: each stored byte read once, each chunk held to exactly
 * its elements); the whole-dataset readers (vectors, PET) decode each such
 * chunk here to check it before H5Dread (a second read and inflate). Behind
 * any other compressing filter (szip, plugins) the size cannot be known
 * without that filter, and is not checked (tests/fuzz/README.md, "Long runs"). HDF5 1.10 finds a chunk's address by
 * walking every chunk of the dataset (H5Dget_chunk_info_by_coord): checking
 * a read of a dataset of many chunks took minutes (a band of rows over 40
 * images of 1-element chunks: 6 min). Without the walk, past
 * CTR__H5_ADDR_CHUNKS chunks in the dataset only the size of each is
 * checked, through the index lookup (H5Dget_chunk_storage_size, which cannot
 * tell a missing chunk from an unreadable entry). */
#define CTR__H5_ADDR_CHUNKS 4096
/* HDF5 1.14's H5Dget_chunk_info_by_coord asks the chunk index (no walk): a
 * read's chunks are then checked with their addresses however many the
 * dataset has (found by the 1.14 long runs: a dataset of 390 M chunks, the
 * touched ones unreadable entries, copied out of 8-byte buffers). */
/* (CTR__H5_LOOKUP_INDEXED, io_hdf5_guard.h) */
/* The most index entries one walk visits (stored entries, however many chunks
 * the dataspace has: a file holds few); past it the read's own chunks are
 * looked up one by one. */
#define CTR__H5_WALK_CHUNKS 1048576
/* The most chunks one H5Dread may touch (the stack reader splits its reads to
 * stay below; a whole-dataset read, start NULL, of more is refused here). */
#define CTR__H5_READ_CHUNKS 65536
typedef struct chunk_bounds {
  haddr_t lo;            /* first byte after the superblock */
  hsize_t eof;           /* file size */
  hsize_t raw;           /* bytes of a chunk's elements */
  ctr__h5_pipeline pipe; /* the filters, in the order of the mask bits */
} chunk_bounds;

/* The stored size a chunk with this filter mask must have; 0: any (a
 * compressing filter applies). */
static hsize_t chunk_want(const chunk_bounds *b, unsigned mask) {
  hsize_t want = b->raw;
  for (int i = 0; i < b->pipe.n; i++) {
    if (i < 32 && (mask >> i) & 1u) continue; /* skipped for this chunk */
    if (b->pipe.id[i] == H5Z_FILTER_SHUFFLE) continue;
    if (b->pipe.id[i] == H5Z_FILTER_FLETCHER32) want += 4;
    else return 0;
  }
  return want;
}

static int chunk_fits(const chunk_bounds *b, unsigned mask, haddr_t addr, hsize_t got) {
  if (addr == HADDR_UNDEF) return 1; /* not written: the fill value */
  const hsize_t want = chunk_want(b, mask);
  return addr >= b->lo && got <= b->eof && addr <= b->eof - got && got > 0 &&
         (want == 0 || got == want);
}

/* 1: the chunk at off is fine (or not written); 0: not, with *addr and *got
 * what its index entry says, and *disagree set when the lookup H5Dread reads
 * by gives it another size. */
static int chunk_ok(hid_t dset, const hsize_t *off, const chunk_bounds *b, int size_only,
                    haddr_t *addr, hsize_t *got, int *disagree) {
  unsigned mask = 0;
  *addr = HADDR_UNDEF;
  *got = 0;
  *disagree = 0;
  if (size_only) {
    if (H5Dget_chunk_storage_size(dset, off, got) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return 1; /* not written (or an entry the lookup cannot read) */
    }
    const hsize_t want = chunk_want(b, 0);
    return *got == 0 || (*got <= b->eof && (want == 0 || *got == want));
  }
  /* A chunk that was never written has no address, and the lookup succeeds;
   * a lookup that fails is an index entry HDF5 cannot read, and H5Dread
   * then reads past its buffers (HDF5 1.14). */
  if (H5Dget_chunk_info_by_coord(dset, off, &mask, addr, got) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  if (!chunk_fits(b, mask, *addr, *got)) return 0;
  /* H5Dread finds the chunk through the index lookup, which a damaged index
   * can point at another entry (asked after chunk_fits: see the guard) */
  if (*addr != HADDR_UNDEF && !ctr__h5_chunk_size_agrees(dset, off, *got)) {
    *disagree = 1;
    return 0;
  }
  return 1;
}

#if H5_VERSION_GE(1, 14, 0)
typedef struct chunk_walk {
  const chunk_bounds *b;
  int bad, capped;
  hsize_t seen;
  hsize_t off0, addr, size; /* the first bad chunk */
} chunk_walk;

/* Every entry of the index, not only the selection's: a damaged entry can be
 * where HDF5's own lookup for another chunk lands. */
static int walk_one(const hsize_t *offset, unsigned mask, haddr_t addr, hsize_t size, void *op) {
  chunk_walk *w = op;
  if (++w->seen > CTR__H5_WALK_CHUNKS) {
    w->capped = 1;
    return H5_ITER_STOP;
  }
  if (chunk_fits(w->b, mask, addr, size)) return H5_ITER_CONT;
  w->bad = 1;
  w->off0 = offset[0];
  w->addr = addr;
  w->size = size;
  return H5_ITER_STOP;
}
#endif

ctr_status ctr__h5_check_storage(hid_t dset, const char *file, const char *name,
                                 const hsize_t *start, const hsize_t *count, int check_decode) {
  return ctr__h5_check_storage_at(dset, file, name, start, count, check_decode, NULL, 0, NULL);
}

ctr_status ctr__h5_check_storage_at(hid_t dset, const char *file, const char *name,
                                    const hsize_t *start, const hsize_t *count, int check_decode,
                                    haddr_t *addrs, size_t naddrs, int *addressed) {
  ctr_status st = CTR_OK;
  if (addressed) *addressed = 0;
  if (!start) addrs = NULL;
  hid_t dcpl = H5Dget_create_plist(dset), sp = H5Dget_space(dset), t = H5Dget_type(dset);
  const H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
  const size_t elem = t >= 0 ? H5Tget_size(t) : 0;
  hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK], cdims[H5S_MAX_RANK];
  const int rank = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, maxdims) : -1;
  if (layout == H5D_COMPACT) {
    const hssize_t npoints = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    const hsize_t stored = H5Dget_storage_size(dset);
    size_t need = 0;
    if (npoints < 0 || elem == 0 || !ctr__mul_size((size_t)npoints, elem, &need) ||
        stored < need)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "dataset '%s' of HDF5 file '%s' is damaged: its compact storage holds %llu "
                    "bytes, expected %lld values of %zu bytes; write the file again",
                    name, file, (unsigned long long)stored, (long long)npoints, elem);
  } else if (layout == H5D_CHUNKED && rank > 0) {
    /* A chunk shape of another rank than the data's is a damaged layout
     * message; HDF5 1.14 reads past its chunk buffers on it (found by
     * fuzz_hdf5 and fuzz_pet_hdf5). */
    const int crank = H5Pget_chunk(dcpl, H5S_MAX_RANK, cdims);
    if (crank != rank)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "dataset '%s' of HDF5 file '%s' is damaged: its chunks have %d dimensions, "
                    "its data %d; write the file again", name, file, crank, rank);
    /* HDF5 creates no chunk longer than a fixed dimension (found by the 1.14
     * long runs: (1, 4, 8, 1017) chunks over 2 x 4 x 8 x 8 data) */
    for (int i = 0; i < rank; i++)
      if (maxdims[i] != H5S_UNLIMITED && cdims[i] > maxdims[i])
        CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                      "dataset '%s' of HDF5 file '%s' is damaged: its chunks are %llu long on "
                      "axis %d, longer than the axis (at most %llu); write the file again",
                      name, file, (unsigned long long)cdims[i], i,
                      (unsigned long long)maxdims[i]);
    chunk_bounds b;
    memset(&b, 0, sizeof b);
    b.raw = elem;
    const int nfilters = H5Pget_nfilters(dcpl);
    if (nfilters < 0 || nfilters > CTR__H5_PIPELINE_MAX)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is damaged: its filter "
                    "pipeline has %d filters (at most %d are read); write the file again",
                    name, file, nfilters, CTR__H5_PIPELINE_MAX);
    ctr__h5_pipeline_get(dcpl, &b.pipe);
    hid_t fid = H5Iget_file_id(dset);
    H5F_info2_t fi;
    if (fid < 0 || H5Fget_info2(fid, &fi) < 0 || H5Fget_filesize(fid, &b.eof) < 0) {
      if (fid >= 0) H5Fclose(fid);
      goto cleanup; /* H5Dread reports what is wrong */
    }
    H5Fclose(fid);
    b.lo = fi.super.super_size;
    hsize_t lo[H5S_MAX_RANK], hi[H5S_MAX_RANK], off[H5S_MAX_RANK], got = 0;
    haddr_t addr = HADDR_UNDEF;
    double nchunks = 1;
    for (int i = 0; i < rank; i++) {
      if (cdims[i] == 0) goto cleanup;
      nchunks *= ceil((double)dims[i] / (double)cdims[i]);
      b.raw *= cdims[i];
      lo[i] = (start ? start[i] : 0) / cdims[i] * cdims[i];
      hi[i] = start ? start[i] + count[i] : dims[i];
      if (hi[i] <= lo[i]) goto cleanup; /* empty selection */
      off[i] = lo[i];
    }
    if (!start && nchunks > CTR__H5_READ_CHUNKS)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "dataset '%s' of HDF5 file '%s' is stored in %.0f chunks, more than the %d a "
                    "read may touch (HDF5 allocates for each); rewrite it with larger chunks "
                    "(h5repack -l %s:CONTI IN OUT)", name, file, nchunks, CTR__H5_READ_CHUNKS, name);
    int bad = 0, walked = 0, disagree = 0;
    hsize_t bad_off0 = 0;
    const int decode = check_decode && b.pipe.ours && b.pipe.deflate > 0;
#if H5_VERSION_GE(1, 14, 0)
    /* every stored entry, up to CTR__H5_WALK_CHUNKS of them, however many
     * chunks the dataspace has (a healthy entry for a chunk next to a damaged
     * duplicate: the 1.14 long runs, a dataset of 2^41 chunks) */
    chunk_walk w = {&b, 0, 0, 0, 0, HADDR_UNDEF, 0};
    if (H5Dchunk_iter(dset, H5P_DEFAULT, walk_one, &w) < 0 && !w.capped) {
      H5Eclear2(H5E_DEFAULT);
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is damaged: its chunk "
                    "index cannot be read; write the file again", name, file);
    }
    H5Eclear2(H5E_DEFAULT);
    bad = w.bad;
    bad_off0 = w.off0;
    addr = w.addr;
    got = w.size;
    walked = !w.capped;
#endif
    /* every chunk the selection touches, last axis fastest: looked up when
     * the walk did not cover the index or the caller wants the addresses,
     * decoded when deflate applies */
    const int size_only = !CTR__H5_LOOKUP_INDEXED && nchunks > CTR__H5_ADDR_CHUNKS;
    const int want = addrs && !size_only;
    size_t k = 0;
    while (!bad && (!walked || decode || want)) {
      if (!chunk_ok(dset, off, &b, size_only, &addr, &got, &disagree)) {
        bad = 1;
        bad_off0 = off[0];
        break;
      }
      if (want && k < naddrs) addrs[k] = addr;
      k++;
      const char *why = decode && got > 0 ? ctr__h5_chunk_check(dset, off, &b.pipe, b.raw, got)
                                          : NULL;
      if (why)
        CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                      "dataset '%s' of HDF5 file '%s' is damaged: the chunk at element %llu of "
                      "axis 0 (%llu bytes stored) %s (its elements take %llu bytes; %d "
                      "filter(s)); write the file again",
                      name, file, (unsigned long long)off[0], (unsigned long long)got, why,
                      (unsigned long long)b.raw, b.pipe.n);
      int i = rank - 1;
      while (i >= 0 && (off[i] += cdims[i]) >= hi[i]) off[i] = lo[i], i--;
      if (i < 0) break;
    }
    if (bad && disagree)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "dataset '%s' of HDF5 file '%s' is damaged: the chunk at element %llu of "
                    "axis 0 (%llu bytes stored) has index entries that disagree on its stored "
                    "size; write the file again", name, file, (unsigned long long)bad_off0,
                    (unsigned long long)got);
    if (bad)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "dataset '%s' of HDF5 file '%s' is damaged: the chunk at element %llu of "
                    "axis 0 (stored at byte %llu with %llu bytes) does not fit: its elements "
                    "take %llu bytes before its %d filter(s), the file ends at byte %llu and its "
                    "superblock takes %llu; write the file again",
                    name, file, (unsigned long long)bad_off0, (unsigned long long)addr,
                    (unsigned long long)got, (unsigned long long)b.raw, b.pipe.n,
                    (unsigned long long)b.eof, (unsigned long long)b.lo);
    if (want && addressed && k == naddrs) *addressed = 1;
  }
cleanup:
  H5Eclear2(H5E_DEFAULT);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (dcpl >= 0) H5Pclose(dcpl);
  return st;
}

/* ---- Names ---------------------------------------------------------------- */

/* "2048 x 2048" / "(scalar)" for a dataspace. */
static void describe_dims(hid_t space, char *buf, size_t n) {
  hsize_t dims[H5S_MAX_RANK];
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0 || rank > H5S_MAX_RANK || H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
    snprintf(buf, n, "%s", rank == 0 ? "(scalar)" : "(unknown dims)");
    return;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < rank && used < n; i++) {
    int k = snprintf(buf + used, n - used, "%s%llu", i ? " x " : "", (unsigned long long)dims[i]);
    if (k < 0) break;
    used += (size_t)k;
  }
}

/* "uint16", "float64", "int32", "string", ... */
static const char *type_name(hid_t t, char *buf, size_t n) {
  const H5T_class_t cls = H5Tget_class(t);
  const size_t size = H5Tget_size(t);
  switch (cls) {
    case H5T_INTEGER:
      snprintf(buf, n, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", size * 8);
      return buf;
    case H5T_FLOAT: snprintf(buf, n, "float%zu", size * 8); return buf;
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

/* The 3D datasets of a file, for error messages. */
typedef struct ds_list {
  char items[896]; /* "/a (1 x 2 x 3), /b (...)" */
  char text[1024]; /* the sentence for the error */
  size_t used;
  int count, shown;
} ds_list;

static herr_t list_visit(hid_t group, const char *name, const H5L_info_t *info, void *data) {
  ds_list *l = data;
  if (info->type != H5L_TYPE_HARD) return 0;
  hid_t obj = H5Oopen(group, name, H5P_DEFAULT);
  if (obj < 0) return 0;
  if (H5Iget_type(obj) == H5I_DATASET) {
    hid_t space = H5Dget_space(obj);
    if (space >= 0 && H5Sget_simple_extent_ndims(space) == 3) {
      l->count++;
      char dims[96];
      describe_dims(space, dims, sizeof dims);
      const size_t room = sizeof l->items - l->used;
      int k = snprintf(l->items + l->used, room, "%s/%s (%s)", l->used ? ", " : "", name, dims);
      if (k > 0 && (size_t)k < room) {
        l->used += (size_t)k;
        l->shown++;
      } else {
        l->items[l->used] = '\0';
      }
    }
    if (space >= 0) H5Sclose(space);
  }
  H5Oclose(obj);
  return 0;
}

/* "; its 3D datasets: /exchange/data (180 x 2048 x 2048), ..." or "; it has
 * no 3D dataset" into l->text (empty if the listing failed). */
static const char *list_3d(hid_t file, ds_list *l) {
  memset(l, 0, sizeof *l);
  if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, list_visit, l) < 0) {
    H5Eclear2(H5E_DEFAULT);
    l->text[0] = '\0';
    return l->text;
  }
  if (l->count == 0)
    snprintf(l->text, sizeof l->text, "; it has no 3D dataset");
  else if (l->shown < l->count)
    snprintf(l->text, sizeof l->text, "; its 3D datasets: %s and %d more", l->items,
             l->count - l->shown);
  else
    snprintf(l->text, sizeof l->text, "; its 3D datasets: %s", l->items);
  return l->text;
}

/* ---- Opening ------------------------------------------------------------ */

/* The names of the filter plugins HDF5 files from h5py and the beamlines
 * use most (their ids registered with The HDF Group), for messages. */
static const struct {
  int id;
  const char *name;
} k_plugin_filters[] = {{32000, "LZF"},   {32001, "Blosc"}, {32004, "LZ4"},   {32008, "Bitshuffle"},
                        {32015, "Zstandard"}, {32026, "Blosc2"}, {307, "BZip2"}, {4, "SZIP"}};

static const char *filter_name(int id, const char *stored) {
  for (size_t i = 0; i < sizeof k_plugin_filters / sizeof k_plugin_filters[0]; i++)
    if (k_plugin_filters[i].id == id) return k_plugin_filters[i].name;
  return *stored ? stored : "an unknown";
}

/* CTR_E_UNSUPPORTED naming the first filter of the dataset's pipeline this
 * HDF5 cannot apply (a plugin that is not installed), and how to get it;
 * else CTR_OK. HDF5 itself says only that its plugin folder is missing. */
static ctr_status check_filters(hid_t did, const char *file, const char *dset) {
  const hid_t dcpl = H5Dget_create_plist(did);
  if (dcpl < 0) {
    H5Eclear2(H5E_DEFAULT);
    return CTR_OK; /* the read says what is wrong */
  }
  ctr_status st = CTR_OK;
  const int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n && st == CTR_OK; i++) {
    unsigned flags = 0, cd[8], config = 0;
    size_t ncd = 8;
    char stored[64] = "";
    const H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof stored,
                                           stored, &config);
    if (id < 0 || (flags & H5Z_FLAG_OPTIONAL) || H5Zfilter_avail(id) > 0) continue;
    st = ctr__error_set(CTR_E_UNSUPPORTED,
                        "dataset '%s' of HDF5 file '%s' is compressed with the %s filter (HDF5 "
                        "filter %d), which this HDF5 library lacks: install the filter plugins "
                        "(pip install hdf5plugin) and point HDF5_PLUGIN_PATH at them (the folder "
                        "python -c 'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)' prints), "
                        "or rewrite the file without it (h5repack -f NONE)",
                        dset, file, filter_name((int)id, stored), (int)id);
  }
  H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
  return st;
}

/* Opens `file` and its dataset `dset`; errors name both. The file must
 * exist (CTR_E_IO) and be HDF5 (CTR_E_FORMAT); the object must exist and be
 * a dataset (CTR_E_FORMAT, listing the file's 3D datasets). */
static ctr_status open_dataset(const char *file, const char *dset, hid_t *fid, hid_t *did) {
  ctr__h5_msg m;
  ds_list l;
  *fid = *did = -1;
  struct stat sb;
  if (stat(file, &sb) != 0)
    CTR_FAIL(CTR_E_IO, "cannot open HDF5 file '%s' (for dataset '%s'): %s", file, dset,
             strerror(errno));
  if (S_ISDIR(sb.st_mode))
    CTR_FAIL(CTR_E_IO, "cannot open HDF5 file '%s' (for dataset '%s'): it is a directory", file,
             dset);
  if (access(file, R_OK) != 0)
    CTR_FAIL(CTR_E_IO, "cannot open HDF5 file '%s' (for dataset '%s'): %s", file, dset,
             strerror(errno));
  *fid = ctr__h5_open_read(file, &m);
  if (*fid < 0)
    CTR_FAIL(CTR_E_FORMAT, "cannot open '%s' (for dataset '%s') as an HDF5 file: %s", file, dset,
             m.text);
  const unsigned long refused = ctr__h5_driver_refusals();
  hid_t obj = H5Oopen(*fid, dset, H5P_DEFAULT);
  if (obj < 0) {
    ctr__h5_detail(&m, "not found");
    if (ctr__h5_driver_refusals() != refused) { /* not missing: the path runs through damage */
      ctr__error_set(CTR_E_FORMAT, "HDF5 file '%s' is damaged (looking for dataset '%s'): %s", file,
                     dset, m.text);
      goto fail;
    }
    ctr__error_set(CTR_E_FORMAT, "HDF5 file '%s' has no dataset '%s' (%s)%s", file, dset, m.text,
                   list_3d(*fid, &l));
    goto fail;
  }
  if (H5Iget_type(obj) != H5I_DATASET) {
    const H5I_type_t t = H5Iget_type(obj);
    H5Oclose(obj);
    ctr__error_set(CTR_E_FORMAT, "'%s' in HDF5 file '%s' is a %s, not a dataset%s", dset, file,
                   t == H5I_GROUP ? "group" : t == H5I_DATATYPE ? "named datatype" : "non-dataset",
                   list_3d(*fid, &l));
    goto fail;
  }
  H5Oclose(obj);
  *did = H5Dopen2(*fid, dset, H5P_DEFAULT);
  if (*did < 0) {
    ctr__error_set(CTR_E_FORMAT, "cannot open dataset '%s' of HDF5 file '%s': %s", dset, file,
                   ctr__h5_detail(&m, "unknown error"));
    goto fail;
  }
  const ctr_status fst = check_filters(*did, file, dset);
  if (fst != CTR_OK) {
    H5Dclose(*did);
    *did = -1;
    H5Fclose(*fid);
    *fid = -1;
    return fst;
  }
  return CTR_OK;
fail:
  H5Fclose(*fid);
  *fid = -1;
  return CTR_E_FORMAT;
}

/* The memory type a stack dataset is read as, and the stack's dtype. */
static ctr_status stack_type(hid_t dset, const char *file, const char *name, ctr_dtype *dtype,
                             hid_t *memtype) {
  char tn[32];
  hid_t t = H5Dget_type(dset);
  if (t < 0) CTR_FAIL(CTR_E_FORMAT, "'%s' in HDF5 file '%s': cannot read its type", name, file);
  const H5T_class_t cls = H5Tget_class(t);
  const size_t size = H5Tget_size(t);
  const int is_unsigned = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_NONE;
  const char *shown = type_name(t, tn, sizeof tn);
  H5Tclose(t);
  if (cls == H5T_INTEGER && is_unsigned && size == 2) {
    *dtype = CTR_DTYPE_UINT16;
    *memtype = H5T_NATIVE_UINT16;
    return CTR_OK;
  }
  if ((cls == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) ||
      (cls == H5T_INTEGER && ((is_unsigned && (size == 1 || size == 4)) ||
                              (!is_unsigned && size == 2)))) {
    *dtype = CTR_DTYPE_FLOAT32;
    *memtype = H5T_NATIVE_FLOAT;
    return CTR_OK;
  }
  CTR_FAIL(CTR_E_FORMAT,
           "dataset '%s' of HDF5 file '%s' holds %s elements: supported are uint16 and float32 "
           "(read as they are) and uint8, int16, uint32, float16, float64 (converted to float32)",
           name, file, shown);
}

/* ---- Path syntax ---------------------------------------------------------- */

/* Splits "file.h5:/dataset" at the last ':' followed by '/'. *dset is NULL
 * when there is no such ':'. */
static ctr_status split_path(const char *path, char **file, char **dset) {
  *file = *dset = NULL;
  const char *split = NULL;
  for (const char *p = strchr(path, ':'); p; p = strchr(p + 1, ':'))
    if (p[1] == '/') split = p;
  if (!split) {
    *file = strdup(path);
    if (!*file) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
    return CTR_OK;
  }
  if (split == path)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s': no file name before ':': expected " CTR__HDF5_SYNTAX,
             path);
  *file = strndup(path, (size_t)(split - path));
  *dset = strdup(split + 1);
  if (!*file || !*dset) {
    free(*file);
    free(*dset);
    *file = *dset = NULL;
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  }
  return CTR_OK;
}

/* The error for a path without a dataset part, listing the 3D datasets of
 * the file when it opens. */
static ctr_status no_dataset_error(const char *path, const char *file) {
  ctr__h5_guard g;
  ds_list l;
  l.text[0] = '\0';
  /* "scan.h5:exchange/data": a dataset that does not start with '/'. */
  const char *colon = strrchr(file, ':');
  struct stat sb;
  if (colon && stat(file, &sb) != 0) {
    char *prefix = strndup(file, (size_t)(colon - file));
    const int is_file = prefix && stat(prefix, &sb) == 0;
    free(prefix);
    if (is_file)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "'%s': the dataset must be an absolute path starting with '/': expected "
               CTR__HDF5_SYNTAX, path);
  }
  ctr__h5_enter(&g);
  if (stat(file, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
    ctr__h5_msg m;
    hid_t f = ctr__h5_open_read(file, &m);
    if (f >= 0) {
      list_3d(f, &l);
      H5Fclose(f);
    }
  }
  ctr__h5_leave(&g);
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s' names no dataset: expected " CTR__HDF5_SYNTAX "%s", path,
           l.text);
}

/* ---- Stack reader ----------------------------------------------------------- */

typedef struct h5_reader {
  hid_t file, dset;
  hid_t memtype; /* a library type: not closed */
  char *file_name, *dset_name;
  int chunked, filtered; /* layout of the dataset */
  hsize_t cdims[3];      /* chunk dims when chunked */
  ctr__h5_pipeline pipe;  /* its filters; pipe.ours: decoded by ctrecon */
  ctr__h5_pread pread;    /* row bands of unfiltered data read with threads */
} h5_reader;

static void h5_free(h5_reader *h) {
  if (!h) return;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  if (h->dset >= 0) H5Dclose(h->dset);
  if (h->file >= 0) H5Fclose(h->file);
  ctr__h5_leave(&g);
  ctr__h5_pread_close(&h->pread);
  free(h->file_name);
  free(h->dset_name);
  free(h);
}

/* HDF5 builds a selection for every chunk a read touches (H5D__chunk_io_init):
 * a file cut into tiny chunks made one read allocate gigabytes (fuzz_hdf5, a
 * 1 x 1 x 1-element chunking over large images). A read touches at most
 * CTR__H5_READ_CHUNKS chunks: reads are split over images, and a band of one
 * image that alone touches more is refused. DXchange files (a chunk per
 * image, or per row band of an image) touch one to a few hundred an image. */

/* One hyperslab: rows [row0, row0 + nrows) of images [first, first + n).
 * Unfiltered data go through io_hdf5_pread.c's threads (the reader's
 * read_threads, not 1) when its chunks were all written and their addresses
 * checked; everything else through H5Dread (or ctr__h5_read_decoded). */
static ctr_status h5_read_hyperslab(h5_reader *h, const ctr_stack_reader *r, int64_t first,
                                    int64_t n, int64_t row0, int64_t nrows, void *buf) {
  ctr_status st = CTR_OK;
  ctr__h5_guard g;
  ctr__h5_msg m;
  const hsize_t start[3] = {(hsize_t)first, (hsize_t)row0, 0};
  const hsize_t count[3] = {(hsize_t)n, (hsize_t)nrows, (hsize_t)r->info.width};
  const size_t nchunks = h->pread.usable && r->read_threads != 1
                             ? ctr__h5_pread_chunks(&h->pread, start, count) : 0;
  haddr_t *addrs = nchunks ? malloc(nchunks * sizeof *addrs) : NULL; /* none: H5Dread */
  int addressed = !h->pread.chunked;
  ctr__h5_enter(&g);
  const int own = h->chunked && h->filtered && h->pipe.ours;
  st = ctr__h5_check_storage_at(h->dset, h->file_name, h->dset_name, start, count, !own, addrs,
                                nchunks, addrs && h->pread.chunked ? &addressed : NULL);
  int direct = st == CTR_OK && addrs && addressed;
  for (size_t i = 0; direct && h->pread.chunked && i < nchunks; i++)
    direct = addrs[i] != HADDR_UNDEF; /* never written: H5Dread gives the fill value */
  if (direct) {
    ctr__h5_leave(&g);
    st = ctr__h5_pread_read(&h->pread, addrs, start, count, r->read_threads, buf, h->file_name,
                            h->dset_name);
    free(addrs);
    return st;
  }
  free(addrs);
  if (st == CTR_OK && own)
    st = ctr__h5_read_decoded(h->dset, h->memtype, &h->pipe, h->file_name, h->dset_name, start,
                              count, buf);
  if (st != CTR_OK || own) {
    ctr__h5_leave(&g);
    return st;
  }
  hid_t fs = H5Dget_space(h->dset);
  hid_t ms = H5Screate_simple(3, count, NULL);
  if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
      H5Dread(h->dset, h->memtype, ms, fs, H5P_DEFAULT, buf) < 0)
    st = ctr__error_set(CTR_E_IO, "cannot read rows [%lld, %lld) of images [%lld, %lld) of "
                        "dataset '%s' in HDF5 file '%s': %s", (long long)row0,
                        (long long)(row0 + nrows), (long long)first, (long long)(first + n),
                        h->dset_name, h->file_name, ctr__h5_detail(&m, "read failed"));
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  ctr__h5_leave(&g);
  return st;
}

/* Rows [row0, row0 + nrows) of images [first, first + n): hyperslabs of at
 * most CTR__H5_READ_CHUNKS chunks each. */
static ctr_status h5_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                               int64_t nrows, void *buf) {
  h5_reader *h = r->impl;
  int64_t step = n;
  if (h->chunked && n > 0 && nrows > 0) {
    const uint64_t c0 = h->cdims[0] ? h->cdims[0] : 1, c1 = h->cdims[1] ? h->cdims[1] : 1,
                   c2 = h->cdims[2] ? h->cdims[2] : 1;
    const uint64_t rows = (uint64_t)(row0 + nrows - 1) / c1 - (uint64_t)row0 / c1 + 1;
    const uint64_t per_image = rows * (((uint64_t)r->info.width + c2 - 1) / c2);
    if (per_image > CTR__H5_READ_CHUNKS)
      CTR_FAIL(CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is chunked in pieces of %llu x %llu x "
               "%llu elements: rows [%lld, %lld) of one image lie in %llu chunks, more than the "
               "%d a read may touch; rewrite it with larger chunks, e.g. one per image: h5repack "
               "-l %s:CHUNK=1x%lldx%lld IN OUT", h->dset_name, h->file_name,
               (unsigned long long)c0, (unsigned long long)c1, (unsigned long long)c2,
               (long long)row0, (long long)(row0 + nrows), (unsigned long long)per_image,
               CTR__H5_READ_CHUNKS, h->dset_name, (long long)r->info.height,
               (long long)r->info.width);
    /* whole chunks along the image axis per read (a chunk's images plus one
     * partial chunk at each end) */
    const uint64_t chunks0 = CTR__H5_READ_CHUNKS / per_image;
    const uint64_t images = chunks0 > 2 ? (chunks0 - 1) * c0 : 1;
    if (images < (uint64_t)n) step = (int64_t)images;
  }
  const size_t image_bytes = (size_t)nrows * (size_t)r->info.width * ctr_dtype_size(r->info.dtype);
  for (int64_t i = 0; i < n; i += step) {
    const int64_t k = n - i < step ? n - i : step;
    CTR_CHECK(h5_read_hyperslab(h, r, first + i, k, row0, nrows, (char *)buf + (size_t)i * image_bytes));
  }
  return CTR_OK;
}

static ctr_status h5_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  return h5_read_rows(r, first, n, 0, r->info.height, buf);
}

/* Filtered chunks are decoded whole: a block of rows should cover whole
 * chunk rows. Unfiltered chunks and contiguous data are read by row. */
static int64_t h5_row_block(const ctr_stack_reader *r) {
  const h5_reader *h = r->impl;
  return h->chunked && h->filtered ? (int64_t)h->cdims[1] : 1;
}

/* The chunk cache for reads of n images x nrows rows: filtered chunks, all
 * those one such read touches (each then decoded once per read, and once
 * in all when the blocks follow h5_row_block); unfiltered chunks, none, so
 * that HDF5 reads only the selected bytes of each. Reopens the dataset with
 * that cache. */
static ctr_status h5_prepare_rows(ctr_stack_reader *r, int64_t n, int64_t nrows) {
  h5_reader *h = r->impl;
  if (!h->chunked) return CTR_OK;
  size_t nbytes = 0, nslots = 521;
  if (h->filtered) {
    const hsize_t w = (hsize_t)r->info.width;
    const double chunks = ceil((double)n / (double)h->cdims[0] + 1.0) *
                          ceil((double)nrows / (double)h->cdims[1] + 1.0) *
                          ceil((double)w / (double)h->cdims[2]);
    const double bytes = chunks * (double)(h->cdims[0] * h->cdims[1] * h->cdims[2]) *
                         (double)H5Tget_size(h->memtype);
    nbytes = bytes < (double)((size_t)1 << 40) ? (size_t)bytes : (size_t)1 << 40;
    /* a prime well above the chunk count (HDF5's advice: ~100 x) */
    const double want = chunks * 20.0 < 1e7 ? chunks * 20.0 : 1e7;
    nslots = (size_t)want | 1u;
    for (int prime = 0; !prime; nslots += 2) {
      prime = 1;
      for (size_t d = 3; d * d <= nslots && prime; d += 2) prime = nslots % d != 0;
      if (prime) break;
    }
  }
  ctr_status st = CTR_OK;
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr__h5_enter(&g);
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  hid_t d = -1;
  if (dapl >= 0 && H5Pset_chunk_cache(dapl, nslots, nbytes, 1.0) >= 0)
    d = H5Dopen2(h->file, h->dset_name, dapl);
  if (d < 0) {
    st = ctr__error_set(CTR_E_IO, "cannot reopen dataset '%s' of HDF5 file '%s' with a chunk "
                        "cache of %zu bytes: %s", h->dset_name, h->file_name, nbytes,
                        ctr__h5_detail(&m, "open failed"));
  } else {
    H5Dclose(h->dset);
    h->dset = d;
  }
  if (dapl >= 0) H5Pclose(dapl);
  ctr__h5_leave(&g);
  return st;
}

static void h5_close(ctr_stack_reader *r) {
  h5_free(r->impl);
  r->impl = NULL;
}

static const ctr__reader_ops h5_reader_ops = {h5_read, h5_close, h5_read_rows, h5_row_block,
                                               h5_prepare_rows};

ctr_status ctr__hdf5_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  ctr_status st = CTR_OK;
  char *file = NULL, *dset = NULL;
  ctr__h5_guard g;
  int entered = 0;
  CTR_CHECK(split_path(r->path, &file, &dset));
  if (!dset) {
    st = no_dataset_error(r->path, file);
    free(file);
    return st;
  }
  h5_reader *h = ctr__calloc(1, sizeof *h, "HDF5 reader");
  if (!h) {
    free(file);
    free(dset);
    return CTR_E_OUT_OF_MEMORY;
  }
  h->file = h->dset = -1;
  h->pread.fd = -1;
  h->file_name = file;
  h->dset_name = dset;
  ctr__h5_enter(&g);
  entered = 1;
  CTR_CHECK_GOTO(st, open_dataset(file, dset, &h->file, &h->dset));
  hid_t space = H5Dget_space(h->dset);
  if (space < 0)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': cannot read its dims", dset,
                  file);
  hsize_t dims[3];
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank != 3) {
    char shown[128];
    describe_dims(space, shown, sizeof shown);
    H5Sclose(space);
    ds_list l;
    CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                  "dataset '%s' of HDF5 file '%s' is %dD (%s): expected a 3D dataset "
                  "(images x rows x columns)%s",
                  dset, file, rank < 0 ? 0 : rank, shown, list_3d(h->file, &l));
  }
  H5Sget_simple_extent_dims(space, dims, NULL);
  H5Sclose(space);
  CTR_CHECK_GOTO(st, stack_type(h->dset, file, dset, &r->info.dtype, &h->memtype));
  {
    hid_t dcpl = H5Dget_create_plist(h->dset);
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 3, h->cdims) == 3 &&
        h->cdims[0] > 0 && h->cdims[1] > 0 && h->cdims[2] > 0) {
      h->chunked = 1;
      h->filtered = H5Pget_nfilters(dcpl) > 0;
      ctr__h5_pipeline_get(dcpl, &h->pipe);
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Eclear2(H5E_DEFAULT);
  }
  ctr__h5_pread_open(&h->pread, h->file, h->dset, h->memtype, file);
  ctr__h5_leave(&g);
  entered = 0;
  if (dims[0] > (hsize_t)INT64_MAX || dims[1] > (hsize_t)INT64_MAX || dims[2] > (hsize_t)INT64_MAX)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is too large", dset, file);
  r->info.count = (int64_t)dims[0];
  r->info.height = (int64_t)dims[1];
  r->info.width = (int64_t)dims[2];
  CTR_CHECK_GOTO(st, ctr__stack_info_check(&r->info, r->path, CTR_E_FORMAT));
  r->swap = 0; /* HDF5 converts to the host's byte order */
  r->impl = h;
  r->ops = &h5_reader_ops;
  return CTR_OK;
cleanup:
  if (entered) ctr__h5_leave(&g);
  h5_free(h);
  return st;
}

/* ---- 1D vectors ---------------------------------------------------------- */

ctr_status ctr__hdf5_read_vector(const char *file, const char *dataset, double **out,
                                 int64_t *n) {
  ctr_status st = CTR_OK;
  if (out) *out = NULL;
  if (n) *n = 0;
  if (!file || !*file || !dataset || !*dataset || !out || !n)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__hdf5_read_vector: file, dataset, out and n must be "
             "given");
  ctr__h5_guard g;
  ctr__h5_msg m;
  hid_t fid = -1, did = -1, space = -1;
  double *v = NULL;
  ctr__h5_enter(&g);
  CTR_CHECK_GOTO(st, open_dataset(file, dataset, &fid, &did));
  hid_t t = H5Dget_type(did);
  const H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  char tn[32];
  const char *shown = t >= 0 ? type_name(t, tn, sizeof tn) : "unknown";
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
    if (t >= 0) H5Tclose(t);
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' holds %s elements: "
                  "expected numbers (float64, float32 or integers)", dataset, file, shown);
  }
  H5Tclose(t);
  space = H5Dget_space(did);
  const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  hsize_t dim = 0;
  if (rank != 1) {
    char dims[128] = "";
    if (space >= 0) describe_dims(space, dims, sizeof dims);
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is %dD (%s): expected a 1D "
                  "dataset", dataset, file, rank < 0 ? 0 : rank, dims);
  }
  H5Sget_simple_extent_dims(space, &dim, NULL);
  if (dim == 0)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is empty", dataset, file);
  if (dim > (hsize_t)(SIZE_MAX / sizeof(double)) || dim > (hsize_t)INT64_MAX)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is too large", dataset, file);
  CTR_CHECK_GOTO(st, ctr__h5_check_storage(did, file, dataset, NULL, NULL, 1));
  v = ctr__malloc((size_t)dim * sizeof *v, "HDF5 vector");
  if (!v) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  if (H5Dread(did, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot read dataset '%s' of HDF5 file '%s': %s", dataset, file,
                  ctr__h5_detail(&m, "read failed"));
  *out = v;
  *n = (int64_t)dim;
  v = NULL;
cleanup:
  free(v);
  if (space >= 0) H5Sclose(space);
  if (did >= 0) H5Dclose(did);
  if (fid >= 0) H5Fclose(fid);
  ctr__h5_leave(&g);
  return st;
}

/* One string (fixed or variable length, scalar or of one element) of the
 * open attribute `a` into buf. */
static ctr_status attr_string(hid_t a, const char *where, char *buf, size_t n) {
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a), mt = -1;
  ctr_status st = CTR_OK;
  const hssize_t count = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (t < 0 || H5Tget_class(t) != H5T_STRING || count != 1)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: expected one string", where);
  mt = H5Tcopy(H5T_C_S1);
  H5Tset_cset(mt, H5Tget_cset(t)); /* h5py writes UTF-8: HDF5 converts no ASCII <-> UTF-8 */
  if (H5Tis_variable_str(t) > 0) {
    char *v = NULL;
    H5Tset_size(mt, H5T_VARIABLE);
    if (H5Aread(a, mt, &v) < 0 || !v) CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: cannot be read", where);
    snprintf(buf, n, "%s", v);
    H5free_memory(v);
  } else {
    const size_t len = H5Tget_size(t);
    char *v = calloc(len + 1, 1);
    if (!v) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", where);
    H5Tset_size(mt, len);
    const herr_t e = H5Aread(a, mt, v);
    snprintf(buf, n, "%s", v);
    free(v);
    if (e < 0) CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: cannot be read", where);
  }
cleanup:
  if (mt >= 0) H5Tclose(mt);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return st;
}

ctr_status ctr__hdf5_read_attr_string(const char *file, const char *dataset, const char *name,
                                      char *buf, size_t n) {
  ctr_status st = CTR_OK;
  ctr__h5_guard g;
  hid_t fid = -1, did = -1, a = -1;
  char where[600];
  *buf = '\0';
  snprintf(where, sizeof where, "attribute '%s' of dataset '%s' of HDF5 file '%s'", name, dataset,
           file);
  ctr__h5_enter(&g);
  CTR_CHECK_GOTO(st, open_dataset(file, dataset, &fid, &did));
  if (H5Aexists(did, name) > 0) {
    a = H5Aopen(did, name, H5P_DEFAULT);
    if (a < 0) CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: cannot be opened", where);
    CTR_CHECK_GOTO(st, attr_string(a, where, buf, n));
  }
cleanup:
  if (a >= 0) H5Aclose(a);
  if (did >= 0) H5Dclose(did);
  if (fid >= 0) H5Fclose(fid);
  ctr__h5_leave(&g);
  return st;
}


/* ---- Writer -------------------------------------------------------------- */

/* "file.h5[:/dataset]" as a 3D dataset (images x height x width, float32 or
 * uint16, one chunk per image), default dataset "/data"; written into a
 * temporary file renamed onto file.h5 when complete. An existing file.h5
 * keeps its other datasets: the temporary starts as a copy of it and gets
 * the dataset added (a dataset of that name already there is refused, or
 * with overwrite replaced), so that a failed or killed run leaves the file
 * as it was. Not resumable. */
typedef struct h5_writer {
  ctr__atomic_file f;
  char *file, *dset;
  hid_t fid, did;
  hid_t half; /* float16 output: IEEE binary16, little-endian (HDF5 1.10 has no such
                 predefined type; the layout h5py and numpy use); -1 otherwise */
} h5_writer;

/* IEEE binary16, little-endian: sign bit 15, exponent bits 10-14 (bias 15),
 * mantissa bits 0-9. */
static hid_t half_type(void) {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  if (t < 0) return -1;
  if (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 15) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static void h5w_close(h5_writer *h) {
  if (h->did >= 0) H5Dclose(h->did);
  if (h->fid >= 0) H5Fclose(h->fid);
  if (h->half >= 0) H5Tclose(h->half);
  h->did = h->fid = h->half = -1;
}

static void h5w_free(h5_writer *h) {
  ctr__atomic_discard(&h->f);
  free(h->file);
  free(h->dset);
  free(h);
}

static ctr_status h5w_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  h5_writer *h = w->impl;
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr_status st = CTR_OK;
  ctr__h5_enter(&g);
  hsize_t start[3] = {(hsize_t)first, 0, 0};
  hsize_t count[3] = {(hsize_t)n, (hsize_t)w->info.height, (hsize_t)w->info.width};
  hid_t fs = H5Dget_space(h->did), ms = H5Screate_simple(3, count, NULL);
  hid_t type = w->info.dtype == CTR_DTYPE_UINT16    ? H5T_NATIVE_UINT16
               : w->info.dtype == CTR_DTYPE_FLOAT16 ? h->half
                                                    : H5T_NATIVE_FLOAT;
  if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
      H5Dwrite(h->did, type, ms, fs, H5P_DEFAULT, buf) < 0)
    st = ctr__error_set(CTR_E_IO, "cannot write images %lld..%lld of dataset '%s' of HDF5 file "
                        "'%s': %s", (long long)first, (long long)(first + n - 1), h->dset, h->file,
                        ctr__h5_detail(&m, "write failed (disk full?)"));
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  ctr__h5_leave(&g);
  return st;
}

static ctr_status h5w_flush(ctr_stack_writer *w) {
  h5_writer *h = w->impl;
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr_status st = CTR_OK;
  ctr__h5_enter(&g);
  if (H5Fflush(h->fid, H5F_SCOPE_GLOBAL) < 0)
    st = ctr__error_set(CTR_E_IO, "cannot flush HDF5 file '%s': %s", h->file,
                        ctr__h5_detail(&m, "flush failed"));
  ctr__h5_leave(&g);
  return st;
}

static ctr_status h5w_commit(ctr_stack_writer *w) {
  h5_writer *h = w->impl;
  ctr__h5_guard g;
  ctr__h5_msg m;
  ctr_status st = CTR_OK;
  ctr__h5_enter(&g);
  if (h->half >= 0) H5Tclose(h->half);
  herr_t e1 = H5Dclose(h->did), e2 = H5Fclose(h->fid);
  h->did = h->fid = h->half = -1;
  if (e1 < 0 || e2 < 0)
    st = ctr__error_set(CTR_E_IO, "cannot complete HDF5 file '%s': %s", h->file,
                        ctr__h5_detail(&m, "close failed (disk full?)"));
  ctr__h5_leave(&g);
  if (st == CTR_OK) st = ctr__atomic_rename(&h->f);
  h5w_free(h);
  w->impl = NULL;
  return st;
}

static void h5w_abort(ctr_stack_writer *w) {
  h5_writer *h = w->impl;
  if (!h) return;
  ctr__h5_guard g;
  ctr__h5_enter(&g);
  h5w_close(h);
  ctr__h5_leave(&g);
  h5w_free(h);
  w->impl = NULL;
}

static const ctr__writer_ops h5_writer_ops = {h5w_write, h5w_commit, h5w_abort, h5w_flush, NULL,
                                               NULL};

/* Copies the existing `file` into the open temporary f (copy_file_range:
 * a reflink where the file system has them). */
static ctr_status copy_existing(const char *file, ctr__atomic_file *f) {
  int in = -1;
  int64_t size = 0, off = 0;
  ctr_status st = ctr__file_open_read(file, &in, &size);
  if (st != CTR_OK) return st;
  char *buf = NULL;
  int ranges = 1;
  while (off < size) {
    if (ranges) {
      loff_t a = off, b = off;
      const ssize_t n = copy_file_range(in, &a, f->fd, &b, (size_t)(size - off), 0);
      if (n > 0) {
        off += n;
        continue;
      }
      if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
        CTR_FAIL_GOTO(st, CTR_E_IO, "cannot copy HDF5 file '%s' to add a dataset to it: %s", file,
                      strerror(errno));
      ranges = 0; /* not here: read and write */
    }
    const size_t block = (size_t)1 << 22;
    if (!buf && !(buf = ctr__malloc(block, "HDF5 file copy")))
      CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "HDF5 file copy");
    const size_t m = size - off < (int64_t)block ? (size_t)(size - off) : block;
    CTR_CHECK_GOTO(st, ctr__pread_full(in, buf, m, off, file));
    CTR_CHECK_GOTO(st, ctr__pwrite_full(f->fd, buf, m, off, f->tmp));
    off += (int64_t)m;
  }
cleanup:
  free(buf);
  close(in);
  return st;
}

/* Whether the link `path` ("/a/b/c") exists in the file, each group on the
 * way too (H5Lexists needs the parents). -1: a failure. */
static int link_exists(hid_t fid, const char *path) {
  char *p = strdup(path);
  if (!p) return -1;
  int r = 1;
  for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
    if (s) *s = '\0';
    const htri_t e = H5Lexists(fid, p, H5P_DEFAULT);
    if (e <= 0) {
      r = e < 0 ? -1 : 0;
      break;
    }
    if (!s) break;
    *s = '/';
  }
  free(p);
  return r;
}

/* An existing `file` a dataset is to be added to: it must be HDF5; *holds
 * says whether it holds `dset` already. The caller holds the HDF5 guard. */
static ctr_status holds_dataset(const char *file, const char *dset, int *holds) {
  ctr__h5_msg m;
  if (H5Fis_hdf5(file) <= 0)
    CTR_FAIL(CTR_E_IO, "'%s' exists and is not an HDF5 file: the dataset '%s' cannot be added to "
             "it; write to another file or delete it", file, dset);
  const hid_t fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0)
    CTR_FAIL(CTR_E_IO, "cannot open HDF5 file '%s' to add dataset '%s' to it: %s", file, dset,
             ctr__h5_detail(&m, "open failed"));
  const int e = link_exists(fid, dset);
  H5Fclose(fid);
  if (e < 0)
    CTR_FAIL(CTR_E_IO, "cannot look for dataset '%s' in HDF5 file '%s': %s", dset, file,
             ctr__h5_detail(&m, "lookup failed"));
  *holds = e;
  return CTR_OK;
}

/* The output's dataset in an existing file (checked on the file itself
 * before it is copied): refused unless the writer may replace it. The
 * caller holds the HDF5 guard. */
static ctr_status h5w_check_existing(const h5_writer *h, const ctr_stack_writer *w, int *holds) {
  CTR_CHECK(holds_dataset(h->file, h->dset, holds));
  if (*holds && !w->overwrite) return ctr__output_exists(w->path, w->path, 0);
  return CTR_OK;
}

ctr_status ctr__hdf5_existing(const char *path, char **found) {
  char *file = NULL, *dset = NULL;
  *found = NULL;
  CTR_CHECK(split_path(path, &file, &dset));
  ctr_status st = CTR_OK;
  int holds = 0;
  if (ctr__file_exists(file)) {
    ctr__h5_guard g;
    ctr__h5_enter(&g);
    st = holds_dataset(file, dset ? dset : "/data", &holds);
    ctr__h5_leave(&g);
  }
  if (st == CTR_OK && holds && !(*found = strdup(path)))
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  free(file);
  free(dset);
  return st;
}

/* The file the dataset goes into: a new one, or the copy of the existing
 * file.h5 (h5w_check_existing), without the dataset it held when the writer
 * replaces it (`replace`; HDF5 keeps the old data's space until the file is
 * repacked). */
static ctr_status h5w_open_file(h5_writer *h, int existing, int replace) {
  ctr__h5_msg m;
  h->fid = existing ? H5Fopen(h->f.tmp, H5F_ACC_RDWR, H5P_DEFAULT)
                    : H5Fcreate(h->f.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (h->fid < 0)
    CTR_FAIL(CTR_E_IO, "cannot %s HDF5 file '%s': %s", existing ? "open the copy of" : "create",
             h->file, ctr__h5_detail(&m, "open failed"));
  if (replace && H5Ldelete(h->fid, h->dset, H5P_DEFAULT) < 0)
    CTR_FAIL(CTR_E_IO, "cannot replace dataset '%s' of HDF5 file '%s': %s", h->dset, h->file,
             ctr__h5_detail(&m, "delete failed"));
  return CTR_OK;
}

ctr_status ctr__hdf5_create(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  if (w->mode != CTR__OUT_TEMP) /* the format table's row says so: refused above (io_partial.c) */
    CTR_FAIL(CTR_E_INTERNAL, "'%s': HDF5 output cannot be resumed", w->path);
  h5_writer *h = ctr__calloc(1, sizeof *h, "HDF5 writer");
  if (!h) return CTR_E_OUT_OF_MEMORY;
  h->f = (ctr__atomic_file)CTR__ATOMIC_FILE_INIT;
  h->fid = h->did = h->half = -1;
  ctr__h5_guard g;
  ctr__h5_msg m;
  int entered = 0;
  CTR_CHECK_GOTO(st, split_path(w->path, &h->file, &h->dset));
  if (!h->dset && !(h->dset = strdup("/data")))
    CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy a dataset name");
  const int existing = ctr__file_exists(h->file);
  int holds = 0;
  if (existing) { /* checked before the copy; the guard is not held while copying */
    ctr__h5_enter(&g);
    st = h5w_check_existing(h, w, &holds);
    ctr__h5_leave(&g);
    if (st != CTR_OK) goto cleanup;
  }
  CTR_CHECK_GOTO(st, ctr__atomic_create(&h->f, h->file));
  /* a new file stays new: one that appears meanwhile is kept (overwrite 0); a
   * copy replaces the file it copied */
  h->f.no_replace = !existing && !w->overwrite;
  if (existing) CTR_CHECK_GOTO(st, copy_existing(h->file, &h->f));
  CTR_CHECK_GOTO(st, ctr__atomic_close(&h->f));
  ctr__h5_enter(&g);
  entered = 1;
  hsize_t dims[3] = {(hsize_t)w->info.count, (hsize_t)w->info.height, (hsize_t)w->info.width};
  hsize_t chunk[3] = {1, dims[1], dims[2]};
  hid_t space = -1, lcpl = -1, dcpl = -1;
  if (w->info.dtype == CTR_DTYPE_FLOAT16 && (h->half = half_type()) < 0)
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot make the float16 type of HDF5 file '%s': %s", h->file,
                  ctr__h5_detail(&m, "type failed"));
  CTR_CHECK_GOTO(st, h5w_open_file(h, existing, holds));
  {
    space = H5Screate_simple(3, dims, NULL);
    lcpl = H5Pcreate(H5P_LINK_CREATE);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (lcpl >= 0) H5Pset_create_intermediate_group(lcpl, 1);
    if (dcpl >= 0) H5Pset_chunk(dcpl, 3, chunk);
    if (space >= 0 && lcpl >= 0 && dcpl >= 0)
      h->did = H5Dcreate2(h->fid, h->dset,
                          w->info.dtype == CTR_DTYPE_UINT16    ? H5T_STD_U16LE
                          : w->info.dtype == CTR_DTYPE_FLOAT16 ? h->half
                                                               : H5T_IEEE_F32LE,
                          space, lcpl, dcpl, H5P_DEFAULT);
  }
  if (space >= 0) H5Sclose(space);
  if (lcpl >= 0) H5Pclose(lcpl);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (h->did < 0)
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot create dataset '%s' in HDF5 file '%s': %s", h->dset,
                  h->file, ctr__h5_detail(&m, "create failed"));
  ctr__h5_leave(&g);
  w->swap = 0;
  w->impl = h;
  w->ops = &h5_writer_ops;
  return CTR_OK;
cleanup:
  if (entered) {
    h5w_close(h);
    ctr__h5_leave(&g);
  }
  h5w_free(h);
  return st;
}

#else /* !CTR_HAVE_HDF5 */

#define CTR__NO_HDF5                                                                         \
  "this build of ctrecon has no HDF5 support (install libhdf5-dev and configure with "       \
  "-DCTRECON_HDF5=on, or convert the data to tiff-stack, raw or nrrd)"

ctr_status ctr__hdf5_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot read '%s': " CTR__NO_HDF5, r->path);
}

ctr_status ctr__hdf5_create(ctr_stack_writer *w) {
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot write '%s': " CTR__NO_HDF5, w->path);
}

ctr_status ctr__hdf5_existing(const char *path, char **found) {
  (void)path; /* nothing to find: such a build writes no HDF5 */
  *found = NULL;
  return CTR_OK;
}

ctr_status ctr__hdf5_read_attr_string(const char *file, const char *dataset, const char *name,
                                      char *buf, size_t n) {
  (void)name;
  if (buf && n) *buf = '\0';
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot read dataset '%s' of '%s': " CTR__NO_HDF5,
           dataset ? dataset : "(null)", file ? file : "(null)");
}

ctr_status ctr__hdf5_read_vector(const char *file, const char *dataset, double **out,
                                 int64_t *n) {
  if (out) *out = NULL;
  if (n) *n = 0;
  CTR_FAIL(CTR_E_UNSUPPORTED, "cannot read dataset '%s' of '%s': " CTR__NO_HDF5,
           dataset ? dataset : "(null)", file ? file : "(null)");
}

#endif
