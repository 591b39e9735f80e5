/*
 * ctrecon/tuning.h — the experiment and tuning switches of the library, in
 * one table. A context copies it once, at ctr_context_create
 * (ctr_context_options.tuning; NULL = the defaults), and the code reads the
 * context's copy; the library reads no switch from the environment.
 * docs/tuning.md describes every field: its default, what it changes and
 * the benchmark that measured it.
 *
 * Rule of the table: 0 is the tuned default of every field, so a zeroed
 * struct whose version is set is the defaults; where a switch can be turned
 * off, a negative value turns it off. Every field only changes how fast the
 * work runs, never what it computes, except where the field says so
 * (fbp_hybrid_tex: which voxels take 8-bit texture weights).
 */
#ifndef CTRECON_TUNING_H
#define CTRECON_TUNING_H

#include "ctrecon/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of ctr_tuning; bump when the struct grows (fields are only ever
 * added at the end). */
#define CTR_TUNING_VERSION 5u

struct ctr_tuning {
  unsigned version; /* CTR_TUNING_VERSION (ctr_tuning_init sets it) */

  /* Cone-beam backprojection on the GPU (FDK and ctr_backprojector). */
  int bp_slices;              /* slices per thread Z': 1, 2, 4, 8, 16 (32: the general
                                 kernel only); 0 = each kernel's default */
  int bp_block_x, bp_block_y; /* threads per block, 32 .. 256 in all (the general kernel:
                                 whole warps); both 0 = each kernel's default */
  int bp_regs;                /* the general kernel at Z' = 16: 64 or 80 registers; 0 =
                                 chosen per launch from how dense its views are */
  int bp_chunk_first, bp_chunk_rest; /* ctr_backprojector: views in a call's first chunk
                                        and in the others (both > 0; the split is then
                                        off); both 0 = the modelled schedule */
  int bp_split;               /* ctr_backprojector's early launches: 0 = modelled, -1 =
                                 off, 1 or 2 = that many levels from the two fields below */
  int bp_split_views[2];      /* level j: the first bp_split_views[j] views of a call ... */
  int bp_split_slices[2];     /* ... into its slices below bp_split_slices[j] (both
                                 increasing; a call they do not fit runs unsplit) */

  /* PET projector on the GPU. */
  int pet_z;                  /* slices per thread: 1, 8, 16 or 24; 0 = the largest with
                                 little z padding */
  int pet_lc;                 /* run entries per register pass: 4 or 8; 0 = 4 */
  int pet_block_x, pet_block_y; /* threads per block (whole warps, at most 256); both 0 =
                                   rows of 32, 48 or 64 threads, whichever pads x least */
  int pet_split;              /* blocks sharing one output tile's runs, 1 .. 8; 0 = enough
                                 for about 24 blocks per SM */
  int pet_const;              /* a view's runs in constant memory when they fit: 0 = yes,
                                 -1 = no (global memory) */

  /* Parallel-beam FBP on the GPU. */
  int fbp_hybrid_tex;         /* texture blocks per SM of the hybrid kernel; 0 = 1; -1 =
                                 none (every block on the ALU: exact for linear too) */
  int fbp_tex_chunk;          /* angles per texture-kernel launch; 0 = about 4 MB of
                                 sinogram rows; -1 = all the angles in one launch */
  int tune;                   /* autotuning: the FBP kernel choice (--bp-kernel auto) and
                                 the launch parameters left at 0 of cone-beam
                                 backprojection and the PET projectors, timed on first use
                                 and cached on disk; 0 = on, -1 = off (the static
                                 defaults) */
  const char *cache_dir;      /* directory of that cache; NULL or "" = $XDG_CACHE_HOME/ctrecon,
                                 else $HOME/.cache/ctrecon (looked up at context creation);
                                 copied by ctr_context_create */

  /* Files. */
  int direct_io;              /* O_DIRECT for aligned raw and NRRD transfers of the stacks
                                 ctr_fdk_stream reads and writes: 0 = on, -1 = off (see
                                 ctr_stack_reader_set_direct_io) */

  /* Version 2. */
  int read_threads;           /* threads reading one read of an unfiltered HDF5 stack that
                                 ctr_fbp_stream or ctr_fdk_stream reads (pread): 0 = 8, 1 =
                                 none (H5Dread, as before version 2), 2 .. 64 (see
                                 ctr_stack_reader_set_read_threads) */

  /* Version 3: host <-> GPU transfers of memory the library did not
     allocate (docs/design.md, "Host transfers"). */
  int host_transfer;          /* 0 = chosen per transfer from the measured costs; 1 = staged
                                 through pinned slots, 2 = registered in place
                                 (cudaHostRegister), 3 = the driver's pageable copy (pinned
                                 memory always goes direct) */
  int host_threads;           /* threads of the staged path's host copy; 0 = the context's */
  int host_stage_kib;         /* the staged path's slot, KiB (64 .. 1048576); 0 = 16384 */

  /* Version 4. */
  int zarr_shard;             /* OME-Zarr outputs of the streamed runs: each level in
                                 shards (Zarr v3 sharding_indexed) of this many chunks a
                                 side, 1 .. 256; -1 = none (a file per chunk); 0 = shards
                                 of 1 x 8 x 8 chunks (z, y, x: one chunk deep, so no
                                 more memory than unsharded) on a level of more than 512
                                 chunks
                                 (docs/file-formats.md, "OME-Zarr") */

  /* Version 5: the launch of the parallel-beam ALU kernels (bp_alu: alu and
     alu2, linear and nearest; Chilingaryan et al. 2020, Tables 18 and 19).
     Every setting gives the same bits. */
  int fbp_occupancy;          /* occupancy target, % of 2048 threads per SM (the kernel's
                                 __launch_bounds__ minimum of 256-thread blocks): 50, 75
                                 or 100; 0 = none (the compiler's register count); -1 =
                                 none */
  int fbp_carveout;           /* the shared-memory carveout those kernels prefer: 0 = the
                                 driver's choice; 1 .. 100 = that % of the unified L1 /
                                 shared memory as shared memory (100: the most shared);
                                 -1 = 0 % (the most L1) */
  int fbp_angle_cache;        /* where a block keeps its projections' constants: 0 = the
                                 default (1); 1 = shared memory (offset and cos/sin); 2 =
                                 only the offset in shared memory, cos/sin from global
                                 memory; 3 = registers (computed per warp, shuffled) */
  int bp_alu;                 /* cone-beam FDK and ctr_backprojector on the GPU with exact
                                 interpolation, on a circular orbit (u and depth constant
                                 along z) over a flat detector: 1 = the shared-memory ALU
                                 kernel (docs/cuda.md), -1 = the exact kernels from global
                                 memory; 0 = the default (today the exact kernels). The
                                 same interpolation either way (results agree to float
                                 rounding); other orbits and detectors run the exact kernels */
};

/* The defaults (every field 0), for a struct on the stack. */
#define CTR_TUNING_INIT \
  { CTR_TUNING_VERSION, 0, 0, 0, 0, 0, 0, 0, {0, 0}, {0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 0, \
    0, 0, 0, 0, 0, 0, 0, 0 }

/* Fills *t with the defaults of `version` (1 .. CTR_TUNING_VERSION; pass
 * CTR_TUNING_VERSION): every field 0, version set. CTR_E_INVALID_ARGUMENT
 * for another version or t NULL. */
CTR_API ctr_status ctr_tuning_init(ctr_tuning *t, unsigned version);

/* Sets one switch from text, as the CLI's --tune KEY=VALUE and environment
 * variables CTRECON_<KEY> do (docs/tuning.md has the table). Keys and
 * values:
 *   bp_slices N | bp_block XxY | bp_regs 64|80 | bp_chunks FIRST,REST |
 *   bp_split off|0|auto|A0,Z0[,A1,Z1] | pet_z N | pet_lc 4|8 | pet_block XxY |
 *   pet_split N | pet_const on|off | fbp_hybrid_tex N (0 = none) |
 *   fbp_tex_chunk N (0 = none) | tune on|off | cache_dir DIR | direct_io on|off |
 *   read_threads N (1 .. 64; 1 = H5Dread) |
 *   host_transfer auto|staged|registered|driver | host_threads N (1 .. 256) |
 *   host_stage_kib N (64 .. 1048576) | zarr_shard N (0 = none) |
 *   fbp_occupancy 50|75|100 (0 = none) | fbp_carveout driver|shared|l1|N (N: % shared,
 *   0 .. 100) | fbp_angle_cache shared|offset|registers |
 *   bp_alu on|off
 * where on|off also accepts 1|0, yes|no, true|false, and "auto" (or "")
 * restores a key's default (cache_dir: "" does). cache_dir keeps the
 * pointer `value` (copied at ctr_context_create). CTR_E_INVALID_ARGUMENT naming the key and the
 * accepted values otherwise; *t is then unchanged. */
CTR_API ctr_status ctr_tuning_set(ctr_tuning *t, const char *key, const char *value);

/* Applies every "CTRECON_<KEY>=value" entry of an environment list (envp:
 * NULL-terminated "NAME=value" strings, e.g. the `environ` of a program that
 * chooses to honour the variables) with ctr_tuning_set, <KEY> being a key
 * above in capitals; other entries are ignored. The library itself never
 * reads the environment. Stops at the first bad value (the detail names the
 * variable). */
CTR_API ctr_status ctr_tuning_set_env(ctr_tuning *t, char *const *envp);

/* ---- Autotuning (docs/tuning.md, "Autotuning") ------------------------------
 * With ctr_tuning.tune on (the default) the launch parameters of a kernel
 * family that the caller left at 0 are chosen by a short timed run of the
 * real kernel on first use per GPU (name, compute capability, driver) and
 * problem class, and cached in "kernels.json" in ctr_tuning.cache_dir:
 * cone-beam backprojection (bp_slices, bp_block_x/y) and the PET projectors
 * (pet_z, pet_block_x/y, pet_split). Today's defaults are always timed and
 * kept unless a candidate is faster by more than 3 %; a field set by hand is
 * never tuned; the search stops after 8 s with the best so far. ctr_tune_fdk
 * (conebeam.h) and ctr_tune_pet (pet.h) run it on request and report it. */

#define CTR_TUNE_MAX_CANDIDATES 64 /* no declared space has more */

typedef struct ctr_tune_candidate {
  char params[64]; /* "bp_slices=8,bp_block=32x4": ctr_tuning keys and values */
  double ms;       /* the median time of its representative run */
} ctr_tune_candidate;

/* What a tuning pass did; filled by the library (initialise it with
 * CTR_TUNE_REPORT_INIT or ctr_tune_report_init, as every versioned struct). */
#define CTR_TUNE_REPORT_VERSION 1u
typedef struct ctr_tune_report {
  unsigned version;  /* CTR_TUNE_REPORT_VERSION */
  char family[32];   /* "conebeam-bp", "pet-projector" */
  char gpu[256];     /* the device's name */
  char problem[256]; /* the problem class: the sizes that matter, bucketed */
  int from_cache;    /* 1: the cached winner (or this context's), nothing timed */
  int total;         /* candidates in the space for this problem */
  int ncandidates;   /* timed, in order; [0]: the defaults */
  int winner;        /* its index in candidates (-1 when from_cache) */
  int budget_hit;    /* 1: the time budget stopped the search */
  char params[64];   /* the parameters chosen ("" when nothing was tuned) */
  char note[160];    /* why nothing was tuned ("" otherwise) */
  double ms, default_ms; /* their time and the defaults' (ms 0 from this context's memo) */
  double seconds;    /* the search's wall time */
  ctr_tune_candidate candidates[CTR_TUNE_MAX_CANDIDATES];
} ctr_tune_report;
#define CTR_TUNE_REPORT_INIT \
  { CTR_TUNE_REPORT_VERSION, "", "", "", 0, 0, 0, 0, 0, "", "", 0, 0, 0, { { "", 0 } } }
/* The defaults in the layout of `version`, 1 .. CTR_TUNE_REPORT_VERSION (core.h). */
CTR_API ctr_status ctr_tune_report_init(ctr_tune_report *s, unsigned version);

/* Removes the cached tuning results of `family` ("conebeam-bp",
 * "pet-projector", "fbp-kernel": the parallel-beam kernel choice's own
 * file) or, for NULL or "", all of them, from ctx's cache directory.
 * *removed (may be NULL) gets the entries or files removed. The context's
 * own memory of results is kept (a new context tunes again).
 * CTR_E_INVALID_ARGUMENT for an unknown family, CTR_E_IO when there is no
 * directory or a file cannot be rewritten. */
CTR_API ctr_status ctr_tune_cache_clear(const ctr_context *ctx, const char *family, int *removed);

/* The cache of ctx's directory as text, one line an entry (family, GPU,
 * class, parameters, times), into buf (n bytes, as much as fits, always
 * terminated when n > 0); *needed (may be NULL) gets the bytes the whole
 * text takes, its 0 included. A missing or corrupt file is a line saying
 * so, not an error. */
CTR_API ctr_status ctr_tune_cache_list(const ctr_context *ctx, char *buf, size_t n, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_TUNING_H */
