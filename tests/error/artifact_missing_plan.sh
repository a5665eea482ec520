#!/usr/bin/env bash
# An artifact without plan.txt.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
rm a.tsl/plan.txt
expect_error "a.tsl/plan.txt: missing" -- "$tessel" run a.tsl --repeat 1
