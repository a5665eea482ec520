#!/usr/bin/env bash
# Installs everything tessel needs to build and test on Debian 12. Idempotent and quiet
# when the packages are already there.
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config
  libhalide14-0-dev llvm-14-dev
  libxgboost-dev libsqlite3-dev libpq-dev postgresql libcli11-dev catch2 nlohmann-json3-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libonnx-testdata
  python3-onnx python3-numpy
  clang-14 libclang-rt-14-dev
)

# The end-to-end tests export their models with PyTorch, the model zoo with torchvision too.
if [ "${TESSEL_WITH_TORCH:-0}" = 1 ]; then
  build_packages+=(python3-torch python3-torchvision)
fi

# `tessel report`'s screenshot test renders the page with headless Chromium.
if [ "${TESSEL_WITH_BROWSER:-0}" = 1 ]; then
  build_packages+=(chromium)
fi

# `tessel bench` and bench/ compare against these vendor libraries when they are present; the
# build never needs them (without them their rows say "not built in"). The tests install them so
# the peer rows are exercised.
if [ "${TESSEL_WITH_BENCH:-0}" = 1 ]; then
  build_packages+=(libopenblas-dev libdnnl-dev)
fi

missing=()
for p in "${build_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
