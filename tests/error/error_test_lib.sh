# Sourced by every tests/error/*.sh (one user-facing error each, asserting its message).
# usage: SCRIPT.sh PATH/TO/tessel SOURCE_DIR
# A script whose first lines say "EXPECTED TO FAIL" checks the behaviour that should hold but
# does not yet; tests/CMakeLists.txt registers it with WILL_FAIL.
set -u
tessel=$1
src=$2
model=$src/examples/models/tiny_cnn.onnx
py=/usr/bin/python3  # the system Python: numpy and onnx come from Debian there
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# Skips (77, SKIP_RETURN_CODE) when a Python module the input is made with is missing.
need_python() {
  "$py" -c "import $1" 2>/dev/null || { echo "skipped: $py has no $1"; exit 77; }
}

# expect_error PATTERN -- command...: exit 1 (a signal is a crash, never an error), and apart
# from "note:" lines the output is one line, "tessel: error: ...", matching PATTERN (grep -E).
expect_error() {
  local pattern=$1
  shift 2
  local out got rest
  out=$("$@" 2>&1)
  got=$?
  rest=$(grep -v '^note: ' <<<"$out")
  echo "\$ $*"
  echo "$out" | head -5 | sed 's/^/    /'
  if [ "$got" -ge 128 ]; then
    echo "FAILED: killed by signal $((got - 128)), want exit 1"
  elif [ "$got" != 1 ]; then
    echo "FAILED: exit $got, want 1"
  elif [ "$(wc -l <<<"$rest")" != 1 ] || ! grep -q '^tessel: error: ' <<<"$rest"; then
    echo "FAILED: want one line 'tessel: error: ...'"
  elif ! grep -qE -- "$pattern" <<<"$rest"; then
    echo "FAILED: the error does not match '$pattern'"
  else
    echo "ok"
    return 0
  fi
  exit 1
}

# expect_usage PATTERN -- command...: a command-line mistake: exit 2 and output matching PATTERN.
expect_usage() {
  local pattern=$1
  shift 2
  local out got
  out=$("$@" 2>&1)
  got=$?
  echo "\$ $*"
  echo "$out" | head -5 | sed 's/^/    /'
  if [ "$got" != 2 ]; then
    echo "FAILED: exit $got, want 2"
  elif ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAILED: the output does not match '$pattern'"
  else
    echo "ok"
    return 0
  fi
  exit 1
}

# A copy of the tiny model's artifact in $tmp/$1: the one the error_artifact fixture compiled
# (TESSEL_ERROR_ARTIFACT), or compiled here when the script runs on its own.
artifact_copy() {
  if [ -n "${TESSEL_ERROR_ARTIFACT:-}" ] && [ -f "$TESSEL_ERROR_ARTIFACT/manifest.json" ]; then
    cp -r "$TESSEL_ERROR_ARTIFACT" "$tmp/$1"
  else
    "$tessel" compile "$model" -o "$tmp/$1" >/dev/null 2>&1 || { echo "FAILED: cannot compile the artifact"; exit 1; }
  fi
}

# A one-node model (Relu) whose input and output are declared float32[DIMS], e.g. 1,-3,4.
relu_model() {
  need_python onnx
  "$py" - "$1" "$2" <<'PY'
import sys
from onnx import TensorProto, helper, save
dims = [int(d) for d in sys.argv[2].split(",")]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
}

# A model ($1/m.onnx: y = x + w, float32[2,2]) whose initializer w is stored as external
# data in $1/w.bin.
external_data_model() {
  need_python onnx
  mkdir -p "$1"
  "$py" - "$1" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model
w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "add", [x], [y], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
save_model(model, sys.argv[1] + "/m.onnx", save_as_external_data=True, location="w.bin", size_threshold=0)
PY
}

# An .npy file ($1) of float32 whose header claims SHAPE ($2, numpy's text, e.g. "(4, 5)")
# and that holds no data: numpy itself would refuse to write such a header.
npy_header_only() {
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': $2, }"
  local len=$(( ${#header} + 1 ))
  printf '\x93NUMPY\x01\x00' > "$1"
  printf "$(printf '\\x%02x\\x%02x' $(( len % 256 )) $(( len / 256 )))" >> "$1"
  printf '%s\n' "$header" >> "$1"
}
