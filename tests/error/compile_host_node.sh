#!/usr/bin/env bash
# compile of a model with a node the deploy runtime cannot run (TopK).
source "$(dirname "$0")/error_test_lib.sh"
model=/usr/share/libonnx-testdata/data/node/test_top_k/model.onnx
[ -f "$model" ] || { echo "skipped: no libonnx-testdata"; exit 77; }
expect_error "the deploy runtime cannot run 1 node.*'TopK_0' \(TopK\)" -- "$tessel" compile "$model" -o "$tmp/topk.tsl"
