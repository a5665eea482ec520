#!/usr/bin/env bash
# --profile on an ONNX model rather than an artifact.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "--profile times the kernel calls of a compiled artifact" -- "$tessel" run "$model" --profile
