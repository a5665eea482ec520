#!/usr/bin/env bash
# A model whose element count (2^62 * 4) overflows 64 bits.
source "$(dirname "$0")/error_test_lib.sh"
relu_model overflow.onnx 4611686018427387904,4
expect_error "(too large|overflow|4611686018427387904)" -- "$tessel" run overflow.onnx --repeat 1
