#!/usr/bin/env bash
# An artifact whose manifest.json is a directory: an error, not an abort (it was an uncaught
# ios_base::failure in inspect).
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
rm a.tsl/manifest.json
mkdir a.tsl/manifest.json
expect_error "a.tsl.*manifest.json" -- "$tessel" inspect a.tsl
