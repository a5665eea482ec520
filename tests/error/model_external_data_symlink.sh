#!/usr/bin/env bash
# External data behind a symbolic link that leads out of the model's folder is not read.
source "$(dirname "$0")/error_test_lib.sh"
need_python onnx
mkdir -p model outside
"$py" - <<'PY'
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model
w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "add", [x], [y], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
save_model(model, "model/m.onnx", save_as_external_data=True, location="w.bin", size_threshold=0)
PY
mv model/w.bin outside/secret.bin
ln -s ../outside/secret.bin model/w.bin
expect_error "tensor 'w': external data file model/w.bin resolves to .*/outside/secret.bin, outside .*/model" -- \
  "$tessel" run model/m.onnx --repeat 1
