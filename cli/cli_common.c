/* Exit codes, error messages and the table-driven option parser shared by
 * every subcommand. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* ---- Exit codes and messages ---------------------------------------------- */

int cli_exit_code(ctr_status st) {
  switch (st) {
    case CTR_OK: return CLI_EXIT_OK;
    /* The data given to the tool is wrong: fix the input, not the machine. */
    case CTR_E_INVALID_ARGUMENT:
    case CTR_E_FORMAT:
    case CTR_E_SIZE_MISMATCH:
    case CTR_E_GEOMETRY: return CLI_EXIT_INPUT;
    /* This build or this machine cannot do it. */
    case CTR_E_UNSUPPORTED:
    case CTR_E_NO_DEVICE: return CLI_EXIT_UNSUPPORTED;
    case CTR_E_CANCELLED: return CLI_EXIT_INTERRUPTED;
    case CTR_E_OUT_OF_MEMORY:
    case CTR_E_IO:
    case CTR_E_DEVICE:
    case CTR_E_DEVICE_OUT_OF_MEMORY:
    case CTR_E_FFT:
    case CTR_E_TIMEOUT:
    case CTR_E_INTERNAL: return CLI_EXIT_RUNTIME;
  }
  return CLI_EXIT_RUNTIME; /* statuses added to the library later */
}

/* The library detail, or the generic message when a call left none. */
static const char *status_text(ctr_status st) {
  const char *d = cli_detail();
  return *d ? d : ctr_status_message(st);
}

/* The last error message printed (without "ctrecon CMD: error: "). */
static char g_last_error[2048];

const char *cli_last_error(void) { return g_last_error; }

/* Prints "ctrecon CMD: error: TEXT" and keeps TEXT. */
static void keep_error(const char *text) {
  size_t n = strlen(text);
  if (n >= sizeof g_last_error) n = sizeof g_last_error - 1;
  memcpy(g_last_error, text, n);
  g_last_error[n] = '\0';
}

const char *cli_status_text(ctr_status st) {
  const char *d = cli_detail();
  /* the library's wording of the tool's own cancel (the progress callback
   * said stop); a detail that says more (another rank's) is kept */
  if (st == CTR_E_CANCELLED && (!*d || strstr(d, "cancelled by the progress callback")))
    return "interrupted";
  return status_text(st);
}

static void print_error(const char *cmd, const char *text) {
  keep_error(text);
  fprintf(stderr, "ctrecon %s: error: %s\n", cmd, text);
}

int cli_fail(const char *cmd, ctr_status st) {
  print_error(cmd, st == CTR_E_CANCELLED ? "interrupted; no output was written" : status_text(st));
  return cli_exit_code(st);
}

int cli_fail_file(const char *cmd, ctr_status st, const char *path) {
  const char *text = status_text(st);
  /* a detail that starts with an option is about that option, not the file */
  const int about_option = text[0] == '-' && text[1] == '-';
  if (st != CTR_E_CANCELLED && path && !about_option && !strstr(text, path)) {
    char buf[8192];
    snprintf(buf, sizeof buf, "'%s': %s", path, text);
    print_error(cmd, buf);
    return cli_exit_code(st);
  }
  return cli_fail(cmd, st);
}

static void vmessage(const char *cmd, const char *kind, const char *fmt, va_list ap,
                     const char *tail) {
  char text[2048];
  vsnprintf(text, sizeof text, fmt, ap);
  if (!strcmp(kind, "error")) keep_error(text);
  fprintf(stderr, "ctrecon%s%s: %s: %s%s\n", cmd ? " " : "", cmd ? cmd : "", kind, text,
          tail ? tail : "");
}

int cli_error(const char *cmd, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(cmd, "error", fmt, ap, NULL);
  va_end(ap);
  return code;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  char tail[96];
  snprintf(tail, sizeof tail, " (see 'ctrecon%s%s --help')", cmd ? " " : "", cmd ? cmd : "");
  va_list ap;
  va_start(ap, fmt);
  vmessage(cmd, "error", fmt, ap, tail);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

void cli_warn(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(cmd, "warning", fmt, ap, NULL);
  va_end(ap);
}

/* ---- Formats in help texts ---------------------------------------------- */

/* One format's word (into w). */
static void format_word(const ctr_file_format_info *fi, cli_format_words words, char *w,
                        size_t n) {
  const int k = (int)strcspn(fi->extensions, " ");
  if (words == CLI_FORMAT_NAMES) snprintf(w, n, "%s", fi->name);
  else if (words == CLI_FORMAT_TITLES) snprintf(w, n, "%s", fi->title);
  else if (fi->stack_of_files) snprintf(w, n, "a %%04d %s", fi->title);
  else snprintf(w, n, "%.*s%s", k, fi->extensions, fi->dataset_path ? "[:/dataset]" : "");
}

const char *cli_format_list(char *buf, size_t n, cli_format_words words, int needs_hint,
                            const char *sep, const char *last) {
  /* The rows 1, 2, ... up to the first value the library does not name
   * (ctr_format_name raises nothing, so a pending error detail is kept). */
  ctr_file_format_info in[64];
  int k = 0;
  for (int pass = 0; pass < (words == CLI_FORMAT_ENDINGS ? 2 : 1); pass++)
    for (int f = 1; f < 64 && strcmp(ctr_format_name((ctr_file_format)f), "unknown"); f++) {
      ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
      if (ctr_file_format_get_info((ctr_file_format)f, &fi) != CTR_OK) break;
      if (needs_hint >= 0 && fi.needs_hint != needs_hint) continue;
      if (words == CLI_FORMAT_ENDINGS && fi.stack_of_files != pass) continue;
      in[k++] = fi;
    }
  size_t len = 0;
  if (n) buf[0] = '\0';
  for (int i = 0; i < k && len < n; i++) {
    char w[128];
    format_word(&in[i], words, w, sizeof w);
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i == 0 ? "" : i + 1 == k ? last : sep, w);
  }
  return buf;
}

const char *cli_format_expand(const char *text, char *buf, size_t n) {
  static const struct {
    const char *key;
    cli_format_words words;
    const char *sep, *last;
  } keys[] = {{"{formats}", CLI_FORMAT_NAMES, "|", "|"},
              {"{titles}", CLI_FORMAT_TITLES, ", ", " or "},
              {"{endings}", CLI_FORMAT_ENDINGS, ", ", " or "}};
  size_t len = 0;
  if (n) buf[0] = '\0';
  while (text && *text && len + 1 < n) {
    size_t i = 0, nk = sizeof keys / sizeof keys[0];
    while (i < nk && strncmp(text, keys[i].key, strlen(keys[i].key))) i++;
    if (i == nk) {
      buf[len++] = *text++;
      buf[len] = '\0';
      continue;
    }
    char list[512];
    cli_format_list(list, sizeof list, keys[i].words, -1, keys[i].sep, keys[i].last);
    len += (size_t)snprintf(buf + len, n - len, "%s", list);
    text += strlen(keys[i].key);
  }
  return buf;
}

/* ---- Help ------------------------------------------------------------------ */

void cli_print_help(const cli_command *cmd, const cli_opt *opts) {
  char usage[1024], text[8192];
  printf("usage: %s\n\n", cli_format_expand(cmd->usage, usage, sizeof usage));
  printf("%s\n", cli_format_expand(cmd->description, text, sizeof text));
  if (opts && opts[0].name) {
    printf("\noptions:\n");
    for (const cli_opt *o = opts; o->name; o++) {
      char left[256], metavar[192];
      if (cli_alias_of(o)) continue; /* deprecated names: docs/vocabulary.md */
      snprintf(left, sizeof left, "%s%s%s", o->name, o->metavar ? " " : "",
               o->metavar ? cli_format_expand(o->metavar, metavar, sizeof metavar) : "");
      cli_format_expand(o->help, text, sizeof text);
      /* Long left columns get their own line so the help column stays put. */
      if (strlen(left) > 26)
        printf("  %s\n  %-26s  %s\n", left, "", text);
      else
        printf("  %-26s  %s\n", left, text);
    }
  }
  printf("  %-26s  %s\n", "--help", "show this help and exit");
  if (cmd->examples) printf("\nexamples:\n%s", cmd->examples);
}

/* ---- Parsing ------------------------------------------------------------- */

static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t len) {
  for (const cli_opt *o = opts; o->name; o++)
    if (strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
  return NULL;
}

int cli_unknown_name(const char *cmd, const char *what, const char *name,
                     const char *const *names, int n) {
  int d;
  const char *near = ctr_nearest_name(name, names, n, &d);
  /* a typo: a few edits, fewer for short names */
  if (n > 0 && d <= 1 + (int)strlen(name) / 4)
    return cli_usage_error(cmd, "unknown %s '%s'; did you mean '%s'?", what, name, near);
  return cli_usage_error(cmd, "unknown %s '%s'", what, name);
}

/* The unknown option of arg (its first len bytes), near which known one. */
static int unknown_option(const cli_command *cmd, const cli_opt *opts, const char *arg,
                          size_t len) {
  enum { MAX_NAMES = 256 };
  const char *names[MAX_NAMES];
  char name[128];
  int n = 0;
  names[n++] = "--help";
  for (const cli_opt *o = opts; o->name && n < MAX_NAMES; o++)
    if (!cli_alias_of(o)) names[n++] = o->name;
  snprintf(name, sizeof name, "%.*s", (int)len, arg);
  return cli_unknown_name(cmd->name, "option", name, names, n);
}

const char *cli_alias_of(const cli_opt *o) {
  const size_t n = strlen(CLI_DEPRECATED);
  return o->help && !strncmp(o->help, CLI_DEPRECATED, n) ? o->help + n : NULL;
}

/* Once per deprecated name and run: scripts that use an old name keep
 * working, and learn the new one. */
static void warn_deprecated(const char *cmd, const cli_opt *o) {
  enum { MAX_WARNED = 16 };
  static const char *warned[MAX_WARNED];
  static int nwarned;
  for (int i = 0; i < nwarned; i++)
    if (warned[i] == o->name) return;
  if (nwarned < MAX_WARNED) warned[nwarned++] = o->name;
  cli_warn(cmd, "option %s is deprecated: use %s (the same option; docs/vocabulary.md)",
           o->name, cli_alias_of(o));
}

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* One argument (and maybe its value); advances *i past what it used. */
static int parse_one(const cli_command *cmd, const cli_opt *opts, int argc, char **argv, int *i) {
  const char *arg = argv[*i];
  if (arg[0] != '-' || arg[1] == '\0')
    return cli_usage_error(cmd->name, "unexpected argument '%s' (options start with --)", arg);
  const char *eq = strchr(arg, '=');
  const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  const cli_opt *o = find_opt(opts, arg, len);
  if (!o) return unknown_option(cmd, opts, arg, len);
  const char *value = NULL;
  if (o->metavar) {
    if (eq) {
      value = eq + 1;
    } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
      /* A following "--option" is a forgotten value, not a value. */
      value = argv[++*i];
    } else {
      char metavar[192];
      return cli_usage_error(cmd->name, "option %s needs a value (%s)", o->name,
                             cli_format_expand(o->metavar, metavar, sizeof metavar));
    }
    if (!*value) return cli_usage_error(cmd->name, "option %s: empty value", o->name);
  } else if (eq) {
    return cli_usage_error(cmd->name, "option %s takes no value", o->name);
  }
  if (o->seen) *o->seen = 1;
  if (cli_alias_of(o)) warn_deprecated(cmd->name, o);
  return o->parse(cmd->name, o->name, value, o->dst);
}

int cli_parse(const cli_command *cmd, const cli_opt *opts, int argc, char **argv) {
  cli_fields_command(opts);
  /* --help wins wherever it is, so that "ctrecon fdk --bad --help" helps. */
  for (int i = 1; i < argc; i++)
    if (is_help(argv[i])) {
      cli_print_help(cmd, opts);
      return -1;
    }
  for (int i = 1; i < argc; i++) {
    int rc = parse_one(cmd, opts, argc, argv, &i);
    if (rc) return rc;
  }
  return 0;
}

int cli_require(const char *cmd, const cli_opt *opts, const char *name, const void *value) {
  if (value) return 0;
  const cli_opt *o = find_opt(opts, name, strlen(name));
  char metavar[192];
  return cli_usage_error(cmd, "missing required option %s%s%s", name, o && o->metavar ? " " : "",
                         o && o->metavar ? cli_format_expand(o->metavar, metavar, sizeof metavar)
                                         : "");
}

/* ---- Value parsers --------------------------------------------------------- */

int cli_set_flag(const char *cmd, const char *name, const char *value, void *dst) {
  *(int *)dst = 1;
  return 0;
}

int cli_parse_string(const char *cmd, const char *name, const char *value, void *dst) {
  *(const char **)dst = value;
  return 0;
}

/* strtoll/strtod over the whole string; 0 on success. */
static int to_int64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno) return -1;
  *out = (int64_t)v;
  return 0;
}

int cli_to_real(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(v)) return -1;
  if (v != 0 && !(fabs(v) >= CLI_REAL_MIN && fabs(v) <= CLI_REAL_MAX)) return -1;
  *out = v;
  return 0;
}
#define to_double cli_to_real

int cli_parse_count(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v;
  if (to_int64(value, &v) || v < 1 || v > ((int64_t)1 << 40))
    return cli_usage_error(cmd, "%s '%s': expected a positive integer", name, value);
  *(int64_t *)dst = v;
  return 0;
}

/* --workers N: 1 .. CTR_MAX_WORKERS (into an int64_t). */
int cli_parse_workers(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v = 0;
  const int rc = cli_parse_count(cmd, name, value, &v);
  if (rc) return rc;
  if (v > CTR_MAX_WORKERS)
    return cli_usage_error(cmd, "%s '%s': expected 1 .. %d", name, value, CTR_MAX_WORKERS);
  *(int64_t *)dst = v;
  return 0;
}

int cli_parse_supersample(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v;
  if (to_int64(value, &v) || v < 1 || v > 64)
    return cli_usage_error(cmd, "%s '%s': expected an integer in 1 .. 64", name, value);
  *(int *)dst = (int)v;
  return 0;
}

int cli_parse_offset(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v;
  if (to_int64(value, &v) || v < 0)
    return cli_usage_error(cmd, "%s '%s': expected a byte count >= 0", name, value);
  *(int64_t *)dst = v;
  return 0;
}

int cli_parse_double(const char *cmd, const char *name, const char *value, void *dst) {
  if (to_double(value, (double *)dst))
    return cli_usage_error(cmd, "%s '%s': expected a number (" CLI_REAL_RANGE ")", name, value);
  return 0;
}

int cli_parse_positive(const char *cmd, const char *name, const char *value, void *dst) {
  double v;
  if (to_double(value, &v) || !(v > 0))
    return cli_usage_error(cmd, "%s '%s': expected a number > 0 (" CLI_POSITIVE_RANGE ")", name,
                           value);
  *(double *)dst = v;
  return 0;
}

int cli_parse_nonneg(const char *cmd, const char *name, const char *value, void *dst) {
  double v;
  if (to_double(value, &v) || !(v >= 0))
    return cli_usage_error(cmd, "%s '%s': expected a number >= 0 (" CLI_REAL_RANGE ")", name,
                           value);
  *(double *)dst = v;
  return 0;
}

/* Splits "a,b,c" (or "a") into up to 3 fields; returns the count, or -1 for
 * more than 3 or an empty field. */
static int split3(const char *value, char fields[3][64]) {
  int n = 0;
  const char *p = value;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (n == 3 || len == 0 || len >= 64) return -1;
    memcpy(fields[n], p, len);
    fields[n++][len] = '\0';
    if (!comma) return n;
    p = comma + 1;
  }
}

int cli_parse_size3(const char *cmd, const char *name, const char *value, void *dst) {
  char f[3][64];
  int64_t v[3];
  int n = split3(value, f);
  int ok = n == 1 || n == 3;
  for (int i = 0; ok && i < n; i++) ok = !to_int64(f[i], &v[i]) && v[i] >= 1 && v[i] <= 1048576;
  if (!ok)
    return cli_usage_error(cmd, "%s '%s': expected N or NX,NY,NZ (integers in 1 .. 1048576)", name,
                           value);
  for (int i = 0; i < 3; i++) ((int64_t *)dst)[i] = v[n == 1 ? 0 : i];
  return 0;
}

int cli_parse_voxel3(const char *cmd, const char *name, const char *value, void *dst) {
  char f[3][64];
  double v[3];
  int n = split3(value, f);
  int ok = n == 1 || n == 3;
  for (int i = 0; ok && i < n; i++) ok = !to_double(f[i], &v[i]) && v[i] > 0;
  if (!ok)
    return cli_usage_error(cmd, "%s '%s': expected MM or X,Y,Z (finite sizes > 0, mm)", name,
                           value);
  for (int i = 0; i < 3; i++) ((double *)dst)[i] = v[n == 1 ? 0 : i];
  return 0;
}

int cli_parse_vec3(const char *cmd, const char *name, const char *value, void *dst) {
  char f[3][64];
  double v[3];
  int ok = split3(value, f) == 3;
  for (int i = 0; ok && i < 3; i++) ok = !to_double(f[i], &v[i]);
  if (!ok) return cli_usage_error(cmd, "%s '%s': expected X,Y,Z (finite numbers, mm)", name, value);
  memcpy(dst, v, sizeof v);
  return 0;
}

int cli_parse_dtype(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_dtype_parse(value, (ctr_dtype *)dst) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': expected float32, uint16 or float16", name, value);
  return 0;
}

int cli_parse_range(const char *cmd, const char *name, const char *value, void *dst) {
  double lo, hi;
  int used = 0;
  if (sscanf(value, "%lf:%lf%n", &lo, &hi, &used) != 2 || value[used] || !isfinite(lo) ||
      !isfinite(hi) || !(lo < hi))
    return cli_usage_error(cmd, "%s '%s': expected LO:HI with LO < HI", name, value);
  ((double *)dst)[0] = lo;
  ((double *)dst)[1] = hi;
  return 0;
}

int cli_parse_mem(const char *cmd, const char *name, const char *value, void *dst) {
  if (ctr_size_parse(value, (uint64_t *)dst) != CTR_OK || *(uint64_t *)dst == 0)
    return cli_usage_error(cmd, "%s '%s': expected a size such as 8G, 512M or 1.5T (powers of "
                           "1024)", name, value);
  return 0;
}

int cli_parse_size2(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b;
  int used = 0;
  int64_t *d = dst;
  if (sscanf(value, "%lldx%lld%n", &a, &b, &used) == 2 && !value[used] && a > 0 && b > 0) {
    d[0] = a;
    d[1] = b;
    return 0;
  }
  used = 0;
  if (sscanf(value, "%lld%n", &a, &used) == 1 && !value[used] && a > 0) {
    d[0] = d[1] = a;
    return 0;
  }
  return cli_usage_error(cmd, "%s '%s': expected N or NXxNY", name, value);
}

int cli_parse_format(const char *cmd, const char *name, const char *value, void *dst) {
  ctr_file_format f;
  if (ctr_format_parse(value, &f) != CTR_OK) { /* the detail lists the format table's names */
    const char *names = strstr(cli_detail(), "expected ");
    return cli_usage_error(cmd, "%s '%s': %s", name, value, names ? names : cli_detail());
  }
  *(ctr_file_format *)dst = f;
  return 0;
}

int cli_parse_threads(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v;
  if (to_int64(value, &v) || v < 0 || v > 4096)
    return cli_usage_error(cmd, "%s '%s': expected a thread count in 0 .. 4096 (0 = all cores)",
                           name, value);
  *(int *)dst = (int)v;
  return 0;
}

int cli_parse_device(const char *cmd, const char *name, const char *value, void *dst) {
  cli_common *c = dst;
  int64_t index;
  if (!strcmp(value, "auto")) {
    c->device = CTR_DEVICE_AUTO;
    c->device_index = -1;
  } else if (!strcmp(value, "cpu")) {
    c->device = CTR_DEVICE_CPU;
    c->device_index = -1;
  } else if (!strcmp(value, "cuda") || !strcmp(value, "gpu")) {
    c->device = CTR_DEVICE_CUDA;
    c->device_index = -1;
  } else if ((!strncmp(value, "cuda:", 5) && !to_int64(value + 5, &index)) && index >= 0 &&
             index < 1024) {
    c->device = CTR_DEVICE_CUDA;
    c->device_index = (int)index;
  } else {
    return cli_usage_error(cmd, "%s '%s': expected auto, cpu, cuda or cuda:N", name, value);
  }
  return 0;
}

int cli_parse_gpus(const char *cmd, const char *name, const char *value, void *dst) {
  cli_common *c = dst;
  if (!strcmp(value, "all")) {
    c->ndevices = 0;
    c->device_index = -1;
    if (c->device != CTR_DEVICE_CPU) c->device = CTR_DEVICE_CUDA;
    return 0;
  }
  int n = 0;
  const char *p = value;
  while (*p) {
    char *end;
    errno = 0;
    const long v = strtol(p, &end, 10);
    if (end == p || errno || v < 0 || v > 1023 || (*end && *end != ','))
      return cli_usage_error(cmd, "%s '%s': expected GPU numbers separated by commas (e.g. "
                             "0,1,3) or all", name, value);
    for (int k = 0; k < n; k++)
      if (c->devices[k] == (int)v)
        return cli_usage_error(cmd, "%s '%s': GPU %ld is listed twice", name, value, v);
    if (n == (int)(sizeof c->devices / sizeof c->devices[0]))
      return cli_usage_error(cmd, "%s '%s': at most %d GPUs", name, value, n);
    c->devices[n++] = (int)v;
    p = *end ? end + 1 : end;
    if (*end && !*p) return cli_usage_error(cmd, "%s '%s': a GPU number after the last comma",
                                            name, value);
  }
  if (!n) return cli_usage_error(cmd, "%s '': expected GPU numbers (e.g. 0,1) or all", name);
  if (c->device == CTR_DEVICE_CPU)
    return cli_usage_error(cmd, "%s with --device cpu: choose one of them", name);
  c->device = CTR_DEVICE_CUDA;
  c->device_index = -1;
  c->ndevices = n;
  return 0;
}

/* ---- Tuning switches ------------------------------------------------------ */

/* Applies "KEY=VALUE" to t (a key too long for the buffer is cut, and
 * then unknown). */
static ctr_status apply_tune(ctr_tuning *t, const char *setting) {
  const char *eq = strchr(setting, '=');
  char key[64];
  const size_t n = eq ? (size_t)(eq - setting) : strlen(setting);
  snprintf(key, sizeof key, "%.*s", (int)n, setting);
  return ctr_tuning_set(t, key, eq ? eq + 1 : "");
}

int cli_parse_tune(const char *cmd, const char *name, const char *value, void *dst) {
  cli_common *c = dst;
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  if (!strchr(value, '='))
    return cli_usage_error(cmd, "%s '%s': expected KEY=VALUE (docs/tuning.md)", name, value);
  if (apply_tune(&t, value) != CTR_OK)
    return cli_usage_error(cmd, "%s '%s': %s", name, value, cli_detail());
  if (c->ntune >= CLI_MAX_TUNE)
    return cli_usage_error(cmd, "%s: at most %d settings", name, CLI_MAX_TUNE);
  c->tune[c->ntune++] = value;
  return 0;
}

int cli_parse_zarr_shard(const char *cmd, const char *name, const char *value, void *dst) {
  int64_t v;
  if (to_int64(value, &v) || v < 0 || v > 256)
    return cli_usage_error(cmd, "%s '%s': expected 0 .. 256 chunks a shard side (0 = no "
                           "sharding)", name, value);
  ((cli_common *)dst)->zarr_shard = v ? (int)v : -1;
  return 0;
}

int cli_tuning(const char *cmd, const cli_common *c, ctr_tuning *t) {
  ctr_status st = ctr_tuning_init(t, CTR_TUNING_VERSION);
  if (st == CTR_OK) st = ctr_tuning_set_env(t, environ);
  for (int i = 0; st == CTR_OK && c && i < c->ntune; i++) st = apply_tune(t, c->tune[i]);
  if (st == CTR_OK && c && c->zarr_shard) t->zarr_shard = c->zarr_shard;
  return st == CTR_OK ? 0 : cli_fail(cmd, st);
}
