#!/usr/bin/env bash
# An artifact whose plan.txt grew a line.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
echo "frobnicate 1 2 3" >> a.tsl/plan.txt
expect_error "a.tsl: truncated or modified: plan.txt has [0-9]+ bytes, the manifest says [0-9]+" -- "$tessel" run a.tsl --repeat 1
