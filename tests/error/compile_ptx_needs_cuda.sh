#!/usr/bin/env bash
# --ptx for a CPU target.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "--ptx needs --target cuda" -- "$tessel" compile "$model" --ptx "$tmp/ptx"
