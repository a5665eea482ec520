#!/usr/bin/env bash
# The main job on the bundled example: build the CLI, describe the model, run it on the host
# CPU with the bundled input, and check the output against PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tessel -j"$(nproc)"
model=examples/models/tiny_cnn.onnx
./build/tools/tessel inspect "$model"
./build/tools/tessel run "$model" --input input=examples/models/tiny_cnn.input.npy --output-dir out/tiny_cnn --repeat 20
/usr/bin/python3 - <<'PY'
import numpy as np
got = np.load("out/tiny_cnn/output.npy"); want = np.load("examples/models/tiny_cnn.expected.npy")
err = np.linalg.norm(got - want) / np.linalg.norm(want)
print(f"relative L2 error vs PyTorch: {err:.3g}")
raise SystemExit(0 if err < 1e-4 else 1)
PY
