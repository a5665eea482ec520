#!/usr/bin/env bash
# tune --op with an op that does not exist.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "unknown benchmark kernel 'frob'" -- "$tessel" tune --op frob --shape 4x4 --trials 1 --db "$tmp/op.db"
