#!/usr/bin/env bash
# A model whose input declares a negative dimension.
source "$(dirname "$0")/error_test_lib.sh"
relu_model neg.onnx 1,-3,4
expect_error "(negative|-3)" -- "$tessel" run neg.onnx --repeat 1
