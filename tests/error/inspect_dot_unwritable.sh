#!/usr/bin/env bash
# inspect --dot into a directory that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "no/such/dir/g.dot: cannot write" -- "$tessel" inspect "$model" --dot "$tmp/no/such/dir/g.dot"
