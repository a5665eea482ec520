#!/usr/bin/env bash
# An .npy header that claims far more data than the file holds: refused before allocating
# 2^40 bytes (it used to exhaust memory first).
source "$(dirname "$0")/error_test_lib.sh"
header="{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 1024, 256), }"
printf '\x93NUMPY\x01\x00' > big.npy
printf "$(printf '\\x%02x\\x%02x' $(( (${#header} + 1) % 256 )) $(( (${#header} + 1) / 256 )))" >> big.npy
printf '%s\n' "$header" >> big.npy
expect_error "big.npy: file is truncated" -- "$tessel" run "$model" --input input=big.npy
