/* Strict JSON objects: every input file the library reads (geometry,
 * phantom, PET histo-set, FBP tuning cache) rejects members it does not know,
 * naming the nearest known one, so a typo never falls back to a default. */
#ifndef CTR_JSON_KEYS_H
#define CTR_JSON_KEYS_H

#include "core/internal.h"

struct cJSON;

/* Levenshtein distance between a and b (bytes), capped at 255. */
int ctr__edit_distance(const char *a, const char *b);
/* CTR_E_FORMAT for the first member of obj that is not one of `allowed`
 * ("<file>: <where>.<key>: unknown field; did you mean '<nearest>'?
 * (expected one of: ...)") or appears twice. `where` is the JSON path of the
 * object ("" for the root). */
ctr_status ctr__json_check_members(const char *file, const char *where, const struct cJSON *obj,
                                   const char *const *allowed, int n);

#endif
