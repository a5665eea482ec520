#!/usr/bin/env bash
# An artifact without kernels.so.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
rm a.tsl/kernels.so
expect_error "a.tsl/kernels.so: missing" -- "$tessel" run a.tsl --repeat 1
