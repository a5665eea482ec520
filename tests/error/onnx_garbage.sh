#!/usr/bin/env bash
# A file that is not a protobuf at all.
source "$(dirname "$0")/error_test_lib.sh"
printf 'garbage\xff\xfe' > garbage.onnx
expect_error "garbage.onnx.*not a valid ONNX" -- "$tessel" run garbage.onnx
