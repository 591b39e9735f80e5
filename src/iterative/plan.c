/* The memory model of iterative reconstruction and its planner: where the
 * algorithm's vectors live, how thick the slabs of the forward projection
 * are, how many views a block and an adjoint batch hold. A pure function of
 * sizes (no GPU is touched), so plans for a GPU can be made and tested
 * anywhere; the CUDA backend allocates by the same model. */
#include "iterative/iterative.h"

#include <stdio.h>
#include <string.h>

static const ctr_iterate_plan plan_defaults = CTR_ITERATE_PLAN_INIT;

const char *ctr_iterate_placement_name(ctr_iterate_placement p) {
  switch (p) {
  case CTR_PLACE_HOST: return "host";
  case CTR_PLACE_DEVICE: return "device";
  case CTR_PLACE_PROJ_DEVICE: return "projections on the device";
  case CTR_PLACE_STREAMED: return "streamed";
  }
  return "unknown";
}

/* Bytes of a ray table entry: (A_p, B_p, A_q, B_q) and (Y, f). */
#define TABLE_ENTRY 24u
/* Views per adjoint batch (their ray tables are built together). */
#define BATCH_VIEWS 16
/* A DEVICE plan keeps slabs of the forward projection at least this thick
 * (each slab sets every ray up again), else the volume leaves the GPU. */
#define MIN_DEVICE_SLAB 32
/* A STREAMED plan's slabs have at least this many slices (when they fit)
 * before its blocks of views grow. */
#define STREAM_SLAB 16
/* Device bytes the planner keeps back inside a budget (given or detected) for
 * what its model does not count: reductions, views and launches. 64 MiB, or
 * an eighth of a smaller budget (tests force tiny ones). Part of the cost
 * model, not a reserve of the detected budget (core/memory.c has the one). */
#define DEVICE_RESERVE_MAX ((uint64_t)64 << 20)

static uint64_t vol_bytes(const ctr_projector *p) { return 4u * (uint64_t)ctr__proj_vol_count(p); }
static uint64_t proj_bytes(const ctr_projector *p) { return 4u * (uint64_t)ctr__proj_proj_count(p); }
static uint64_t view_bytes(const ctr_projector *p) { return 4u * (uint64_t)(p->nu * p->nv); }
static uint64_t slab_bytes(const ctr_projector *p, int64_t zs) {
  return 4u * (uint64_t)(p->n[0] * p->n[1] * zs);
}

uint64_t ctr__it_layout_bytes(const ctr_projector *p, int64_t zs) {
  const uint64_t nxp = (uint64_t)(p->n[0] + 2 * CTR__IT_PAD);
  const uint64_t nyp = (uint64_t)(p->n[1] + 2 * CTR__IT_PAD);
  return 2u * 4u * nxp * nyp * (uint64_t)(zs + 2 * CTR__IT_PAD);
}

uint64_t ctr__it_table_bytes(const ctr_projector *p, int64_t nb) {
  return (uint64_t)nb * (TABLE_ENTRY * (uint64_t)(p->nu * p->nv) + sizeof(ctr__it_view) + 16u);
}

/* A slab's stacks index within int, and their slices fit a grid dimension
 * of the GPU's launches (65535). */
int64_t ctr__it_max_slab(const ctr_projector *p) {
  const int64_t nxp = p->n[0] + 2 * CTR__IT_PAD, nyp = p->n[1] + 2 * CTR__IT_PAD;
  int64_t z = ((int64_t)1 << 31) / (nxp * nyp) - 2 * CTR__IT_PAD - 1;
  if (z > 32768) z = 32768;
  return z < 1 ? 1 : z;
}

/* The fast pair's backprojector (ctr_backprojector) on a slab: its volume
 * and two launches' worth of views in each of its layouts (the CUDA
 * backend's exact layouts hold 16 bytes a pixel, its staging 4), and the
 * weighted views of one chunk when the projections are on the GPU
 * (projector.c fast_adjoint). */
static uint64_t fast_bytes(const ctr_projector *p, int64_t zs) {
  return slab_bytes(p, zs) + 2u * 32u * view_bytes(p) * 5u +
         (uint64_t)CTR__IT_FAST_CHUNK * view_bytes(p);
}

void ctr__it_vectors(const ctr_iterate_options *o, int64_t *volumes, int64_t *projections) {
  int64_t v = 3, q = 3;
  switch (o->algorithm) {
  case CTR_ITERATE_SIRT: v = 3, q = 3; break;              /* x, C, t; b, R, r */
  case CTR_ITERATE_CGLS: v = 3, q = 2; break;              /* x, p, s; r, q */
  case CTR_ITERATE_OS_SART: v = 2 + o->subsets, q = 3; break; /* x, t, C_s; b, R, r */
  case CTR_ITERATE_FISTA_TV: v = o->tv_weight > 0 ? 6 : 3, q = 3; break; /* X, G, Z (P); b, AX, AXn */
  case CTR_ITERATE_PDHG_TV: v = o->tv_weight > 0 ? 7 : 4, q = 6; break; /* X, G, Z, T (Q); b, AX, AXn, p, S, S1 */
  case CTR_ITERATE_PWLS: v = 5, q = 4; break;   /* x, p, s, D^-1, t; W, r, q, u */
  }
  if (o->truth) v++;
  *volumes = v;
  *projections = q;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

ctr_status ctr__it_plan(const ctr_projector *p, int64_t volumes, int64_t projections, int fast,
                        ctr_device_kind device, uint64_t gpu_budget, uint64_t host_budget,
                        int64_t max_slab_slices, ctr_iterate_plan *out) {
  ctr_iterate_plan r = plan_defaults;
  const int64_t nz = p->n[2], nviews = p->nviews;
  int64_t zmax = min64(nz, ctr__it_max_slab(p));
  if (max_slab_slices > 0) zmax = min64(zmax, max_slab_slices);
  r.device = device;
  r.volumes = volumes;
  r.projections = projections;
  r.batch_views = min64(nviews, BATCH_VIEWS);
  r.block_views = nviews;
  r.nblocks = 1;
  const uint64_t V = vol_bytes(p) * (uint64_t)volumes, Q = proj_bytes(p) * (uint64_t)projections;
  /* Volumes in host memory: the caller's volume is the iterate. */
  const uint64_t Vh = volumes > 0 ? vol_bytes(p) * (uint64_t)(volumes - 1) : 0;
  char b1[32], b2[32];
  if (device != CTR_DEVICE_CUDA) {
    r.placement = CTR_PLACE_HOST;
    r.slab_slices = zmax;
    r.host_bytes = Vh + Q + ctr__it_layout_bytes(p, zmax) + ctr__it_table_bytes(p, r.batch_views);
    if (host_budget && r.host_bytes > host_budget)
      CTR_FAIL_FIELD_VALUE(CTR_E_OUT_OF_MEMORY, "host_budget", CTR__V_UINT(host_budget),
               "%lld volumes and %lld projection sets need %s of host memory; "
               "host_budget is %s", (long long)volumes, (long long)projections,
               ctr__format_bytes((double)r.host_bytes, b1, sizeof b1),
               ctr__format_bytes((double)host_budget, b2, sizeof b2));
  } else {
    const uint64_t table = ctr__it_table_bytes(p, r.batch_views);
    const uint64_t reserve =
        gpu_budget / 8 < DEVICE_RESERVE_MAX ? gpu_budget / 8 : DEVICE_RESERVE_MAX;
    const uint64_t budget = gpu_budget - reserve;
    /* Every cost is affine in the slab's slices: a fixed part and one per
     * slice (stacks, staging slab, the fast pair's backprojector). */
    const uint64_t per_slice = ctr__it_layout_bytes(p, 1) - ctr__it_layout_bytes(p, 0) +
                               (fast ? slab_bytes(p, 1) : 0);
    const uint64_t per_slice_host = per_slice + slab_bytes(p, 1); /* + the staging slab */
    const uint64_t stacks0 = ctr__it_layout_bytes(p, 0) + (fast ? fast_bytes(p, 0) : 0);
    int found = 0;
    /* DEVICE: every vector on the GPU, the forward projection's stacks for
     * slabs as thick as fit (at least MIN_DEVICE_SLAB slices, or all). */
    {
      const uint64_t fixed = V + Q + table + stacks0;
      const int64_t zs = fixed < budget ? min64((int64_t)((budget - fixed) / per_slice), zmax) : 0;
      if (zs >= min64(zmax, MIN_DEVICE_SLAB)) {
        found = 1;
        r.placement = CTR_PLACE_DEVICE;
        r.slab_slices = zs;
        r.gpu_bytes = fixed + per_slice * (uint64_t)zs + reserve;
        r.host_bytes = 0;
      }
    }
    /* PROJ_DEVICE: the projections on the GPU; the volume slab by slab
     * through a staging slab. */
    if (!found) {
      const uint64_t fixed = Q + table + stacks0;
      const int64_t zs =
          fixed < budget ? min64((int64_t)((budget - fixed) / per_slice_host), zmax) : 0;
      if (zs >= 1) {
        found = 1;
        r.placement = CTR_PLACE_PROJ_DEVICE;
        r.slab_slices = zs;
        r.gpu_bytes = fixed + per_slice_host * (uint64_t)zs + reserve;
        r.host_bytes = Vh;
      }
    }
    /* STREAMED: for each block of views, every slab. Blocks as large as
     * possible (each block uploads every slab again) with slabs of at least
     * STREAM_SLAB slices; what is left thickens the slabs. */
    for (int64_t nb = r.batch_views; nb >= 1 && !found; nb = nb > 1 ? nb / 2 : 0) {
      const int64_t zs0 = min64(zmax, STREAM_SLAB);
      for (int64_t z = zs0; z >= 1 && !found; z = z > 1 ? z / 2 : 0) {
        const uint64_t fixed = ctr__it_table_bytes(p, nb) + stacks0 + per_slice_host * (uint64_t)z;
        const int64_t bv = fixed < budget ? min64((int64_t)((budget - fixed) / view_bytes(p)), nviews) : 0;
        if (bv < 1) continue;
        int64_t zs = z;
        if (bv == nviews) {
          const uint64_t left = budget - fixed - (uint64_t)bv * view_bytes(p);
          zs = min64(zmax, z + (int64_t)(left / per_slice_host));
        }
        found = 1;
        r.placement = CTR_PLACE_STREAMED;
        r.slab_slices = zs;
        r.block_views = bv;
        r.nblocks = (nviews + bv - 1) / bv;
        r.batch_views = min64(nb, bv);
        r.gpu_bytes = fixed + per_slice_host * (uint64_t)(zs - z) + (uint64_t)bv * view_bytes(p) +
                      reserve;
        r.host_bytes = Vh + Q;
      }
    }
    if (!found) {
      const uint64_t least = (slab_bytes(p, 1) + ctr__it_layout_bytes(p, 1) +
                              ctr__it_table_bytes(p, 1) + view_bytes(p) +
                              (fast ? fast_bytes(p, 1) : 0)) * 8 / 7 + 1;
      CTR_FAIL_FIELD_VALUE(CTR_E_DEVICE_OUT_OF_MEMORY, "gpu_budget", CTR__V_UINT(gpu_budget),
               "gpu_budget %s is too small for any plan: the smallest (slabs of one slice, "
               "blocks of one view) needs %s",
               ctr__format_bytes((double)gpu_budget, b1, sizeof b1),
               ctr__format_bytes((double)least, b2, sizeof b2));
    }
    if (host_budget && r.host_bytes > host_budget)
      CTR_FAIL_FIELD_VALUE(CTR_E_OUT_OF_MEMORY, "host_budget", CTR__V_UINT(host_budget),
               "the plan (%s) needs %s of host memory for its vectors; host_budget is %s",
               ctr_iterate_placement_name(r.placement),
               ctr__format_bytes((double)r.host_bytes, b1, sizeof b1),
               ctr__format_bytes((double)host_budget, b2, sizeof b2));
  }
  r.nslabs = (nz + r.slab_slices - 1) / r.slab_slices;
  *out = r;
  return CTR_OK;
}

int ctr_iterate_plan_describe(const ctr_iterate_plan *p, char *buf, size_t n) {
  if (!p) return snprintf(buf, n, "(no plan)");
  char g[32], h[32];
  ctr__format_bytes((double)p->gpu_bytes, g, sizeof g);
  ctr__format_bytes((double)p->host_bytes, h, sizeof h);
  if (p->placement == CTR_PLACE_HOST)
    return snprintf(buf, n, "CPU: %lld volumes + %lld projection sets in host memory (%s), "
                    "%lld slab%s of %lld slices", (long long)p->volumes, (long long)p->projections,
                    h, (long long)p->nslabs, p->nslabs == 1 ? "" : "s", (long long)p->slab_slices);
  return snprintf(buf, n, "GPU, %s: %lld volumes + %lld projection sets, %lld slab%s of %lld "
                  "slices, %lld block%s of %lld views, adjoint batches of %lld views; %s GPU, %s "
                  "host", ctr_iterate_placement_name(p->placement), (long long)p->volumes,
                  (long long)p->projections, (long long)p->nslabs, p->nslabs == 1 ? "" : "s",
                  (long long)p->slab_slices, (long long)p->nblocks, p->nblocks == 1 ? "" : "s",
                  (long long)p->block_views, (long long)p->batch_views, g, h);
}
