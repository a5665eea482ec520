#!/usr/bin/env bash
# An .npy input of the wrong element type.
source "$(dirname "$0")/error_test_lib.sh"
need_python numpy
"$py" -c "import numpy as np; np.save('int.npy', np.zeros((1,3,32,32), np.int32))"
expect_error "input 'input' must be float32, got int32" -- "$tessel" run "$model" --input input=int.npy
