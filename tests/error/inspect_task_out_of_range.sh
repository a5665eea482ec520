#!/usr/bin/env bash
# inspect --task past the last task.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "--task 99 is out of range" -- "$tessel" inspect "$model" --task 99
