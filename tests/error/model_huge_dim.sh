#!/usr/bin/env bash
# A model whose input declares 10^18 elements: too large to allocate.
source "$(dirname "$0")/error_test_lib.sh"
relu_model huge.onnx 1000000,1000000,1000000
expect_error "(too large|cannot allocate|1000000)" -- "$tessel" run huge.onnx --repeat 1
