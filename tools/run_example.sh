#!/usr/bin/env bash
# The main job on the bundled example: build the CLI, describe the model, tune it on the host
# CPU (a short search; every measurement lands in ./tessel.db), run it with the tuned schedules
# and the bundled input, and check the output against PyTorch's.
# (`tessel compile` to a deployable artifact comes with the deploy issue; until then `run --db`
# JIT-compiles the tuned schedules.)
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tessel -j"$(nproc)"
model=examples/models/tiny_cnn.onnx
./build/tools/tessel inspect "$model"
./build/tools/tessel inspect "$model" --tasks
./build/tools/tessel tune "$model" --target llvm --trials "${TESSEL_EXAMPLE_TRIALS:-48}" --db tessel.db
./build/tools/tessel run "$model" --db tessel.db --input input=examples/models/tiny_cnn.input.npy \
  --output-dir out/tiny_cnn --repeat 20
/usr/bin/python3 - <<'PY'
import numpy as np
got = np.load("out/tiny_cnn/output.npy"); want = np.load("examples/models/tiny_cnn.expected.npy")
err = np.linalg.norm(got - want) / np.linalg.norm(want)
print(f"relative L2 error vs PyTorch: {err:.3g}")
raise SystemExit(0 if err < 1e-4 else 1)
PY
