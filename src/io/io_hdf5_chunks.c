/* HDF5 chunks decoded by ctrecon: the raw bytes of a chunk (H5Dread_chunk),
 * its filters undone here (deflate, shuffle, Fletcher-32: what HDF5 always
 * has and what DXchange writers use), its elements converted by HDF5
 * (H5Tconvert) and the part a read selects copied out.
 *
 * Why not H5Dread: HDF5 does not check what a filter gives back, and copies a
 * whole chunk out of it (HDF5 1.14 reads past its heap buffer, 1.10 returns
 * what lies there: found by tests/fuzz/fuzz_hdf5.c and fuzz_pet_hdf5.c); a
 * check that inflated each chunk before H5Dread read every stored byte twice.
 * Here each chunk's stored bytes are read once, and a chunk that does not
 * decode to exactly its elements is an error naming it.
 *
 * The filters, as the HDF5 file format specification (section "Filter
 * Pipeline Message") and the HDF5 user guide define them; on reading they
 * are undone last to first, skipping those the chunk's filter mask marks:
 * - deflate (id 1): a zlib stream (RFC 1950);
 * - shuffle (id 2): byte k of every element stored together, the element
 *   size in its first client value; bytes past the last whole element kept;
 * - Fletcher-32 (id 3): the checksum of the bytes before it, 4 bytes at the
 *   end, little-endian; the sums run over big-endian 16-bit words (a last odd
 *   byte as the high half), reduced modulo 65535 (Fletcher 1982); files of
 *   HDF5 1.6 hold it with its bytes reversed, and both are accepted. */
#include "io/io_internal.h"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int ctr__h5_pipeline_get(hid_t dcpl, ctr__h5_pipeline *p) {
  memset(p, 0, sizeof *p);
  const int n = H5Pget_nfilters(dcpl);
  if (n < 0 || n > CTR__H5_PIPELINE_MAX) return 0;
  int ours = 1;
  for (int i = 0; i < n; i++) {
    unsigned flags = 0, cd[8] = {0};
    size_t ncd = 8;
    p->id[i] = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
    p->elem[i] = ncd > 0 ? cd[0] : 0;
    p->deflate += p->id[i] == H5Z_FILTER_DEFLATE;
    if (p->id[i] != H5Z_FILTER_DEFLATE && p->id[i] != H5Z_FILTER_SHUFFLE &&
        p->id[i] != H5Z_FILTER_FLETCHER32)
      ours = 0;
  }
  p->n = n;
  p->ours = ours;
  H5Eclear2(H5E_DEFAULT);
  return ours;
}

/* Fletcher-32 of n bytes (the variant above). */
static uint32_t fletcher32(const unsigned char *d, size_t n) {
  uint32_t s1 = 0, s2 = 0;
  size_t words = n / 2;
  while (words) {
    /* 360 words keep both sums below 2^32 before the fold */
    size_t k = words > 360 ? 360 : words;
    words -= k;
    for (; k; k--, d += 2) {
      s1 += (uint32_t)d[0] << 8 | d[1];
      s2 += s1;
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  if (n % 2) {
    s1 += (uint32_t)d[0] << 8;
    s2 += s1;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  s1 = (s1 & 0xffff) + (s1 >> 16);
  s2 = (s2 & 0xffff) + (s2 >> 16);
  return s2 << 16 | s1;
}

/* Inflates src (n bytes) into dst (cap bytes): the bytes given, or -1 when
 * the stream is damaged, ends early, or gives more than cap. */
static long long inflate_all(const unsigned char *src, size_t n, unsigned char *dst, size_t cap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit(&z) != Z_OK) return -1;
  size_t in = 0, out = 0;
  const size_t piece = (size_t)1 << 30; /* zlib counts in uInt */
  int rc = Z_OK;
  for (;;) {
    if (z.avail_in == 0 && in < n) {
      z.next_in = (unsigned char *)src + in;
      z.avail_in = (uInt)(n - in < piece ? n - in : piece);
      in += z.avail_in;
    }
    unsigned char spare;
    const int full = out == cap; /* one byte more would be too many */
    z.next_out = full ? &spare : dst + out;
    z.avail_out = full ? 1 : (uInt)(cap - out < piece ? cap - out : piece);
    const uInt before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t made = before - z.avail_out;
    if (full && made) rc = Z_DATA_ERROR;
    if (!full) out += made;
    if (rc == Z_STREAM_END || rc != Z_OK) break;
    if (made == 0 && z.avail_in == 0 && in == n) break; /* input ran out */
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? (long long)out : -1;
}

/* Undoes the filters of a chunk with filter mask `mask` whose n stored bytes
 * are in *buf; *spare is a second buffer; both hold cap bytes (a stage
 * giving more fails). The decoded bytes end in *buf (the two may be
 * swapped), their count in *n. NULL when it decoded, else what is wrong
 * with it ("fails its Fletcher-32 checksum", ...). */
static const char *chunk_decode(const ctr__h5_pipeline *p, unsigned mask, unsigned char **buf,
                                unsigned char **spare, size_t cap, size_t *n) {
  for (int i = p->n - 1; i >= 0; i--) {
    if (i < 32 && (mask >> i) & 1u) continue;
    if (p->id[i] == H5Z_FILTER_FLETCHER32) {
      if (*n < 4) return "is shorter than its Fletcher-32 checksum";
      const unsigned char *c = *buf + *n - 4;
      const uint32_t stored = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 |
                              (uint32_t)c[3] << 24;
      const uint32_t sum = fletcher32(*buf, *n - 4);
      const uint32_t reversed = (sum & 0xff) << 24 | (sum & 0xff00) << 8 | (sum >> 8 & 0xff00) |
                                sum >> 24;
      if (stored != sum && stored != reversed)
        return "fails its Fletcher-32 checksum";
      *n -= 4;
    } else if (p->id[i] == H5Z_FILTER_DEFLATE) {
      const long long m = inflate_all(*buf, *n, *spare, cap);
      if (m < 0) return "is no zlib stream of at most its elements' size (deflate)";
      *n = (size_t)m;
      unsigned char *t = *buf;
      *buf = *spare;
      *spare = t;
    } else if (p->id[i] == H5Z_FILTER_SHUFFLE) {
      const size_t e = p->elem[i];
      if (e > 1 && *n >= e) {
        const size_t count = *n / e;
        for (size_t b = 0; b < e; b++)
          for (size_t k = 0; k < count; k++) (*spare)[k * e + b] = (*buf)[b * count + k];
        memcpy(*spare + count * e, *buf + count * e, *n - count * e);
        unsigned char *t = *buf;
        *buf = *spare;
        *spare = t;
      }
    } else {
      return "passed through a filter ctrecon does not decode";
    }
  }
  return NULL;
}

/* The bytes a stage between filters may take: at most a deflate of the
 * elements (raw bytes plus zlib's worst-case growth, 0.1 % + 64) plus the
 * checksums. */
static size_t stage_cap(const ctr__h5_pipeline *p, size_t raw) {
  return raw + raw / 1000 + 64 + 4 * (size_t)p->n;
}

/* Reads the stored chunk at off (got bytes, at most cap) into *buf and
 * decodes it; NULL when that gave exactly raw bytes (in *buf), else what is
 * wrong with it; *n the bytes it gave. */
static const char *chunk_load(hid_t dset, const hsize_t *off, const ctr__h5_pipeline *p,
                              size_t raw, hsize_t got, unsigned char **buf, unsigned char **spare,
                              size_t cap, size_t *n) {
  uint32_t mask = 0;
  *n = (size_t)got;
  if (got == 0 || got > cap) return "is stored in more bytes than its elements could take";
  /* H5Dread_chunk reads as many bytes as the lookup gives */
  if (!ctr__h5_chunk_size_agrees(dset, off, got))
    return "has index entries that disagree on its stored size";
  if (H5Dread_chunk(dset, H5P_DEFAULT, off, &mask, *buf) < 0) {
    *n = 0; /* the caller reports HDF5's message */
    return NULL;
  }
  const char *why = chunk_decode(p, mask, buf, spare, cap, n);
  return why ? why : *n != raw ? "does not decode to its elements' size" : NULL;
}

int ctr__h5_chunk_size_agrees(hid_t dset, const hsize_t *off, hsize_t got) {
  hsize_t will = 0;
  if (H5Dget_chunk_storage_size(dset, off, &will) >= 0 && will == got) return 1;
  H5Eclear2(H5E_DEFAULT);
  return 0;
}

const char *ctr__h5_chunk_check(hid_t dset, const hsize_t *off, const ctr__h5_pipeline *p,
                                hsize_t raw, hsize_t got) {
  if ((hsize_t)(size_t)raw != raw) return "is larger than this machine can address";
  const size_t cap = stage_cap(p, (size_t)raw);
  unsigned char *a = malloc(cap), *b = malloc(cap);
  size_t n = 0;
  const char *why = !a || !b ? "cannot be checked (out of host memory)"
                             : chunk_load(dset, off, p, (size_t)raw, got, &a, &b, cap, &n);
  if (!why && n == 0) why = "cannot be read"; /* chunk_load: HDF5's read failed */
  H5Eclear2(H5E_DEFAULT);
  free(a);
  free(b);
  return why;
}

ctr_status ctr__h5_read_decoded(hid_t dset, hid_t memtype, const ctr__h5_pipeline *p,
                                const char *file, const char *name, const hsize_t start[3],
                                const hsize_t count[3], void *out) {
  ctr_status st = CTR_OK;
  ctr__h5_msg m;
  hid_t dcpl = H5Dget_create_plist(dset), ftype = H5Dget_type(dset);
  unsigned char *a = NULL, *b = NULL, fill[16] = {0};
  hsize_t cd[3];
  if (dcpl < 0 || ftype < 0 || H5Pget_chunk(dcpl, 3, cd) != 3 || !cd[0] || !cd[1] || !cd[2])
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': cannot read its chunk "
                  "layout: %s", name, file, ctr__h5_detail(&m, "no chunks"));
  const size_t fsize = H5Tget_size(ftype), msize = H5Tget_size(memtype);
  if (fsize == 0 || msize == 0 || msize > sizeof fill)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': element sizes %zu / %zu",
                  name, file, fsize, msize);
  if (H5Pget_fill_value(dcpl, memtype, fill) < 0) {
    H5Eclear2(H5E_DEFAULT);
    memset(fill, 0, sizeof fill);
  }
  size_t elems = 0, raw = 0, conv = 0;
  if (!ctr__mul_size((size_t)cd[0], (size_t)cd[1], &elems) ||
      !ctr__mul_size(elems, (size_t)cd[2], &elems) || !ctr__mul_size(elems, fsize, &raw) ||
      !ctr__mul_size(elems, fsize > msize ? fsize : msize, &conv))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': chunks too large", name, file);
  const size_t cap = stage_cap(p, raw), bytes = cap > conv ? cap : conv;
  a = malloc(bytes);
  b = malloc(bytes);
  if (!a || !b)
    CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot allocate 2 x %zu bytes to decode a chunk of "
                  "dataset '%s' of HDF5 file '%s'", bytes, name, file);
  hsize_t lo[3], hi[3], off[3];
  for (int i = 0; i < 3; i++) {
    lo[i] = start[i] / cd[i] * cd[i];
    hi[i] = start[i] + count[i];
    off[i] = lo[i];
    if (hi[i] <= start[i]) goto cleanup; /* nothing selected */
  }
  for (;;) { /* every chunk the selection touches, last axis fastest */
    hsize_t got = 0;
    int written = 0;
#if CTR__H5_LOOKUP_INDEXED
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    if (H5Dget_chunk_info_by_coord(dset, off, &mask, &addr, &got) < 0)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is damaged: the chunk at "
                    "element %llu of axis 0 has an index entry HDF5 cannot read (%s); write the "
                    "file again", name, file, (unsigned long long)off[0],
                    ctr__h5_detail(&m, "lookup failed"));
    written = addr != HADDR_UNDEF;
#else
    /* fails, or gives 0, for a chunk never written (ctr__h5_check_storage
     * has held each one to the file) */
    if (H5Dget_chunk_storage_size(dset, off, &got) < 0) got = 0;
    H5Eclear2(H5E_DEFAULT);
    written = got > 0;
#endif
    const unsigned char *src = NULL; /* the chunk's elements, in memtype */
    if (written) {
      size_t n = 0;
      const char *why = chunk_load(dset, off, p, raw, got, &a, &b, cap, &n);
      if (!why && n == 0)
        CTR_FAIL_GOTO(st, CTR_E_IO, "cannot read the chunk at element %llu of axis 0 of dataset "
                      "'%s' in HDF5 file '%s': %s", (unsigned long long)off[0], name, file,
                      ctr__h5_detail(&m, "read failed"));
      if (why)
        CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s' is damaged: the chunk at "
                      "element %llu of axis 0 (%llu bytes stored) %s (%zu bytes: %zu expected); "
                      "write the file again", name, file, (unsigned long long)off[0],
                      (unsigned long long)got, why, n, raw);
      if (H5Tconvert(ftype, memtype, elems, a, NULL, H5P_DEFAULT) < 0)
        CTR_FAIL_GOTO(st, CTR_E_FORMAT, "dataset '%s' of HDF5 file '%s': cannot convert a "
                      "chunk's elements: %s", name, file, ctr__h5_detail(&m, "conversion failed"));
      src = a;
    }
    /* the chunk's part of the selection, row by row (x runs are contiguous
     * in both) */
    hsize_t b0[3], e0[3];
    for (int i = 0; i < 3; i++) {
      b0[i] = off[i] > start[i] ? off[i] : start[i];
      e0[i] = off[i] + cd[i] < hi[i] ? off[i] + cd[i] : hi[i];
    }
    const size_t run = (size_t)(e0[2] - b0[2]);
    for (hsize_t z = b0[0]; z < e0[0]; z++)
      for (hsize_t y = b0[1]; y < e0[1]; y++) {
        unsigned char *dst = (unsigned char *)out +
                             (((size_t)(z - start[0]) * count[1] + (size_t)(y - start[1])) *
                                  count[2] + (size_t)(b0[2] - start[2])) * msize;
        if (src) {
          memcpy(dst,
                 src + (((size_t)(z - off[0]) * cd[1] + (size_t)(y - off[1])) * cd[2] +
                        (size_t)(b0[2] - off[2])) * msize,
                 run * msize);
        } else {
          for (size_t k = 0; k < run; k++) memcpy(dst + k * msize, fill, msize);
        }
      }
    int i = 2;
    while (i >= 0 && (off[i] += cd[i]) >= hi[i]) off[i] = lo[i], i--;
    if (i < 0) break;
  }
cleanup:
  free(a);
  free(b);
  if (ftype >= 0) H5Tclose(ftype);
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
  return st;
}

#endif /* CTR_HAVE_HDF5 */
