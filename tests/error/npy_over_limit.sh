#!/usr/bin/env bash
# An .npy input over --max-input-bytes is refused before it is read.
source "$(dirname "$0")/error_test_lib.sh"
need_python numpy
"$py" -c "import numpy as np; np.save('big.npy', np.zeros((1, 3, 16, 16), np.float32))"
expect_error "big.npy: float32\[1,3,16,16\] takes 3072 bytes, more than the limit of 1024 \(--max-input-bytes\)" -- \
  "$tessel" run "$model" --input input=big.npy --max-input-bytes 1K
