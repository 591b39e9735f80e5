/* Distributed runs (docs/distributed.md): the cluster of processes one run
 * is shared by (an MPI job, or this process alone) and the control of such a
 * run. Every rank calls the same sequence of collective steps (gather,
 * share); between the steps, a control thread per rank exchanges heartbeats
 * and requests with rank 0, which hands out the work (a ledger of slice
 * ranges, balanced by the ranks' measured rates), notices a rank that fails
 * or stops making progress, and stops every rank with one message naming it.
 * Built without MPI, only the cluster of one exists (a distributed run's
 * partial output resumed by one process). Not installed. */
#ifndef CTR_DISTRIBUTED_H
#define CTR_DISTRIBUTED_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A cluster of one process, without MPI. */
ctr_status ctr__cluster_local(ctr_cluster **out);
/* The host name of rank r (this process's for r out of range). */
const char *ctr__cluster_host(const ctr_cluster *c, int r);
/* How many ranks run on rank r's host (share its memory, cores, GPUs). */
int ctr__cluster_ranks_on_host(const ctr_cluster *c, int r);
/* The hung-rank timeout of the cluster's runs (seconds). */
double ctr__cluster_timeout(const ctr_cluster *c);

typedef struct ctr__dist ctr__dist;

/* Slices [z0, z0 + nz) of the output (FDK slices, FBP slices). */
typedef struct ctr__piece {
  int64_t z0, nz;
} ctr__piece;

/* Starts the distributed part of a run on every rank of c (collective:
 * every rank calls it first). `what` names the run in messages ("fdk").
 * While it runs, ctx's progress reports (ctr__progress) keep the rank alive
 * for the hung-rank timeout, stop it with CTR_E_CANCELLED once another rank
 * failed, and report the whole run's progress on rank 0. */
ctr_status ctr__dist_begin(const ctr_cluster *c, ctr_context *ctx, const char *what,
                           ctr__dist **out);
/* Ends it (collective, after the last step; a run that lost a rank marks
 * the cluster so that ctr_cluster_free does not wait for it). Accepts NULL. */
void ctr__dist_end(ctr__dist *d);
int ctr__dist_rank(const ctr__dist *d);
int ctr__dist_size(const ctr__dist *d);
const ctr_cluster *ctr__dist_cluster(const ctr__dist *d);

/* A collective step: every rank gives its status (the detail of a failure
 * is the calling thread's ctr_error_detail) and n bytes; all (size x n
 * bytes, may be NULL) gets every rank's bytes in rank order. Returns CTR_OK
 * when every rank's status is; otherwise every rank gets the same error: the
 * status and detail of the rank that failed first ("rank R of N (HOST):
 * detail"; once a rank stopped the run, that rank's). After a run lost a
 * rank (hung, gone), returns that error at once without communicating. */
ctr_status ctr__dist_gather(ctr__dist *d, ctr_status st, const void *mine, size_t n, void *all);
/* A step whose result is rank 0's blob: on rank 0 *blob / *n are given (and
 * kept), on the others they receive a malloc'd copy (free it). Statuses as
 * in ctr__dist_gather. */
ctr_status ctr__dist_share(ctr__dist *d, ctr_status st, void **blob, size_t *n);

/* A step that checks that every rank runs the same: fp[0] is the run's
 * fingerprint without the input's identity (ranks may read node-local
 * copies), fp[1] with it, fp[2] the content of what the rank reads
 * (ctr__dist_input_hash of `input`, its path; 0 when alone). An error
 * naming the first rank whose fp[0] or fp[2] differs from rank 0's; *root
 * gets rank 0's fp[1] (the journals' fingerprint). */
ctr_status ctr__dist_same_run(ctr__dist *d, ctr_status st, const uint64_t fp[3], const char *input,
                              uint64_t *root);

/* ---- The run phase ----------------------------------------------------- */

/* Rank 0, before the step that shares the plan: the work, a list of pieces
 * and the rank each one goes to first (owner[i]), in the order each rank
 * runs its own. */
ctr_status ctr__dist_set_work(ctr__dist *d, const ctr__piece *pieces, const int *owner, int64_t n);
/* The next piece this rank runs: its own, then work taken from the rank with
 * the most left (a piece it has not started, or the tail of the one it runs,
 * split at one of its subvolume boundaries in proportion to the two ranks'
 * measured rates). *got = 0: nothing is left. */
ctr_status ctr__dist_next(ctr__dist *d, ctr__piece *out, int *got);
/* Before computing slices [z, z + nz) of its current piece (one subvolume
 * or band, in order): *granted = 0 when another rank took them over (the
 * piece ends there). CTR_E_CANCELLED once the run was stopped. */
ctr_status ctr__dist_claim(ctr__dist *d, int64_t z, int64_t nz, int *granted);
/* Test builds: every granted claim of this rank waits `seconds` (a slow
 * rank, whose tail the others take over). */
void ctr__dist_set_delay(ctr__dist *d, double seconds);
/* The piece being run covers `slices` slices after `before` slices of
 * earlier pieces: progress fractions of the piece become slices done. */
void ctr__dist_piece_progress(ctr__dist *d, double before, double slices);
/* This rank failed with st (detail: the calling thread's): every other rank
 * is told to stop. A failure that is the consequence of another rank's
 * (the run was stopped) is not reported again. */
void ctr__dist_fail(ctr__dist *d, ctr_status st);
/* CTR_E_CANCELLED (detail: why) once the run was stopped by another rank;
 * else CTR_OK. */
ctr_status ctr__dist_check(ctr__dist *d);
/* 1 once the run was stopped (by a failure or the hung-rank timeout). */
int ctr__dist_stopped(ctr__dist *d);

#ifdef __cplusplus
}
#endif
#endif
