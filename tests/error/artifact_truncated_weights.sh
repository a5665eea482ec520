#!/usr/bin/env bash
# An artifact whose weights.bin was cut short.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
head -c 1000 a.tsl/weights.bin > short && mv short a.tsl/weights.bin
expect_error "weights.bin" -- "$tessel" run a.tsl --repeat 1
