#!/usr/bin/env bash
# A peer library tessel does not compare with.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "unknown peer 'cublas'" -- "$tessel" bench matmul 8x8x8 --vs cublas
