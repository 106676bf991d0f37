#!/bin/sh
# The user-space C and C++ sources that follow the top-level .clang-format: what `make format`
# formats and what ctest style.clang_format checks, one list for both. Left out: the files of
# velo.ko (sw/driver/core/*.[ch] but its tests, sw/driver/linux/, sw/include/velo/velo_uapi.h,
# sw/eth/velo_eth_proto.[ch]),
# which are kernel style (sw/driver/.clang-format; ctest driver.checkpatch), and the generated
# sw/include/velo/velo_hw.h. Paths relative to the top of the tree.
cd "$(dirname "$0")/.." || exit 1
find sim sw -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) |
	grep -Ev '^sw/driver/(linux/|core/[^/]*$)|^sw/include/velo/velo_(uapi|hw)\.h$|^sw/eth/velo_eth_proto\.[ch]$' | LC_ALL=C sort
