/* The cost model of a multi-worker FDK run (plan_split.h). Per worker, with
 * K views of P detector pixels, V voxels in the run's slices, W workers and
 * B subvolumes (Okitsu et al. 2010, Table 1, with our pipeline's overlap):
 *
 *                   volume split                  projection split
 *   filter          K/W views (each filters its    K/W views
 *                   own share, the others receive
 *                   them through host memory)
 *   upload          K/W raw + (W-1)/W K filtered   K/W raw
 *   reload          (B/W - 1) K filtered unless    (B - 1) K/W filtered unless
 *                   resident on the device         resident
 *   backprojection  K V / W (no mirrored pairs     K/W V (pairs where one symmetric
 *                   once the volume is split)      subvolume allows them)
 *   reduction       none                           (W-1)/W V from the other workers
 *   download        V / W                          V / W
 *
 * Transfers run on their own streams and overlap filtering and
 * backprojection; the reduction waits for every worker's backprojection. */
#include "conebeam/plan_split.h"

static double or_default(double v, double d) { return v > 0 ? v : d; }

ctr_fdk_split_rates ctr__split_rates(const ctr_fdk_plan_request *r) {
  ctr_fdk_split_rates d;
  if (r->device == CTR_DEVICE_CUDA) {
    /* The measured ceilings of docs/design.md, in the order of
     * ctr_fdk_split_rates: PCIe pinned each way, device-to-device
     * (conservative for NVLink or PCIe peer copies), the texture kernel and
     * mirrored half2 pairs (software bilinear where exact interpolation is
     * asked for), the ramp filter in pixels/s. */
    const int sw = r->interp == CTR_INTERP_EXACT || r->interp == CTR_INTERP_PRECISE;
    d = (ctr_fdk_split_rates){50e9, 45e9, 100e9, 10e9, sw ? 0.7e12 : 1.0e12, sw ? 1.3e12 : 1.9e12,
                          9e10};
  } else {
    /* one CPU engine sharing the cores with the others: copies, updates and
     * filtered pixels per second of the same order as docs/design.md's CPU
     * figures */
    d = (ctr_fdk_split_rates){10e9, 10e9, 10e9, 10e9, 1e9, 1e9, 2e8};
  }
  const ctr_fdk_split_rates *q = &r->rates;
  d.upload = or_default(q->upload, d.upload);
  d.download = or_default(q->download, d.download);
  d.peer = or_default(q->peer, d.peer);
  d.host_add = or_default(q->host_add, d.host_add);
  d.updates = or_default(q->updates, d.updates);
  d.pair_updates = or_default(q->pair_updates, d.pair_updates);
  d.filter = or_default(q->filter, d.filter);
  return d;
}

double ctr__plan_seconds(const ctr_geometry *g, const ctr_fdk_plan_request *r, const ctr_fdk_plan *p) {
  const ctr_fdk_split_rates R = ctr__split_rates(r);
  const double K = (double)g->nviews, P = (double)g->nu * (double)g->nv;
  const double V = (double)g->vol.nx * (double)g->vol.ny * (double)p->nz;
  const double W = p->workers > 1 ? p->workers : 1, B = (double)p->nslabs;
  const double esize = (double)ctr_dtype_size(r->proj_dtype), fbytes = K * P * 4.0;
  const double rate = p->pair ? R.pair_updates : R.updates;
  const int resident = p->store == CTR_FDK_STORE_DEVICE;
  /* raw views go up to a GPU (a CPU engine reads them where they are) */
  const double filter = K / W * P / R.filter;
  const double up = r->device == CTR_DEVICE_CUDA ? K / W * P * esize / R.upload : 0.0;
  double bp, reload, reduce = 0, share = 0;
  if (p->split == CTR_FDK_SPLIT_PROJECTIONS && W > 1) {
    bp = K / W * V / rate;
    reload = resident ? 0 : (B - 1) * fbytes / W / R.upload;
    const double add = r->device == CTR_DEVICE_CUDA ? R.peer : R.host_add;
    reduce = (W - 1) / W * V * 4.0 / add;
  } else {
    bp = K * V / W / rate;
    const double per = (B + W - 1) / W; /* subvolumes of the busiest worker */
    reload = resident ? 0 : (per - 1) * fbytes / R.upload;
    if (W > 1) share = (W - 1) / W * fbytes / R.upload + fbytes / W / R.download;
  }
  const double down = V * 4.0 / W / R.download;
  const double compute = filter + bp, transfers = up + share + reload + down;
  return compute + (transfers > compute ? transfers - compute : 0.0) + reduce;
}

uint64_t ctr__split_gpu_budget(const uint64_t *device_budget, int ndevices, int workers) {
  if (ndevices <= 0) return 0;
  if (workers < 1) workers = 1;
  uint64_t best = UINT64_MAX;
  for (int d = 0; d < ndevices && d < workers; d++) {
    const int sharing = workers / ndevices + (d < workers % ndevices);
    const uint64_t share = device_budget[d] / (uint64_t)sharing;
    if (share < best) best = share;
  }
  return best;
}
