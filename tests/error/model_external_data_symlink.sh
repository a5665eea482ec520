#!/usr/bin/env bash
# External data behind a symbolic link is not read (it could lead out of the model's folder,
# or be swapped for one that does after a check).
source "$(dirname "$0")/error_test_lib.sh"
external_data_model model
mkdir -p outside
mv model/w.bin outside/secret.bin
ln -s ../outside/secret.bin model/w.bin
expect_error "tensor .w.: external data file model/w.bin is or goes through a symbolic link .w.bin.; files a model or artifact names must be regular files inside its folder" -- \
  "$tessel" run model/m.onnx --repeat 1
