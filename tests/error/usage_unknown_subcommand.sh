#!/usr/bin/env bash
# A subcommand that does not exist: the message should name it.
# EXPECTED TO FAIL: today CLI11's "A subcommand is required", which does not name frobnicate.
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "frobnicate" -- "$tessel" frobnicate
