#!/usr/bin/env bash
# Installs dependencies (Debian 12, idempotent), builds tessel and runs the whole test suite:
# unit tests, the ONNX conformance runner against its committed floors, the PyTorch-exported
# models end to end, the CLI checks (bench against oneDNN/OpenBLAS) and the report rendered in
# headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
TESSEL_WITH_TORCH=1 TESSEL_WITH_BROWSER=1 TESSEL_WITH_BENCH=1 ./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
