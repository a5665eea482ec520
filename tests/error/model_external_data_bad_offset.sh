#!/usr/bin/env bash
# An external-data offset that is not a number is named, not reported as a bare "stoll".
source "$(dirname "$0")/error_test_lib.sh"
need_python onnx
mkdir -p model
"$py" - <<'PY'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "add", [x], [y], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(model, "model/m.onnx", save_as_external_data=True, location="w.bin", size_threshold=0)
model = onnx.load("model/m.onnx", load_external_data=False)
for entry in model.graph.initializer[0].external_data:
    if entry.key == "offset":
        entry.value = "abc"
if not any(e.key == "offset" for e in model.graph.initializer[0].external_data):
    model.graph.initializer[0].external_data.add(key="offset", value="abc")
onnx.save_model(model, "model/m.onnx")
PY
expect_error "tensor 'w': external data offset 'abc' is not a non-negative integer" -- \
  "$tessel" run model/m.onnx --repeat 1
