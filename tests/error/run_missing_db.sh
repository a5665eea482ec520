#!/usr/bin/env bash
# run --db naming a database that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "missing.db.*does not exist" -- "$tessel" run "$model" --db "$tmp/missing.db"
