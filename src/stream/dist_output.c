/* The one output of a distributed run and its journals (dist_output.h). */
#include "stream/dist_output.h"

#include "stream/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ctr__dist_output_is_distributed(const char *out) {
  char *m = ctr__io_sprintf("%s.partial.journal", out);
  const int kind = m ? ctr__journal_kind(m) : 0;
  free(m);
  return kind == 2;
}

/* Rank 0: the journalled ranges of the interrupted run (resume), or the
 * refusal to start over one without being asked to. */
static ctr_status read_state(ctr__dist_output *o, int resume) {
  CTR_CHECK(ctr__stream_resume_rule(o->master, "journal", "an interrupted run of this output",
                                    o->out, resume, o->resume_name));
  if (!resume) return CTR_OK;
  CTR_CHECK(ctr__journal_read_ranges(o->master, o->fp, o->resume_name, &o->state));
  /* a journal to resume: now the output that exists is refused (not before:
   * a complete run's is "nothing to resume") */
  CTR_CHECK(ctr_stack_check_output(o->out, o->fmt, o->overwrite));
  for (int64_t r = 0; o->state.master && r < o->state.ranks; r++) {
    char *p = ctr__journal_rank_path(o->master, o->state.generation, (int)r);
    if (!p) return CTR_E_OUT_OF_MEMORY;
    const ctr_status st = ctr__journal_read_rank(p, o->fp, o->resume_name, &o->state);
    free(p);
    CTR_CHECK(st);
  }
  return CTR_OK;
}

static void remove_rank_journals(const char *master, int64_t generation, int64_t ranks) {
  for (int64_t r = 0; generation > 0 && r < ranks; r++) {
    char *p = ctr__journal_rank_path(master, generation, (int)r);
    if (p) unlink(p);
    free(p);
  }
}

/* Rank 0: the journalled ranges whose bytes the partial output still holds
 * (CRC-32 read back) and that overlap none accepted before: done[] gets
 * their slices, the writer forgets the others, the master's new list holds
 * the accepted ones. */
static ctr_status verify(ctr__dist_output *o, const char *what, int64_t chunk,
                         unsigned char *done) {
  const size_t slice = ctr__image_bytes(&o->info);
  const int64_t n = o->info.count;
  if (chunk < 1) chunk = 1;
  void *buf = ctr__malloc(slice * (size_t)chunk, "resume check buffer");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  memset(done, 0, (size_t)n);
  int64_t keep = 0;
  for (int64_t i = 0; i < o->state.n; i++) {
    const ctr__journal_range g = o->state.r[i];
    CTR_CHECK(ctr__progress(o->ctx, "resume check", (double)i / (double)o->state.n));
    if (g.z0 + g.nz > n) continue; /* not of this output: the fingerprint makes it impossible */
    int overlap = 0;
    for (int64_t z = g.z0; z < g.z0 + g.nz && !overlap; z++) overlap = done[z];
    if (overlap) continue;
    uint32_t crc = 0;
    ctr_status st = CTR_OK;
    for (int64_t k = 0; k < g.nz && st == CTR_OK; k += chunk) {
      const int64_t m = g.nz - k < chunk ? g.nz - k : chunk;
      st = ctr__stack_read_back(o->w, g.z0 + k, m, buf);
      if (st == CTR_OK) crc = ctr__crc32(crc, buf, (size_t)m * slice);
    }
    if (st == CTR_OK && crc == g.rec.crc) {
      memset(done + g.z0, 1, (size_t)g.nz);
      o->kept.min = fminf(o->kept.min, g.rec.min);
      o->kept.max = fmaxf(o->kept.max, g.rec.max);
      o->kept.below += g.rec.below;
      o->kept.above += g.rec.above;
      o->nkept++;
      o->kept_slices += g.nz;
      o->state.r[keep++] = g;
      continue;
    }
    if (st == CTR_OK)
      ctr__log(o->ctx, CTR_LOG_WARNING, "'%s': %s of slices %lld..%lld changed on disk after it "
               "was journalled (CRC-32 %08x, the journal says %08x): computing it again", o->out,
               what, (long long)g.z0, (long long)(g.z0 + g.nz - 1), (unsigned)crc,
               (unsigned)g.rec.crc);
    else
      ctr__log(o->ctx, CTR_LOG_WARNING, "'%s': %s of slices %lld..%lld cannot be read back (%s): "
               "computing it again", o->out, what, (long long)g.z0,
               (long long)(g.z0 + g.nz - 1), ctr_error_detail());
  }
  free(buf);
  o->state.n = keep;
  /* what the writer was told is written, less what failed */
  for (int64_t z = 0; z < n; z++)
    if (!done[z]) ctr__stack_forget(o->w, z, 1);
  return CTR_OK;
}

/* Rank 0's part of opening: state, partial output, verification, the
 * modality's plan of the work, the new master journal. */
static ctr_status open_root(ctr__dist_output *o, int resume, const char *what, int64_t chunk,
                            int64_t unit, ctr__dist_plan_fn plan, void *plan_user) {
  ctr_status st = CTR_OK;
  const int64_t n = o->info.count;
  unsigned char *done = ctr__calloc((size_t)n, 1, "resume flags");
  if (!done) return CTR_E_OUT_OF_MEMORY;
  CTR_CHECK_GOTO(st, read_state(o, resume));
  for (int64_t i = 0; i < o->state.n; i++) {
    const ctr__journal_range *g = &o->state.r[i];
    if (g->z0 + g->nz <= n) memset(done + g->z0, 1, (size_t)g->nz);
  }
  st = ctr__stack_create_partial(o->out, o->fmt, &o->info, resume, resume ? done : NULL, &o->w);
  if (st == CTR_OK) ctr__stack_set_zarr_shard(o->w, ctr__tuning(o->ctx)->zarr_shard);
  if (st != CTR_OK) {
    o->unusable = resume && (st == CTR_E_FORMAT || st == CTR_E_SIZE_MISMATCH || st == CTR_E_IO);
    goto cleanup;
  }
  o->created = 1;
  if (resume) CTR_CHECK_GOTO(st, verify(o, what, chunk, done));
  CTR_CHECK_GOTO(st, plan(plan_user, o->d, done, n));
  {
    const int64_t old_gen = o->state.generation, old_ranks = o->state.master ? o->state.ranks : 0;
    const int64_t older = o->state.previous, older_ranks = o->state.previous_ranks;
    o->state.previous = old_gen;
    o->state.previous_ranks = old_ranks;
    o->state.generation = old_gen + 1;
    o->state.ranks = ctr__dist_size(o->d);
    o->state.unit = unit;
    CTR_CHECK_GOTO(st, ctr__journal_write_master(o->master, o->fp, &o->state));
    /* their ranges are in the new master now */
    remove_rank_journals(o->master, old_gen, old_ranks);
    remove_rank_journals(o->master, older, older_ranks);
  }
cleanup:
  free(done);
  return st;
}

typedef struct shared_state {
  int64_t generation, nkept, kept_slices, below, above, unusable, created;
  double min, max;
} shared_state;

ctr_status ctr__dist_output_open(ctr__dist *d, const ctr_context *ctx, ctr_status st,
                                 const char *out, ctr_file_format fmt, const ctr_stack_info *info,
                                 uint64_t fp, int resume, int overwrite, const char *resume_name,
                                 const char *what, int64_t chunk, int64_t unit,
                                 ctr__dist_plan_fn plan, void *plan_user, ctr__dist_output *o) {
  memset(o, 0, sizeof *o);
  o->d = d;
  o->ctx = ctx;
  o->fmt = fmt;
  o->info = *info;
  o->fp = fp;
  o->resume_name = resume_name;
  o->overwrite = overwrite;
  o->journal.fd = -1;
  o->kept = (ctr__slab_record){0, INFINITY, -INFINITY, 0, 0};
  o->total.min = INFINITY;
  o->total.max = -INFINITY;
  const ctr__dist_stats none = {{0}, INFINITY, -INFINITY, 0, 0, 0, 0, 0};
  o->out = strdup(out);
  o->master = ctr__io_sprintf("%s.partial.journal", out);
  if (st == CTR_OK && (!o->out || !o->master))
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "the output's names");
  const int rank = ctr__dist_rank(d);
  /* rank 0 first: the journals, the partial output, the plan */
  if (rank == 0 && st == CTR_OK) st = open_root(o, resume, what, chunk, unit, plan, plan_user);
  shared_state sh = {o->state.generation, o->nkept, o->kept_slices, o->kept.below,
                     o->kept.above, o->unusable, o->created, o->kept.min, o->kept.max};
  void *blob = &sh;
  size_t nb = sizeof sh;
  const ctr_status shared = ctr__dist_share(d, st, &blob, &nb);
  if (rank != 0 && blob && nb == sizeof sh) {
    memcpy(&sh, blob, sizeof sh);
    o->nkept = sh.nkept;
    o->kept_slices = sh.kept_slices;
    o->kept = (ctr__slab_record){0, (float)sh.min, (float)sh.max, sh.below, sh.above};
    o->unusable = (int)sh.unusable;
    o->created = (int)sh.created;
  }
  if (rank != 0) free(blob);
  o->generation = sh.generation;
  st = shared;
  /* then every rank: its handle on the output and its journal */
  if (st == CTR_OK && rank != 0) st = ctr__stack_create_partial(out, fmt, info, 1, NULL, &o->w);
  if (st == CTR_OK && rank != 0) ctr__stack_set_zarr_shard(o->w, ctr__tuning(ctx)->zarr_shard);
  if (st == CTR_OK) {
    char *p = ctr__journal_rank_path(o->master, o->generation, rank);
    const ctr__journal_layout layout = {1, 1, 0, 0, 1, 0, 1}; /* ranges: no decomposition */
    st = p ? ctr__journal_create(&o->journal, p, fp, &layout) : CTR_E_OUT_OF_MEMORY;
    o->have_journal = st == CTR_OK;
    free(p);
  }
  st = ctr__dist_gather(d, st, NULL, 0, NULL);
  if (st == CTR_OK) return CTR_OK;
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", ctr_error_detail());
  ctr__dist_output_finish(o, st, &none, 0);
  return ctr__error_set(st, "%s", detail);
}

/* Rank 0: the complete output under its name, the journals gone. */
static ctr_status commit(ctr__dist_output *o) {
  unsigned char *all = ctr__malloc((size_t)o->info.count, "commit flags");
  if (!all) return CTR_E_OUT_OF_MEMORY;
  memset(all, 1, (size_t)o->info.count);
  ctr_stack_writer *w = NULL;
  ctr_status st = ctr__stack_create_partial(o->out, o->fmt, &o->info, 1, all, &w);
  free(all);
  CTR_CHECK(st);
  ctr__stack_set_zarr_shard(w, ctr__tuning(o->ctx)->zarr_shard);
  ctr__stack_set_overwrite(w, o->overwrite);
  CTR_CHECK(ctr_stack_commit(w)); /* frees w */
  remove_rank_journals(o->master, o->generation, ctr__dist_size(o->d));
  unlink(o->master);
  return CTR_OK;
}

/* The reporter's line per rank of a run that succeeded. */
static void log_ranks(const ctr__dist_output *o, const ctr__dist_stats *all, double input_bytes) {
  const int size = ctr__dist_size(o->d);
  if (size <= 1) return;
  for (int r = 0; r < size; r++)
    ctr__log(o->ctx, CTR_LOG_INFO, "rank %d of %d (%s): %lld slices in %lld piece%s, read %.1f MB "
             "(%.1f %% of the input), %.2f s", r, size,
             ctr__cluster_host(ctr__dist_cluster(o->d), r), (long long)all[r].slices,
             (long long)all[r].pieces, all[r].pieces == 1 ? "" : "s",
             (double)all[r].bytes_read / 1e6,
             input_bytes > 0 ? 100.0 * (double)all[r].bytes_read / input_bytes : 0.0,
             all[r].seconds);
}

ctr_status ctr__dist_output_finish(ctr__dist_output *o, ctr_status st,
                                   const ctr__dist_stats *mine, double input_bytes) {
  const int size = ctr__dist_size(o->d), rank = ctr__dist_rank(o->d);
  if (o->w) ctr__stack_suspend(o->w); /* every slab was flushed before it was journalled */
  o->w = NULL;
  char *jpath = o->have_journal ? strdup(o->journal.path) : NULL;
  if (o->have_journal) ctr__journal_close(&o->journal, 0);
  o->have_journal = 0;
  ctr__dist_stats *all = ctr__calloc((size_t)size, sizeof *all, "ranks' summaries");
  if (!all && st == CTR_OK) st = CTR_E_OUT_OF_MEMORY;
  for (int r = 0; all && r < size; r++) all[r].journalled = 1; /* unknown: keep */
  st = ctr__dist_gather(o->d, st, mine, sizeof *mine, all);
  o->total = (ctr__dist_stats){{0}, INFINITY, -INFINITY, 0, 0, 0, 0, 0};
  int64_t journalled = 0;
  for (int r = 0; all && r < size; r++) {
    for (int k = 0; k < CTR__DIST_COUNTS; k++) o->total.count[k] += all[r].count[k];
    o->total.min = fmin(o->total.min, all[r].min);
    o->total.max = fmax(o->total.max, all[r].max);
    o->total.seconds += all[r].seconds;
    o->total.slices += all[r].slices;
    o->total.pieces += all[r].pieces;
    o->total.bytes_read += all[r].bytes_read;
    journalled += all[r].journalled;
  }
  o->total.journalled = journalled;
  if (st == CTR_OK) {
    ctr_status cst = rank == 0 ? commit(o) : CTR_OK;
    void *none = NULL;
    size_t nn = 0;
    st = ctr__dist_share(o->d, cst, &none, &nn);
    if (rank != 0) free(none);
    if (st == CTR_OK && all && rank == ctr_cluster_get_reporter(ctr__dist_cluster(o->d)))
      log_ranks(o, all, input_bytes);
  } else {
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    /* nothing finished anywhere: nothing to resume, nothing left behind */
    const int keep = o->nkept > 0 || journalled > 0; /* unknown after a lost rank: kept */
    if (!keep) {
      if (jpath) unlink(jpath);
      if (rank == 0 && o->created) {
        ctr__stack_remove_partial(o->out, o->fmt, o->info.count);
        unlink(o->master);
      }
    }
    /* what this run created and removed is gone (rank 0 removes it: every
       rank knows from `created`); a refused run leaves the other run's */
    o->resumable = (keep || !o->created) && ctr__stream_resumable(st, o->unusable, o->master);
    ctr__error_set(st, "%s", detail);
  }
  free(all);
  free(jpath);
  ctr__journal_ranges_free(&o->state);
  free(o->out);
  free(o->master);
  o->out = o->master = NULL;
  return st;
}

ctr_status ctr__dist_input_hash(ctr_stack_reader *r, uint64_t *out) {
  const ctr_stack_info *i = &r->info;
  const int64_t rows = i->height < 16 ? i->height : 16;
  const size_t bytes = (size_t)(rows * i->width) * ctr_dtype_size(i->dtype);
  const int64_t dims[4] = {i->width, i->height, i->count, (int64_t)i->dtype};
  uint64_t h = ctr__fnv1a(CTR__FNV_SEED, dims, sizeof dims);
  unsigned char *buf = ctr__malloc(bytes, "the input's fingerprint");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr_stack_read_rows(r, 0, 1, 0, rows, i->dtype, buf);
  if (st == CTR_OK) h = ctr__fnv1a(h, buf, bytes);
  if (st == CTR_OK) st = ctr_stack_read_rows(r, i->count - 1, 1, i->height - rows, rows, i->dtype, buf);
  if (st == CTR_OK) h = ctr__fnv1a(h, buf, bytes);
  free(buf);
  *out = h;
  return st;
}

/* ---- The distributed wrapper's common part ------------------------------------ */

ctr_status ctr__stream_dist_begin(ctr__stream_dist *s, const ctr_cluster *cluster,
                                  ctr_context *ctx, const char *what) {
  memset(s, 0, sizeof *s);
  if (!cluster) {
    CTR_CHECK(ctr__cluster_local(&s->local));
    cluster = s->local;
  }
  s->cluster = cluster;
  const ctr_status st = ctr__dist_begin(cluster, ctx, what, &s->d);
  if (st != CTR_OK) {
    ctr_cluster_free(s->local);
    s->local = NULL;
    return st;
  }
  s->rank = ctr__dist_rank(s->d);
  s->size = ctr__dist_size(s->d);
  return CTR_OK;
}

void ctr__stream_dist_end(ctr__stream_dist *s, ctr_status st) {
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", ctr_error_detail());
  ctr__dist_end(s->d);
  ctr_cluster_free(s->local);
  memset(s, 0, sizeof *s);
  if (st != CTR_OK) ctr__error_set(st, "%s", detail);
}

ctr_status ctr__dist_output_format(const char *out, ctr_file_format *fmt, const char *stem,
                                   int overwrite) {
  if (*fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(out, fmt));
  const ctr_file_format_info *caps = ctr__format_info(*fmt);
  if (!caps) return CTR_E_INVALID_ARGUMENT;
  char list[256];
  if (!caps->many_ranks)
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s' (%s): a distributed run writes %s (its ranks write their "
             "slices in place; %s is written in order by one process: write one of those and "
             "convert afterwards)", out, caps->name,
             ctr__format_list(CTR__CAP_MANY_RANKS, stem, list, sizeof list), caps->name);
  return ctr_stack_check_output(out, *fmt, overwrite);
}

ctr_status ctr__stream_dist_host_budget(const ctr__stream_dist *s, ctr_context *ctx,
                                        uint64_t given, uint64_t *out) {
  *out = given;
  if (given) return CTR_OK;
  const ctr_status st = ctr__budgets_resolve(ctx, NULL, out);
  *out /= (uint64_t)ctr__cluster_ranks_on_host(s->cluster, s->rank);
  return st;
}
