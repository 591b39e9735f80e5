/* Context, logging, progress, library information, dtypes and arrays. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef CTR_HAVE_CUDA
#define CTR_HAVE_CUDA 0
#endif

/* Implemented by the CUDA backend when built; 0 devices otherwise. */
int ctr__cuda_device_count(void);
#if !CTR_HAVE_CUDA
int ctr__cuda_device_count(void) { return 0; }
void ctr__cuda_why_none(char *why, size_t n) { snprintf(why, n, "this build has no CUDA backend"); }
int ctr__gpu_memory_device(const void *p) {
  (void)p;
  return -1;
}
ctr_status ctr__gpu_wait_for(int device) {
  (void)device;
  return CTR_OK;
}
uint64_t ctr__gpu_cached_bytes(const ctr_context *ctx, int device) {
  (void)ctx;
  (void)device;
  return 0;
}
void ctr__gpu_cache_release(const ctr_context *ctx) { (void)ctx; }
ctr_status ctr__cuda_free_memory(int device, uint64_t *free_bytes) {
  *free_bytes = 0;
  CTR_FAIL(CTR_E_UNSUPPORTED, "CUDA device %d: this build has no CUDA backend", device);
}
#endif

const char *ctr_version_string(void) { return CTR_VERSION_STRING; }

unsigned ctr_features(void) {
  unsigned f = CTR_FEATURE_TIFF | CTR_FEATURE_PNG;
#ifdef _OPENMP
  f |= CTR_FEATURE_OPENMP;
#endif
#if CTR_HAVE_CUDA
  f |= CTR_FEATURE_CUDA;
#endif
#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5
  f |= CTR_FEATURE_HDF5;
#endif
#if defined(CTR_HAVE_MPI) && CTR_HAVE_MPI
  f |= CTR_FEATURE_MPI;
#endif
#if defined(CTR_HAVE_ZMQ) && CTR_HAVE_ZMQ
  f |= CTR_FEATURE_ZMQ;
#endif
  return f;
}

size_t ctr_dtype_size(ctr_dtype t) {
  switch (t) {
    case CTR_DTYPE_FLOAT32: return 4;
    case CTR_DTYPE_UINT16: return 2;
    case CTR_DTYPE_FLOAT16: return 2;
  }
  return 0;
}

const char *ctr_dtype_name(ctr_dtype t) {
  switch (t) {
    case CTR_DTYPE_FLOAT32: return "float32";
    case CTR_DTYPE_UINT16: return "uint16";
    case CTR_DTYPE_FLOAT16: return "float16";
  }
  return "unknown";
}

ctr_status ctr_dtype_parse(const char *name, ctr_dtype *out) {
  if (name && (!strcmp(name, "float32") || !strcmp(name, "f32") || !strcmp(name, "float"))) {
    *out = CTR_DTYPE_FLOAT32;
    return CTR_OK;
  }
  if (name && (!strcmp(name, "uint16") || !strcmp(name, "u16"))) {
    *out = CTR_DTYPE_UINT16;
    return CTR_OK;
  }
  if (name && (!strcmp(name, "float16") || !strcmp(name, "f16") || !strcmp(name, "half"))) {
    *out = CTR_DTYPE_FLOAT16;
    return CTR_OK;
  }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "unknown dtype '%s': expected float32, uint16 or float16",
           name ? name : "(null)");
}

ctr_array ctr_array_make(void *data, ctr_dtype dtype, int ndim, const int64_t *dims) {
  ctr_array a;
  memset(&a, 0, sizeof a);
  a.data = data;
  a.dtype = dtype;
  a.ndim = ndim < 0 ? 0 : (ndim > CTR_MAX_DIMS ? CTR_MAX_DIMS : ndim);
  for (int i = 0; i < a.ndim; i++) a.dims[i] = dims[i];
  return a;
}

int64_t ctr_array_get_element_count(const ctr_array *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->dims[i];
  return a->ndim > 0 ? n : 0;
}

/* The context's CUDA devices: the list given (each visible, no repeats), else
 * device_index alone, else every visible GPU. */
static ctr_status resolve_devices(const ctr_context_options *o, int ndev, ctr_context *c) {
  if (o->ndevices < 0 || o->ndevices > CTR__MAX_DEVICES)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_context_options.ndevices",
                   CTR__V_INT(o->ndevices),
                   "ctr_context_options.ndevices is %d: expected 0 .. %d",
                   o->ndevices, CTR__MAX_DEVICES);
  if (o->ndevices > 0 && !o->devices)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_context_options.ndevices",
                   CTR__V_INT(o->ndevices), "ctr_context_options.ndevices is %d but devices is NULL",
                   o->ndevices);
  if (o->ndevices > 0) {
    for (int i = 0; i < o->ndevices; i++) {
      const int d = o->devices[i];
      if (d < 0 || d >= ndev)
        CTR_FAIL_FIELD_VALUE(CTR_E_NO_DEVICE, "ctr_context_options.devices", CTR__V_INT(d),
                       "ctr_context_options.devices[%d] is GPU %d, but %d GPU%s visible "
                       "(ordinals 0 .. %d)", i, d, ndev, ndev == 1 ? " is" : "s are", ndev - 1);
      for (int k = 0; k < i; k++)
        if (o->devices[k] == d)
          CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_context_options.devices", CTR__V_INT(d),
                         "ctr_context_options.devices lists GPU %d twice", d);
      c->devices[i] = d;
    }
    c->ndevices = o->ndevices;
  } else if (o->device_index >= 0) {
    if (o->device_index >= ndev)
      CTR_FAIL_FIELD_VALUE(CTR_E_NO_DEVICE, "ctr_context_options.device_index",
                     CTR__V_INT(o->device_index),
                     "ctr_context_options.device_index is GPU %d, but %d GPU%s visible",
                     o->device_index, ndev, ndev == 1 ? " is" : "s are");
    c->devices[0] = o->device_index;
    c->ndevices = 1;
  } else {
    c->ndevices = ndev < CTR__MAX_DEVICES ? ndev : CTR__MAX_DEVICES;
    for (int i = 0; i < c->ndevices; i++) c->devices[i] = i;
  }
  return CTR_OK;
}

ctr_status ctr_context_create(const ctr_context_options *opts, ctr_context **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_context_create: out is NULL");
  *out = NULL;
  ctr_context_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_context_options, &o, opts));
  if (o.num_threads < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "num_threads is %d, expected >= 0", o.num_threads);
  ctr_device_kind resolved = CTR_DEVICE_CPU;
  int ndev = ctr__cuda_device_count();
  switch (o.device) {
    case CTR_DEVICE_CPU: resolved = CTR_DEVICE_CPU; break;
    case CTR_DEVICE_AUTO: resolved = ndev > 0 ? CTR_DEVICE_CUDA : CTR_DEVICE_CPU; break;
    case CTR_DEVICE_CUDA:
      if (!CTR_HAVE_CUDA)
        CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_context_options.device", CTR__V_INT(o.device),
                 "device cuda requested but this build has no CUDA backend "
                 "(rebuild with nvcc present and -DCTRECON_CUDA=on, or use the CPU: "
                 "ctr_context_options.device = CTR_DEVICE_CPU)");
      if (ndev <= 0) {
        char why[256];
        ctr__cuda_why_none(why, sizeof why);
        CTR_FAIL_FIELD_VALUE(CTR_E_NO_DEVICE, "ctr_context_options.device", CTR__V_INT(o.device),
                       "device cuda requested but no usable GPU was found: %s "
                       "(use the CPU: ctr_context_options.device = CTR_DEVICE_CPU)", why);
      }
      resolved = CTR_DEVICE_CUDA;
      break;
    default:
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "unknown device kind %d", (int)o.device);
  }
  ctr_context *c = ctr__calloc(1, sizeof *c, "context");
  if (!c) return CTR_E_OUT_OF_MEMORY;
  c->opts = o;
  c->opts.devices = NULL;
  c->resolved = resolved;
  if (resolved == CTR_DEVICE_CUDA) {
    const ctr_status st = resolve_devices(&o, ndev, c);
    if (st != CTR_OK) {
      free(c);
      return st;
    }
  }

  {
    const ctr_status st = ctr__tuning_adopt(c, o.tuning);
    if (st != CTR_OK) {
      free(c);
      return st;
    }
  }
  c->opts.tuning = &c->tuning;
  pthread_mutex_init(&c->memo.mu, NULL);
  pthread_mutex_init(&c->gpu_cache.mu, NULL);
  c->refs = 1;
  *out = c;
  return CTR_OK;
}

int ctr__context_memo_get(const ctr_context *ctx, const char *key, char *value, size_t n) {
  if (!ctx) return 0;
  ctr__memo *m = (ctr__memo *)&ctx->memo; /* a cache: logically const */
  int found = 0;
  pthread_mutex_lock(&m->mu);
  for (int i = 0; i < m->n && !found; i++)
    if (!strcmp(m->key[i], key) && strlen(m->value[i]) < n) {
      snprintf(value, n, "%s", m->value[i]);
      found = 1;
    }
  pthread_mutex_unlock(&m->mu);
  return found;
}

void ctr__context_memo_put(const ctr_context *ctx, const char *key, const char *value) {
  if (!ctx || strlen(key) >= sizeof ctx->memo.key[0] || strlen(value) >= sizeof ctx->memo.value[0])
    return;
  ctr__memo *m = (ctr__memo *)&ctx->memo;
  pthread_mutex_lock(&m->mu);
  int i = 0;
  while (i < m->n && strcmp(m->key[i], key)) i++;
  if (i == m->n) { /* a new key: the next slot, the oldest once full */
    i = m->n < CTR__MEMO_SLOTS ? m->n++ : m->next;
    m->next = (i + 1) % CTR__MEMO_SLOTS;
    snprintf(m->key[i], sizeof m->key[i], "%s", key);
  }
  snprintf(m->value[i], sizeof m->value[i], "%s", value);
  pthread_mutex_unlock(&m->mu);
}

int ctr_context_get_device_count(const ctr_context *ctx) { return ctx ? ctx->ndevices : 0; }

int ctr_context_get_device_ordinal(const ctr_context *ctx, int i) {
  return ctx && i >= 0 && i < ctx->ndevices ? ctx->devices[i] : -1;
}

int ctr__context_gpu(const ctr_context *ctx, int i) {
  return ctx && i >= 0 && i < ctx->ndevices ? ctx->devices[i] : 0;
}

ctr_status ctr__gpu_arrays(const ctr_context *ctx, const char *fn, int gpu_ok, int n,
                          const void *const ptr[], const char *const name[], int gpu[]) {
  const int cuda = ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA;
  for (int i = 0; i < n; i++) gpu[i] = ctr__gpu_memory_device(ptr[i]);
  for (int i = 0; i < n; i++) {
    if (gpu[i] < 0) continue;
    if (!cuda)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: the %s array is in the memory of GPU %d, which a CPU "
               "context cannot read: create the context with device CTR_DEVICE_CUDA (ctrecon: "
               "--device cuda), or copy the array to host memory", fn, name[i], gpu[i]);
    if (!gpu_ok)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: the %s array is in the memory of GPU %d: this "
               "function reads and writes host memory only (copy the array to host memory)", fn,
               name[i], gpu[i]);
  }
  for (int i = 0; i < n; i++) { /* each GPU once */
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= gpu[j] == gpu[i];
    if (gpu[i] >= 0 && !seen) CTR_CHECK(ctr__gpu_wait_for(gpu[i]));
  }
  return CTR_OK;
}

ctr_status ctr__gpu_rule(const ctr_context *ctx, const char *fn, int gpu_ok, const void *a,
                         const char *aname, const void *b, const char *bname) {
  const void *ptr[2] = {a, b};
  const char *const name[2] = {aname, bname};
  int gpu[2];
  return ctr__gpu_arrays(ctx, fn, gpu_ok, bname ? 2 : 1, ptr, name, gpu);
}

/* The one caller of the cache's release (src/gpu/gpu_buffers.h). */
void ctr_context_release_memory(ctr_context *ctx) { ctr__gpu_cache_release(ctx); }

static void context_destroy(ctr_context *ctx) {
  ctr__tuning_release(ctx);
  ctr_context_release_memory(ctx);
  pthread_mutex_destroy(&ctx->gpu_cache.mu);
  pthread_mutex_destroy(&ctx->memo.mu);
  free(ctx);
}

/* The count is the object's state, not the context's value: logically const. */
void ctr__context_hold(const ctr_context *ctx) {
  if (ctx) __atomic_add_fetch(&((ctr_context *)ctx)->refs, 1, __ATOMIC_RELAXED);
}

void ctr__context_drop(const ctr_context *ctx) {
  if (ctx && __atomic_sub_fetch(&((ctr_context *)ctx)->refs, 1, __ATOMIC_ACQ_REL) == 0)
    context_destroy((ctr_context *)ctx);
}

void ctr_context_free(ctr_context *ctx) {
  if (!ctx) return;
  ctr_context_release_memory(ctx); /* now, even while objects hold it */
  ctr__context_drop(ctx);
}

ctr_device_kind ctr_context_get_device(const ctr_context *ctx) {
  return ctx ? ctx->resolved : CTR_DEVICE_CPU;
}

void ctr__log(const ctr_context *ctx, ctr_log_level level, const char *fmt, ...) {
  if (!ctx || !ctx->opts.log) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx->opts.log(ctx->opts.user, level, msg);
}

/* The calling thread's progress scope (ctr__progress_scope). */
static _Thread_local struct {
  int on;
  const char *stage;
  double lo, hi;
} g_scope;

void ctr__progress_scope(const char *stage, double lo, double hi) {
  g_scope.on = 1;
  g_scope.stage = stage;
  g_scope.lo = lo;
  g_scope.hi = hi;
}

void ctr__progress_scope_end(void) { g_scope.on = 0; }

ctr_status ctr__progress(const ctr_context *ctx, const char *stage, double fraction) {
  if (!ctx) return CTR_OK;
  if (g_scope.on) {
    stage = g_scope.stage;
    fraction = g_scope.lo + fraction * (g_scope.hi - g_scope.lo);
  }
  if (ctx->progress_hook) CTR_CHECK(ctx->progress_hook(ctx->progress_hook_user, &fraction));
  if (!ctx->opts.progress) return CTR_OK;
  if (ctx->opts.progress(ctx->opts.user, stage, fraction))
    CTR_FAIL(CTR_E_CANCELLED, "%s cancelled by the progress callback", stage);
  return CTR_OK;
}

int ctr__num_threads(const ctr_context *ctx) {
  if (ctx && ctx->opts.num_threads > 0) return ctx->opts.num_threads;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

#if !CTR_HAVE_CUDA
void *ctr_host_alloc(size_t bytes) { return ctr__aligned_alloc(bytes, "host buffer"); }
void ctr_host_free(void *p) { ctr__aligned_free(p); }
ctr_status ctr_host_register(void *p, size_t bytes) {
  (void)p;
  (void)bytes;
  return CTR_OK;
}
void ctr_host_unregister(void *p) { (void)p; }
int ctr_cuda_get_device_count(void) { return 0; }
ctr_status ctr_cuda_get_device_info(int index, ctr_device_info *out) {
  (void)out;
  CTR_FAIL(CTR_E_UNSUPPORTED, "CUDA device %d: this build has no CUDA backend", index);
}
#endif
