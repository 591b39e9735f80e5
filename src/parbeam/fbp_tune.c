/* The parallel-beam kernel selector and its cache: which backprojection
 * kernel was fastest for a GPU and a problem size, measured once by a short
 * tuning run and kept in a JSON file in the context's ctr_tuning.cache_dir
 * (read and written with the autotuner's file helpers, core/autotune.h). A
 * missing, unreadable, corrupt (an unknown or
 * duplicate member included: strict JSON) or stale cache is an empty cache
 * (the caller tunes again); writes go to a temporary name and are renamed,
 * so a crash never leaves a half-written cache. */
#include "parbeam/fbp_tune.h"

#include "core/autotune.h"
#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_VERSION 1
#define CACHE_NAME "fbp-kernels.json"

/* The cache file in `dir` (NULL or "": none). */
static int cache_path(const char *dir, char *buf, size_t n) {
  return dir && *dir && snprintf(buf, n, "%s/" CACHE_NAME, dir) < (int)n;
}

/* The cache's entries array (a valid, current cache), or NULL. */
static cJSON *load(const char *dir, cJSON **root) {
  char path[4096];
  *root = NULL;
  if (!cache_path(dir, path, sizeof path)) return NULL;
  char *text = ctr__tune_read_text(path, NULL);
  if (!text) return NULL;
  *root = cJSON_Parse(text);
  free(text);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(*root, "version");
  cJSON *e = cJSON_GetObjectItemCaseSensitive(*root, "entries");
  if (!cJSON_IsNumber(v) || v->valueint != CACHE_VERSION || !cJSON_IsArray(e)) return NULL;
  /* Strict members: a cache with a field this version does not write is
   * corrupt (read as empty, rewritten by the next store). */
  static const char *const k_root[] = {"version", "entries"};
  static const char *const k_entry[] = {"gpu", "nbins", "nangles", "nx", "ny",
                                        "interp", "multi", "kernel", "gups"};
  int ok = cJSON_IsObject(*root) &&
           ctr__json_check_members(CACHE_NAME, "", *root, k_root, 2) == CTR_OK;
  const cJSON *x;
  cJSON_ArrayForEach(x, e) ok = ok && cJSON_IsObject(x) &&
                                ctr__json_check_members(CACHE_NAME, "entries[]", x, k_entry, 9) ==
                                    CTR_OK;
  if (!ok) {
    ctr_error_clear();
    return NULL;
  }
  return e;
}

static int matches(const cJSON *e, const ctr__fbp_tune_key *k) {
  const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(e, "gpu");
  static const char *const names[6] = {"nbins", "nangles", "nx", "ny", "interp", "multi"};
  const int64_t want[6] = {k->nbins, k->nangles, k->nx, k->ny, k->interp, k->multi};
  if (!cJSON_IsString(gpu) || strcmp(gpu->valuestring, k->gpu) != 0) return 0;
  for (int i = 0; i < 6; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, names[i]);
    /* compared as doubles: exact for these sizes, and a fraction or a value
     * beyond int64 (whose cast would be undefined) matches nothing */
    if (!cJSON_IsNumber(x) || x->valuedouble != (double)want[i]) return 0;
  }
  return 1;
}

int ctr__fbp_tune_lookup(const char *dir, const ctr__fbp_tune_key *k, char *kernel, size_t n) {
  cJSON *root;
  const cJSON *entries = load(dir, &root), *e;
  int found = 0;
  cJSON_ArrayForEach(e, entries) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "kernel");
    if (matches(e, k) && cJSON_IsString(name) && strlen(name->valuestring) < n) {
      snprintf(kernel, n, "%s", name->valuestring);
      found = 1;
      break;
    }
  }
  cJSON_Delete(root);
  return found;
}

ctr_status ctr__fbp_tune_store(const char *dir, const ctr__fbp_tune_key *k, const char *kernel,
                                double gups) {
  char path[4096];
  if (!cache_path(dir, path, sizeof path))
    CTR_FAIL(CTR_E_IO, "no directory for the kernel cache: set ctr_tuning.cache_dir, "
             "XDG_CACHE_HOME or HOME");
  cJSON *root;
  cJSON *entries = load(dir, &root);
  if (!entries) { /* missing, corrupt or stale: start a fresh cache */
    cJSON_Delete(root);
    root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "version", CACHE_VERSION);
    entries = cJSON_AddArrayToObject(root, "entries");
  }
  /* Replace an entry with the same key. */
  for (int i = cJSON_GetArraySize(entries) - 1; i >= 0; i--)
    if (matches(cJSON_GetArrayItem(entries, i), k)) cJSON_DeleteItemFromArray(entries, i);
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "gpu", k->gpu);
  cJSON_AddNumberToObject(e, "nbins", (double)k->nbins);
  cJSON_AddNumberToObject(e, "nangles", (double)k->nangles);
  cJSON_AddNumberToObject(e, "nx", (double)k->nx);
  cJSON_AddNumberToObject(e, "ny", (double)k->ny);
  cJSON_AddNumberToObject(e, "interp", (double)k->interp);
  cJSON_AddNumberToObject(e, "multi", (double)k->multi);
  cJSON_AddStringToObject(e, "kernel", kernel);
  cJSON_AddNumberToObject(e, "gups", gups);
  cJSON_AddItemToArray(entries, e);
  const ctr_status st = ctr__tune_write_json(path, root); /* core/autotune.c */
  cJSON_Delete(root);
  return st;
}

ctr_status ctr__fbp_tune_choose(const ctr_context *ctx, const ctr__fbp_tune_key *k,
                                const char *const *names, int n, ctr__fbp_time_fn time,
                                void *user, int *chosen) {
  const ctr_tuning *t = ctr__tuning(ctx);
  *chosen = -1;
  if (t->tune < 0 || n < 1) return CTR_OK;
  /* Once per context and key: every GPU's pipeline asks once a band, and a
   * cache that cannot be written would be timed again each time. */
  char memo_key[CTR__MEMO_KEY], name[32];
  snprintf(memo_key, sizeof memo_key, "fbp-kernel|%s|%lld|%lld|%lld|%lld|%d|%d", k->gpu,
           (long long)k->nbins, (long long)k->nangles, (long long)k->nx, (long long)k->ny,
           k->interp, k->multi);
  const int kept = ctr__context_memo_get(ctx, memo_key, name, sizeof name);
  if (kept || ctr__fbp_tune_lookup(t->cache_dir, k, name, sizeof name))
    for (int i = 0; i < n; i++)
      if (!strcmp(name, names[i])) {
        *chosen = i;
        if (!kept) ctr__context_memo_put(ctx, memo_key, names[i]);
        return CTR_OK;
      }
  ctr_error_clear();
  int best = 0;
  double best_ms = 1e300;
  for (int i = 0; i < n; i++) {
    double ms = 0;
    CTR_CHECK(time(user, i, &ms));
    if (ms < best_ms) {
      best_ms = ms;
      best = i;
    }
  }
  *chosen = best;
  ctr__context_memo_put(ctx, memo_key, names[best]);
  /* A cache that cannot be written costs a re-tune in the next context, nothing more. */
  const double gups = (double)k->nangles * (double)(k->nx * k->ny) / (best_ms * 1e-3) / 1e9;
  if (ctr__fbp_tune_store(t->cache_dir, k, names[best], gups) != CTR_OK) ctr_error_clear();
  return CTR_OK;
}
