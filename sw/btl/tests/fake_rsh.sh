#!/bin/sh
# An rsh agent for mpirun (--mca plm_rsh_agent) that runs the "remote" command on this machine: a
# hostfile of made-up host names then gives ranks that Open MPI places on different hosts, so ob1
# adds them to each other lazily (on first use), as on a cluster of boards.
while [ $# -gt 0 ]; do
    case "$1" in
    -*) shift ;;
    *) break ;;
    esac
done
shift  # the host name
exec sh -c "$*"
