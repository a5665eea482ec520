#!/usr/bin/env bash
# A subcommand that does not exist: the message should name it.
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "frobnicate" -- "$tessel" frobnicate
