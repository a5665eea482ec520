#!/usr/bin/env bash
# A model path that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "nonexistent.onnx: cannot open" -- "$tessel" run "$tmp/nonexistent.onnx"
