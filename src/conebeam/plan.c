/* Memory planner of the streamed FDK pipeline (Lu et al. 2016, Alg. 2;
 * Okitsu et al. 2010, Sect. 3): chooses the subvolume size Z', the projection subset size N' and
 * where filtered projections wait between subvolumes, from explicit byte
 * budgets. Pure functions: no GPU, no allocation. */
#include "filter/filter.h"
#include "conebeam/engine.h"
#include "conebeam/plan_costs.h"
#include "conebeam/plan_split.h"
#include "io/io_internal.h" /* ctr__format_writer_bytes */

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *ctr_fdk_store_name(ctr_fdk_store s) {
  switch (s) {
    case CTR_FDK_STORE_AUTO: return "auto";
    case CTR_FDK_STORE_DEVICE: return "device";
    case CTR_FDK_STORE_HOST: return "host";
    case CTR_FDK_STORE_SCRATCH: return "scratch";
    case CTR_FDK_STORE_NONE: return "none";
  }
  return "unknown";
}

/* Slices per buffer between the backend and the writer thread. */
static uint64_t chunk_slices(const ctr_geometry *g, const ctr_fdk_plan_request *r) {
  const uint64_t slice = (uint64_t)g->vol.nx * (uint64_t)g->vol.ny * 4u;
  const uint64_t nz = (uint64_t)(r->nz ? r->nz : g->vol.nz - r->z0);
  uint64_t k = CTR__CHUNK_BYTES / slice;
  if (k < 1) k = 1;
  return k < nz ? k : nz;
}

/* Fixed (non-subvolume) memory of one candidate plan. */
typedef struct cost {
  uint64_t gpu_fixed, host_fixed;
  uint64_t gpu_per_slice, host_per_slice;
} cost;

/* Workers of a request (resolved: at least 1). */
static int workers_of(const ctr_fdk_plan_request *r) { return r->workers > 1 ? r->workers : 1; }

/* Views one engine sees: a projection split's share of whole batches, else
 * all. */
static int64_t engine_views(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t nb) {
  const int w = workers_of(r);
  if (w == 1 || r->split != CTR_FDK_SPLIT_PROJECTIONS) return g->nviews;
  const int64_t nbatches = (g->nviews + nb - 1) / nb, per = (nbatches + w - 1) / w;
  return per * nb < g->nviews ? per * nb : g->nviews;
}

/* A projection split's automatic batch: at most nb views, the batch count a
 * multiple of the workers, so every worker gets as many views as the others
 * (1200 views in 64s are 19 batches, 10 and 9 on two GPUs: one GPU idles for
 * a batch at the end; 20 of 60 split 10 and 10, and 5 each on four). */
static int64_t even_share(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t nb) {
  const int w = workers_of(r);
  if (w == 1 || r->split != CTR_FDK_SPLIT_PROJECTIONS) return nb;
  int64_t nbatches = (g->nviews + nb - 1) / nb;
  nbatches = (nbatches + w - 1) / w * w;
  return (g->nviews + nbatches - 1) / nbatches;
}

static int read_buffers(const ctr_fdk_plan_request *r) {
  if (r->input_in_memory) return 0;
  return workers_of(r) > 1 ? workers_of(r) + 2 : CTR__READ_BUFFERS;
}

static int slab_buffers(const ctr_fdk_plan_request *r) {
  if (r->output_in_memory) return 0;
  return workers_of(r) > 1 ? workers_of(r) + 1 : CTR__HOST_SLAB_BUFFERS;
}

/* Host memory the output format's writer holds of its own (an OME-Zarr
 * writer's rows of chunks): the workers of a volume split write their
 * subvolumes at once, each in order. */
static uint64_t writer_bytes(const ctr_geometry *g, const ctr_fdk_plan_request *r) {
  if (r->output_in_memory) return 0;
  const int streams = r->split == CTR_FDK_SPLIT_PROJECTIONS ? 1 : workers_of(r);
  return ctr__format_writer_bytes(r->out_format, g->vol.nx, g->vol.ny,
                                  r->nz ? r->nz : g->vol.nz - r->z0, r->vol_dtype, streams);
}

/* The backends' memory (each engine's own model; device memory is per
 * worker, host memory for all) plus the executor's buffers. */
static cost plan_cost(const ctr__engine_backend *be, const ctr_geometry *g,
                      const ctr_fdk_plan_request *r, int64_t nb, ctr_fdk_store store, int pair) {
  cost c;
  memset(&c, 0, sizeof c);
  const int w = workers_of(r);
  const int shared = w > 1 && r->split == CTR_FDK_SPLIT_VOLUME;
  const ctr__plan_candidate cand = {r, nb, store, pair, w, w > 1 ? r->split : CTR_FDK_SPLIT_VOLUME,
                                    engine_views(g, r, nb), shared};
  ctr__engine_cost e;
  be->cost(g, &cand, &e);
  c.gpu_fixed = e.device_fixed;
  c.gpu_per_slice = e.device_per_slice;
  c.host_fixed = e.host_fixed * (uint64_t)w;
  c.host_per_slice = e.host_per_slice * (uint64_t)w;
  const uint64_t raw = ctr__view_bytes(g, ctr_dtype_size(r->proj_dtype)) * (uint64_t)nb;
  const uint64_t filt = ctr__view_bytes(g, 4) * (uint64_t)nb;
  const uint64_t slice = (uint64_t)g->vol.nx * (uint64_t)g->vol.ny * 4u;
  /* The executor: the reader's ring, the filtered views kept on the host
   * (or passed between the workers of a volume split), each worker's staging
   * for the scratch file, the writer's buffers and what the output
   * format's writer holds of its own. */
  c.host_fixed += (uint64_t)read_buffers(r) * raw;
  if (store == CTR_FDK_STORE_HOST) c.host_fixed += ctr__view_bytes(g, 4) * (uint64_t)g->nviews;
  else if (shared && store != CTR_FDK_STORE_SCRATCH) c.host_fixed += (uint64_t)CTR__TRANSIT_SLOTS(w) * filt;
  if (store == CTR_FDK_STORE_SCRATCH)
    c.host_fixed += (uint64_t)w * (CTR__READ_BUFFERS + (shared ? 2u : 1u)) * filt;
  c.host_fixed += (uint64_t)slab_buffers(r) * chunk_slices(g, r) * slice;
  c.host_fixed += writer_bytes(g, r);
  return c;
}

/* Largest Z' the budgets allow for a candidate (0 if none). */
static int64_t max_slices(const ctr_fdk_plan_request *r, const cost *c, int64_t nz) {
  int64_t z = nz;
  if (r->device == CTR_DEVICE_CUDA) {
    if (r->gpu_budget <= c->gpu_fixed) return 0;
    const uint64_t by_gpu = (r->gpu_budget - c->gpu_fixed) / c->gpu_per_slice;
    if (by_gpu < (uint64_t)z) z = (int64_t)by_gpu;
  }
  if (r->host_budget < c->host_fixed) return 0;
  if (c->host_per_slice) {
    const uint64_t by_host = (r->host_budget - c->host_fixed) / c->host_per_slice;
    if (by_host < (uint64_t)z) z = (int64_t)by_host;
  }
  if (r->max_slab_slices > 0 && r->max_slab_slices < z) z = r->max_slab_slices;
  /* a volume split gives every worker a subvolume */
  const int w = workers_of(r);
  if (w > 1 && r->split == CTR_FDK_SPLIT_VOLUME && z > (nz + w - 1) / w) z = (nz + w - 1) / w;
  return z;
}

static void fill_plan(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t z0, int64_t nz,
                      int64_t nb, ctr_fdk_store store, int pair, int64_t zs, const cost *c,
                      ctr_fdk_plan *p) {
  memset(p, 0, sizeof *p);
  p->device = r->device;
  p->z0 = z0;
  p->nz = nz;
  p->slab_slices = zs;
  p->nslabs = (nz + zs - 1) / zs;
  p->views_per_batch = nb;
  p->nbatches = (g->nviews + nb - 1) / nb;
  p->store = store;
  p->pair = pair;
  p->read_buffers = read_buffers(r);
  p->host_slab_buffers = slab_buffers(r);
  p->workers = workers_of(r);
  p->split = p->workers > 1 ? r->split : CTR_FDK_SPLIT_VOLUME;
  /* no idle worker: a volume split needs a subvolume each, a projection
   * split a subset each */
  if (p->split == CTR_FDK_SPLIT_VOLUME && p->workers > p->nslabs) p->workers = (int)p->nslabs;
  if (p->split == CTR_FDK_SPLIT_PROJECTIONS && p->workers > p->nbatches) p->workers = (int)p->nbatches;
  if (p->workers < 2) p->split = CTR_FDK_SPLIT_VOLUME;
  p->chunk_slices = (int64_t)chunk_slices(g, r);
  if (p->chunk_slices > zs) p->chunk_slices = zs;
  p->gpu_bytes = r->device == CTR_DEVICE_CUDA ? c->gpu_fixed + c->gpu_per_slice * (uint64_t)zs : 0;
  p->host_bytes = c->host_fixed + c->host_per_slice * (uint64_t)zs;
  p->scratch_bytes = store == CTR_FDK_STORE_SCRATCH ? ctr__view_bytes(g, 4) * (uint64_t)g->nviews : 0;
}

static const char *size_text(uint64_t b, char *buf, size_t n) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024.0 && i < 4) {
    v /= 1024.0;
    i++;
  }
  snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", v, unit[i]);
  return buf;
}

/* One line describing a plan (ctr_fdk_plan_describe). */
static int describe(const ctr_fdk_plan *p, char *buf, size_t n) {
  char gb[32], hb[32], sb[32];
  const int64_t last = p->nz - (p->nslabs - 1) * p->slab_slices;
  int k = snprintf(buf, n,
                   "%lld subvolume%s of %lld slice%s%s, %lld batches of %lld views, filtered "
                   "projections %s%s%s; %s GPU, %s host",
                   (long long)p->nslabs, p->nslabs == 1 ? "" : "s", (long long)p->slab_slices,
                   p->slab_slices == 1 ? "" : "s", last != p->slab_slices ? " (last shorter)" : "",
                   (long long)p->nbatches, (long long)p->views_per_batch,
                   p->store == CTR_FDK_STORE_NONE ? "used once" : "kept in ",
                   p->store == CTR_FDK_STORE_NONE ? "" : ctr_fdk_store_name(p->store),
                   p->pair ? ", mirrored pairs" : "", size_text(p->gpu_bytes, gb, sizeof gb),
                   size_text(p->host_bytes, hb, sizeof hb));
  if (p->scratch_bytes && k >= 0 && (size_t)k < n)
    k += snprintf(buf + k, n - (size_t)k, ", %s scratch", size_text(p->scratch_bytes, sb, sizeof sb));
  return k;
}

static ctr_status check_request(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t *z0,
                                int64_t *nz) {
  if (!g || !r) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_plan_compute: geometry or request is NULL");
  if (r->device != CTR_DEVICE_CPU && r->device != CTR_DEVICE_CUDA)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: device %d, expected CTR_DEVICE_CPU or "
             "CTR_DEVICE_CUDA (resolve AUTO with a context first)", (int)r->device);
  if (!ctr_dtype_size(r->proj_dtype) || !ctr_dtype_size(r->vol_dtype))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: unknown projection or volume dtype");
  if (r->store == CTR_FDK_STORE_DEVICE && !ctr__engine_backend_find(r->device)->device_store)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: filtered projections can stay on the device "
             "only with the CUDA backend");
  if (r->store < CTR_FDK_STORE_AUTO || r->store > CTR_FDK_STORE_NONE)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: store %d, expected auto, device, host or "
             "scratch", (int)r->store);
  if (r->workers < 0 || r->workers > CTR_MAX_WORKERS)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: workers = %d, expected 0 .. %d", r->workers,
             CTR_MAX_WORKERS);
  if (r->split != CTR_FDK_SPLIT_AUTO && r->split != CTR_FDK_SPLIT_VOLUME && r->split != CTR_FDK_SPLIT_PROJECTIONS)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: split %d, expected auto, volume or projections",
             (int)r->split);
  if (r->out_format != CTR_FORMAT_AUTO && !ctr__format_row_of(r->out_format))
    return CTR_E_INVALID_ARGUMENT; /* raised, naming the formats */
  if (r->views_per_batch < 0 || r->max_slab_slices < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: views_per_batch and max_slab_slices must be "
             ">= 0 (0 = automatic)");
  *z0 = r->z0;
  *nz = r->nz ? r->nz : g->vol.nz - r->z0;
  if (!r->nz && r->z0) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: z0 = %lld with nz = 0: "
                                "give nz for a slab", (long long)r->z0);
  if (*z0 < 0 || *nz <= 0 || *z0 + *nz > g->vol.nz)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: slices [%lld, %lld), expected a range inside "
             "[0, %lld)", (long long)*z0, (long long)(*z0 + *nz), (long long)g->vol.nz);
  return CTR_OK;
}

static int search(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t z0, int64_t nz,
                  ctr_fdk_plan *out);

/* The smallest value of one budget (the other as requested, or unlimited
 * when `free_other`) with which the planner finds a plan, by bisection over
 * the planner itself (more memory never loses a plan); 0 if none. */
static uint64_t smallest_budget(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t z0,
                                int64_t nz, int gpu, int free_other, ctr_fdk_plan *plan) {
  ctr_fdk_plan_request q = *r;
  uint64_t *b = gpu ? &q.gpu_budget : &q.host_budget;
  if (free_other) *(gpu ? &q.host_budget : &q.gpu_budget) = (uint64_t)1 << 62;
  uint64_t lo = 0, hi = (uint64_t)1 << 62;
  *b = hi;
  if (!search(g, &q, z0, nz, plan)) return 0;
  while (hi - lo > 1) { /* search(lo) fails, search(hi) succeeds */
    const uint64_t mid = lo + (hi - lo) / 2;
    *b = mid;
    if (search(g, &q, z0, nz, plan)) hi = mid;
    else lo = mid;
  }
  *b = hi;
  search(g, &q, z0, nz, plan);
  return hi;
}

/* Names the budget that is too small and the smallest one that works (the
 * other budget as given, or also raised when it is too small as well). */
static ctr_status fail_budget(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t z0,
                              int64_t nz) {
  char need[32], have[32], other[32], desc[256];
  ctr_fdk_plan p;
  const int cuda = r->device == CTR_DEVICE_CUDA;
  uint64_t gpu_min = 0, host_min = 0;
  int gpu_short = 0;
  if (cuda) {
    /* The GPU budget is what fails when no plan fits it even with unlimited
     * host memory; otherwise the host budget is. */
    gpu_min = smallest_budget(g, r, z0, nz, 1, 1, &p);
    gpu_short = gpu_min == 0 || gpu_min > r->gpu_budget;
    if (gpu_short) {
      const uint64_t with_host = smallest_budget(g, r, z0, nz, 1, 0, &p);
      if (with_host) gpu_min = with_host; /* enough with the host budget given */
      else smallest_budget(g, r, z0, nz, 1, 1, &p);
    }
  }
  if (gpu_short) {
    describe(&p, desc, sizeof desc);
    const uint64_t host_need = p.host_bytes;
    CTR_FAIL_FIELD_VALUE(CTR_E_DEVICE_OUT_OF_MEMORY, "gpu_budget", CTR__V_UINT(r->gpu_budget),
             "a GPU budget of %s is too small for %lld x %lld projections and %lld x %lld slices: "
             "the smallest plan needs %s of GPU memory (gpu_budget)%s%s (%s)",
             size_text(r->gpu_budget, have, sizeof have), (long long)g->nu, (long long)g->nv,
             (long long)g->vol.nx, (long long)g->vol.ny, size_text(gpu_min, need, sizeof need),
             host_need > r->host_budget ? " and " : "",
             host_need > r->host_budget ? size_text(host_need, other, sizeof other) : "",
             desc);
  }
  host_min = smallest_budget(g, r, z0, nz, 0, 0, &p);
  if (host_min == 0) host_min = smallest_budget(g, r, z0, nz, 0, 1, &p);
  describe(&p, desc, sizeof desc);
  /* the output format's own buffers, named when it holds any */
  char wtext[160] = "";
  ctr_fdk_plan_request q = *r;
  q.split = p.split;
  q.workers = p.workers;
  const uint64_t wb = writer_bytes(g, &q);
  if (wb) {
    char wbuf[32];
    const ctr_file_format_info *fi = ctr__format_info(r->out_format);
    snprintf(wtext, sizeof wtext, ", of which %s are the %s writer's own buffers (rows of chunks)",
             size_text(wb, wbuf, sizeof wbuf), fi ? fi->title : ctr_format_name(r->out_format));
  }
  CTR_FAIL_FIELD_VALUE(CTR_E_OUT_OF_MEMORY, "host_budget", CTR__V_UINT(r->host_budget),
           "a host memory budget of %s is too small for %lld x %lld projections and %lld x %lld "
           "slices: the smallest plan needs %s of host memory (host_budget)%s (%s)",
           size_text(r->host_budget, have, sizeof have), (long long)g->nu, (long long)g->nv,
           (long long)g->vol.nx, (long long)g->vol.ny, size_text(host_min, need, sizeof need),
           wtext, desc);
}

/* The planner's search for a validated request: 1 and *out when a plan fits
 * the budgets, 0 otherwise (nothing raised). */
static int search(const ctr_geometry *g, const ctr_fdk_plan_request *r, int64_t z0, int64_t nz,
                  ctr_fdk_plan *out) {
  const ctr__engine_backend *be = ctr__engine_backend_find(r->device);
  /* A backend that keeps filtered views resident prefers that. */
  const int resident = be->device_store;
  const ctr_fdk_store order_dev[3] = {CTR_FDK_STORE_DEVICE, CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  const ctr_fdk_store order_host[2] = {CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  const ctr_fdk_store *order = resident ? order_dev : order_host;
  int nstores = resident ? 3 : 2;
  if (r->store != CTR_FDK_STORE_AUTO) {
    order = &r->store;
    nstores = 1;
  }
  /* N' candidates, largest first. */
  int64_t nbs[8], nnb = 0;
  if (r->views_per_batch > 0) {
    nbs[nnb++] = r->views_per_batch < g->nviews ? r->views_per_batch : g->nviews;
  } else {
    int64_t b = be->first_batch(g);
    for (; b >= 1 && nnb < 8; b /= 2) nbs[nnb++] = even_share(g, r, b < g->nviews ? b : g->nviews);
  }
  const int pair_geom = resident && ctr__bp_pair_possible(g, z0, nz);
  /* One subvolume needs each filtered view once: nothing to keep, unless the
   * views can stay resident (CUDA prefers that: see the loop below). */
  if (r->store == CTR_FDK_STORE_AUTO || r->store == CTR_FDK_STORE_NONE) {
    for (int64_t i = 0; i < nnb; i++) {
      if (resident && r->store == CTR_FDK_STORE_AUTO) break; /* resident views first */
      const cost c = plan_cost(be, g, r, nbs[i], CTR_FDK_STORE_NONE, 0);
      if (max_slices(r, &c, nz) >= nz) {
        fill_plan(g, r, z0, nz, nbs[i], CTR_FDK_STORE_NONE, 0, nz, &c, out);
        return 1;
      }
    }
  }
  if (r->store == CTR_FDK_STORE_NONE) return 0; /* one subvolume does not fit */
  /* Subvolumes smaller than this cost more in launches and re-reads than a
   * cheaper store saves: a cheaper store with large subvolumes wins. */
  const int64_t good = nz < 32 ? nz : 32;
  for (int pass = 0; pass < 2; pass++) {
    for (int s = 0; s < nstores; s++) {
      for (int64_t i = 0; i < nnb; i++) {
        const int64_t nb = nbs[i];
        /* One symmetric subvolume with resident views can use pairs. */
        if (pair_geom && order[s] == CTR_FDK_STORE_DEVICE) {
          const cost c = plan_cost(be, g, r, nb, order[s], 1);
          if (max_slices(r, &c, nz) >= nz) {
            fill_plan(g, r, z0, nz, nb, order[s], 1, nz, &c, out);
            return 1;
          }
        }
        if (resident && order[s] == CTR_FDK_STORE_HOST && r->store == CTR_FDK_STORE_AUTO && pass == 0) {
          const cost c1 = plan_cost(be, g, r, nb, CTR_FDK_STORE_NONE, 0);
          if (max_slices(r, &c1, nz) >= nz) {
            fill_plan(g, r, z0, nz, nb, CTR_FDK_STORE_NONE, 0, nz, &c1, out);
            return 1;
          }
        }
        const cost c = plan_cost(be, g, r, nb, order[s], 0);
        const int64_t zs = max_slices(r, &c, nz);
        if (zs >= (pass == 0 ? good : 1)) {
          fill_plan(g, r, z0, nz, nb, order[s], 0, zs, &c, out);
          return 1;
        }
      }
    }
  }
  return 0;
}

ctr_status ctr_fdk_plan_compute(const ctr_geometry *g, const ctr_fdk_plan_request *r, ctr_fdk_plan *plan) {
  int64_t z0 = 0, nz = 0;
  if (!plan) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_plan_compute: out is NULL");
  CTR_CHECK(ctr__struct_check(&ctr__struct_fdk_plan, plan));
  ctr_fdk_plan full = CTR_FDK_PLAN_INIT, *out = &full;
  ctr_fdk_plan_request rq;
  if (r) {
    CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_plan_request, &rq, r));
    r = &rq;
  }
  CTR_CHECK(check_request(g, r, &z0, &nz));
  if (r->store == CTR_FDK_STORE_NONE && r->max_slab_slices > 0 && r->max_slab_slices < nz)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plan request: store 'none' keeps no filtered projections, "
             "so it needs one subvolume, but max_slab_slices %lld < %lld slices",
             (long long)r->max_slab_slices, (long long)nz);
  if (workers_of(r) == 1 || r->split != CTR_FDK_SPLIT_AUTO) {
    ctr_fdk_plan_request q = *r;
    if (workers_of(r) == 1) q.split = CTR_FDK_SPLIT_VOLUME;
    if (!search(g, &q, z0, nz, out)) return fail_budget(g, &q, z0, nz);
    out->seconds[out->split] = ctr__plan_seconds(g, &q, out);
    return ctr__struct_store(&ctr__struct_fdk_plan, plan, out);
  }
  /* Both schemes where they fit; the cheaper by the cost model (the volume
   * split on a tie: its result does not depend on the worker count). */
  ctr_fdk_plan_request qv = *r, qp = *r;
  qv.split = CTR_FDK_SPLIT_VOLUME;
  qp.split = CTR_FDK_SPLIT_PROJECTIONS;
  ctr_fdk_plan pv, pp;
  const int fv = search(g, &qv, z0, nz, &pv), fp = search(g, &qp, z0, nz, &pp);
  if (!fv && !fp) return fail_budget(g, &qv, z0, nz);
  const double tv = fv ? ctr__plan_seconds(g, &qv, &pv) : 0;
  const double tp = fp ? ctr__plan_seconds(g, &qp, &pp) : 0;
  *out = fv && (!fp || tv <= tp) ? pv : pp;
  out->seconds[CTR_FDK_SPLIT_VOLUME] = tv;
  out->seconds[CTR_FDK_SPLIT_PROJECTIONS] = tp;
  return ctr__struct_store(&ctr__struct_fdk_plan, plan, out);
}

const char *ctr_fdk_split_name(ctr_fdk_split s) {
  switch (s) {
    case CTR_FDK_SPLIT_AUTO: return "auto";
    case CTR_FDK_SPLIT_VOLUME: return "volume";
    case CTR_FDK_SPLIT_PROJECTIONS: return "projections";
  }
  return "unknown";
}

ctr_status ctr_fdk_split_parse(const char *name, ctr_fdk_split *out) {
  static const ctr_fdk_split all[3] = {CTR_FDK_SPLIT_AUTO, CTR_FDK_SPLIT_VOLUME, CTR_FDK_SPLIT_PROJECTIONS};
  for (int i = 0; name && i < 3; i++)
    if (!strcmp(name, ctr_fdk_split_name(all[i]))) {
      *out = all[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "split '%s': expected auto, volume or projections",
           name ? name : "(null)");
}

int ctr_fdk_plan_describe(const ctr_fdk_plan *plan, char *buf, size_t n) {
  if (!plan) return snprintf(buf, n, "(no plan)");
  ctr_fdk_plan p;
  if (ctr__struct_copy(&ctr__struct_fdk_plan, &p, plan) != CTR_OK) return -1;
  return describe(&p, buf, n);
}

ctr_status ctr_size_parse(const char *text, uint64_t *bytes) {
  if (!text || !bytes) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_size_parse: NULL argument");
  char *end;
  const double v = strtod(text, &end);
  if (end == text || !isfinite(v) || v < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "size '%s': expected a number with an optional unit K, M, "
             "G or T (e.g. 8G, 512M)", text);
  double mul = 1.0;
  const char *u = end;
  switch (*u) {
    case 'k': case 'K': mul = 1024.0; u++; break;
    case 'm': case 'M': mul = 1048576.0; u++; break;
    case 'g': case 'G': mul = 1073741824.0; u++; break;
    case 't': case 'T': mul = 1099511627776.0; u++; break;
    default: break;
  }
  if (mul > 1.0 && *u == 'i') u++;
  if (*u == 'B' || *u == 'b') u++;
  if (*u)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "size '%s': unknown unit '%s', expected K, M, G or T "
             "(powers of 1024), e.g. 8G", text, end);
  const double b = v * mul;
  if (b >= 18446744073709551615.0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "size '%s' is too large", text);
  *bytes = (uint64_t)llround(b);
  return CTR_OK;
}
