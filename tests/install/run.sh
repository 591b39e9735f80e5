#!/usr/bin/env bash
# The installed package, used from outside the tree: `cmake --install` into a
# prefix inside the build directory, then tests/install/fdk_check.c built
# against it with find_package(ctrecon) (the shared and the static library)
# and with `pkg-config --cflags --libs ctrecon`, and each program run (a CPU
# FDK of a Shepp-Logan head, checked). Also checks the installed files.
# Usage: bash run.sh BUILD_DIR C_COMPILER [EXTRA_C_FLAGS]
set -u
build=$(cd "$1" && pwd) cc=$2 flags=${3:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$build/install-check
prefix=$work/prefix
rm -rf "$work" && mkdir -p "$work"
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
# step DESC LOG COMMAND...: runs the command, its output in LOG (shown on failure)
step() {
  local desc=$1 log=$2 rc; shift 2
  "$@" >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then ok "$desc"; return 0; fi
  bad "$desc (exit $rc): $*"; tail -n 40 "$log" | sed 's/^/    /'; return 1
}

# The build's own dependency prefixes (CMAKE_PREFIX_PATH of its cache: a
# machine with the libraries unpacked outside the system, as the GPU
# machine), for find_package and pkg-config of the installed package's
# dependencies; empty on a machine with the Debian packages.
deps=$(sed -n 's/^CMAKE_PREFIX_PATH:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | head -n 1)
dep_pc=
for p in ${deps//;/ }; do
  for d in "$p/lib/x86_64-linux-gnu/pkgconfig" "$p/lib/pkgconfig" "$p/share/pkgconfig"; do
    [ -d "$d" ] && dep_pc=$dep_pc${dep_pc:+:}$d
  done
done
export PKG_CONFIG_PATH=$dep_pc${PKG_CONFIG_PATH:+${dep_pc:+:}$PKG_CONFIG_PATH}

step "cmake --install" "$work/install.log" cmake --install "$build" --prefix "$prefix" || exit 1
libdir=$(dirname "$(find "$prefix" -name 'libctrecon.so' | head -n 1)")
pcdir=$(dirname "$(find "$prefix" -name 'ctrecon.pc' | head -n 1)")
for f in include/ctrecon.h include/ctrecon/core.h include/ctrecon/export.h; do
  [ -f "$prefix/$f" ] && ok "installed $f" || bad "missing $f"
done
[ -f "$libdir/libctrecon.a" ] && ok "installed libctrecon.a" || bad "no libctrecon.a"
soname=$(readelf -d "$libdir/libctrecon.so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] && [ -f "$libdir/$soname" ] && [ "${soname%.*}" = "libctrecon.so" ] &&
  ok "libctrecon.so has the SONAME $soname" || bad "SONAME '$soname'"
[ -f "$pcdir/ctrecon.pc" ] && [ -f "$libdir/cmake/ctrecon/ctreconConfig.cmake" ] &&
  ok "ctrecon.pc and the CMake package" || bad "no ctrecon.pc or ctreconConfig.cmake"
# no installed text file (headers, .pc, CMake package) may point back into
# the build tree (binaries may: debug information names the sources)
if grep -rlIF "$build" "$prefix" >/dev/null; then
  bad "installed files name the build directory: $(grep -rlIF "$build" "$prefix")"
else
  ok "no installed text file names the build directory"
fi

# CMake: find_package(ctrecon)
if step "configure tests/install with find_package(ctrecon)" "$work/configure.log" \
     cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix${deps:+;$deps}" -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" &&
   step "build against ctrecon::ctrecon and ctrecon::ctrecon_static" "$work/build.log" \
     cmake --build "$work/cmake"; then
  step "fdk_check (shared library)" "$work/run_shared.log" "$work/cmake/fdk_check" &&
    cat "$work/run_shared.log"
  ldd "$work/cmake/fdk_check" | grep -qF "$libdir/libctrecon.so" &&
    ok "fdk_check loads the installed libctrecon.so" ||
    bad "fdk_check does not load $libdir/libctrecon.so: $(ldd "$work/cmake/fdk_check" | grep ctrecon)"
  ldd "$work/cmake/fdk_check_static" | grep -q libctrecon &&
    bad "fdk_check_static loads libctrecon.so" || ok "fdk_check_static is linked statically"
  step "fdk_check_static (static library)" "$work/run_static.log" "$work/cmake/fdk_check_static"
fi

# pkg-config
if command -v pkg-config >/dev/null; then
  pc=$(PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} pkg-config --cflags --libs ctrecon) &&
    ok "pkg-config --cflags --libs ctrecon: $pc" || bad "pkg-config cannot resolve ctrecon"
  # shellcheck disable=SC2086
  step "compile with pkg-config" "$work/pc_build.log" \
    "$cc" -std=c11 $flags "$here/fdk_check.c" -o "$work/fdk_check_pc" $pc &&
    step "fdk_check (pkg-config)" "$work/run_pc.log" env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/fdk_check_pc"
else
  bad "pkg-config is not installed"
fi
echo "$fails failed"
[ "$fails" -eq 0 ]
