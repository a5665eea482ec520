#!/usr/bin/env bash
# An .npy file whose header is not a dict with descr/fortran_order/shape.
source "$(dirname "$0")/error_test_lib.sh"
printf '\x93NUMPY\x01\x00\x10\x00{garbage header}\n' > bad.npy
expect_error "bad.npy: header has no dtype" -- "$tessel" run "$model" --input input=bad.npy
