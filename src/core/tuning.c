/* The tuning table (include/ctrecon/tuning.h, docs/tuning.md): its
 * defaults, its text form (ctr_tuning_set: the CLI's --tune and CTRECON_*
 * variables), its checks, and the copy a context keeps. The only library
 * file that reads the environment: XDG_CACHE_HOME and HOME, for the default
 * kernel cache directory, once per context. */
#include "core/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>

/* Versions, ctr_tuning_init and the prefix copies of a caller's older
 * struct: the descriptor ctr__struct_tuning (versions.c), as for every
 * versioned struct. */
static const ctr_tuning k_defaults = CTR_TUNING_INIT;

/* ---- Checks ---------------------------------------------------------------- */

static int is_tristate(int v) { return v >= -1 && v <= 1; }

/* x by y threads: both 0, or both >= 1 with lo .. 256 in all (a multiple
 * of 32 when whole_warps). */
static int block_ok(int x, int y, int lo, int whole_warps) {
  if (x == 0 && y == 0) return 1;
  if (x < 1 || y < 1 || x > 256 || y > 256) return 0;
  return x * y >= lo && x * y <= 256 && (!whole_warps || x * y % 32 == 0);
}

/* Every field in its range; the detail names the field. */
static ctr_status check_fields(const ctr_tuning *t) {
  const int s = t->bp_slices;
  if (!(s == 0 || s == 1 || s == 2 || s == 4 || s == 8 || s == 16 || s == 32))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_slices", CTR__V_INT(s),
                   "ctr_tuning.bp_slices is %d, expected 1, 2, 4, 8, 16 or 32 (0 = the default)",
                   s);
  if (!block_ok(t->bp_block_x, t->bp_block_y, 32, 0))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_block_x",
                   "ctr_tuning.bp_block_x x bp_block_y is %d x %d, expected 32 .. 256 threads "
                   "(both 0 = the default)", t->bp_block_x, t->bp_block_y);
  if (!(t->bp_regs == 0 || t->bp_regs == 64 || t->bp_regs == 80))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_regs", CTR__V_INT(t->bp_regs),
                   "ctr_tuning.bp_regs is %d, expected 64 or 80 (0 = chosen per "
                   "launch)", t->bp_regs);
  if (!((t->bp_chunk_first == 0 && t->bp_chunk_rest == 0) ||
        (t->bp_chunk_first > 0 && t->bp_chunk_rest > 0)))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_chunk_first",
                   "ctr_tuning.bp_chunk_first, bp_chunk_rest are %d, %d: "
                   "expected both > 0 (both 0 = the modelled schedule)", t->bp_chunk_first,
                   t->bp_chunk_rest);
  if (t->bp_split < -1 || t->bp_split > 2)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_split", CTR__V_INT(t->bp_split),
                   "ctr_tuning.bp_split is %d, expected -1 (off), 0 (modelled), "
                   "1 or 2 (levels)", t->bp_split);
  for (int j = 0; j < t->bp_split; j++) {
    const int pa = j ? t->bp_split_views[j - 1] : 0, pz = j ? t->bp_split_slices[j - 1] : 0;
    if (t->bp_split_views[j] <= pa || t->bp_split_slices[j] <= pz)
      CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_split_views",
                     "ctr_tuning.bp_split_views[%d], bp_split_slices[%d] are "
                     "%d, %d: expected increasing values > 0", j, j, t->bp_split_views[j],
                     t->bp_split_slices[j]);
  }
  if (!(t->pet_z == 0 || t->pet_z == 1 || t->pet_z == 8 || t->pet_z == 16 || t->pet_z == 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.pet_z", CTR__V_INT(t->pet_z),
                   "ctr_tuning.pet_z is %d, expected 1, 8, 16 or 24 (0 = the default)", t->pet_z);
  if (!(t->pet_lc == 0 || t->pet_lc == 4 || t->pet_lc == 8))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.pet_lc", CTR__V_INT(t->pet_lc),
                   "ctr_tuning.pet_lc is %d, expected 4 or 8 (0 = 4)", t->pet_lc);
  if (!block_ok(t->pet_block_x, t->pet_block_y, 32, 1))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_tuning.pet_block_x",
                   "ctr_tuning.pet_block_x x pet_block_y is %d x %d, expected whole warps, at "
                   "most 256 threads (both 0 = the default)", t->pet_block_x, t->pet_block_y);
  if (t->pet_split < 0 || t->pet_split > 8)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.pet_split", CTR__V_INT(t->pet_split),
                   "ctr_tuning.pet_split is %d, expected 1 .. 8 (0 = the "
                   "default)", t->pet_split);
  if (t->fbp_hybrid_tex < -1)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_hybrid_tex",
                   CTR__V_INT(t->fbp_hybrid_tex),
                   "ctr_tuning.fbp_hybrid_tex is %d, expected >= -1 (-1 = none, "
                   "0 = the default)", t->fbp_hybrid_tex);
  if (t->fbp_tex_chunk < -1)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_tex_chunk",
                   CTR__V_INT(t->fbp_tex_chunk),
                   "ctr_tuning.fbp_tex_chunk is %d, expected >= -1 (-1 = none, "
                   "0 = the default)", t->fbp_tex_chunk);
  if (t->read_threads < 0 || t->read_threads > 64)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.read_threads",
                   CTR__V_INT(t->read_threads),
                   "ctr_tuning.read_threads is %d, expected 1 .. 64 (1 = "
                   "through H5Dread, 0 = the default, 8)", t->read_threads);
  if (t->host_transfer < 0 || t->host_transfer > 3)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.host_transfer", CTR__V_INT(t->host_transfer),
                   "ctr_tuning.host_transfer is %d, expected 0 (auto), 1 (staged), 2 "
                   "(registered) or 3 (driver)", t->host_transfer);
  if (t->host_threads < 0 || t->host_threads > 256)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.host_threads", CTR__V_INT(t->host_threads),
                   "ctr_tuning.host_threads is %d, expected 1 .. 256 (0 = the context's)",
                   t->host_threads);
  if (t->zarr_shard < -1 || t->zarr_shard > 256)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.zarr_shard", CTR__V_INT(t->zarr_shard),
                   "ctr_tuning.zarr_shard is %d, expected 1 .. 256 chunks a shard side (-1 = "
                   "none, 0 = the default)", t->zarr_shard);
  if (t->host_stage_kib != 0 && (t->host_stage_kib < 64 || t->host_stage_kib > 1048576))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.host_stage_kib", CTR__V_INT(t->host_stage_kib),
                   "ctr_tuning.host_stage_kib is %d, expected 64 .. 1048576 (0 = 16384)",
                   t->host_stage_kib);
  const int occ = t->fbp_occupancy;
  if (!(occ == -1 || occ == 0 || occ == 50 || occ == 75 || occ == 100))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_occupancy", CTR__V_INT(occ),
                   "ctr_tuning.fbp_occupancy is %d, expected 50, 75 or 100 (%% of 2048 threads "
                   "per SM; 0 = the default, -1 = no target)", occ);
  if (t->fbp_carveout < -1 || t->fbp_carveout > 100)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_carveout", CTR__V_INT(t->fbp_carveout),
                   "ctr_tuning.fbp_carveout is %d, expected 1 .. 100 (%% shared memory), -1 (0 %%: "
                   "the most L1) or 0 (the driver's choice)", t->fbp_carveout);
  if (t->fbp_angle_cache < 0 || t->fbp_angle_cache > 3)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_angle_cache",
                   CTR__V_INT(t->fbp_angle_cache),
                   "ctr_tuning.fbp_angle_cache is %d, expected 1 (shared), 2 (offset), 3 "
                   "(registers) or 0 (the default)", t->fbp_angle_cache);
  static const char *const tri[] = {"pet_const", "tune", "direct_io", "bp_alu"};
  const int triv[] = {t->pet_const, t->tune, t->direct_io, t->bp_alu};
  for (int i = 0; i < 4; i++)
    if (!is_tristate(triv[i]))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tuning.%s is %d, expected -1 (off), 0 (the default) "
               "or 1 (on)", tri[i], triv[i]);
  return CTR_OK;
}

/* ---- Text form ----------------------------------------------------------- */

/* A whole decimal int (no trailing text). */
static int parse_int(const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < INT_MIN || v > INT_MAX) return 0;
  *out = (int)v;
  return 1;
}

/* Up to n ints separated by `sep`; returns how many (0: not that form). */
static int parse_ints(const char *s, char sep, int *out, int n) {
  char buf[128];
  if (strlen(s) >= sizeof buf) return 0;
  snprintf(buf, sizeof buf, "%s", s);
  int k = 0;
  for (char *p = buf, *q; k < n; p = q + 1) {
    q = strchr(p, sep);
    if (q) *q = '\0';
    if (!parse_int(p, &out[k++])) return 0;
    if (!q) return k;
  }
  return 0; /* more than n */
}

static int word_is(const char *s, const char *const *words) {
  for (; *words; words++)
    if (!strcasecmp(s, *words)) return 1;
  return 0;
}
static const char *const k_on[] = {"1", "on", "yes", "true", NULL};
static const char *const k_off[] = {"0", "off", "no", "false", NULL};

/* on|off -> 1|-1. */
static int parse_switch(const char *v, int *out) {
  if (word_is(v, k_on)) *out = 1;
  else if (word_is(v, k_off)) *out = -1;
  else return 0;
  return 1;
}

/* N >= 1 -> N, "0" or "none" -> -1 (the CTRECON_FBP_* syntax). */
static int parse_count_or_none(const char *v, int *out) {
  if (!strcmp(v, "0") || !strcasecmp(v, "none") || !strcasecmp(v, "off")) *out = -1;
  else if (!parse_int(v, out) || *out < 1) return 0;
  return 1;
}

/* fbp_carveout: driver -> 0, shared -> 100, l1 -> -1, a percentage N -> N
 * (0: -1, the most L1). */
static int parse_carveout(const char *v, int *out) {
  if (!strcasecmp(v, "driver")) *out = 0;
  else if (!strcasecmp(v, "shared")) *out = 100;
  else if (!strcasecmp(v, "l1")) *out = -1;
  else if (!parse_int(v, out) || *out < 0 || *out > 100) return 0;
  else if (*out == 0) *out = -1;
  return 1;
}

typedef enum { K_INT, K_PAIR_X, K_PAIR_COMMA, K_SPLIT, K_SWITCH, K_COUNT, K_WORD, K_STRING,
               K_CARVEOUT } key_kind;

/* The keys of the text form: one per setting, named as the variables
 * CTRECON_<KEY> that came before the table. */
typedef struct key_def {
  const char *key;
  key_kind kind;
  size_t off, off2; /* field(s) */
  const char *syntax;
  const char *const *words; /* K_WORD: the values 1, 2, ... by name (NULL-terminated) */
} key_def;

static const char *const k_transfer_words[] = {"staged", "registered", "driver", NULL};
static const char *const k_angle_cache_words[] = {"shared", "offset", "registers", NULL};

#define F(f) offsetof(ctr_tuning, f)
static const key_def k_keys[] = {
    {"bp_slices", K_INT, F(bp_slices), 0, "1, 2, 4, 8, 16 or 32", NULL},
    {"bp_block", K_PAIR_X, F(bp_block_x), F(bp_block_y), "XxY, e.g. 32x4", NULL},
    {"bp_regs", K_INT, F(bp_regs), 0, "64 or 80", NULL},
    {"bp_chunks", K_PAIR_COMMA, F(bp_chunk_first), F(bp_chunk_rest), "FIRST,REST, e.g. 4,32", NULL},
    {"bp_split", K_SPLIT, F(bp_split), 0, "off (or 0) or A0,Z0[,A1,Z1]", NULL},
    {"pet_z", K_INT, F(pet_z), 0, "1, 8, 16 or 24", NULL},
    {"pet_lc", K_INT, F(pet_lc), 0, "4 or 8", NULL},
    {"pet_block", K_PAIR_X, F(pet_block_x), F(pet_block_y), "XxY, e.g. 48x2", NULL},
    {"pet_split", K_INT, F(pet_split), 0, "1 .. 8", NULL},
    {"pet_const", K_SWITCH, F(pet_const), 0, "on or off", NULL},
    {"fbp_hybrid_tex", K_COUNT, F(fbp_hybrid_tex), 0, "a count >= 1, or 0 for none", NULL},
    {"fbp_tex_chunk", K_COUNT, F(fbp_tex_chunk), 0, "a count >= 1, or 0 for none", NULL},
    {"tune", K_SWITCH, F(tune), 0, "on or off", NULL},
    {"cache_dir", K_STRING, F(cache_dir), 0, "a directory", NULL},
    {"direct_io", K_SWITCH, F(direct_io), 0, "on or off", NULL},
    {"read_threads", K_INT, F(read_threads), 0, "1 .. 64 (1: through H5Dread)", NULL},
    {"host_transfer", K_WORD, F(host_transfer), 0, "staged, registered or driver", k_transfer_words},
    {"host_threads", K_INT, F(host_threads), 0, "1 .. 256", NULL},
    {"host_stage_kib", K_INT, F(host_stage_kib), 0, "64 .. 1048576", NULL},
    {"zarr_shard", K_COUNT, F(zarr_shard), 0, "chunks a shard side, 1 .. 256, or 0 for none", NULL},
    {"fbp_occupancy", K_COUNT, F(fbp_occupancy), 0, "50, 75 or 100 (% of 2048 threads per SM), or 0 for none", NULL},
    {"fbp_carveout", K_CARVEOUT, F(fbp_carveout), 0, "driver, shared, l1 or a percentage of shared memory 0 .. 100", NULL},
    {"fbp_angle_cache", K_WORD, F(fbp_angle_cache), 0, "shared, offset or registers", k_angle_cache_words},
    {"bp_alu", K_SWITCH, F(bp_alu), 0, "on or off", NULL},
};
#undef F
#define NKEYS (sizeof k_keys / sizeof k_keys[0])

#define FIELD(t, off) ((int *)((char *)(t) + (off)))

/* Parses v into the fields of d in *t; 0 if v has not d's form. */
static int parse_value(const key_def *d, const char *v, ctr_tuning *t) {
  int *a = FIELD(t, d->off), *b = d->off2 ? FIELD(t, d->off2) : NULL, x[4];
  if (d->kind == K_STRING) {
    *(const char **)((char *)t + d->off) = *v ? v : NULL;
    return 1;
  }
  if (!*v || !strcasecmp(v, "auto")) { /* the default */
    *a = 0;
    if (b) *b = 0;
    if (d->kind == K_SPLIT) memset(t->bp_split_views, 0, 2 * sizeof(int)),
                            memset(t->bp_split_slices, 0, 2 * sizeof(int));
    return 1;
  }
  switch (d->kind) {
    case K_INT: return parse_int(v, a);
    case K_SWITCH: return parse_switch(v, a);
    case K_COUNT: return parse_count_or_none(v, a);
    case K_PAIR_X:
    case K_PAIR_COMMA:
      if (!strcmp(v, "0")) return *a = *b = 0, 1;
      if (parse_ints(v, d->kind == K_PAIR_X ? 'x' : ',', x, 2) != 2) return 0;
      return *a = x[0], *b = x[1], 1;
    case K_SPLIT: {
      if (word_is(v, k_off)) return *a = -1, 1;
      const int n = parse_ints(v, ',', x, 4);
      if (n != 2 && n != 4) return 0;
      *a = n / 2;
      for (int j = 0; j < 2; j++) {
        t->bp_split_views[j] = j < n / 2 ? x[2 * j] : 0;
        t->bp_split_slices[j] = j < n / 2 ? x[2 * j + 1] : 0;
      }
      return 1;
    }
    case K_WORD:
      for (int i = 0; d->words[i]; i++)
        if (!strcasecmp(v, d->words[i])) return *a = i + 1, 1;
      return 0;
    case K_CARVEOUT: return parse_carveout(v, a);
    case K_STRING: break;
  }
  return 0;
}

ctr_status ctr_tuning_set(ctr_tuning *t, const char *key, const char *value) {
  if (!t || !key || !value)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tuning_set: t, key and value are required");
  CTR_CHECK(ctr__struct_check(&ctr__struct_tuning, t));
  const key_def *d = NULL;
  for (size_t i = 0; i < NKEYS && !d; i++)
    if (!strcmp(k_keys[i].key, key)) d = &k_keys[i];
  if (!d) {
    char list[512] = "";
    for (size_t i = 0; i < NKEYS; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
               k_keys[i].key);
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "unknown tuning key '%s': expected one of %s", key, list);
  }
  /* the caller's version of the struct: only its members are read or
   * written (not the padding after its last one, where a later version's
   * field may lie: read_threads after version 1's direct_io) */
  ctr_tuning c;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_tuning, &c, t));
  const size_t fsize = d->kind == K_STRING ? sizeof(const char *) : sizeof(int);
  if (!ctr__struct_holds(&ctr__struct_tuning, t, d->off, fsize) ||
      (d->off2 && !ctr__struct_holds(&ctr__struct_tuning, t, d->off2, fsize)) ||
      !parse_value(d, value, &c))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "tuning %s = '%s': expected %s (or auto for the default)%s",
             key, value, d->syntax,
             ctr__struct_holds(&ctr__struct_tuning, t, d->off, fsize)
                 ? "" : "; this version of ctr_tuning has no such field (fill it with "
                        "ctr_tuning_init(&t, CTR_TUNING_VERSION))");
  CTR_CHECK(check_fields(&c));
  return ctr__struct_store(&ctr__struct_tuning, t, &c);
}

ctr_status ctr_tuning_set_env(ctr_tuning *t, char *const *envp) {
  if (!t) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tuning_set_env: t is NULL");
  for (; envp && *envp; envp++) {
    const char *e = *envp;
    for (size_t i = 0; i < NKEYS; i++) {
      char name[64] = "CTRECON_";
      size_t n = strlen(name);
      for (const char *k = k_keys[i].key; *k && n + 2 < sizeof name; k++)
        name[n++] = (char)(*k >= 'a' && *k <= 'z' ? *k - 'a' + 'A' : *k);
      name[n++] = '=';
      name[n] = '\0';
      if (strncmp(e, name, n)) continue;
      if (ctr_tuning_set(t, k_keys[i].key, e + n) != CTR_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", ctr_error_detail());
        CTR_FAIL(CTR_E_INVALID_ARGUMENT, "environment variable %.*s: %s", (int)(n - 1), e, why);
      }
      break;
    }
  }
  return CTR_OK;
}

/* ---- The context's copy -------------------------------------------------- */

const ctr_tuning *ctr__tuning(const ctr_context *ctx) { return ctx ? &ctx->tuning : &k_defaults; }

/* The default cache directory: $XDG_CACHE_HOME/ctrecon, else
 * $HOME/.cache/ctrecon (malloc'd; NULL when neither is set). */
static char *default_cache_dir(void) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *base = xdg && *xdg ? xdg : home && *home ? home : NULL;
  if (!base) return NULL;
  const char *tail = base == xdg ? "/ctrecon" : "/.cache/ctrecon";
  char *dir = malloc(strlen(base) + strlen(tail) + 1);
  if (dir) strcat(strcpy(dir, base), tail);
  return dir;
}

ctr_status ctr__tuning_adopt(ctr_context *ctx, const ctr_tuning *in) {
  ctr_tuning t = k_defaults;
  if (in) {
    CTR_CHECK(ctr__struct_copy(&ctr__struct_tuning, &t, in));
    CTR_CHECK(check_fields(&t));
  }
  char *dir = NULL;
  if (t.cache_dir && *t.cache_dir) {
    dir = strdup(t.cache_dir);
    if (!dir) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy ctr_tuning.cache_dir");
  } else {
    dir = default_cache_dir(); /* NULL (no HOME, or no memory): no cache, each run tunes */
  }
  ctx->tuning = t;
  ctx->tuning.cache_dir = dir;
  return CTR_OK;
}

void ctr__tuning_release(ctr_context *ctx) {
  if (!ctx) return;
  free((char *)ctx->tuning.cache_dir);
  ctx->tuning.cache_dir = NULL;
}
