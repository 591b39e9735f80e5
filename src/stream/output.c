/* The output of a one-process streamed run: journal, partial output,
 * resume and its verification, commit (output.h). */
#include "stream/output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

ctr_status ctr__stream_output_init(ctr__stream_output *o, const char *out, ctr_file_format fmt,
                                   const char *resume_option) {
  memset(o, 0, sizeof *o);
  o->journal.fd = -1;
  o->kept = (ctr__slab_record){0, INFINITY, -INFINITY, 0, 0};
  o->out = out;
  o->resume_option = resume_option;
  if (fmt == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(out, &fmt));
  o->fmt = fmt;
  o->caps = ctr__format_info(fmt);
  if (!o->caps) return CTR_E_INVALID_ARGUMENT;
  o->jpath = ctr__io_sprintf("%s.partial.journal", out);
  return o->jpath ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

/* A resume that fails on these found the journal or the partial output
 * damaged, truncated or gone: resuming again cannot help. */
static int resume_unusable(ctr_status st) {
  return st == CTR_E_FORMAT || st == CTR_E_SIZE_MISMATCH || st == CTR_E_IO;
}

ctr_status ctr__stream_resume_rule(const char *path, const char *noun, const char *holds,
                                   const char *out, int resume, const char *option) {
  const int there = ctr__file_exists(path);
  if (resume && !there)
    CTR_FAIL_FIELD(CTR_E_IO, option, "cannot resume: no %s '%s'; run without %s to start over",
                   noun, path, option);
  if (!resume && there) {
    CTR_CHECK(ctr__file_lock_check(path, "the run writing it"));
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, option,
                   "'%s' holds %s: set %s to continue it, or delete '%s'%s%s%s to start over",
                   path, holds, option, path, out ? " and '" : "", out ? out : "",
                   out ? ".partial'" : "");
  }
  return CTR_OK;
}

int ctr__stream_resumable(ctr_status st, int unusable, const char *journal) {
  const int kind = st != CTR_OK && !unusable && journal ? ctr__journal_kind(journal) : 0;
  return kind == 1 || kind == 2;
}

ctr_status ctr__stream_output_resume(ctr__stream_output *o, int resume, uint64_t fp) {
  char list[256];
  if (resume && !o->caps->resumable)
    CTR_FAIL_FIELD(CTR_E_UNSUPPORTED, o->resume_option,
                   "%s: '%s' (%s) cannot be resumed: write %s to make a run resumable",
                   o->resume_option, o->out, o->caps->name,
                   ctr__format_list(CTR__CAP_RESUMABLE, NULL, list, sizeof list));
  CTR_CHECK(ctr__stream_resume_rule(o->jpath, "journal", "an interrupted run of this output",
                                    o->out, resume, o->resume_option));
  if (!resume) return CTR_OK;
  const ctr_status st = ctr__journal_resume(&o->journal, o->jpath, fp, o->resume_option);
  if (st != CTR_OK) {
    o->unusable = resume_unusable(st);
    return st;
  }
  o->have_journal = 1;
  return CTR_OK;
}

/* The images of the journalled units, for the partial writer. */
static ctr_status done_images(ctr__stream_output *o, int64_t count, int64_t unit) {
  o->done = ctr__calloc((size_t)count, 1, "resume flags");
  if (!o->done) return CTR_E_OUT_OF_MEMORY;
  for (int64_t u = 0; u < o->journal.nslabs; u++) {
    const int64_t z = u * unit;
    if (!o->journal.done[u] || z >= count) continue;
    memset(o->done + z, 1, (size_t)(count - z < unit ? count - z : unit));
  }
  return CTR_OK;
}

ctr_status ctr__stream_output_open(ctr__stream_output *o, const ctr_context *ctx, uint64_t fp,
                                   const ctr__journal_layout *layout, const ctr_stack_info *info,
                                   const ctr__stream_units *units) {
  if (!o->caps->resumable) {
    CTR_CHECK(ctr_stack_create(o->out, o->fmt, info, o->overwrite, &o->w));
  } else {
    if (!o->have_journal) {
      CTR_CHECK(ctr__journal_create(&o->journal, o->jpath, fp, layout));
      o->fresh_journal = 1;
    } else {
      CTR_CHECK(done_images(o, info->count, units->unit));
    }
    ctr_status st = ctr__stack_create_partial(o->out, o->fmt, info, o->have_journal, o->done,
                                              &o->w);
    if (st == CTR_OK) ctr__stack_set_zarr_shard(o->w, ctr__tuning(ctx)->zarr_shard);
    if (st == CTR_OK && o->have_journal)
      st = ctr__journal_verify(ctx, &o->journal, o->w, o->out, units->what, units->unit,
                               info->count, units->z0,
                               (size_t)(info->width * info->height) * ctr_dtype_size(info->dtype),
                               units->chunk, &o->kept, &o->nkept, &o->kept_slices);
    if (st != CTR_OK) {
      o->unusable = o->have_journal && resume_unusable(st);
      return st;
    }
  }
  if (ctr__tuning(ctx)->direct_io < 0) ctr_stack_writer_set_direct_io(o->w, 0);
  return CTR_OK;
}

const unsigned char *ctr__stream_output_done_units(const ctr__stream_output *o) {
  return o->have_journal ? o->journal.done : NULL;
}

void ctr__stream_output_attach(ctr__stream_output *o, ctr__writer *writer) {
  if (o->fresh_journal) o->have_journal = 1;
  writer->out = o->w;
  writer->journal = o->have_journal ? &o->journal : NULL;
#ifdef CTR_FAULT_INJECTION
  const char *v = getenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  writer->stop_after = v && *v ? strtoll(v, NULL, 10) : 0;
#endif
}

ctr_status ctr__stream_output_commit(ctr__stream_output *o, ctr__writer *writer) {
  if (writer) writer->out = NULL;
  ctr__stack_set_overwrite(o->w, o->overwrite);
  const ctr_status st = ctr_stack_commit(o->w); /* frees it */
  o->w = NULL;
  if (st == CTR_OK && o->have_journal) {
    ctr__journal_close(&o->journal, 1);
    o->have_journal = 0;
  }
  return st;
}

int ctr__stream_output_end(ctr__stream_output *o, ctr_status st) {
  /* a fresh journal that never counted goes, and so does the output */
  if (o->fresh_journal && !o->have_journal && o->journal.path) ctr__journal_close(&o->journal, 1);
  const int resumable_format = o->caps && o->caps->resumable;
  (void)ctr__journal_end_output(&o->journal, o->have_journal, o->w, resumable_format);
  o->w = NULL;
  o->have_journal = 0;
  free(o->done);
  o->done = NULL;
  return resumable_format && ctr__stream_resumable(st, o->unusable, o->jpath);
}

void ctr__stream_output_free(ctr__stream_output *o) {
  free(o->jpath);
  o->jpath = NULL;
}

/* ---- Fingerprints ------------------------------------------------------------ */

uint64_t ctr__stream_fp_input(uint64_t h, const char *path) {
  char *real = realpath(path, NULL);
  const char *name = real ? real : path;
  h = ctr__fnv1a(h, name, strlen(name));
  free(real);
  /* "file.h5:/dataset": the file part's identity */
  char *file = strdup(path);
  char *colon = file ? strstr(file, ":/") : NULL;
  if (colon) *colon = '\0';
  struct stat s;
  if (file && stat(file, &s) == 0) {
    const int64_t id[3] = {(int64_t)s.st_size, (int64_t)s.st_mtim.tv_sec,
                           (int64_t)s.st_mtim.tv_nsec};
    h = ctr__fnv1a(h, id, sizeof id);
  }
  free(file);
  return h;
}

uint64_t ctr__stream_fp_output(uint64_t h, const char *out) {
  const char *slash = strrchr(out, '/');
  char *dir = slash ? strndup(out, (size_t)(slash - out + 1)) : strdup(".");
  char *real = dir ? realpath(dir, NULL) : NULL;
  h = real ? ctr__fnv1a(h, real, strlen(real)) : ctr__fnv1a(h, out, strlen(out));
  const char *base = slash ? slash + 1 : out;
  h = ctr__fnv1a(h, base, strlen(base));
  free(real);
  free(dir);
  return h;
}
