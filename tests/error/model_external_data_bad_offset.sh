#!/usr/bin/env bash
# An external-data offset that is not a number is named, not reported as a bare "stoll".
source "$(dirname "$0")/error_test_lib.sh"
external_data_model model
"$py" - <<'PY'
import onnx
model = onnx.load("model/m.onnx", load_external_data=False)
entries = model.graph.initializer[0].external_data
for entry in entries:
    if entry.key == "offset":
        entry.value = "abc"
if not any(e.key == "offset" for e in entries):
    entries.add(key="offset", value="abc")
onnx.save_model(model, "model/m.onnx")
PY
expect_error "tensor 'w': external data offset 'abc' is not a non-negative integer" -- \
  "$tessel" run model/m.onnx --repeat 1
