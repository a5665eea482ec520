#!/usr/bin/env bash
# A declared input over --max-input-bytes (default: a quarter of physical memory) is refused
# before anything is allocated: 2^31 floats would otherwise be made and filled (8 GiB).
source "$(dirname "$0")/error_test_lib.sh"
relu_model big.onnx 2147483648
expect_error "input 'x': float32\[2147483648\] takes 8589934592 bytes, more than the limit of 1048576 \(--max-input-bytes\)" -- \
  "$tessel" run big.onnx --repeat 1 --max-input-bytes 1M
