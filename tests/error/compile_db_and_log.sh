#!/usr/bin/env bash
# compile given both --db and --log.
source "$(dirname "$0")/error_test_lib.sh"
printf "" > log.jsonl
expect_error "give --db or --log, not both" -- "$tessel" compile "$model" --db "$tmp/tune.db" --log log.jsonl -o "$tmp/x.tsl"
