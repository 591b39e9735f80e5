/* ctrecon/io.h — file I/O: raw, TIFF, TIFF stacks, NRRD, HDF5, OME-Zarr and PNG previews. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_IO_H
#define CTRECON_IO_H

#include "ctrecon/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* File I/O                                                                  */
/* ------------------------------------------------------------------------- */

typedef enum ctr_file_format {
  CTR_FORMAT_AUTO = 0,       /* from the name: .raw/.bin, .tif/.tiff, .nrrd/.nhdr, .zarr, '%' pattern */
  CTR_FORMAT_RAW = 1,        /* headerless little-endian; dims and dtype given */
  CTR_FORMAT_TIFF = 2,       /* one multi-page TIFF, one page per image */
  CTR_FORMAT_TIFF_STACK = 3, /* one TIFF per image: printf pattern "dir/img_%04d.tif" */
  CTR_FORMAT_NRRD = 4,       /* .nrrd (attached) or .nhdr + .raw (detached), raw encoding */
  CTR_FORMAT_HDF5 = 5,       /* "file.h5:/dataset" (3D dataset, the last index fastest); needs
                                CTR_FEATURE_HDF5 */
  CTR_FORMAT_ZARR = 6        /* "volume.zarr": a directory, Zarr v3 + OME-NGFF 0.5 multiscales
                                (a 2x2x2 averaged pyramid), zstd chunks */
} ctr_file_format;

/* What a file format can do: one row of the library's format table, the one
 * place that answers these questions (the streamed commands, the distributed
 * runs and the bindings ask it). Filled by ctr_file_format_get_info; the
 * strings are static. */
#define CTR_FILE_FORMAT_INFO_VERSION 2u
typedef struct ctr_file_format_info {
  unsigned version;
  const char *name;       /* as ctr_format_parse takes it and ctr_format_name gives it */
  const char *extensions; /* the endings ctr_format_guess maps to it, space separated */
  int stack_of_files;     /* 1: one file per image, named by a printf pattern; 0: one 3D file */
  unsigned dtypes;        /* the dtypes it stores: bit (1u << d) for each ctr_dtype d */
  unsigned feature;       /* the CTR_FEATURE_* bit a build needs for it; 0: always there */
  int in_order;           /* 1: images are written first to last, by one writer at a time */
  int resumable;          /* 1: a streamed run writes it under fixed partial names with a
                             journal, so that ctr_fdk_stream_options.resume and
                             ctr_fbp_stream_options.resume can continue an interrupted run;
                             0: written to a temporary name, and a resume is refused */
  int many_ranks;         /* 1: the ranks of a distributed run write their images into one
                             output at once */
  int adds_to_file;       /* 1: an output added to an existing file keeps the file's other
                             contents (HDF5 datasets); 0: the file is replaced */
  const char *partial;    /* how a resumable run names the partial output of OUT; NULL: none */
  /* version 2 */
  int needs_hint;         /* 1: the file holds no sizes or dtype: reading it needs a
                             ctr_stack_info hint (ctr_stack_open); 0: the file says them */
  int dataset_path;       /* 1: a path names a dataset inside the file, "file.h5:/group/data" */
  const char *title;      /* how a message names it: "raw", "TIFF", "TIFF stack", "NRRD" */
} ctr_file_format_info;
#define CTR_FILE_FORMAT_INFO_INIT \
  { CTR_FILE_FORMAT_INFO_VERSION, NULL, NULL, 0, 0u, 0u, 0, 0, 0, 0, NULL, 0, 0, NULL }
/* The defaults in the layout of `version`, 1 .. CTR_FILE_FORMAT_INFO_VERSION (core.h). */
CTR_API ctr_status ctr_file_format_info_init(ctr_file_format_info *s, unsigned version);
/* The row of `fmt` (a format, not CTR_FORMAT_AUTO: resolve a path's with
 * ctr_format_guess) into *info, in info->version's layout. */
CTR_API ctr_status ctr_file_format_get_info(ctr_file_format fmt, ctr_file_format_info *info);
/* Host bytes a writer of `fmt` holds of its own while a volume of nz images
 * of ny x nx voxels of `dtype` is written to it in order, beyond the
 * caller's data: an OME-Zarr writer's rows of chunks (64 images of every
 * pyramid level) and its chunk scratch; 0 for the formats that write what
 * they are given, for CTR_FORMAT_AUTO and for an unknown format or size.
 * The streamed planners count it (docs/out-of-core.md). */
CTR_API uint64_t ctr_file_format_writer_bytes(ctr_file_format fmt, int64_t nx, int64_t ny,
                                              int64_t nz, ctr_dtype dtype);

CTR_API const char *ctr_format_name(ctr_file_format f);
CTR_API ctr_status ctr_format_parse(const char *name, ctr_file_format *out);
/* Resolves CTR_FORMAT_AUTO from a path; CTR_E_INVALID_ARGUMENT if unknown. */
CTR_API ctr_status ctr_format_guess(const char *path, ctr_file_format *out);

/* A stack of 2D images (projections, or volume slices): width x height x count. */
#define CTR_STACK_INFO_VERSION 1u
typedef struct ctr_stack_info {
  unsigned version;
  int64_t width, height, count;
  ctr_dtype dtype;
  double spacing[3];   /* mm; 0 if unknown */
  double origin[3];    /* mm of the first sample; NRRD only */
} ctr_stack_info;
/* All zero: a hint that checks nothing. */
#define CTR_STACK_INFO_INIT \
  { CTR_STACK_INFO_VERSION, 0, 0, 0, (ctr_dtype)0, { 0, 0, 0 }, { 0, 0, 0 } }
/* The defaults in the layout of `version`, 1 .. CTR_STACK_INFO_VERSION (core.h). */
CTR_API ctr_status ctr_stack_info_init(ctr_stack_info *s, unsigned version);

/* Threads: a reader or writer serves one thread at a time (each keeps its
 * file and buffers; a reader's own pread threads are its business).
 * Different readers and writers work at once, on different files. */
typedef struct ctr_stack_reader ctr_stack_reader;
typedef struct ctr_stack_writer ctr_stack_writer;

/* Opens for reading. For RAW, `hint` must give width, height, count, dtype
 * (and `raw_offset` bytes are skipped); for other formats `hint` may be NULL
 * and, if given, its non-zero fields are checked against the file. */
CTR_API ctr_status ctr_stack_open(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                                  int64_t raw_offset, ctr_stack_reader **out);
CTR_API const ctr_stack_info *ctr_stack_reader_get_info(const ctr_stack_reader *r);
/* Reads images [first, first+n) converted to `dtype` into out (contiguous). */
CTR_API ctr_status ctr_stack_read(ctr_stack_reader *r, int64_t first, int64_t n, ctr_dtype dtype,
                                  void *out);
/* A 1D numeric dataset of an HDF5 file (e.g. DXchange's /exchange/theta)
 * as n doubles (*out malloc'd, free with free()). CTR_E_UNSUPPORTED without
 * CTR_FEATURE_HDF5; errors name the file and dataset. */
CTR_API ctr_status ctr_hdf5_read_vector(const char *file, const char *dataset, double **out,
                                        int64_t *n);
/* Projection angles in degrees from a 1D dataset of an HDF5 file (e.g.
 * DXchange's /exchange/theta), honouring its string attribute "units":
 * rad, radian or radians (converted to degrees), deg, degree or degrees, or
 * absent (degrees); another unit is CTR_E_FORMAT naming the file, the
 * dataset and the unit. *units_given (may be NULL) is 1 when the attribute
 * says which. *out as for ctr_hdf5_read_vector. */
CTR_API ctr_status ctr_hdf5_read_angles(const char *file, const char *dataset, double **out,
                                        int64_t *n, int *units_given);
/* Rows [row0, row0 + nrows) of images [first, first+n), converted to
 * `dtype`, into out (n x nrows x width, image after image): a block of
 * detector rows of every projection without reading whole images where the
 * format allows (raw, NRRD). */
CTR_API ctr_status ctr_stack_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                                       int64_t nrows, ctr_dtype dtype, void *out);
CTR_API void ctr_stack_close(ctr_stack_reader *r);

/* Outputs are never replaced unless the caller asks (`overwrite`, in every
 * function that writes a file and in the options of the streamed runs):
 * with overwrite 0, a writer refuses an output that exists before it
 * writes anything, and its final rename keeps a file that appeared while it
 * wrote (the output is then discarded); with 1 it replaces them. The
 * refusal is CTR_E_INVALID_ARGUMENT whose detail names the file and says to
 * set overwrite; ctr_error_get_field() is "overwrite" and
 * ctr_error_get_value() the output's path as given. */

/* Whether the output `path` (fmt; CTR_FORMAT_AUTO: from the path) may be
 * written: CTR_OK when nothing of it exists, or when overwrite is 1;
 * otherwise that refusal. "Anything of it": the file, a detached NRRD
 * header's data file, any file the TIFF stack pattern names (a number of
 * any width; a longer stack's extra files too), the dataset of
 * "file.h5:/dataset" (the file itself may hold others: ctr_stack_create
 * adds to it). For a program that checks before a long computation whose
 * result it writes at the end; the writers check again. */
CTR_API ctr_status ctr_stack_check_output(const char *path, ctr_file_format fmt, int overwrite);
/* The same for an output of one file of any kind (a PNG, a JSON file). */
CTR_API ctr_status ctr_file_check_output(const char *path, int overwrite);

/* Creates a writer. Data goes to a temporary name beside the target and is
 * renamed into place by ctr_stack_commit only when every image was written
 * and flushed; ctr_stack_abort (or freeing without commit) removes it. An
 * output that exists is refused here (ctr_stack_check_output) and one that
 * appears before the commit is kept (the commit fails with the same
 * refusal), unless overwrite is 1: then they are replaced (a TIFF stack's
 * files numbered past the new stack are removed).
 * HDF5 ("file.h5:/dataset"): an existing file.h5 keeps its other datasets
 * (the temporary starts as a copy of it); a dataset of that name already in
 * it is the refusal above (with overwrite, the dataset is replaced), and a
 * file.h5 that is not HDF5 CTR_E_IO. */
CTR_API ctr_status ctr_stack_create(const char *path, ctr_file_format fmt,
                                    const ctr_stack_info *info, int overwrite,
                                    ctr_stack_writer **out);
/* Writes images [first, first+n) from `data` (dtype `dtype`, converted to the
 * file's dtype; float -> uint16 rounds and clamps, NaN -> 0). RAW, NRRD and
 * TIFF stacks accept any order (pwrite at the slab's offset); a multi-page
 * TIFF must be written in order (the error names the expected image). */
CTR_API ctr_status ctr_stack_write(ctr_stack_writer *w, int64_t first, int64_t n, ctr_dtype dtype,
                                   const void *data);
CTR_API ctr_status ctr_stack_commit(ctr_stack_writer *w); /* frees w */
CTR_API void ctr_stack_abort(ctr_stack_writer *w);        /* frees w; accepts NULL */

/* Direct I/O of a raw or NRRD stack: transfers whose file offset, length and
 * buffer address are multiples of 4096 bytes bypass the page cache
 * (O_DIRECT) where the file system allows it, the others are buffered. On
 * by default; on = 0 turns it off for this reader or writer, on = 1 on
 * again. No effect on other formats; not while a transfer on the same
 * reader or writer is in flight. ctr_fdk_stream turns it off on the stacks
 * it reads and writes when its context's ctr_tuning.direct_io is -1. */
CTR_API void ctr_stack_reader_set_direct_io(ctr_stack_reader *r, int on);
CTR_API void ctr_stack_writer_set_direct_io(ctr_stack_writer *w, int on);

/* Threads reading the pieces of one read (ctr_stack_read, ctr_stack_read_rows)
 * of an HDF5 stack stored without filters (contiguous, or chunked with no
 * filter), each with pread(2): n >= 2 up to n threads (at most 64; fewer for
 * small reads), 1 none: the pieces go through H5Dread one after the other,
 * 0 (or less) the default, 8. The data read are the same. Filtered,
 * compact, virtual and external datasets and element types HDF5 converts
 * are always read through HDF5. No effect on other formats; not while a read
 * on the same reader is in flight. ctr_fbp_stream and ctr_fdk_stream set it
 * from their context's ctr_tuning.read_threads. */
CTR_API void ctr_stack_reader_set_read_threads(ctr_stack_reader *r, int n);

/* Whole-array convenience wrappers. */
CTR_API ctr_status ctr_stack_load(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                                  ctr_dtype dtype, ctr_stack_info *info_out, void **data_out);
CTR_API ctr_status ctr_stack_save(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                                  ctr_dtype dtype, const void *data, int overwrite);

/* PNG previews of the three central slices of a float32 volume (x fastest):
 * writes <prefix>_xy.png, <prefix>_xz.png, <prefix>_yz.png, 8-bit grey, the
 * window [lo, hi] mapped to 0..255 (lo == hi: the volume's 0.5/99.5 %
 * percentiles). Any of the three that exists is refused before one is
 * written, unless overwrite (as ctr_stack_create). */
CTR_API ctr_status ctr_png_preview(const char *prefix, const float *vol, int64_t nx, int64_t ny,
                                   int64_t nz, float lo, float hi, int overwrite);
/* The same previews from the three planes alone (for volumes that never sit
 * in memory whole): xy is nx x ny, xz is nx x nz and yz is ny x nz, the
 * first index fastest, z ascending; lo == hi: their 0.5/99.5 % percentiles. */
CTR_API ctr_status ctr_png_preview_planes(const char *prefix, const float *xy, const float *xz,
                                          const float *yz, int64_t nx, int64_t ny, int64_t nz,
                                          float lo, float hi, int overwrite);
/* One 8-bit grey PNG of a float image (an existing one as ctr_stack_create). */
CTR_API ctr_status ctr_png_write_gray(const char *path, const float *img, int64_t width,
                                      int64_t height, float lo, float hi, int overwrite);

/* Figures of the three central planes for a person to look at (the CLI's
 * --preview; docs/cli.md, "Previews"): each plane enlarged by whole pixels
 * to at least 256 pixels on its long side, a thin one (a side under a
 * quarter of the other: the xz plane of 256 x 16 slices) also stretched by
 * whole pixels (nearest neighbour) to at least a quarter of its long side,
 * under a caption that names the plane, its cut and any stretch ("xz, y =
 * 128 (z stretched x4)"), beside a grey colourbar with value labels, and
 * over a scale bar in mm when the voxel size is known. RGB PNGs
 * <prefix>_xy.png, _xz.png, _yz.png (z up in xz and yz). */
#define CTR_PREVIEW_OPTIONS_VERSION 1u
typedef struct ctr_preview_options {
  unsigned version;
  float lo, hi;      /* the grey window [lo, hi] (lo == hi, the default 0, 0: the 0.5 / 99.5 %
                        percentiles of the three planes' finite values) */
  double voxel[3];   /* the voxel's size along x, y, z in mm (0, the default: unknown, no
                        scale bar; given, all three > 0) */
  const char *units; /* the values' unit under the colourbar, e.g. "1/mm" (NULL: none) */
  int overwrite;     /* 1: replace existing files; 0 (default): any of the three that exists
                        is refused before one is written (as ctr_stack_create) */
} ctr_preview_options;
#define CTR_PREVIEW_OPTIONS_INIT \
  { CTR_PREVIEW_OPTIONS_VERSION, 0.0f, 0.0f, {0.0, 0.0, 0.0}, NULL, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PREVIEW_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_preview_options_init(ctr_preview_options *s, unsigned version);
/* The figures of the planes xy (nx x ny), xz (nx x nz) and yz (ny x nz),
 * first index fastest, z ascending (as ctr_png_preview_planes); opts NULL:
 * the defaults. */
CTR_API ctr_status ctr_png_preview_figure(const char *prefix, const float *xy, const float *xz,
                                          const float *yz, int64_t nx, int64_t ny, int64_t nz,
                                          const ctr_preview_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_IO_H */
