/* Shared pieces of the `ctrecon` command-line tool: exit codes, messages,
 * option tables, the progress bar and the context every compute command
 * creates. Only the public API (ctrecon.h) is used. */
#ifndef CTRECON_CLI_H
#define CTRECON_CLI_H

#include "ctrecon.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* ---- Exit codes (documented in `ctrecon --help` and docs/cli.md) -------- */

enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_RUNTIME = 1,      /* I/O error, out of memory, device error, internal */
  CLI_EXIT_USAGE = 2,        /* bad or missing command-line option */
  CLI_EXIT_INPUT = 3,        /* invalid input data: geometry, file format, sizes */
  CLI_EXIT_UNSUPPORTED = 4,  /* feature not built, no usable device */
  CLI_EXIT_INTERRUPTED = 130 /* interrupted by Ctrl-C (SIGINT): no output is presented as
                                complete (a streamed fdk keeps OUT.partial for --resume) */
};

/* The one place where a library status becomes an exit code. */
int cli_exit_code(ctr_status st);
/* buf = the name of a file beside output `out` that belongs to it: OUT.SUFFIX,
 * or for an HDF5 dataset "file.h5:/group/data" file.h5.group.data.SUFFIX (a
 * file, one per dataset). Non-zero (reported) when it does not fit. */
int cli_beside_output(const char *cmd, const char *out, const char *suffix, char *buf, size_t n);

/* ---- Messages (all on stderr, one line each) ----------------------------- */

/* Library messages name API fields ("gpu_budget", "ctr_fdk_stream_options.resume")
 * and constants (CTR_DEVICE_CPU); the user of the tool knows them as its
 * flags and values. A field, as the library names it, and its flag; `sw`
 * for a flag without a value. */
typedef struct cli_field {
  const char *field, *flag;
  int sw;
} cli_field;
/* The table (cli_fields.c; ends with a row of NULLs) and one row of it
 * (NULL: the field has no row). */
const cli_field *cli_fields(void);
const cli_field *cli_field_find(const char *field);
/* `text` in the tool's words, into buf (returned): `field` (the error's
 * field, ctr_error_get_field; NULL or "" for none) and every API field
 * and constant the text names become flags and values ("--resume", "--device
 * cpu"), a leading "ctr_<function>: " is dropped. cli_detail is that of
 * ctr_error_detail() and ctr_error_get_field(). Every library message the
 * tool prints goes through one of them (the errors here, the log callback
 * in cli_session.c). */
const char *cli_library_text(const char *text, const char *field, char *buf, size_t n);
const char *cli_detail(void);

/* What a failed call says, option names in place of API fields:
 * "interrupted" where the tool's own progress callback cancelled it (Ctrl-C,
 * a stop request), else the library's detail (another rank's failure
 * included) or the status's message. */
const char *cli_status_text(ctr_status st);

/* "ctrecon <cmd>: error: <detail>"; returns cli_exit_code(st). */
int cli_fail(const char *cmd, ctr_status st);
/* Same, but makes sure the message names `path` (prefixing "'path': " when
 * the library's detail does not mention it). */
int cli_fail_file(const char *cmd, ctr_status st, const char *path);
/* The text of the last error message printed (after "ctrecon <cmd>: error: "). */
const char *cli_last_error(void);
/* "ctrecon <cmd>: error: <msg>" with an explicit exit code. */
int cli_error(const char *cmd, int code, const char *fmt, ...) CLI_PRINTF(3, 4);
/* Usage error: message plus "(see 'ctrecon <cmd> --help')"; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The usage error for an unknown `what` ("option", "command") `name`, with
 * "did you mean '<nearest>'?" when one of `names` (n) is a typo away
 * (ctr_nearest_name, as the JSON readers suggest). */
int cli_unknown_name(const char *cmd, const char *what, const char *name,
                     const char *const *names, int n);
void cli_warn(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* ---- Option tables -------------------------------------------------------- */

/* Parses `value` of option `name` into `dst`. Returns 0, or prints a usage
 * error for `cmd` and returns CLI_EXIT_USAGE. */
typedef int (*cli_parse_fn)(const char *cmd, const char *name, const char *value, void *dst);

typedef struct cli_opt {
  const char *name;    /* "--sid" */
  const char *metavar; /* "MM"; NULL for a flag (parse gets value NULL) */
  const char *help;    /* one line, ends with the default */
  cli_parse_fn parse;
  void *dst;
  int *seen; /* optional: set to 1 when the option is given */
} cli_opt;

/* A deprecated name `old` of option `now` (a string literal; docs/vocabulary.md):
 * its value goes through the same parser into the same place, it is left out
 * of --help and of "did you mean", and its first use in a run warns. Its
 * help text is CLI_DEPRECATED followed by `now`. */
#define CLI_DEPRECATED "deprecated: use "
#define CLI_ALIAS(old, now, metavar, parse, dst, seen) \
  {(old), (metavar), CLI_DEPRECATED now, (parse), (dst), (seen)}
/* The option that `o` is a deprecated name of (CLI_ALIAS), else NULL. */
const char *cli_alias_of(const cli_opt *o);

/* The options of the command being run: a field without a row is named by
 * the option of its member's name where the command has one (cli_parse). */
void cli_fields_command(const cli_opt *opts);

/* What --help prints around the option list. */
typedef struct cli_command {
  const char *name;    /* "fdk" */
  const char *summary; /* one line for the global help */
  const char *usage;   /* "ctrecon fdk --geometry FILE ... [options]" */
  const char *description;
  const char *examples; /* lines, each "  ctrecon ..." */
} cli_command;

/* Parses argv[1..argc) (argv[0] is the command name) against `opts`
 * (terminated by a zero entry). Accepts "--opt value" and "--opt=value".
 * Returns 0 when parsed, CLI_EXIT_USAGE after printing an error, or -1 after
 * printing the help for "--help"/"-h" (the caller then exits 0). */
int cli_parse(const cli_command *cmd, const cli_opt *opts, int argc, char **argv);
void cli_print_help(const cli_command *cmd, const cli_opt *opts);
/* Usage error "missing required option NAME METAVAR" unless `value` is set. */
int cli_require(const char *cmd, const cli_opt *opts, const char *name, const void *value);

/* Value parsers for the option tables. */
int cli_set_flag(const char *cmd, const char *name, const char *value, void *dst); /* int */
int cli_parse_string(const char *cmd, const char *name, const char *value,
                     void *dst); /* const char* */
int cli_parse_count(const char *cmd, const char *name, const char *value,
                    void *dst); /* int64 >= 1 */
int cli_parse_supersample(const char *cmd, const char *name, const char *value,
                          void *dst); /* int 1..64 */
/* Real option values: 0 or of magnitude CLI_REAL_MIN .. CLI_REAL_MAX. The
 * computations run in float (1.2e-38 .. 3.4e38), where a weight or scale
 * beyond these (or its inverse) overflows into Inf and NaN. */
#define CLI_REAL_MAX 1e30
#define CLI_REAL_MIN 1e-30
#define CLI_REAL_RANGE "0 or a magnitude of 1e-30 .. 1e+30"
#define CLI_POSITIVE_RANGE "1e-30 .. 1e+30" /* the same for options > 0 */
/* strtod over the whole of s, within the real range above; 0 on success. */
int cli_to_real(const char *s, double *out);
int cli_parse_workers(const char *cmd, const char *name, const char *value, void *dst);
int cli_parse_double(const char *cmd, const char *name, const char *value, void *dst); /* real */
int cli_parse_positive(const char *cmd, const char *name, const char *value, void *dst); /* > 0 */
int cli_parse_nonneg(const char *cmd, const char *name, const char *value, void *dst); /* >= 0 */
int cli_parse_size3(const char *cmd, const char *name, const char *value, void *dst); /* int64[3] */
int cli_parse_voxel3(const char *cmd, const char *name, const char *value,
                     void *dst); /* double[3] > 0 */
int cli_parse_vec3(const char *cmd, const char *name, const char *value, void *dst); /* double[3] */
int cli_parse_dtype(const char *cmd, const char *name, const char *value,
                    void *dst); /* ctr_dtype */
int cli_parse_format(const char *cmd, const char *name, const char *value,
                     void *dst); /* ctr_file_format */
int cli_parse_offset(const char *cmd, const char *name, const char *value,
                     void *dst); /* int64 >= 0 */
int cli_parse_range(const char *cmd, const char *name, const char *value,
                    void *dst); /* "LO:HI", finite, LO < HI, into double[2] */
int cli_parse_mem(const char *cmd, const char *name, const char *value,
                  void *dst); /* uint64 bytes > 0: "8G", "512M" */
int cli_parse_size2(const char *cmd, const char *name, const char *value,
                    void *dst); /* "N" or "NXxNY" into int64[2] */
/* A text file of numbers (one or more per line, '#' comments, commas or
 * blanks between): exactly `expect` of them into *out (malloc'd); errors
 * name `what` and the file. Returns 0 or an exit code. */
int cli_read_numbers(const char *cmd, const char *path, const char *what, int64_t expect,
                     double **out);

/* ---- Common options of the compute commands ------------------------------ */

#define CLI_MAX_TUNE 32

typedef struct cli_common {
  int quiet;
  int threads; /* 0 = OpenMP default */
  ctr_device_kind device;
  int device_index; /* -1 = choose */
  int ndevices;     /* --gpus LIST: the GPUs; 0 = every visible one (or --device cuda:N) */
  int devices[64];
  int ntune;                     /* --tune settings, in the order given */
  const char *tune[CLI_MAX_TUNE]; /* "KEY=VALUE" (argv strings) */
  int zarr_shard; /* --zarr-shard N: ctr_tuning.zarr_shard (N, or -1 for 0); 0: not given */
} cli_common;

#define CLI_COMMON_INIT \
  { 0, 0, CTR_DEVICE_AUTO, -1, 0, {0}, 0, {NULL}, 0 }

int cli_parse_threads(const char *cmd, const char *name, const char *value, void *dst);
int cli_parse_device(const char *cmd, const char *name, const char *value, void *dst);
int cli_parse_gpus(const char *cmd, const char *name, const char *value, void *dst);
/* --tune KEY=VALUE (dst: cli_common): checked with ctr_tuning_set, kept in
 * order; repeatable. */
int cli_parse_tune(const char *cmd, const char *name, const char *value, void *dst);
/* --zarr-shard N (dst: cli_common): 0 .. 256 chunks a shard side, 0 none. */
int cli_parse_zarr_shard(const char *cmd, const char *name, const char *value, void *dst);
/* The tuning table of a run (docs/tuning.md): the defaults, then the
 * environment's CTRECON_<KEY> variables, then the --tune settings in
 * order, then --zarr-shard. Returns 0, or prints the error for `cmd` and returns an exit
 * code. t->cache_dir may point into the environment or argv. */
int cli_tuning(const char *cmd, const cli_common *c, ctr_tuning *t);

/* Table entries of the common options, for a command's option table. */
// clang-format off
#define CLI_COMMON_OPTIONS(c)                                                        \
  {"--quiet", NULL, "no progress bar, no summary; errors and warnings only",         \
   cli_set_flag, &(c)->quiet, NULL},                                                 \
  {"--threads", "N", "CPU threads; 0 = OpenMP's default, all cores (default 0)",     \
   cli_parse_threads, &(c)->threads, NULL},                                          \
  {"--device", "auto|cpu|cuda[:N]",                                                  \
   "auto = the GPUs if built and present, else the CPU; cuda:N = GPU N alone "       \
   "(default auto)", cli_parse_device, (c), NULL},                                   \
  {"--gpus", "LIST|all",                                                             \
   "the GPUs to use, e.g. 0,1,3 (ctrecon info lists them); work is shared among "    \
   "them where the command can (default all)", cli_parse_gpus, (c), NULL},           \
  {"--tune", "KEY=VALUE",                                                            \
   "a tuning switch of docs/tuning.md, e.g. bp_slices=16 (repeatable; also "        \
   "CTRECON_<KEY> variables) (default: the tuned defaults)",                        \
   cli_parse_tune, (c), NULL}
// clang-format on

/* --zarr-shard, for the commands whose streamed output may be OME-Zarr. */
#define CLI_ZARR_SHARD_OPTION(c)                                                     \
  {"--zarr-shard", "N", "OME-Zarr output: shards of N x N x N chunks (Zarr v3 "       \
   "sharding_indexed; 0 = a file per chunk) (default: 1 x 8 x 8 on a level of more "  \
   "than 512 chunks, else none)", cli_parse_zarr_shard, (c), NULL}

/* --strict, for the commands that read data under the data policy
 * (docs/cli.md, "Bad values"): bad values become an error instead of a
 * warning with their count. */
#define CLI_STRICT_HELP                                                              \
  "NaN, infinite or out-of-range input values and non-finite results are an error "  \
  "(default: replaced by 0 with a warning giving the count)"
#define CLI_STRICT_OPTION(flag) {"--strict", NULL, CLI_STRICT_HELP, cli_set_flag, (flag), NULL}

/* --input-scale, one option for fdk, fbp and iterate: the input values are
 * divided by F (data stored as value x F, e.g. `phantom --dtype uint16
 * --uint16-scale F`); each command's summary states the scale used. */
#define CLI_INPUT_SCALE_OPTION(scale)                                                \
  {"--input-scale", "F", "divide the input values by F, e.g. the uint16 scale of "   \
   "phantom --uint16-scale F (default 1)", cli_parse_positive, (scale), NULL}

/* --gpu-budget and --host-budget (the names of the C and Python budgets,
 * docs/vocabulary.md; --gpu-mem and --host-mem are their deprecated names):
 * `what` is the help's start, e.g. "GPU memory the run may use". */
#define CLI_GPU_BUDGET_OPTION(dst, what)                                             \
  {"--gpu-budget", "SIZE", what ", e.g. 8G, powers of 1024 (default: free memory "    \
   "less 1 GiB)", cli_parse_mem, (dst), NULL},                                       \
  CLI_ALIAS("--gpu-mem", "--gpu-budget", "SIZE", cli_parse_mem, (dst), NULL)
#define CLI_HOST_BUDGET_OPTION(dst, what)                                            \
  {"--host-budget", "SIZE", what ", e.g. 32G, powers of 1024 (default: available "    \
   "memory less 10 %)", cli_parse_mem, (dst), NULL},                                 \
  CLI_ALIAS("--host-mem", "--host-budget", "SIZE", cli_parse_mem, (dst), NULL)

/* The state behind the context's log and progress callbacks. */
typedef struct cli_session {
  const char *cmd;
  cli_common common;
  int bar;      /* draw the progress bar (stderr is a terminal, not quiet) */
  int bar_open; /* a bar line is on screen without its newline */
  char stage[64];
  double stage_start; /* seconds, cli_now() */
  double last_draw;
  double rate_total; /* units of the whole stage (0: no throughput shown) */
  const char *rate_unit; /* e.g. "GB" (rate_total in those units) */
  int debug_log; /* show the library's debug messages (--timings: plans, host-transfer paths) */
} cli_session;

/* Creates the context for `s` (callbacks wired to the session) and, unless
 * quiet, prints which backend is used. Returns 0 or an exit code. */
int cli_context_create(cli_session *s, const char *cmd, const cli_common *common,
                       ctr_context **out);
/* Reports progress of the tool's own stages (reading, writing) through the
 * same bar; returns non-zero after Ctrl-C. */
int cli_progress(cli_session *s, const char *stage, double fraction);
/* Ends a bar line left open (an error in the middle of a stage). */
void cli_progress_end(cli_session *s);
/* Prints an info line unless quiet (stdout). */
void cli_info(const cli_session *s, const char *fmt, ...) CLI_PRINTF(2, 3);

/* ---- Helpers --------------------------------------------------------------- */

/* Monotonic seconds. */
double cli_now(void);
/* Set by SIGINT, SIGTERM or SIGHUP once cli_install_sigint() ran; the
 * progress callback then cancels the running library call, whose
 * temporaries are removed. */
int cli_interrupted(void);
void cli_install_sigint(void);


/* What an output path names (cli_output.kind). */
enum {
  CLI_OUT_DATA = 0,    /* images: a file or stack in the format its name says (a TIFF stack's
                          files, an HDF5 dataset; another name is one file) */
  CLI_OUT_FILE = 1,    /* one file of any kind (JSON, CSV, PNG) */
  CLI_OUT_PREVIEW = 2, /* the prefix of a preview's PREFIX_xy.png, _xz.png, _yz.png */
  CLI_OUT_UNCHECKED = 3 /* not refused here: state a run resumes from (a checkpoint and its
                           lock: rewritten by design), or a prefix whose files the command
                           checks itself (cli_check_new) */
};

/* A path option: "--out" and its value (NULL: not given). */
typedef struct cli_file {
  const char *option;
  const char *path;
} cli_file;
/* An output path option and what it names (CLI_OUT_*). */
typedef struct cli_output {
  const char *option;
  const char *path;
  int kind;
} cli_output;

/* The one up-front check of a command's files, before any long work. For
 * every output (array ends at option NULL): its directory exists and takes
 * new files (error naming the option and the directory); temporaries
 * "<name>.tmp.<pid>.<n>" (and fdk scratch files "<name>.scratch.<pid>.<n>")
 * of it that a process which no longer runs left behind are removed, with a
 * warning; it is not the same file as an input or an earlier output - the
 * same path, or the same file through another name (symlink, hard link:
 * st_dev and st_ino), "file.h5:/dataset" counting as file.h5 - else a usage
 * error naming both options; and, unless `force` (--force), nothing of it
 * exists (ctr_stack_check_output / ctr_file_check_output as its kind says:
 * the library's refusal, naming the file and --force, exit 2). Returns 0
 * or an exit code. */
int cli_check_files(const char *cmd, const cli_file *inputs, const cli_output *outputs,
                    int force);
/* The same refusal for one more file a command writes (PREFIX_iter..., a
 * histo-image's data files): 0, or the error printed for `option` and its
 * exit code (2). */
int cli_check_new(const char *cmd, const char *option, const char *path, int kind, int force);

/* --force: every command that writes a file replaces an existing output
 * only when asked (the library's overwrite). */
#define CLI_FORCE_HELP                                                               \
  "replace an existing output file (default: an existing output is refused and kept)"
#define CLI_FORCE_OPTION(flag) {"--force", NULL, CLI_FORCE_HELP, cli_set_flag, (flag), NULL}
/* A text file (a table, a report) written under "<path>.tmp.<pid>.0" and
 * renamed onto `path` when complete: *f open for writing (tmp gets the
 * temporary's name, n bytes), or the error printed and its exit code. */
int cli_text_create(const char *cmd, const char *path, char *tmp, size_t n, FILE **f);
/* Flushes, syncs and closes f and renames tmp onto path, keeping a file
 * that appeared at path meanwhile unless `force` (the temporary is removed
 * on any failure). 0, or the error printed and its exit code. */
int cli_text_commit(const char *cmd, FILE *f, const char *tmp, const char *path, int force);
/* The process holding a write lock on `path` (the run lock the library
 * takes on a journal or a checkpoint's lock file), 0 if none or no file. */
long cli_lock_holder(const char *path);
/* 1 when `fmt` is one file per image (the format table's stack_of_files). */
int cli_format_is_stack(ctr_file_format fmt);
/* 1 when reading `fmt` needs the sizes and dtype (the table's needs_hint: raw). */
int cli_format_needs_hint(ctr_file_format fmt);

/* The library's formats as words for help and messages, from its format
 * table at run time (a new format appears without editing cli/). */
typedef enum cli_format_words {
  CLI_FORMAT_NAMES,  /* "raw", "tiff-stack": as --format takes them, in the table's order */
  CLI_FORMAT_TITLES, /* "raw", "TIFF stack": the table's titles, in its order */
  CLI_FORMAT_ENDINGS /* ".raw", ".h5[:/dataset]", then "a %04d TIFF stack": one-file
                        formats first */
} cli_format_words;
/* The formats (needs_hint: -1 all, 0 those whose files say their sizes, 1
 * those that need them) joined by `sep`, `last` before the last one
 * ("raw|tiff|...|hdf5" with "|", "|"; "TIFF, NRRD or HDF5" with ", ",
 * " or "), into buf; returns buf. */
const char *cli_format_list(char *buf, size_t n, cli_format_words words, int needs_hint,
                            const char *sep, const char *last);
/* `text` with the format placeholders of help texts replaced (into buf,
 * returned): {formats} the names as a metavar, "raw|tiff|tiff-stack|nrrd|hdf5";
 * {titles} "raw, TIFF, TIFF stack, NRRD or HDF5"; {endings} the endings, ".raw, .tif, .nrrd, .h5[:/dataset] or a %04d TIFF
 * stack". cli_print_help expands usage, description, metavars and help. */
const char *cli_format_expand(const char *text, char *buf, size_t n);
/* File format from the format option (`given`, unless AUTO) or the
 * extension of the path given to `path_option`; usage error if unknown.
 * `format_option` (may be NULL) is named in the hint. */
int cli_resolve_format(const char *cmd, const char *path_option, const char *format_option,
                       const char *path, ctr_file_format given, ctr_file_format *out);

/* Loads a geometry file (errors name it). Returns 0 or an exit code. */
int cli_load_geometry(const char *cmd, const char *path, ctr_geometry **out);
/* Warns about a merely unusual geometry: a cone angle above 40 degrees, a
 * detector that misses part of the field of view; returns the coverage. */
double cli_warn_coverage(const char *cmd, const ctr_geometry *g);
/* The same warnings for g with its coverage already computed (c from
 * ctr_geometry_coverage). */
void cli_warn_coverage_of(const char *cmd, const ctr_geometry *g, double c);

/* A raw file must hold exactly offset + w x h x n values of dtype: a longer
 * or shorter one usually means the wrong --raw-dtype (float32 read as
 * uint16) or the wrong sizes. The error names the file (`option`), its size,
 * the expected size and where w, h and n came from (`dims`, e.g. "nu x nv x
 * views of 'geom.json'"). Returns 0 or an exit code. */
int cli_check_raw_size(const char *cmd, const char *option, const char *path, int64_t w, int64_t h,
                       int64_t n, ctr_dtype dtype, int64_t offset, const char *dims);
/* --angle-units deg|rad (fbp, iterate): the units of --angles, --angle-start
 * and --angle-range (and of a DXchange theta without a units attribute).
 * CLI_ANGLES_UNSAID when not given: degrees, and a scan that looks like
 * radians gets a warning. */
enum { CLI_ANGLES_UNSAID = 0, CLI_ANGLES_DEG = 1, CLI_ANGLES_RAD = 2 };
int cli_parse_angle_units(const char *cmd, const char *name, const char *value, void *dst);
#define CLI_ANGLE_UNITS_OPTION(units)                                                \
  {"--angle-units", "deg|rad", "units of --angles, --angle-start and --angle-range, " \
   "and of a DXchange theta without a units attribute (default deg; a scan spanning " \
   "under 6.3 degrees gets a warning that it looks like radians)",                   \
   cli_parse_angle_units, (units), NULL}
/* Applies --angle-units to n angles (NULL: none) and a uniform start and
 * range (either may be NULL): radians become degrees. Then, unless the
 * units were said (`units` or `said`, e.g. a units attribute), warns when
 * the scan looks like radians (ctr_angles_look_like_radians), naming where
 * the angles came from (`from`). */
void cli_angles_in_degrees(const char *cmd, int units, int said, double *angles, int64_t n,
                           double *start, double *range, const char *from);
/* The angles of a parallel-beam scan of n angles in degrees: the --angles
 * file `path` read into *list, or (path NULL) the uniform *start and
 * *range; both through cli_angles_in_degrees. Returns 0 or an exit code. */
int cli_parallel_angles(const char *cmd, const char *path, int units, int64_t n, double **list,
                        double *start, double *range);
/* --tilt DEG (fbp, iterate): laminography's tilt of the rotation axis
 * (ctr_parallel_params.tilt_deg, docs/geometry.md "Laminography"), and
 * --slices N, the reconstructed slices of a tilted scan (default: as many
 * as detector rows). */
#define CLI_TILT_OPTIONS(tilt, tilt_given, slices)                                        \
  {"--tilt", "DEG", "laminography: the rotation axis tilted by DEG from the detector "    \
   "plane towards the beam, |DEG| < 90 (default 0: tomography; --angle-units applies; "   \
   "docs/geometry.md)", cli_parse_double, (tilt), (tilt_given)},                          \
  {"--slices", "N", "with --tilt: slices to reconstruct, pitch --pixel-size, centred on "  \
   "the middle detector row's axis point (default: as many as detector rows)",            \
   cli_parse_count, (slices), NULL}
/* --tilt in degrees (after --angle-units), checked: |tilt| < 90, --slices
 * only with a tilt; a tilt that looks like radians (0 < |tilt| <= pi / 2
 * with the units unsaid) gets a warning. Returns 0 or an exit code. */
int cli_tilt(const char *cmd, int units, double *tilt, int64_t slices);
/* Parallel beam: warns that --axis `axis` lies outside the detector's nbins
 * bins (unusual, not impossible). */
void cli_warn_axis(const char *cmd, double axis, int64_t nbins);
/* Checked allocation of n floats (n * 4 bytes) for projections and volumes;
 * the error message names `what`. Release with cli_free_floats (accepts
 * NULL): the one place to switch these buffers to pinned host memory. */
float *cli_alloc_floats(const char *cmd, int64_t n, const char *what, int *rc);
/* --interp auto|exact|precise|texture into a ctr_interp. */
int cli_parse_interp(const char *cmd, const char *name, const char *value, void *dst);
void cli_free_floats(float *p);
/* The --preview option of fdk, fbp, iterate and pet recon. */
#define CLI_PREVIEW_OPTION(dst)                                                      \
  {"--preview", "PREFIX", "write PREFIX_{xy,xz,yz}.png: the central planes, with a " \
   "colourbar and a scale bar in mm (docs/cli.md, Previews and plots)",              \
   cli_parse_string, (dst), NULL}
/* --preview PREFIX: the figures of the three central planes
 * (ctr_png_preview_figure: PREFIX_xy.png, _xz.png, _yz.png with a colourbar,
 * a scale bar where voxel (x, y, z mm; NULL: unknown) is given, thin planes
 * stretched), the planes as ctr_png_preview_planes takes them; lo == hi:
 * the automatic window. Errors name `prefix`. Returns 0 or an exit code. */
int cli_preview(const char *cmd, const char *prefix, const float *xy, const float *xz,
                const float *yz, int64_t nx, int64_t ny, int64_t nz, const double *voxel,
                double lo, double hi, int force);
/* The same from a whole volume (nx x ny x nz, x fastest): its central planes. */
int cli_preview_volume(const char *cmd, const char *prefix, const float *vol, int64_t nx,
                       int64_t ny, int64_t nz, const double *voxel, double lo, double hi,
                       int force);
/* Min and max of finite values, count of non-finite ones. */
void cli_range(const float *v, int64_t n, float *lo, float *hi, int64_t *nonfinite);
/* Multiplies by `scale` and clamps to [0, 65535] for a uint16 output;
 * adds the numbers of values clamped at 0 and at 65535 to *below, *above. */
void cli_scale_for_uint16(float *v, int64_t n, double scale, int64_t *below, int64_t *above);

/* Stack description of a volume for writers: spacing = voxel size, origin =
 * position of voxel (0, 0, z0). */
ctr_stack_info cli_volume_info(const ctr_volume_geometry *vol, int64_t z0, int64_t nz,
                               ctr_dtype dtype);
/* Human size: "12.0 MiB". */
const char *cli_bytes(double bytes, char *buf, size_t n);

/* ---- Distributed runs (cli_mpi.c, docs/distributed.md) ------------------------ */

/* The MPI job this process was started in by a launcher (mpirun, mpiexec,
 * srun): its rank and size from the launcher's environment (0 and 1
 * without one). */
int cli_launch_rank(void);
int cli_launch_size(void);
/* Called first by main: under a launcher, every rank but 0 prints nothing
 * (its stdout and stderr go to /dev/null): rank 0 speaks for the job. */
void cli_launch_init(void);
/* This rank speaks for the job from now on (after a run lost rank 0). */
void cli_launch_speak(void);
/* A check that failed before the ranks could agree (no cluster yet; the
 * launcher ends the job as this rank exits): a rank other than 0 says it
 * itself, with its rank and host ("rank 2 of 4 (node7): cannot write ..."),
 * when it may hold on this node only (not a usage error, which every rank
 * meets alike and rank 0 prints). Returns rc. */
int cli_launch_early_error(const char *cmd, int rc);
/* --rank-timeout, for the commands that distribute their work. */
#define CLI_RANK_TIMEOUT_OPTION(dst)                                                 \
  {"--rank-timeout", "S", "under mpirun or srun: stop every rank when one makes no " \
   "progress for S seconds (default 600)", cli_parse_positive, (dst), NULL}
/* The cluster of a command started by a launcher with more than one rank
 * (*out NULL otherwise): joins the MPI job. Returns 0 or an exit code. */
int cli_cluster_create(const char *cmd, double timeout, ctr_cluster **out);
/* After each rank prepared its part (rc: 0 or the exit code of its error,
 * whose message cli_last_error holds): 0 when every rank succeeded;
 * otherwise the rank that speaks prints the first failing rank's message
 * and every rank returns an exit code. c NULL: rc. */
int cli_cluster_agree(const char *cmd, ctr_cluster *c, int rc);
/* After a distributed library call: the rank that speaks for the job
 * prints from now on (rank 1 when rank 0 was lost). */
void cli_cluster_settle(const ctr_cluster *c);
/* The GPUs of this rank when the command named none and ranks share a host:
 * local rank l of L on a host of G GPUs takes GPUs l, l + L, ... (L <= G),
 * else GPU l mod G. Fills devices (at most max), returns the count (0: the
 * context chooses, as without a launcher). */
int cli_launch_gpus(int *devices, int max);

/* ---- Subcommands ------------------------------------------------------------ */

typedef struct cli_subcommand {
  const cli_command *info;
  int (*run)(int argc, char **argv);
} cli_subcommand;

extern const cli_command cli_cmd_info, cli_cmd_geometry, cli_cmd_phantom, cli_cmd_fdk, cli_cmd_demo;
extern const cli_command cli_cmd_rabbitct_make, cli_cmd_rabbitct, cli_cmd_fbp;
int cmd_info(int argc, char **argv);
int cmd_geometry(int argc, char **argv);
int cmd_phantom(int argc, char **argv);
int cmd_fdk(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_rabbitct_make(int argc, char **argv); /* cmd_rabbitct_make.c */
int cmd_rabbitct(int argc, char **argv);      /* cmd_rabbitct.c */
int cmd_fbp(int argc, char **argv);           /* cmd_fbp.c */
/* `ctrecon tune` (cmd_tune.c). */
extern const cli_command cli_cmd_tune;
int cmd_tune(int argc, char **argv);
/* `demo --parallel --tilt DEG` (cmd_demo_lamino.c). */
int cmd_demo_lamino(int64_t size, int64_t views, int64_t slices, double tilt, const char *out_dir,
                    int force, const cli_common *common);
/* `demo --parallel` (cmd_demo_parallel.c). */
int cmd_demo_parallel(int64_t size, int64_t views, int64_t slices, const char *out_dir,
                      int no_volume, int force, const cli_common *common);
/* `ctrecon pet simulate | recon | metrics` (cmd_pet.c, cmd_pet_*.c). */
extern const cli_command cli_cmd_pet;
int cmd_pet(int argc, char **argv);
/* `ctrecon iterate` (cmd_iterate.c). */
extern const cli_command cli_cmd_iterate;
int cmd_iterate(int argc, char **argv);
/* `ctrecon stream-send` and `ctrecon hdf5-append` (cmd_stream_send.c). */
extern const cli_command cli_cmd_stream_send, cli_cmd_hdf5_append;
int cmd_stream_send(int argc, char **argv);
int cmd_hdf5_append(int argc, char **argv);
/* `demo --pet` (cmd_demo_pet.c). */
int cmd_demo_pet(const char *out_dir, int no_volume, int force, const cli_common *common);

#endif /* CTRECON_CLI_H */
