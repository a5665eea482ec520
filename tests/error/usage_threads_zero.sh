#!/usr/bin/env bash
# --threads 0: the message should say what is allowed.
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "--threads.*(at least 1|must be positive|>= ?1)" -- "$tessel" run "$model" --threads 0 --repeat 1
