/* Library messages in the tool's words: the API fields an error is about
 * (ctr_error_get_field) and the API names a message mentions, as the
 * tool's flags and values. */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The API fields that library errors are about (ctr_error_get_field: the C
 * name the library raises them with) and the flag that sets each; `sw`
 * marks a flag without a value (the library's "set FIELD" reads "add
 * FLAG"). A field raised by the library without a row here is named by the
 * command's option of the member's name, or by the member alone.
 * tests/error_fields.sh checks this table against the library's raising
 * sites both ways. */
static const cli_field k_fields[] = {
    {"ctr_circular_params.detector", "--detector", 0},
    {"ctr_cluster_options.timeout", "--rank-timeout", 0},
    {"ctr_context_options.device", "--device", 0},
    {"ctr_context_options.device_index", "--gpus", 0},
    {"ctr_context_options.devices", "--gpus", 0},
    {"ctr_context_options.ndevices", "--gpus", 0},
    {"ctr_corrections.bin_x", "--bin", 0},
    {"ctr_corrections.bin_y", "--bin's NY", 0},
    {"ctr_corrections.center_max", "--center-range", 0},
    {"ctr_corrections.center_method", "--center-method", 0},
    {"ctr_corrections.center_min", "--center-range", 0},
    {"ctr_corrections.dezinger", "--dezinger", 0},
    {"ctr_corrections.dezinger_size", "--dezinger-size", 0},
    {"ctr_corrections.distance_mm", "--distance", 0},
    {"ctr_corrections.energy_kev", "--energy", 0},
    {"ctr_corrections.paganin_delta_beta", "--paganin-delta-beta", 0},
    {"ctr_corrections.stitch_360", "--stitch-360", 1},
    {"ctr_corrections.stripe", "--stripe", 0},
    {"ctr_corrections.stripe_level", "--stripe-level", 0},
    {"ctr_corrections.stripe_sigma", "--stripe-sigma", 0},
    {"ctr_corrections.stripe_size", "--stripe-size", 0},
    {"ctr_corrections.stripe_wavelet", "--stripe-wavelet", 0},
    {"ctr_fbp_options.cutoff", "--cutoff", 0},
    {"ctr_fbp_options.gpu_budget", "--gpu-budget", 0},
    {"ctr_fbp_options.interp", "--interp", 0},
    {"ctr_fbp_options.kernel", "--bp-kernel", 0},
    {"ctr_fbp_options.strict", "--strict", 1},
    {"ctr_fbp_options.window", "--window", 0},
    {"ctr_fbp_stream_options.angle_count", "--angle-subset's count", 0},
    {"ctr_fbp_stream_options.angle_first", "--angle-subset's first projection", 0},
    {"ctr_fbp_stream_options.center_row", "--center-row", 0},
    {"ctr_fbp_stream_options.gpu_budget", "--gpu-budget", 0},
    {"ctr_fbp_stream_options.input_scale", "--input-scale", 0},
    {"ctr_fbp_stream_options.nrows", "--rows", 0},
    {"ctr_fbp_stream_options.out_dtype", "--out-dtype", 0},
    {"ctr_fbp_stream_options.out_offset", "--out-offset", 0},
    {"ctr_fbp_stream_options.out_scale", "--out-scale", 0},
    {"ctr_fbp_stream_options.read_ahead", "--read-ahead", 0},
    {"ctr_fbp_stream_options.resume", "--resume", 1},
    {"ctr_fbp_stream_options.row0", "--rows", 0},
    {"ctr_fbp_stream_options.sinograms", "--sinograms", 0},
    {"ctr_fdk_options.offset_overlap", "--offset-overlap", 0},
    {"ctr_fdk_options.offset_weight", "--offset-weight", 0},
    {"ctr_fdk_options.short_scan", "--short-scan", 0},
    {"ctr_fdk_options.strict", "--strict", 1},
    {"ctr_fdk_stream_options.out_dtype", "--out-dtype", 0},
    {"ctr_fdk_stream_options.resume", "--resume", 1},
    {"ctr_fdk_stream_options.workers", "--workers", 0},
    {"ctr_iterate_options.algorithm", "--algorithm", 0},
    {"ctr_iterate_options.box", "--box", 0},
    {"ctr_iterate_options.checkpoint", "--checkpoint", 0},
    {"ctr_iterate_options.checkpoint_every", "--checkpoint-every", 0},
    {"ctr_iterate_options.init", "--init", 0},
    {"ctr_iterate_options.iterations", "--iterations", 0},
    {"ctr_iterate_options.max_slab_slices", "--max-slab-slices", 0},
    {"ctr_iterate_options.nonneg", "--nonneg", 1},
    {"ctr_iterate_options.relaxation", "--relaxation", 0},
    {"ctr_iterate_options.resume", "--resume", 1},
    {"ctr_iterate_options.subsets", "--subsets", 0},
    {"ctr_iterate_options.tolerance", "--tolerance", 0},
    {"ctr_iterate_options.tv_iterations", "--tv-iterations", 0},
    {"ctr_iterate_options.tv_weight", "--tv-weight", 0},
    {"ctr_iterate_options.weights", "--weights", 0},
    {"ctr_iterate_options.i0", "--i0", 0},
    {"ctr_iterate_options.penalty", "--penalty", 0},
    {"ctr_iterate_options.beta", "--beta", 0},
    {"ctr_iterate_options.huber_delta", "--huber-delta", 0},
    {"ctr_live_options.preview_rows", "--preview-rows", 0},
    {"ctr_live_options.spool", "--spool", 0},
    {"ctr_live_options.resume", "--resume", 1},
    {"ctr_live_options.accumulate", "--accumulate", 0},
    {"ctr_helical_params.angle_range_deg", "--angle-range", 0},
    {"ctr_helical_params.nviews", "--views", 0},
    {"ctr_helical_params.pitch_mm", "--pitch", 0},
    {"ctr_helical_params.window_deg", "--helix-window", 0},
    {"ctr_helical_params.z0_mm", "--z0", 0},
    {"ctr_parallel_params.angle_range_deg", "--angle-range", 0},
    {"ctr_parallel_params.angle_start_deg", "--angle-start", 0},
    {"ctr_parallel_params.pixel_size", "--pixel-size", 0},
    {"ctr_parallel_params.voxel", "--voxel", 0},
    {"ctr_parallel_params.tilt_deg", "--tilt", 0},
    {"ctr_projector_options.max_slab_slices", "--max-slab-slices", 0},
    {"ctr_projector_options.pair", "--pair", 0},
    {"ctr_projector_options.workers", "--workers", 0},
    {"ctr_replay_options.rate", "--rate", 0},
    {"ctr_source_options.count", "--count", 0},
    {"ctr_tuning.zarr_shard", "--zarr-shard", 0},
    {"gpu_budget", "--gpu-budget", 0},
    {"host_budget", "--host-budget", 0},
    {"overwrite", "--force", 1},
    {"scratch_dir", "--scratch-dir", 0},
    {NULL, NULL, 0},
};

/* API constants and functions that messages name (values of a field, or
 * advice) as the tool's words. */
static const struct {
  const char *name, *words;
} k_names[] = {
    {"CTR_CENTER_AUTO", "--center-method auto"},
    {"CTR_CENTER_VO", "--center-method vo"},
    {"CTR_CENTER_CORRELATION", "--center-method correlation"},
    {"CTR_STRIPE_NONE", "--stripe none"},
    {"CTR_STRIPE_SORTING", "--stripe sorting"},
    {"CTR_STRIPE_WAVELET", "--stripe wavelet"},
    {"CTR_FBP_LINEAR", "--interp linear"},
    {"CTR_FBP_NEAREST", "--interp nearest"},
    {"CTR_PAIR_MATCHED", "--pair matched"},
    {"CTR_PAIR_FAST", "--pair fast"},
    {"CTR_DEVICE_CUDA", "--device cuda"},
    {"CTR_DEVICE_CPU", "--device cpu"},
    {"CTR_ITERATE_SIRT", "sirt"},
    {"CTR_ITERATE_CGLS", "cgls"},
    {"CTR_ITERATE_OS_SART", "os-sart"},
    {"CTR_ITERATE_FISTA_TV", "fista-tv"},
    {"ctr_iterate", "ctrecon iterate"},
    {"ctr_geometry_offset_detector", "docs/geometry.md"},
};

const cli_field *cli_fields(void) { return k_fields; }

const cli_field *cli_field_find(const char *field) {
  for (const cli_field *f = k_fields; field && f->field; f++)
    if (!strcmp(f->field, field)) return f;
  return NULL;
}

static const char *name_words(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
    if (strlen(k_names[i].name) == len && !strncmp(k_names[i].name, name, len))
      return k_names[i].words;
  return NULL;
}

/* The options of the command being run (cli_parse). */
static const cli_opt *g_command_opts;

void cli_fields_command(const cli_opt *opts) { g_command_opts = opts; }

static int word_char(char c) { return c == '_' || isalnum((unsigned char)c); }

/* The flag word of a field's flag ("--bin" of "--bin's NY"). */
static size_t option_len(const char *flag) {
  size_t n = 0;
  while (flag[n] == '-' || isalnum((unsigned char)flag[n])) n++;
  return n;
}

/* A field without a row: the command's option "--<member>" (underscores as
 * dashes) when it has one, else the member alone; never the C struct. */
static void unmapped_field(const char *member, size_t len, char *out, size_t n) {
  char flag[96];
  size_t k = (size_t)snprintf(flag, sizeof flag, "--%.*s", (int)len, member);
  for (size_t j = 2; j < k && j < sizeof flag; j++)
    if (flag[j] == '_') flag[j] = '-';
  for (const cli_opt *o = g_command_opts; o && o->name; o++)
    if (!strcmp(o->name, flag)) {
      snprintf(out, n, "%s", flag);
      return;
    }
  snprintf(out, n, "%.*s", (int)len, member);
}

/* The rendering state: the output, the struct whose members a bare name
 * may be ("ctr_corrections.bin_x, bin_y": the struct of the last field
 * named, at first that of the error's field), the last flag written. */
typedef struct {
  char *buf;
  size_t n, o;
  char structure[64];
  const char *last_flag;
  size_t last_end; /* o after the last flag */
} render;

static void put(render *r, const char *s, size_t len) {
  while (len-- && r->o + 1 < r->n) r->buf[r->o++] = *s++;
}

/* Right after "FLAG, ": a list of members ("row0, nrows"). */
static int in_list(const render *r) {
  return r->last_flag && r->o == r->last_end + 2 && !strncmp(r->buf + r->o - 2, ", ", 2);
}

/* Writes a field's flag: a list's second name of the same flag is dropped
 * ("--rows" for "row0, nrows"); "set FLAG" reads "add FLAG" for a switch;
 * "FIELD = CTR_X" is the value's own words ("--device cpu"). Returns the
 * bytes of `p` used after the name. */
static size_t put_field(render *r, const cli_field *f, const char *p) {
  const size_t fl = option_len(f->flag);
  if (in_list(r) && option_len(r->last_flag) == fl && !strncmp(r->last_flag, f->flag, fl)) {
    r->o -= 2; /* the same flag again */
    return 0;
  }
  if (f->sw && r->o >= 4 && !strncmp(r->buf + r->o - 4, "set ", 4))
    memcpy(r->buf + r->o - 4, "add ", 4);
  size_t used = 0;
  if (!strncmp(p, " = CTR_", 7)) {
    size_t k = 3;
    while (word_char(p[k])) k++;
    const char *w = name_words(p + 3, k - 3);
    if (w && !strncmp(w, f->flag, fl)) {
      put(r, w, strlen(w));
      used = k;
      r->last_flag = NULL;
      return used;
    }
  }
  put(r, f->flag, strlen(f->flag));
  r->last_flag = f->flag;
  r->last_end = r->o;
  return used;
}

/* One name at p (len bytes, a whole word, maybe "ctr_s.m"): written in the
 * tool's words; returns the bytes of p used, 0 when it is not an API name.
 * A leading "ctr_<function>: " is dropped: the API call that failed, which
 * the tool's user did not make. */
static size_t put_name(render *r, const char *p, size_t len) {
  const char *dot = memchr(p, '.', len);
  char key[160];
  if (len >= sizeof key) return 0;
  if (dot) { /* ctr_<struct>.<member> */
    snprintf(r->structure, sizeof r->structure, "%.*s", (int)(dot - p), p);
    snprintf(key, sizeof key, "%.*s", (int)len, p);
  } else if (r->structure[0] && (memchr(p, '_', len) || in_list(r))) {
    /* a member named alone: an identifier, or the next of a list */
    snprintf(key, sizeof key, "%s.%.*s", r->structure, (int)len, p);
  } else {
    key[0] = '\0';
  }
  const cli_field *f = cli_field_find(key);
  if (!f && !dot) {
    snprintf(key, sizeof key, "%.*s", (int)len, p);
    f = cli_field_find(key); /* a unique field: gpu_budget */
  }
  if (f) return len + put_field(r, f, p + len);
  if (dot) {
    char member[96];
    unmapped_field(dot + 1, len - (size_t)(dot + 1 - p), member, sizeof member);
    put(r, member, strlen(member));
    return len;
  }
  if (!strncmp(p, "ctr_", 4) && !strncmp(p + len, ": ", 2))
    return len + 2;
  const char *w = name_words(p, len);
  if (w) put(r, w, strlen(w));
  return w ? len : 0;
}

const char *cli_library_text(const char *text, const char *field, char *buf, size_t n) {
  render r = {buf, n, 0, "", NULL, 0};
  if (!n) return buf;
  const char *dot = field ? strchr(field, '.') : NULL;
  if (dot) snprintf(r.structure, sizeof r.structure, "%.*s", (int)(dot - field), field);
  for (const char *p = text ? text : ""; *p && r.o + 1 < n;) {
    size_t len = 0;
    if (word_char(*p) && (p == text || (!word_char(p[-1]) && p[-1] != '.'))) {
      while (word_char(p[len])) len++;
      if (p[len] == '.' && !strncmp(p, "ctr_", 4) && word_char(p[len + 1]))
        for (len++; word_char(p[len]);) len++;
      const size_t used = put_name(&r, p, len);
      if (used) {
        p += used;
        continue;
      }
      put(&r, p, len);
      p += len;
      continue;
    }
    buf[r.o++] = *p++;
  }
  buf[r.o] = '\0';
  return buf;
}

const char *cli_detail(void) {
  static char buf[2048];
  return cli_library_text(ctr_error_detail(), ctr_error_get_field(), buf, sizeof buf);
}
