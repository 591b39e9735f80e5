/* ctrecon/synchrotron.h — the synchrotron pipeline (docs/synchrotron.md):
 * corrections of parallel-beam data (rotation centre, dezinger, stripe
 * (ring) removal, Paganin phase retrieval, 360-degree scans with an offset
 * axis, detector binning, projection subsets) and the streamed FBP from a
 * projection file (DXchange HDF5, TIFF, raw, NRRD) to a slice file, with a
 * reader thread, the computation (GPU or CPU) and a writer thread
 * overlapped, a journal and resume. Include <ctrecon.h> (all of the API) or
 * this header. */
#ifndef CTRECON_SYNCHROTRON_H
#define CTRECON_SYNCHROTRON_H

#include "ctrecon/io.h"
#include "ctrecon/parbeam.h"

#ifdef __cplusplus
extern "C" {
#endif


/* ---- Corrections ------------------------------------------------------- */

/* ctr_parallel_params.axis for ctr_fbp_stream: find the rotation axis from
 * the data (ctr_corrections.center_method) and report it. */
#define CTR_AXIS_AUTO (-2.0e300)

typedef enum ctr_center_method {
  CTR_CENTER_AUTO = 0,        /* CORRELATION when the scan has projections 180 degrees
                                 apart (360-degree scans, 0..180 inclusive), else VO */
  CTR_CENTER_VO = 1,          /* Vo et al. 2014: the 180-degree sinogram and its mirror
                                 joined into 360 degrees, least energy in the double wedge
                                 of the 2D spectrum a consistent sinogram leaves empty */
  CTR_CENTER_CORRELATION = 2  /* opposite projections (theta, theta + 180): the mirrored
                                 shift of least squared difference over their overlap,
                                 refined to sub-pixel by a parabola (axis anywhere on the
                                 detector, also near its edge) */
} ctr_center_method;

typedef enum ctr_stripe_method {
  CTR_STRIPE_NONE = 0,
  CTR_STRIPE_SORTING = 1, /* Vo et al. 2018, algorithm 3: each bin's values sorted over the
                             angles, a median across bins of the sorted sinogram, sorted back */
  CTR_STRIPE_WAVELET = 2  /* Muench et al. 2009: Daubechies wavelet decomposition, the
                             vertical details damped near zero angular frequency (Gaussian
                             notch 1 - exp(-k^2 / (2 sigma^2))), reconstruction */
} ctr_stripe_method;

/* Which corrections run, in this order: projections -> transmission
 * (flat/dark) -> binning -> Paganin -> -log -> sinograms -> dezinger ->
 * stripe removal -> (centre finding) -> 360-degree stitching -> FBP. Every
 * field 0 is "off" (or the default stated). */
#define CTR_CORRECTIONS_VERSION 1u
typedef struct ctr_corrections {
  unsigned version;
  /* rotation centre, when ctr_parallel_params.axis is CTR_AXIS_AUTO */
  ctr_center_method center_method;
  double center_min, center_max; /* search range in bins of the projections as read; both 0 =
                                    the whole detector (VO: its middle half) */
  /* dezinger (sinograms): a value that differs from the median of its
   * dezinger_size x dezinger_size neighbourhood (angles x bins) by more
   * than `dezinger` (-log units) becomes that median */
  double dezinger;               /* 0 = off */
  int dezinger_size;             /* odd, 3 .. 15; 0 = 3 */
  /* stripes (rings) */
  ctr_stripe_method stripe;
  int stripe_size;               /* SORTING: median width across bins, odd; 0 = 21 */
  int stripe_level;              /* WAVELET: decomposition levels 1 .. 8; 0 = 3 */
  double stripe_sigma;           /* WAVELET: notch width in angular-frequency samples of the
                                    mirrored angle axis (twice the angles); 0 = 1 */
  int stripe_wavelet;            /* WAVELET: Daubechies order 1 .. 10 (1 = Haar); 0 = 5 */
  /* Paganin et al. 2002 single-distance phase retrieval (one material of
   * known delta / beta, a parallel beam): each transmission image is
   * filtered by 1 / (1 + pi lambda z (delta / beta) |u|^2), u the spatial
   * frequency (cycles per mm), before the -log; the pixel size is
   * ctr_parallel_params.pixel_size (mm) */
  double paganin_delta_beta;     /* delta / beta; 0 = off */
  double energy_kev;             /* photon energy (lambda = 1.23984e-6 mm keV / E) */
  double distance_mm;            /* sample to detector */
  /* a 360-degree scan with the axis off the detector's centre (near an
   * edge, "half acquisition"): projection theta and the mirrored
   * projection theta + 180 are joined into one of the doubled field of
   * view (linear blend over their overlap), giving a 180-degree scan */
  int stitch_360;
  /* detector binning: bin_x columns x bin_y rows averaged (transmissions)
   * into one; 0 or 1 = none */
  int bin_x, bin_y;
} ctr_corrections;

#define CTR_CORRECTIONS_INIT \
  { CTR_CORRECTIONS_VERSION, CTR_CENTER_AUTO, 0.0, 0.0, 0.0, 0, CTR_STRIPE_NONE, 0, 0, 0.0, 0, \
    0.0, 0.0, 0.0, 0, 0, 0 }
/* The defaults in the layout of `version` (1 .. CTR_CORRECTIONS_VERSION). */
CTR_API ctr_status ctr_corrections_init(ctr_corrections *s, unsigned version);

/* The rotation axis (bins) of nslices sinograms (nbins x nangles each, the
 * geometry's angles and nbins; its axis is not used), by `method`
 * (CTR_CENTER_AUTO chooses as documented) within [lo, hi] (both 0: the
 * whole detector; the axis returned lies in it); the sinograms are averaged
 * first. Sinograms constant along the detector in every projection (a blank
 * scan) have no axis to find: CTR_E_GEOMETRY. *used gets the method that
 * ran (may be NULL). CPU (it runs once per reconstruction). */
CTR_API ctr_status ctr_center_find(ctr_context *ctx, const ctr_parallel_geometry *g,
                                   ctr_center_method method, double lo, double hi,
                                   int64_t nslices, const float *sino, double *axis,
                                   ctr_center_method *used);

/* Dezinger of nslices sinograms in place (c->dezinger, c->dezinger_size);
 * *replaced (may be NULL) gets the values replaced. On the context's
 * backend. */
CTR_API ctr_status ctr_sinogram_dezinger(ctr_context *ctx, const ctr_corrections *c,
                                         int64_t nbins, int64_t nangles, int64_t nslices,
                                         float *sino, int64_t *replaced);
/* Stripe removal of nslices sinograms in place (c->stripe and its
 * parameters). On the context's backend. */
CTR_API ctr_status ctr_sinogram_remove_stripes(ctr_context *ctx, const ctr_corrections *c,
                                               int64_t nbins, int64_t nangles, int64_t nslices,
                                               float *sino);
/* Paganin's filter on n transmission images (width x height, x fastest) in
 * place, each padded by reflection (c->paganin_delta_beta, energy_kev,
 * distance_mm; pixel_mm the detector pixel); -log of the result is the
 * projected attenuation. On the context's backend. */
CTR_API ctr_status ctr_paganin_filter(ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                                      int64_t width, int64_t height, int64_t n, float *images);
/* The filter's response 1 / (1 + pi lambda z (delta / beta) |u|^2) at the
 * spatial frequency (fx, fy) in cycles per pixel; 1 when Paganin is off. */
CTR_API double ctr_paganin_response(const ctr_corrections *c, double pixel_mm, double fx,
                                    double fy);
/* Rows of margin a block of detector rows needs on each side for Paganin's
 * filter (its kernel has decayed below 3e-4 of its peak there); 0 off. */
CTR_API int64_t ctr_paganin_margin(const ctr_corrections *c, double pixel_mm);

/* 360-degree stitching: g is a scan of an even number of angles with
 * theta[a + nangles / 2] = theta[a] + 180 (to 1e-3 degrees) and its axis;
 * *out (ctr_parallel_free) gets the 180-degree geometry of the doubled
 * field of view (nbins, axis, the first half's angles, g's pixel size;
 * nx = ny = its nbins unless g set them). */
CTR_API ctr_status ctr_stitch_360_geometry(const ctr_parallel_geometry *g,
                                           ctr_parallel_geometry **out);
/* Stitches nslices sinograms of g into those of `out` (from
 * ctr_stitch_360_geometry): out_sino is out's nbins x nangles x nslices. */
CTR_API ctr_status ctr_stitch_360(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                                  int64_t nslices, const float *sino, float *out_sino);

/* ---- Streamed FBP ----------------------------------------------------------- */

/* Finished slices on their way to the output (float32, before any
 * conversion): slices [z0, z0 + n) of the run, nx x ny each. */
typedef void (*ctr_slices_fn)(void *user, int64_t z0, int64_t n, int64_t nx, int64_t ny,
                              const float *slices);

/* Version 2 adds cluster, version 3 read_ahead, 4 input_scale, 5 gpu_budget, 6 overwrite. */
#define CTR_FBP_STREAM_OPTIONS_VERSION 6u /* 6: overwrite */
typedef struct ctr_fbp_stream_options {
  unsigned version;
  const ctr_fbp_options *fbp;          /* filter, interpolation, GPU kernel, strict; NULL = the
                                          defaults (its counts are not used: see the report) */
  const ctr_corrections *corrections;  /* NULL = none */
  int sinograms;                       /* the input is sinograms (nbins x nangles each), not
                                          projections: no flat/dark, binning (rows) or Paganin */
  int64_t row0, nrows;                 /* detector rows (or sinograms) reconstructed; nrows 0 =
                                          from row0 to the last */
  int64_t angle_first, angle_count, angle_step; /* the projections used: angle_first + i x
                                          angle_step, i < angle_count; 0 = all, step 1 */
  int64_t center_row;                  /* the row whose band finds the centre; -1 = the middle
                                          of the rows reconstructed */
  ctr_dtype out_dtype;                 /* float32 (0 too), float16 or uint16 */
  double out_scale, out_offset;        /* uint16: round((value - out_offset) x out_scale),
                                          clamped to 0 .. 65535; out_scale 0 = 1 */
  int64_t batch;                       /* slices per band; 0 = 16 on the CPU, 64 per GPU (raised
                                          to cover Paganin's margin and the reader's row block) */
  uint64_t host_budget;                /* host memory for the band buffers; 0 = 90 % of what is
                                          available (ctr_context_get_memory_budgets) */
  int resume;                          /* continue an interrupted run of the same output */
  ctr_slices_fn on_slices;             /* optional, called on the calling thread */
  void *user;
  const ctr_cluster *cluster;          /* NULL: this process alone; else every rank calls
                                          ctr_fbp_stream with the same arguments and
                                          reconstructs a share of the bands into the one
                                          output (docs/distributed.md) */
  int read_ahead;                      /* bands the reader may hold ahead of the one being
                                          reconstructed, 1 to 16 (each a band buffer of host
                                          memory); 0 = 2 */
  double input_scale;                  /* sinograms: their values are divided by it (data stored
                                          as value x F, e.g. uint16); 0 = 1. Projections take
                                          none: the flat-field ratio cancels their scale */
  uint64_t gpu_budget;                 /* CUDA: GPU memory each GPU's pipeline may use (its
                                          chunk buffers, filter and textures); 0 = detected
                                          (ctr_context_get_memory_budgets). Given, it replaces
                                          fbp->gpu_budget; too small for chunks of one slice:
                                          CTR_E_DEVICE_OUT_OF_MEMORY before anything is read */
  int overwrite;                       /* 1: replace an existing output (ctr_stack_create); 0
                                          (default): an output that exists is refused before
                                          anything is read (CTR_E_INVALID_ARGUMENT naming it,
                                          field "overwrite"), and one that appears while the
                                          run writes is kept (the run fails at its end) */
} ctr_fbp_stream_options;

#define CTR_FBP_STREAM_OPTIONS_INIT \
  { CTR_FBP_STREAM_OPTIONS_VERSION, NULL, NULL, 0, 0, 0, 0, 0, 0, -1, CTR_DTYPE_FLOAT32, 1.0, 0.0, \
    0, 0, 0, NULL, NULL, NULL, 0, 1.0, 0, 0 }
CTR_API ctr_status ctr_fbp_stream_options_init(ctr_fbp_stream_options *s, unsigned version);

#define CTR_FBP_STREAM_REPORT_VERSION 1u
typedef struct ctr_fbp_stream_report {
  unsigned version;
  double axis;                    /* the rotation axis used, bins of the projections as read */
  int axis_found;                 /* 1: found from the data (CTR_AXIS_AUTO) */
  ctr_center_method center_method; /* the method that found it */
  int64_t nbins, nangles;         /* the sinograms reconstructed (after binning, subsets,
                                     stitching) */
  int64_t nslices, nx, ny;        /* the slices written */
  int64_t bands, band_slices, bands_resumed;
  float min, max;                 /* value range of the slices (before conversion) */
  int64_t below, above;           /* uint16: values clamped to 0 / 65535 */
  int64_t bad_input, bad_calibration, clamped, bad_output; /* the data policy's counts
                                     (ctr_value_counts' members) */
  int64_t dezingered;             /* values the dezinger replaced */
  double seconds_setup, seconds_read, seconds_compute, seconds_write, seconds_total;
  /* 1 when this call left a partial output and journal on disk that a call
   * with resume (and the same inputs and options) continues: the ones it
   * kept after failing, or an interrupted run's that it refused to
   * overwrite, or to resume with other inputs or options. 0 after success,
   * when none is left, and when the call found the journal or the partial
   * output damaged, truncated or gone (delete both to start over). The same
   * in ctr_fdk_stream_report and ctr_fbp_stream_report. */
  int resumable;
} ctr_fbp_stream_report;

#define CTR_FBP_STREAM_REPORT_INIT \
  { CTR_FBP_STREAM_REPORT_VERSION, 0.0, 0, CTR_CENTER_AUTO, 0, 0, 0, 0, 0, 0, 0, 0, 0.0f, 0.0f, \
    0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0 }
CTR_API ctr_status ctr_fbp_stream_report_init(ctr_fbp_stream_report *s, unsigned version);

/* Parallel-beam FBP from a projection (or sinogram) file to a slice file,
 * band of slices after band: the reader thread reads each band's rows of
 * every projection used once (ctr_stack_read_rows: hyperslabs, strips and
 * tiles, preads), the calling thread corrects and reconstructs (on a CUDA
 * context across its GPUs, 16-slice chunks from a queue), the writer thread
 * writes finished bands to `out`.partial with a journal and renames the
 * file when complete (raw, NRRD, TIFF stacks; HDF5 and multi-page TIFF go
 * to a temporary name and cannot be resumed).
 * params describe the input as read: nbins = image width, nangles = its
 * projections (sinograms: its rows), their angles, the axis (a value,
 * CTR_AXIS_CENTER or CTR_AXIS_AUTO), pixel_size (mm; Paganin needs the real
 * one), and the slices (nx, ny, voxel: in bins after binning and
 * stitching). flat and dark are averaged beams of nbins x (image height)
 * (dark may be NULL = 0; flat NULL: the projections are transmissions);
 * ignored for sinograms. The report (may be NULL; initialise it) tells
 * what ran. CTR_E_CANCELLED after the progress callback asked; journalled
 * bands then stay for resume. An `out` that exists is refused before
 * anything is read, and one that appears meanwhile kept, unless
 * opts->overwrite (docs/api.md). */
CTR_API ctr_status ctr_fbp_stream(ctr_context *ctx, const ctr_parallel_params *params,
                                  const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                                  const float *flat, const float *dark, const char *out,
                                  ctr_file_format out_format, ctr_fbp_stream_report *report);
/* The same pipeline between arrays (bit-identical to ctr_fbp_stream on the
 * CPU): input is nbins x height x nangles projections (float32 or uint16)
 * or nbins x nangles x nslices sinograms; slices is nx x ny x nslices
 * float32 of the sizes the report gives (nx, ny and the rows reconstructed
 * set them; another size is CTR_E_SIZE_MISMATCH naming the expected one). */
CTR_API ctr_status ctr_fbp_stream_memory(ctr_context *ctx, const ctr_parallel_params *params,
                                         const ctr_fbp_stream_options *opts, const ctr_array *input,
                                         const float *flat, const float *dark, ctr_array *slices,
                                         ctr_fbp_stream_report *report);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_SYNCHROTRON_H */
