#!/usr/bin/env bash
# An .npy header that claims far more data than the file holds: refused before allocating
# 2^40 bytes (it used to exhaust memory first).
source "$(dirname "$0")/error_test_lib.sh"
npy_header_only big.npy "(1024, 1024, 1024, 256)"
expect_error "big.npy: file is truncated" -- "$tessel" run "$model" --input input=big.npy
