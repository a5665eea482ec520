#!/usr/bin/env bash
# matmul sizes that are not MxNxK.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "matmul sizes are MxNxK" -- "$tessel" bench matmul 48x40
