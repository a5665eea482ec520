#!/usr/bin/env bash
# A subcommand without its required argument.
source "$(dirname "$0")/error_test_lib.sh"
expect_usage "model is required" -- "$tessel" run
