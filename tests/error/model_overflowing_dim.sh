#!/usr/bin/env bash
# A model whose element count (2^62 * 4) overflows 64 bits.
# EXPECTED TO FAIL: today the element count overflows and the run "succeeds" (exit 0).
source "$(dirname "$0")/error_test_lib.sh"
relu_model overflow.onnx 4611686018427387904,4
expect_error "(too large|overflow|4611686018427387904)" -- "$tessel" run overflow.onnx --repeat 1
