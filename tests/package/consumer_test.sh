#!/usr/bin/env bash
# An app takes in an installed Sieve as a user's would (ctest label `package`):
# install into a fresh prefix, then build samples/minimal.c against that copy
# alone, once with find_package(Sieve CONFIG) and once with pkg-config, and run
# both. Also: the installed `sieve --version`, and a request for a version the
# package cannot satisfy stopping at CMake's version-mismatch error.
#
#   consumer_test.sh shared BUILD_DIR SOURCE_DIR WORK_DIR VERSION
#       installs the suite's own build (libsieve.so)
#   consumer_test.sh static BUILD_DIR SOURCE_DIR WORK_DIR VERSION
#       installs a static build (libsieve.a) and links the consumers statically;
#       BUILD_DIR `fresh`: configures and builds one of SOURCE_DIR in WORK_DIR
#       first (the library alone)
# CMAKE (the cmake to use) and CC may be set; nothing is left in WORK_DIR.
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4 version=$5
cmake=${CMAKE:-cmake}
cc=${CC:-cc}

fail() { echo "package test ($mode): $*" >&2; exit 1; }
# Whether a log says TEXT (CMake wraps its messages: whitespace runs are one space).
says() { tr -s '[:space:]' ' ' <"$1" | grep -qF -- "$2"; }
# A log's message from START to the package it names, on one line.
named() { tr -s '[:space:]' ' ' <"$1" | grep -o "$2.*apt-get install [a-z0-9.-]*" | head -1; }

source=$(cd "$source" && pwd)
[[ $build == fresh ]] || build=$(cd "$build" && pwd)
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

if [[ $build == fresh ]]; then
  build=$work/build-static
  # A private dependency the build cannot find stops the configure step, naming
  # its Debian package (volk here: a folder without volk.c).
  mkdir -p "$work/no-volk"
  if "$cmake" -S "$source" -B "$work/build-no-volk" -DSIEVE_SHARED=OFF -DSIEVE_BUILD_TESTS=OFF \
     -DSIEVE_BUILD_SAMPLES=OFF -DSIEVE_BUILD_TOOLS=OFF -DSIEVE_VOLK_INCLUDE_DIR="$work/no-volk" >"$work/no-volk.log" 2>&1; then
    fail "a static build without volk configured"
  fi
  says "$work/no-volk.log" 'apt-get install libvulkan-volk-dev' ||
    { cat "$work/no-volk.log"; fail "a static build without volk did not name libvulkan-volk-dev"; }
  echo "without volk: $(named "$work/no-volk.log" 'Sieve needs')"
  echo "== configure and build a static libsieve.a (the library alone)"
  "$cmake" -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSIEVE_SHARED=OFF -DSIEVE_BUILD_TESTS=OFF \
    -DSIEVE_BUILD_SAMPLES=OFF -DSIEVE_BUILD_TOOLS=OFF >"$work/static-configure.log" ||
    { cat "$work/static-configure.log"; fail "configuring the static build failed"; }
  "$cmake" --build "$build" -j2 >"$work/static-build.log" ||
    { tail -50 "$work/static-build.log"; fail "building the static library failed"; }
fi

echo "== cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
(cd "$prefix" && find . -type f -printf '%p\n' -o -type l -printf '%p -> %l\n' | sort)

# The package and pkg-config files find their prefix from where they lie: no
# path of the build or source tree may be written into them.
for dir in "$build" "$source"; do
  if grep -rl --include='*.cmake' --include='*.pc' --include='*.h' --include='*.hpp' -F "$dir" "$prefix"; then
    fail "installed files name $dir (see above)"
  fi
done
libdir=$(dirname "$(find "$prefix" -name 'sieve.pc' -path '*pkgconfig*')")
libdir=${libdir%/pkgconfig}
if [[ $mode == shared ]]; then
  [[ -L $libdir/libsieve.so ]] || fail "libsieve.so is not the link to the versioned library"
  soname=$(readelf -d "$libdir/libsieve.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ -n $soname && -e $libdir/$soname ]] || fail "SONAME '$soname' is not installed in $libdir"
  [[ -f $libdir/libsieve.so.$version ]] || fail "libsieve.so.$version is missing"
  echo "SONAME $soname"
else
  [[ -f $libdir/libsieve.a && ! -e $libdir/libsieve.so ]] || fail "expected libsieve.a alone in $libdir"
fi

# The consumer lives in a folder of its own, with copies of its two files.
app=$work/app
mkdir -p "$app"
cp "$source/tests/package/consumer/CMakeLists.txt" "$source/samples/minimal.c" "$app/"

check_run() { # NAME BINARY: runs it, checks the token line, and where it found libsieve
  local name=$1 bin=$2 out
  if [[ $mode == shared ]]; then
    local resolved
    resolved=$(LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} ldd "$bin" | awk '/libsieve\.so/ {print $3}')
    [[ $resolved == "$libdir"/* ]] || fail "$name loads libsieve from '$resolved', not from $libdir"
  elif readelf -d "$bin" | grep -q 'libsieve\.so'; then
    fail "$name needs libsieve.so in a static build"
  fi
  out=$("$bin" 2>&1) || fail "$name failed: $out"
  echo "$name: $(echo "$out" | tr '\n' ' ')"
  if grep -q 'sieve: validation:' <<<"$out"; then fail "$name printed a validation message"; fi
  grep -Eq '^token [0-7] ' <<<"$out" || fail "$name printed no token line"
}

echo "== find_package(Sieve CONFIG REQUIRED) -> Sieve::sieve"
"$cmake" -S "$app" -B "$app/build-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/app.log" ||
  { cat "$work/app.log"; fail "the consumer did not configure"; }
grep "consumer: Sieve" "$work/app.log"
grep -q "consumer: Sieve $version from $libdir/cmake/Sieve" "$work/app.log" || fail "find_package did not find Sieve $version in the prefix"
"$cmake" --build "$app/build-cmake" >"$work/app-build.log" || { cat "$work/app-build.log"; fail "the consumer did not build"; }
check_run "find_package consumer" "$app/build-cmake/minimal"

if [[ $mode == static ]]; then
  # The package states libsieve.a's private dependencies: one it cannot find
  # stops find_package with the Debian package to install.
  if "$cmake" -S "$app" -B "$app/build-no-threads" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_DISABLE_FIND_PACKAGE_Threads=ON >"$work/app-no-threads.log" 2>&1; then
    fail "the static package was found without its Threads dependency"
  fi
  says "$work/app-no-threads.log" 'apt-get install libc6-dev' ||
    { cat "$work/app-no-threads.log"; fail "a missing Threads did not name libc6-dev"; }
  echo "without Threads: $(named "$work/app-no-threads.log" 'the static libsieve.a')"
fi

echo "== pkg-config sieve"
export PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig
got=$(pkg-config --modversion sieve)
[[ $got == "$version" ]] || fail "pkg-config --modversion sieve is $got, not $version"
static_flag=()
[[ $mode == static ]] && static_flag=(--static)
flags=$(pkg-config "${static_flag[@]}" --cflags --libs sieve)
echo "pkg-config ${static_flag[*]} --cflags --libs sieve: $flags"
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c99 -o "$app/minimal-pc" "$app/minimal.c" $flags || fail "the pkg-config consumer did not build"
if [[ $mode == shared ]]; then
  LD_LIBRARY_PATH=$libdir check_run "pkg-config consumer" "$app/minimal-pc"
else
  check_run "pkg-config consumer" "$app/minimal-pc"
fi

echo "== find_package(Sieve 99 CONFIG) is refused"
if "$cmake" -S "$app" -B "$app/build-99" -DCMAKE_PREFIX_PATH="$prefix" -DSIEVE_REQUEST_VERSION=99 \
   >"$work/app-99.log" 2>&1; then
  fail "find_package(Sieve 99) succeeded against Sieve $version"
fi
says "$work/app-99.log" 'compatible with requested version "99"' ||
  { cat "$work/app-99.log"; fail "find_package(Sieve 99) failed without CMake's version-mismatch error"; }
grep -B1 -A4 'requested version "99"' "$work/app-99.log"

if [[ -x $prefix/bin/sieve ]]; then
  got=$("$prefix/bin/sieve" --version)
  [[ $got == "sieve $version" ]] || fail "installed sieve --version says '$got', not 'sieve $version'"
  echo "installed CLI: $got"
fi
echo "package test ($mode): passed"
