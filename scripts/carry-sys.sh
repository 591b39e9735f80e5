#!/usr/bin/env bash
# Packs the Debian 12 packages the GPU machine's image lacks for the stages
# that need them - Open MPI (the mpi stage, docs/distributed.md) and HDF5
# (the sync stage's DXchange files, HDF5 tests) - with the libraries they
# link, into .carry/sys-debs.tar.xz (about 20 MB; carry it with the run).
# scripts/gpu-check.sh unpacks it into / there, never replacing a file the
# image has (cp -n), only when the image has no mpirun or no HDF5 headers.
# Needs apt-get download (a Debian 12 machine with its package mirror).
#
#   scripts/carry-sys.sh            # writes .carry/sys-debs.tar.xz
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKGS=(
  # Open MPI 4.1 and what it links (readelf NEEDED closure, glibc, libstdc++ and zlib left out)
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15
  libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1
  ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1
  libnuma1 libxnvctrl0 libltdl7 libmunge2 libpciaccess0 libx11-6 libxext6 libxcb1 libxau6
  libxdmcp6 libbsd0 libmd0 ocl-icd-libopencl1 libgfortran5 libquadmath0 libatomic1 libudev1
  libuuid1
  # HDF5 1.10 (serial), its helpers (h5cc: CMake's FindHDF5) and what it links
  libhdf5-dev libhdf5-103-1 libhdf5-hl-100 hdf5-helpers libaec0 libsz2 libcurl4
  libnghttp2-14 librtmp1 libssh2-1 libpsl5 libbrotli1 libldap-2.5-0 libsasl2-2
  libsasl2-modules-db libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1
  libcom-err2 libidn2-0 libunistring2 libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0
  libtasn1-6 libffi8 libssl3 libzstd1 libdb5.3
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root" "$ROOT/.carry"
(cd "$work/debs" && apt-get download "${PKGS[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed') >&2
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$work/root"; done
# what dpkg's alternatives would have made
ln -sf ../libpsm1/libpsm_infinipath.so.1.16 "$work/root/usr/lib/x86_64-linux-gnu/libpsm_infinipath.so.1"
for b in mpirun mpiexec mpicc; do ln -sf "$b.openmpi" "$work/root/usr/bin/$b"; done
# every library a carried file links, other than the C library's, must be carried
missing=$(comm -23 \
  <(find "$work/root" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec readelf -d {} + 2>/dev/null |
      sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u) \
  <(find "$work/root" -name '*.so*' -printf '%f\n' | sort -u) |
  grep -v -E '^(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|libstdc\+\+|libz)\.so' || true)
[ -z "$missing" ] || { echo "carry-sys: not carried but linked: $missing" >&2; exit 1; }
tar -C "$work/root" -cJf "$ROOT/.carry/sys-debs.tar.xz" .
echo "carry-sys: $(ls "$work"/debs | wc -l) packages -> .carry/sys-debs.tar.xz ($(du -h "$ROOT/.carry/sys-debs.tar.xz" | cut -f1))"
