#!/usr/bin/env bash
# A benchmark kernel that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "unknown benchmark kernel 'frob'" -- "$tessel" bench frob 4x4
