#!/usr/bin/env bash
# A flag that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "not expected: --frob" -- "$tessel" run "$model" --frob
