#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds examples/external against it with
# find_package(tessel), compiles the bundled model with it, checks the result against PyTorch's
# and runs the artifact with the program that links only the deploy runtime.
# usage: test_find_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/examples/external" -B "$tmp/ext" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/ext" >/dev/null
models=$src/examples/models
"$tmp/ext/compile_model" "$models/tiny_cnn.onnx" "$tmp/tiny.tsl" "$models/tiny_cnn.input.npy" "$models/tiny_cnn.expected.npy"
"$tmp/ext/run_artifact" "$tmp/tiny.tsl" --input "$models/tiny_cnn.input.npy" --repeat 2
# The runtime-only program links none of the compiler's libraries.
if ldd "$tmp/ext/run_artifact" | grep -Eq 'Halide|LLVM|onnx|protobuf'; then
  echo "FAILED: run_artifact links the compiler's libraries"; exit 1
fi
echo "find_package(tessel): 1 passed, 0 failed"
