#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
# ctest driver.checkpatch: the kernel's checkpatch.pl --strict on every file compiled into velo.ko
# and on the shared ABI header; any error or warning fails (checks are printed, not counted).
#   checkpatch.sh <checkpatch.pl> <file>...
set -u
cp=$1
shift
[ -f "$cp" ] || { echo "FAIL: no $cp (it comes from /usr/src/linux-source-6.1.tar.xz: scripts/deps.sh)"; exit 1; }
out=$(perl "$cp" --strict --no-tree -f "$@" 2>&1)
echo "$out"
# one summary per file, each with no error and no warning
n=$(printf '%s\n' "$out" | grep -c '^total: ')
[ "$n" -eq $# ] || { echo "FAIL: checkpatch summed up $n of $# files"; exit 1; }
bad=$(printf '%s\n' "$out" | grep '^total: ' | grep -vc '^total: 0 errors, 0 warnings,')
[ "$bad" -eq 0 ] || { echo "FAIL: $bad files with errors or warnings"; exit 1; }
echo "PASS: $# files, no error, no warning"
