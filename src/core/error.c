/* Status names and messages (generated from CTR_STATUS_LIST) and the
 * thread-local error detail. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

#if defined(_MSC_VER)
#define CTR__TLS __declspec(thread)
#else
#define CTR__TLS _Thread_local
#endif

static CTR__TLS char g_detail[1024];
/* The API field the error is about (ctr_error_get_field) and its value as
 * given (ctr_error_get_value); "" for none. */
static CTR__TLS char g_field[128];
static CTR__TLS char g_value[1024];

const char *ctr_status_name(ctr_status s) {
  switch (s) {
#define CTR__STATUS_NAME(name, value, msg) \
  case name:                              \
    return #name;
    CTR_STATUS_LIST(CTR__STATUS_NAME)
#undef CTR__STATUS_NAME
  }
  return "CTR_E_UNKNOWN";
}

const char *ctr_status_message(ctr_status s) {
  switch (s) {
#define CTR__STATUS_MSG(name, value, msg) \
  case name:                             \
    return msg;
    CTR_STATUS_LIST(CTR__STATUS_MSG)
#undef CTR__STATUS_MSG
  }
  return "unknown status";
}

const char *ctr_error_detail(void) { return g_detail; }

const char *ctr_error_get_field(void) { return g_field; }

const char *ctr_error_get_value(void) { return g_value; }

void ctr_error_clear(void) {
  g_detail[0] = '\0';
  g_field[0] = '\0';
  g_value[0] = '\0';
}

ctr_status ctr__error_setv(ctr_status status, const char *fmt, va_list ap) {
  char detail[sizeof g_detail];
  vsnprintf(detail, sizeof detail, fmt, ap); /* fmt's arguments may be g_detail */
  /* a detail raised again, or wrapped ("rank 1 of 2 (host): ..."), keeps the
   * field (and value) of the error it holds, as does one that names the
   * field; any other error is about no field */
  if (g_field[0] && !(g_detail[0] && strstr(detail, g_detail)) && !strstr(detail, g_field))
    g_field[0] = g_value[0] = '\0';
  memcpy(g_detail, detail, sizeof g_detail);
  return status;
}

static void set_field(const char *field, const char *value) {
  snprintf(g_field, sizeof g_field, "%s", field ? field : "");
  snprintf(g_value, sizeof g_value, "%s", field && value ? value : "");
}

ctr_status ctr__error_set_field(ctr_status status, const char *field, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctr__error_setv(status, fmt, ap);
  va_end(ap);
  set_field(field, NULL);
  return status;
}

ctr_status ctr__error_set_value(ctr_status status, const char *field, const char *value,
                                const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctr__error_setv(status, fmt, ap);
  va_end(ap);
  set_field(field, value);
  return status;
}

const char *ctr__value_int(char *buf, long long v) {
  snprintf(buf, 24, "%lld", v);
  return buf;
}

const char *ctr__value_uint(char *buf, unsigned long long v) {
  snprintf(buf, 24, "%llu", v);
  return buf;
}

const char *ctr__value_real(char *buf, double v) {
  for (int digits = 1; digits < 17; digits++) { /* the shortest that reads back */
    snprintf(buf, 32, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) return buf;
  }
  snprintf(buf, 32, "%.17g", v);
  return buf;
}

ctr_status ctr__error_set(ctr_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctr__error_setv(status, fmt, ap);
  va_end(ap);
  return status;
}

int ctr__mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) {
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "size overflow: %zu x %zu elements", a, b);
    return 0;
  }
  *out = a * b;
  return 1;
}

const char *ctr__format_bytes(double bytes, char *buf, size_t n) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    u++;
  }
  snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void *ctr__malloc(size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    char b[32];
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %s for %s",
                   ctr__format_bytes((double)bytes, b, sizeof b), what);
  }
  return p;
}

void *ctr__calloc(size_t n, size_t size, const char *what) {
  size_t bytes;
  if (!ctr__mul_size(n, size, &bytes)) return NULL;
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    char b[32];
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %s for %s",
                   ctr__format_bytes((double)bytes, b, sizeof b), what);
  }
  return p;
}

void *ctr__aligned_alloc(size_t bytes, const char *what) {
  size_t rounded = (bytes + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) {
    char b[32];
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %s for %s",
                   ctr__format_bytes((double)bytes, b, sizeof b), what);
  }
  return p;
}

void ctr__aligned_free(void *p) { free(p); }
