#!/usr/bin/env bash
# A model with an op tessel has no kernel for and ONNX defines no function body of (TfIdfVectorizer).
source "$(dirname "$0")/error_test_lib.sh"
model=/usr/share/libonnx-testdata/data/node/test_tfidfvectorizer_tf_batch_onlybigrams_skip0/model.onnx
[ -f "$model" ] || { echo "skipped: no libonnx-testdata"; exit 77; }
expect_error "unsupported ops: TfIdfVectorizer" -- "$tessel" run "$model"
