#!/usr/bin/env bash
# --select-in-graph for a CUDA target (trial artifacts run on the host).
source "$(dirname "$0")/error_test_lib.sh"
expect_error "runs trial artifacts on the host CPU" -- "$tessel" compile "$model" --target cuda --db "$tmp/cuda.db" --select-in-graph 2 -o "$tmp/cuda.tsl"
