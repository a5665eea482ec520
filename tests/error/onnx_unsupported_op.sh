#!/usr/bin/env bash
# A model with an op tessel has no kernel for (NonZero).
source "$(dirname "$0")/error_test_lib.sh"
model=/usr/share/libonnx-testdata/data/node/test_nonzero_example/model.onnx
[ -f "$model" ] || { echo "skipped: no libonnx-testdata"; exit 77; }
expect_error "unsupported ops: NonZero" -- "$tessel" run "$model"
