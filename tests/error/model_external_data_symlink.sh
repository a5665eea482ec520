#!/usr/bin/env bash
# External data behind a symbolic link that leads out of the model's folder is not read.
source "$(dirname "$0")/error_test_lib.sh"
external_data_model model
mkdir -p outside
mv model/w.bin outside/secret.bin
ln -s ../outside/secret.bin model/w.bin
expect_error "tensor 'w': external data file model/w.bin resolves to .*/outside/secret.bin, outside .*/model" -- \
  "$tessel" run model/m.onnx --repeat 1
