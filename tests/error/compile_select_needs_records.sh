#!/usr/bin/env bash
# --select-in-graph with no tuning records to choose from.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "--select-in-graph needs tuning records" -- "$tessel" compile "$model" -o "$tmp/x.tsl" --select-in-graph 2
