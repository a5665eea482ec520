#!/usr/bin/env bash
# A CUDA target with an architecture that does not parse.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "bad CUDA architecture 'sm_9x'" -- "$tessel" tune "$model" --target "cuda -arch=sm_9x" --trials 2 --db "$tmp/cuda.db"
