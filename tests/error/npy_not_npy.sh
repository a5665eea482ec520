#!/usr/bin/env bash
# An input file without the .npy magic.
source "$(dirname "$0")/error_test_lib.sh"
printf 'garbage\xff\xfe' > garbage.npy
expect_error "garbage.npy.*not an .npy file" -- "$tessel" run "$model" --input input=garbage.npy
