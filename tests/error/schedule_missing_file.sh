#!/usr/bin/env bash
# A schedule file that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "cannot read schedule file 'nonexistent.sched'" -- "$tessel" inspect "$model" --task 0 --schedule nonexistent.sched
