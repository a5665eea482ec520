#!/usr/bin/env bash
# An .npy input of the wrong shape.
source "$(dirname "$0")/error_test_lib.sh"
need_python numpy
"$py" -c "import numpy as np; np.save('small.npy', np.zeros((1,3,8,8), np.float32))"
expect_error "input 'input' must have shape \[1,3,32,32\], got \[1,3,8,8\]" -- "$tessel" run "$model" --input input=small.npy
