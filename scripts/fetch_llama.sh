#!/usr/bin/env bash
# Fetches the real llama.cpp that Sieve is checked against, pinned: release
# v0.4.0 as the npm registry carries it (the only registry this project's
# machines reach). `npm pack` downloads a tarball and runs nothing.
#   node-llama-cpp@3.21.1             llama/gitRelease.bundle: the git bundle
#                                     of llama.cpp v0.4.0 (headers, sources,
#                                     tests)
#   @node-llama-cpp/linux-x64@3.21.1  that release's prebuilt libllama.so
#                                     with its libggml*.so beside it
# Usage: scripts/fetch_llama.sh [DEST]   (default: build/_deps/llama)
# Leaves DEST/src (the llama.cpp tree: include/llama.h, ggml/include, src,
# tests) and DEST/lib (libllama.v0.4.0.so, libllama.so link, libggml*.so).
# Idempotent: a complete DEST is kept. Exits non-zero with a message that
# names what is missing when anything cannot be fetched or checked.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/_deps/llama}
version=v0.4.0
stamp="$dest/.fetched-$version"
[[ -f $stamp ]] && exit 0

die() { echo "sieve fetch_llama: $*" >&2; exit 1; }
command -v npm >/dev/null || die "npm is not installed (Debian package npm; scripts/setup.sh test installs it)"
command -v git >/dev/null || die "git is not installed (Debian package git)"

# name@version  sha256 of the tarball
packages=(
  "node-llama-cpp@3.21.1 7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f"
  "@node-llama-cpp/linux-x64@3.21.1 4b5b65a8b2611d8af94349b02d815c0f424a30a0a19aef2be5db25ecfef6730f"
)
[[ $(uname -m) == x86_64 ]] || die "the prebuilt libllama is for linux-x64; this machine is $(uname -m)"

rm -rf "$dest"
mkdir -p "$dest/pack" "$dest/lib"
for entry in "${packages[@]}"; do
  spec=${entry% *} sum=${entry#* }
  file=$( (cd "$dest/pack" && npm pack --silent "$spec") 2>"$dest/pack/npm.log" | tail -1) ||
    die "npm pack $spec failed (no network to the npm registry?): $(tail -3 "$dest/pack/npm.log")"
  [[ -n $file && -f $dest/pack/$file ]] || die "npm pack $spec wrote no tarball: $(tail -3 "$dest/pack/npm.log")"
  echo "$sum  $dest/pack/$file" | sha256sum --check --quiet ||
    die "$spec: the tarball's sha256 is not the pinned one"
  tar -xzf "$dest/pack/$file" -C "$dest/pack"
  case $spec in
    node-llama-cpp@*)
      git clone --quiet "$dest/pack/package/llama/gitRelease.bundle" "$dest/src" 2>"$dest/pack/git.log" ||
        die "cannot clone the llama.cpp bundle: $(tail -3 "$dest/pack/git.log")"
      ;;
    @node-llama-cpp/linux-x64@*)
      cp -a "$dest"/pack/package/bins/linux-x64/lib*.so "$dest/lib/"
      ;;
  esac
  rm -rf "$dest/pack/package"
done
for f in "$dest/src/include/llama.h" "$dest/src/ggml/include/ggml.h" "$dest/lib/libllama.$version.so"; do
  [[ -f $f ]] || die "$f is missing from the fetched packages"
done
ln -sf "libllama.$version.so" "$dest/lib/libllama.so"
rm -rf "$dest/pack"
touch "$stamp"
echo "sieve fetch_llama: llama.cpp $version in $dest (src/, lib/)"
