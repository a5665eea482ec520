#!/usr/bin/env bash
# A model cut off after 300 bytes.
source "$(dirname "$0")/error_test_lib.sh"
head -c 300 "$model" > truncated.onnx
expect_error "truncated.onnx: not a valid ONNX model" -- "$tessel" run truncated.onnx
