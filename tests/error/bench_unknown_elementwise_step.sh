#!/usr/bin/env bash
# An elementwise chain with a step that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "unknown elementwise step 'cube'" -- "$tessel" bench elementwise 4x4 --chain add,cube
