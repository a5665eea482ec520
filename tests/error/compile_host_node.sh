#!/usr/bin/env bash
# compile of a model with a host op the deploy runtime has no implementation of (GridSample;
# TopK, NonZero and the detectors' other host ops deploy as host steps).
source "$(dirname "$0")/error_test_lib.sh"
model=/usr/share/libonnx-testdata/data/node/test_gridsample/model.onnx
[ -f "$model" ] || { echo "skipped: no libonnx-testdata"; exit 77; }
expect_error "has no host implementation of GridSample \(nodes 'GridSample_0'\)" -- "$tessel" compile "$model" -o "$tmp/gridsample.tsl"
