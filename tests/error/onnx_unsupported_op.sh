#!/usr/bin/env bash
# A model with an op tessel has no kernel for and ONNX defines no function body of (StringNormalizer, on strings).
source "$(dirname "$0")/error_test_lib.sh"
model=/usr/share/libonnx-testdata/data/node/test_strnormalizer_nostopwords_nochangecase/model.onnx
[ -f "$model" ] || { echo "skipped: no libonnx-testdata"; exit 77; }
expect_error "unsupported ops: StringNormalizer" -- "$tessel" run "$model"
