#!/bin/sh
# fi_info finds the provider through FI_PROVIDER_PATH and describes it (ofi.fi_info).
#   test_fi_info.sh <directory of libvelo-fi.so>
set -eu
export FI_PROVIDER_PATH=$1
unset FI_PROVIDER FI_LOG_LEVEL || true
tmp=$(mktemp -d /tmp/velo-ofi-info-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

fi_info -l > "$tmp/out" 2>&1 || fail "fi_info -l"
grep -q '^velo:' "$tmp/out" || fail "fi_info -l does not list velo"

fi_info -p velo > "$tmp/out" 2>&1 || fail "fi_info -p velo"
[ "$(grep -c '^provider: velo$' "$tmp/out")" -eq 1 ] || fail "not one velo entry"
grep -q '^    fabric: velo$' "$tmp/out" || fail "fabric name"
grep -q '^    domain: velo0$' "$tmp/out" || fail "domain name"
grep -q '^    type: FI_EP_RDM$' "$tmp/out" || fail "endpoint type"

fi_info -p velo -v > "$tmp/out" 2>&1 || fail "fi_info -p velo -v"
grep -q 'FI_TAGGED' "$tmp/out" || fail "no FI_TAGGED"
grep -q 'max_msg_size: 1073741824$' "$tmp/out" || fail "max_msg_size"
grep -q 'inject_size: 47$' "$tmp/out" || fail "inject_size"
grep -q 'data_progress: FI_PROGRESS_MANUAL$' "$tmp/out" || fail "progress"
grep -q 'threading: FI_THREAD_SAFE$' "$tmp/out" || fail "threading"
! grep -q 'FI_RMA\|FI_ATOMIC' "$tmp/out" || fail "claims RMA or atomics"

# the provider's parameter
fi_info -g VELO_ > "$tmp/out" 2>&1 || fail "fi_info -g"
grep -q '^# FI_VELO_RDV_THRESHOLD: size_t' "$tmp/out" || fail "no FI_VELO_RDV_THRESHOLD"
grep -q '^# FI_VELO_RECV_AREA: Boolean' "$tmp/out" || fail "no FI_VELO_RECV_AREA"
# what it lacks: no entry
if fi_info -p velo -t FI_EP_MSG > "$tmp/out" 2>&1; then fail "an FI_EP_MSG entry"; fi
if fi_info -p velo -c FI_RMA > "$tmp/out" 2>&1; then fail "an FI_RMA entry"; fi
# the tagged capability alone is served
fi_info -p velo -c FI_TAGGED > "$tmp/out" 2>&1 || fail "-c FI_TAGGED"
# a velo address string as the node (FI_ADDR_STR); anything else is not a velo address
fi_info -p velo -a FI_ADDR_STR -n fi_velo://1:5 -v > "$tmp/out" 2>&1 || fail "-n fi_velo://1:5"
grep -q 'dest_addr: fi_velo://1:5$' "$tmp/out" || fail "dest_addr"
if fi_info -p velo -n 10.0.0.1 > "$tmp/out" 2>&1; then fail "an IP address accepted"; fi
# without the path libfabric does not know it
if FI_PROVIDER_PATH=/nonexistent fi_info -p velo > "$tmp/out" 2>&1; then fail "found without FI_PROVIDER_PATH"; fi
echo "ofi fi_info: OK"
