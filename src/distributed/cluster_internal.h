/* The cluster object, shared by cluster.c (the public ctr_cluster_*) and
 * control.c (the runs). Not installed. */
#ifndef CTR_CLUSTER_INTERNAL_H
#define CTR_CLUSTER_INTERNAL_H

#include "distributed/distributed.h"

#if CTR_HAVE_MPI
#include <mpi.h>
#endif

#define CTR__HOST_NAME 64

struct ctr_cluster {
  int rank, size;
  int local;           /* this process alone, no MPI */
  int owns_mpi;        /* ctr_cluster_create initialised MPI: free finalises it */
  int broken;          /* a run lost a rank: MPI_Finalize would wait for it */
  int lost;            /* that rank (-1: none) */
  double timeout;      /* seconds (ctr_cluster_options.timeout resolved) */
  char (*hosts)[CTR__HOST_NAME]; /* every rank's host name */
#if CTR_HAVE_MPI
  MPI_Comm comm;       /* a duplicate of MPI_COMM_WORLD */
#endif
};

/* The default of ctr_cluster_options.timeout (docs/distributed.md, "Faults"). */
#define CTR__RANK_TIMEOUT_S 600.0

/* Marks the cluster unusable for collective calls: a run lost rank `lost`. */
void ctr__cluster_mark_broken(const ctr_cluster *c, int lost);

#endif
