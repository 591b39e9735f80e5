#!/usr/bin/env bash
# Makes the three folders a GPU run carries (the device has no network and its
# image lacks some of our libraries; scripts/gpu-check.sh uses all three):
#   .deps/  Debian 12's FFTW, libtiff, libpng, cJSON and zlib (headers and shared
#           libraries, unpacked; static archives and docs dropped to keep the
#           carry small); gpu-check.sh builds against them and exposes at run
#           time only the libraries the image lacks.
#   .whl/   cffi and pycparser (the Python stage), astra-toolbox 2.5.0 and the
#           CUDA 12 runtime it links, for the
#           ASTRA comparisons (its cuFFT 11 calls go through bench/astra_shim/).
#   .carry/ Open MPI and HDF5 (scripts/carry-sys.sh).
# Needs apt-get download and pip download (a Debian 12 machine with network).
# All three folders are ignored by git; together about 60 MB, under the
# device's 64 MiB carry limit.
#
#   scripts/carry-deps.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEBS=(
  libfftw3-dev libfftw3-single3 libfftw3-double3 libfftw3-long3 libfftw3-quad3
  libtiff-dev libtiff6 libtiffxx6 libjbig0 libjpeg62-turbo liblerc4 libwebp7
  libdeflate0 liblzma5 libzstd1
  libpng-dev libpng16-16 libcjson-dev libcjson1 zlib1g-dev zlib1g
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${DEBS[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed') >&2
rm -rf "$ROOT/.deps" && mkdir -p "$ROOT/.deps"
for d in "$work"/*.deb; do dpkg-deb -x "$d" "$ROOT/.deps"; done
find "$ROOT/.deps" -name '*.a' -delete
rm -rf "$ROOT/.deps/usr/share"
echo "carry-deps: $(ls "$work"/*.deb | wc -l) packages -> .deps ($(du -sh "$ROOT/.deps" | cut -f1))"

rm -rf "$ROOT/.whl" && mkdir -p "$ROOT/.whl"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$ROOT/.whl" astra-toolbox==2.5.0 nvidia-cuda-runtime-cu12==12.9.79 cffi==2.0.0 pycparser==2.23
echo "carry-deps: $(ls "$ROOT/.whl" | wc -l) wheels -> .whl ($(du -sh "$ROOT/.whl" | cut -f1))"

"$ROOT/scripts/carry-sys.sh"
du -sh "$ROOT/.deps" "$ROOT/.whl" "$ROOT/.carry"
