#!/usr/bin/env bash
# The main job on the bundled example: build the CLI, describe the model, tune it on the host
# CPU (a short search; every measurement lands in ./tessel.db), compile it with the tuned
# schedules into a deployable artifact (out/tiny_cnn.tsl), run the artifact through the
# deploy runtime on the bundled input, and check the output against PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tessel tessel_run_artifact -j"$(nproc)"
model=examples/models/tiny_cnn.onnx
./build/bin/tessel inspect "$model"
./build/bin/tessel inspect "$model" --tasks
./build/bin/tessel tune "$model" --target llvm --trials "${TESSEL_EXAMPLE_TRIALS:-48}" --db tessel.db
./build/bin/tessel compile "$model" --target llvm --db tessel.db -o out/tiny_cnn.tsl
./build/bin/tessel inspect out/tiny_cnn.tsl
./build/bin/tessel run out/tiny_cnn.tsl --input input=examples/models/tiny_cnn.input.npy \
  --output-dir out/tiny_cnn --repeat 20
# The same artifact from a program that links only the deploy runtime (no Halide, no LLVM).
./build/examples/tessel_run_artifact out/tiny_cnn.tsl --repeat 20
/usr/bin/python3 - <<'PY'
import numpy as np
got = np.load("out/tiny_cnn/output.npy"); want = np.load("examples/models/tiny_cnn.expected.npy")
err = np.linalg.norm(got - want) / np.linalg.norm(want)
print(f"relative L2 error vs PyTorch: {err:.3g}")
raise SystemExit(0 if err < 1e-4 else 1)
PY
