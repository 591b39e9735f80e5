/* The tool under an MPI launcher (docs/distributed.md): which rank this
 * process is, who prints, the cluster of a distributed command and the
 * agreement of the ranks before the library call. Started without a
 * launcher, none of this does anything. */
#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first of the variables that is set, as a number (-1: none). */
static long env_first(const char *const *names) {
  for (; *names; names++) {
    const char *v = getenv(*names);
    if (v && *v) {
      char *end;
      const long n = strtol(v, &end, 10);
      if (end != v && n >= 0) return n;
    }
  }
  return -1;
}

/* Open MPI's mpirun; MPICH's hydra (mpiexec) and PMI launchers; Slurm's srun
 * with PMIx (a task count only counts when an MPI launcher's rank is set). */
static const char *const k_rank[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
static const char *const k_size[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
static const char *const k_slurm_size[] = {"SLURM_NTASKS", "SLURM_NPROCS", NULL};
static const char *const k_local_rank[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                           "SLURM_LOCALID", NULL};
static const char *const k_local_size[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", NULL};

int cli_launch_rank(void) {
  const long r = env_first(k_rank);
  return r > 0 ? (int)r : 0;
}

int cli_launch_size(void) {
  if (env_first(k_rank) < 0) return 1;
  long n = env_first(k_size);
  if (n < 0) n = env_first(k_slurm_size);
  return n > 1 ? (int)n : 1;
}

static int g_saved[2] = {-1, -1};

void cli_launch_init(void) {
  if (cli_launch_size() <= 1 || cli_launch_rank() == 0) return;
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) return;
  fflush(stdout);
  fflush(stderr);
  g_saved[0] = dup(STDOUT_FILENO);
  g_saved[1] = dup(STDERR_FILENO);
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  close(null);
}

void cli_launch_speak(void) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 2; i++)
    if (g_saved[i] >= 0) {
      dup2(g_saved[i], i == 0 ? STDOUT_FILENO : STDERR_FILENO);
      close(g_saved[i]);
      g_saved[i] = -1;
    }
}

int cli_launch_early_error(const char *cmd, int rc) {
  if (!rc || rc == CLI_EXIT_USAGE || cli_launch_size() <= 1 || cli_launch_rank() == 0) return rc;
  char host[256] = "?";
  if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  cli_launch_speak();
  fprintf(stderr, "ctrecon %s: error: rank %d of %d (%s): %s\n", cmd, cli_launch_rank(),
          cli_launch_size(), host, cli_last_error());
  return rc;
}

int cli_cluster_create(const char *cmd, double timeout, ctr_cluster **out) {
  *out = NULL;
  if (cli_launch_size() <= 1) return 0;
  ctr_cluster_options o = CTR_CLUSTER_OPTIONS_INIT;
  o.timeout = timeout;
  const ctr_status st = ctr_cluster_create(&o, out);
  if (st != CTR_OK) {
    cli_launch_speak(); /* every rank fails alike; say why once more per rank rather than never */
    return cli_fail(cmd, st);
  }
  return 0;
}

/* An exit code as the library status that gives it back (cli_exit_code). */
static ctr_status status_of(int rc) {
  switch (rc) {
    case 0: return CTR_OK;
    case CLI_EXIT_USAGE:
    case CLI_EXIT_INPUT: return CTR_E_INVALID_ARGUMENT;
    case CLI_EXIT_UNSUPPORTED: return CTR_E_UNSUPPORTED;
    case CLI_EXIT_INTERRUPTED: return CTR_E_CANCELLED;
    default: return CTR_E_IO;
  }
}

int cli_cluster_agree(const char *cmd, ctr_cluster *c, int rc) {
  if (!c) return rc;
  const ctr_status st = ctr_cluster_agree(c, status_of(rc), cli_last_error());
  cli_cluster_settle(c);
  if (st == CTR_OK) return 0;
  /* the first rank that failed: a rank that failed itself printed its message */
  if (!rc && cli_launch_rank() == ctr_cluster_get_reporter(c)) return cli_fail(cmd, st);
  return rc ? rc : cli_exit_code(st);
}

void cli_cluster_settle(const ctr_cluster *c) {
  if (c && ctr_cluster_get_reporter(c) == ctr_cluster_get_rank(c) &&
      ctr_cluster_get_rank(c) != 0)
    cli_launch_speak();
}

/* The GPUs of a rank on a host shared with others, when none were named:
 * local rank l of L with G GPUs takes GPUs l, l + L, ... (L <= G), else GPU
 * l mod G. Returns the count (0: leave the choice to the context). */
int cli_launch_gpus(int *devices, int max) {
  const long l = env_first(k_local_rank), L = env_first(k_local_size);
  const int g = ctr_cuda_get_device_count();
  if (cli_launch_size() <= 1 || l < 0 || g <= 0) return 0;
  int n = 0;
  if (L > 0 && L <= g) {
    for (int i = (int)l; i < g && n < max; i += (int)L) devices[n++] = i;
  } else {
    devices[n++] = (int)(l % g);
  }
  return n;
}
