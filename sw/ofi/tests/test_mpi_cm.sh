#!/bin/sh
# Open MPI's cm PML with mtl/ofi over the provider `velo` (ofi.mpi_cm): the BTL tests' MPI programs
# (each checks its own results) on 2 and 4 ranks of a fabric of velo-run's own, with
# FI_PROVIDER=velo; no VELO BTL in the job (btl self only). mpi_pingpong over sizes on both sides
# of the provider's eager limit (a train, ~1.7 KiB) up to 256 KiB (rendezvous), every byte checked.
#   test_mpi_cm.sh <directory of libvelo-fi.so> <velo-run> <velo-fabric> <dir of the MPI programs>
set -eu
export FI_PROVIDER_PATH=$1 FI_PROVIDER=velo
run=$2
export VELO_FABRIC=$3
progs=$4
export OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_btl=self
unset VELO_DEVICE FI_VELO_RECV_AREA FI_VELO_RDV_THRESHOLD || true
tmp=$(mktemp -d /tmp/velo-ofi-mpi-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n_ok=0
for n in 2 4; do
    for p in mpi_ring mpi_pingpong mpi_anysource mpi_collectives; do
        args=
        [ "$p" = mpi_pingpong ] && args="--sizes 1,8,47,48,55,56,64,65,1000,1736,1737,4096,65536,262144 --iters 3"
        # shellcheck disable=SC2086
        if ! "$run" --mpi -n "$n" --timeout 240 -- "$progs/$p" $args > "$tmp/out" 2>&1; then
            echo "FAIL: $p on $n ranks"; grep -v 'fi_getinfo_\|mrail' "$tmp/out" | tail -20; exit 1
        fi
        # the program's own verdict, and no fallback to another PML/MTL/provider
        grep -q ' OK$' "$tmp/out" || { echo "FAIL: $p on $n ranks: no OK"; tail -20 "$tmp/out"; exit 1; }
        n_ok=$((n_ok + 1))
    done
done
echo "ofi mpi_cm: OK ($n_ok runs)"
