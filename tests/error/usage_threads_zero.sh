#!/usr/bin/env bash
# --threads 0: the message should say what is allowed.
# EXPECTED TO FAIL: today "Value 0 not in range 0.000000 to 1.79e308" (written out in full).
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "--threads.*(at least 1|must be positive|>= ?1)" -- "$tessel" run "$model" --threads 0 --repeat 1
