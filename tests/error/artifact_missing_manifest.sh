#!/usr/bin/env bash
# An artifact without manifest.json: the message should name it.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
rm a.tsl/manifest.json
expect_error "a.tsl.*manifest.json" -- "$tessel" run a.tsl --repeat 1
