#!/usr/bin/env bash
# An .npy header that claims 2^62 elements: refused before anything is allocated or read
# (the byte count used to wrap to 0 and the "read" succeeded).
source "$(dirname "$0")/error_test_lib.sh"
npy_header_only huge.npy "(4611686018427387904,)"
expect_error "huge.npy: .*(too large|overflows)" -- "$tessel" run "$model" --input input=huge.npy
