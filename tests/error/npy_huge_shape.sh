#!/usr/bin/env bash
# An .npy header that claims 2^62 elements: refused before anything is allocated or read
# (the byte count used to wrap to 0 and the "read" succeeded).
source "$(dirname "$0")/error_test_lib.sh"
header="{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"
printf '\x93NUMPY\x01\x00' > huge.npy
printf "$(printf '\\x%02x\\x%02x' $(( (${#header} + 1) % 256 )) $(( (${#header} + 1) / 256 )))" >> huge.npy
printf '%s\n' "$header" >> huge.npy
expect_error "huge.npy: .*(too large|overflows)" -- "$tessel" run "$model" --input input=huge.npy
