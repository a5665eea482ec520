#!/usr/bin/env bash
# An .npy file cut off in its data.
source "$(dirname "$0")/error_test_lib.sh"
need_python numpy
"$py" -c "import numpy as np; np.save('full.npy', np.zeros((1,3,32,32), np.float32))"
head -c 200 full.npy > cut.npy
expect_error "cut.npy: file is truncated" -- "$tessel" run "$model" --input input=cut.npy
