#!/bin/sh
# Install the build into a staging directory (DESTDIR) and build small consumers against it:
# C with pkg-config, C++ (velo.hpp) with pkg-config, and a CMake project with find_package(velo).
set -eu
build=$1
stage=$2
src=$3
rm -rf "$stage"
mkdir -p "$stage"
DESTDIR="$stage/root" cmake --install "$build" --prefix /usr/local --component velo > "$stage/install.log"
prefix="$stage/root/usr/local"
pc=$(find "$prefix" -name velo.pc | head -n 1)
[ -n "$pc" ] || { echo "velo.pc not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs velo)
echo "pkg-config: $flags"
cc -std=c17 -Wall -Werror "$src/consumer/consumer.c" $flags -o "$stage/consumer_c"
c++ -std=c++17 -Wall -Werror "$src/consumer/consumer.cpp" $flags -o "$stage/consumer_cxx"
LD_LIBRARY_PATH="$libdir" "$stage/consumer_c"
LD_LIBRARY_PATH="$libdir" "$stage/consumer_cxx"
# the public headers, and not the fabric's private protocol (velo_sim_proto.h)
for h in velo.h velo.hpp velo_hw.h velo_uapi.h; do
    [ -f "$prefix/include/velo/$h" ] || { echo "velo/$h not installed"; exit 1; }
done
if [ -e "$prefix/include/velo/velo_sim_proto.h" ]; then
    echo "the private velo/velo_sim_proto.h is installed"; exit 1
fi
# only the public symbols are exported
if nm -D --defined-only "$libdir/libvelo.so" | grep -q ' velo__'; then
    echo "libvelo.so exports internal velo__ symbols"; exit 1
fi
cmake -S "$src/consumer" -B "$stage/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$stage/cmake.log"
cmake --build "$stage/cmake" > "$stage/cmake-build.log"
LD_LIBRARY_PATH="$libdir" "$stage/cmake/consumer_shared"
"$stage/cmake/consumer_static"
# the tools came along
for t in velo-fabric velo-run velo-pingpong; do
    [ -x "$prefix/bin/$t" ] || { echo "$t not installed"; exit 1; }
done
echo "install test: OK"
