#!/usr/bin/env bash
# compile --log naming a log that does not exist: no artifact is left.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "missing.jsonl.*do not exist" -- "$tessel" compile "$model" --log "$tmp/missing.jsonl" -o "$tmp/x.tsl"
[ ! -e "$tmp/x.tsl" ] || { echo "FAILED: a failed compile left x.tsl"; exit 1; }
