#!/usr/bin/env bash
# install-deps.sh - installs everything tfmc needs to build and test on Debian
# bookworm. Idempotent: packages already present are skipped, so the README's
# commands and .ci/run may call it on every run. Runs as root (or via sudo).
set -euo pipefail

# The one list of Debian packages the build and the tests need.
PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libclang-rt-22-dev clang-format-22
  libopenblas-dev libutf8proc-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev
  libfftw3-dev libsndfile1-dev libsoxr-dev
  nlohmann-json3-dev libgtest-dev libmicrohttpd-dev libgnutls28-dev
  openmpi-bin libopenmpi-dev iproute2 util-linux
  openssl
  cmake ninja-build ccache g++ binutils pkg-config python3 python3-numpy
  python3-jsonschema python3-srt python3-webvtt
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done

# OpenAI's Node SDK and zod, which test/tools/tfm-serve-openai-sdk.test drives
# tfm-serve with, from the npm registry where node is there (the test is
# reported unsupported without it).
sdk="$(cd "$(dirname "$0")/.." && pwd)/test/tools/openai-sdk"
if command -v npm >/dev/null && { [ ! -f "$sdk/node_modules/openai/package.json" ] ||
    [ ! -f "$sdk/node_modules/zod/package.json" ]; }; then
  (cd "$sdk" && npm install --no-audit --no-fund --loglevel=error) ||
    echo "install-deps: could not install OpenAI's Node SDK (npm): its test is skipped"
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
