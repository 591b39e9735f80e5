/* Strict JSON members with the nearest known name (json_keys.h). */
#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

int ctr__edit_distance(const char *a, const char *b) {
  enum { MAXLEN = 64 };
  size_t la = strlen(a), lb = strlen(b);
  if (la > MAXLEN) la = MAXLEN;
  if (lb > MAXLEN) lb = MAXLEN;
  int row[MAXLEN + 1];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      const int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb] < 255 ? row[lb] : 255;
}

const char *ctr_nearest_name(const char *s, const char *const *names, int n, int *distance) {
  const char *best = "";
  int dbest = 1 << 30;
  for (int i = 0; s && names && i < n; i++) {
    const int d = ctr__edit_distance(s, names[i]);
    if (d < dbest) {
      dbest = d;
      best = names[i];
    }
  }
  if (distance) *distance = n > 0 ? dbest : 0;
  return best;
}

ctr_status ctr__json_check_members(const char *file, const char *where, const cJSON *obj,
                                   const char *const *allowed, int n) {
  for (const cJSON *it = obj->child; it; it = it->next) {
    const char *key = it->string ? it->string : "?";
    int known = 0;
    for (int i = 0; i < n; i++) known |= !strcmp(key, allowed[i]);
    if (!known) {
      char list[512] = "";
      size_t len = 0;
      for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", allowed[i]);
      CTR_FAIL(CTR_E_FORMAT, "%s: %s%s%s: unknown field; did you mean '%s'? (expected one of: %s)",
               file, where, *where ? "." : "", key, ctr_nearest_name(key, allowed, n, NULL), list);
    }
    for (const cJSON *o = obj->child; o != it; o = o->next)
      if (o->string && !strcmp(o->string, key))
        CTR_FAIL(CTR_E_FORMAT, "%s: %s%s%s: duplicate field, expected it once", file, where,
                 *where ? "." : "", key);
  }
  return CTR_OK;
}
