#!/bin/sh
# mpirun_local.sh -np N PROGRAM [ARGS]: N ranks on this machine. The one place that knows
# the Open MPI flags for it (tests/support/scratch.c and bench/mpi_train.sh start ranks
# through it; $ATTEND_MPIRUN replaces the whole command):
#   --allow-run-as-root  Open MPI refuses root otherwise (containers, CI)
#   --oversubscribe      more ranks than cores (the tests run 3 ranks on 2 cores)
#   --bind-to none       two ranks of a 2-core machine are not pinned to one core
# On a cluster, use the site's own mpirun line instead (README: running on a cluster).
exec mpirun --allow-run-as-root --oversubscribe --bind-to none "$@"
