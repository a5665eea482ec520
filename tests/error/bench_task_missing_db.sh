#!/usr/bin/env bash
# bench --task from a database that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "none.db.*does not exist" -- "$tessel" bench --task 0123456789abcdef --db "$tmp/none.db"
