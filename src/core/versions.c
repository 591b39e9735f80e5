/* Versioned public structs: the one place that reads a version (the
 * helpers declared in core/internal.h) and the table of every public
 * struct's versions, with its ctr_<name>_init function. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

/* ---- The helpers ---------------------------------------------------------- */

enum { MEASURE, READ, WRITE };

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static unsigned version_of(const void *s) {
  unsigned v;
  memcpy(&v, s, sizeof v);
  return v;
}

static ctr_status bad_version(const ctr__struct_desc *d, const char *what, unsigned v,
                              unsigned max) {
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "%s.version is %u: this library accepts %s versions 1 to %u (fill it with "
           "%s_init or the INIT macro of the header it was compiled with)",
           what, v, d->name, max, d->name);
}

/* Bytes of a struct without embedded versioned structs at version v. */
static size_t flat_size(const ctr__struct_desc *d, unsigned v) {
  return round_up(d->versions[v - 1].end, d->align);
}

/* Moves the members of version v between `user` (the caller's struct, laid
 * out as version v) and `full` (the current layout): READ user -> full,
 * WRITE full -> user, MEASURE neither. *size = version v's size. An
 * embedded struct is read in the version its own field gives (at most the
 * one v holds) and written in the one v holds. */
static ctr_status move(const ctr__struct_desc *d, unsigned v, int mode, unsigned char *user,
                       unsigned char *full, size_t *size) {
  const ctr__struct_version *e = &d->versions[v - 1];
  size_t cur = 0, old = 0; /* offsets in the current layout and in version v's */
  for (int i = 0; i < d->nnested && d->nested_offset[i] < e->end; i++) {
    const ctr__struct_desc *n = d->nested_desc[i];
    const size_t len = d->nested_offset[i] - cur;
    if (mode == READ) memcpy(full + cur, user + old, len);
    if (mode == WRITE) memcpy(user + old, full + cur, len);
    old += len;
    cur += len;
    const unsigned held = e->nested[i];
    if (mode == READ) {
      const unsigned nv = version_of(user + old);
      if (nv < 1 || nv > held) {
        char what[160];
        snprintf(what, sizeof what, "%s.%s", d->name, d->nested_name[i]);
        return bad_version(n, what, nv, held);
      }
      memcpy(full + cur, user + old, n->versions[nv - 1].end);
      memcpy(full + cur, &n->current, sizeof n->current);
    } else if (mode == WRITE) {
      memcpy(user + old, full + cur, n->versions[held - 1].end);
      memcpy(user + old, &held, sizeof held);
    }
    old += flat_size(n, held);
    cur += n->size;
  }
  if (e->end > cur) {
    if (mode == READ) memcpy(full + cur, user + old, e->end - cur);
    if (mode == WRITE) memcpy(user + old, full + cur, e->end - cur);
    old += e->end - cur;
  }
  *size = round_up(old, d->align);
  return CTR_OK;
}

ctr_status ctr__struct_check(const ctr__struct_desc *d, const void *s) {
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s is NULL", d->name);
  const unsigned v = version_of(s);
  if (v < 1 || v > d->current) return bad_version(d, d->name, v, d->current);
  return CTR_OK;
}

ctr_status ctr__struct_copy(const ctr__struct_desc *d, void *dst, const void *src) {
  memcpy(dst, d->defaults, d->size);
  if (!src) return CTR_OK;
  CTR_CHECK(ctr__struct_check(d, src));
  size_t size;
  CTR_CHECK(move(d, version_of(src), READ, (unsigned char *)src, dst, &size));
  memcpy(dst, &d->current, sizeof d->current);
  return CTR_OK;
}

ctr_status ctr__struct_store(const ctr__struct_desc *d, void *dst, const void *src) {
  CTR_CHECK(ctr__struct_check(d, dst));
  const unsigned v = version_of(dst);
  size_t size;
  CTR_CHECK(move(d, v, WRITE, dst, (unsigned char *)src, &size));
  memcpy(dst, &v, sizeof v);
  return CTR_OK;
}

ctr_status ctr__struct_init(const ctr__struct_desc *d, void *s, unsigned version) {
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s_init: the struct pointer is NULL", d->name);
  if (version < 1 || version > d->current)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s_init: version %u, this library accepts %s versions 1 to %u", d->name, version,
             d->name, d->current);
  size_t size;
  CTR_CHECK(move(d, version, WRITE, s, (unsigned char *)d->defaults, &size));
  memcpy(s, &version, sizeof version);
  return CTR_OK;
}

ctr_status ctr__struct_desc_check(const ctr__struct_desc *d) {
  if (!d->name || !d->defaults || !d->versions || d->current < 1 || d->size < sizeof(unsigned))
    CTR_FAIL(CTR_E_INTERNAL, "%s: incomplete descriptor", d->name ? d->name : "(unnamed)");
  if (version_of(d->defaults) != d->current)
    CTR_FAIL(CTR_E_INTERNAL, "%s: the defaults hold version %u, the table %u versions", d->name,
             version_of(d->defaults), d->current);
  if (d->versions[d->current - 1].end != d->size)
    CTR_FAIL(CTR_E_INTERNAL, "%s: the current version ends at %zu, sizeof is %zu", d->name,
             d->versions[d->current - 1].end, d->size);
  if (d->nnested < 0 || d->nnested > CTR__STRUCT_MAX_NESTED)
    CTR_FAIL(CTR_E_INTERNAL, "%s: %d embedded structs", d->name, d->nnested);
  for (unsigned v = 1; v <= d->current; v++) {
    const ctr__struct_version *e = &d->versions[v - 1];
    if (e->end < sizeof(unsigned) || e->end > d->size ||
        (v > 1 && e->end < d->versions[v - 2].end))
      CTR_FAIL(CTR_E_INTERNAL, "%s: version %u ends at %zu (sizeof %zu)", d->name, v, e->end,
               d->size);
    for (int i = 0; i < d->nnested; i++) {
      const ctr__struct_desc *n = d->nested_desc[i];
      if (d->nested_offset[i] >= e->end) continue;
      /* an embedded struct is whole in every version that has a member after it */
      if (e->nested[i] < 1 || e->nested[i] > n->current ||
          (v > 1 && d->nested_offset[i] < d->versions[v - 2].end &&
           e->nested[i] < d->versions[v - 2].nested[i]))
        CTR_FAIL(CTR_E_INTERNAL, "%s version %u: %s at version %u (of 1 to %u)", d->name, v,
                 d->nested_name[i], e->nested[i], n->current);
      if (e->end < d->nested_offset[i] + n->size)
        CTR_FAIL(CTR_E_INTERNAL, "%s version %u ends inside %s", d->name, v, d->nested_name[i]);
    }
  }
  for (int i = 0; i < d->nnested; i++) {
    const ctr__struct_desc *n = d->nested_desc[i];
    if (!n || !d->nested_name[i] || n->nnested != 0 || n->align != d->align ||
        d->nested_offset[i] % d->align != 0 ||
        (i > 0 && d->nested_offset[i] < d->nested_offset[i - 1] + d->nested_desc[i - 1]->size) ||
        d->nested_offset[i] + n->size > d->size)
      CTR_FAIL(CTR_E_INTERNAL, "%s: embedded struct %d breaks the rules of core/internal.h",
               d->name, i);
    CTR_CHECK(ctr__struct_desc_check(n));
  }
  /* every version's size is at most the current one's and grows with it */
  size_t prev = 0;
  for (unsigned v = 1; v <= d->current; v++) {
    size_t size;
    CTR_CHECK(move(d, v, MEASURE, NULL, NULL, &size));
    if (size < prev || size > d->size)
      CTR_FAIL(CTR_E_INTERNAL, "%s: version %u is %zu bytes (sizeof %zu)", d->name, v, size,
               d->size);
    prev = size;
  }
  return CTR_OK;
}

/* ---- The public structs --------------------------------------------------- */

/* Filled by the tables of the following commits. */
const ctr__struct_desc *const ctr__structs[] = {NULL};
