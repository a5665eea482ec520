#!/usr/bin/env bash
# tune given both a model and --op.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "not both" -- "$tessel" tune "$model" --op matmul --shape 32x24x16 --trials 3 --db "$tmp/op.db"
