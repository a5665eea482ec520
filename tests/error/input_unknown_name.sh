#!/usr/bin/env bash
# --input names an input the model does not have.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "no input named 'bogus'" -- "$tessel" run "$model" --input "bogus=$src/examples/models/tiny_cnn.input.npy"
