#!/usr/bin/env bash
# An artifact without weights.bin.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
rm a.tsl/weights.bin
expect_error "a.tsl/weights.bin: missing" -- "$tessel" run a.tsl --repeat 1
