#!/usr/bin/env bash
# CLI behaviour: exit codes, one-line errors that name the culprit, outputs written.
# usage: test_cli.sh PATH/TO/tessel SOURCE_DIR
set -u
tessel=$1
src=$2
model=$src/examples/models/tiny_cnn.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect CODE PATTERN -- command...: exit code must be CODE and output must match PATTERN.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out
  out=$("$@" 2>&1)
  local got=$?
  if [ "$got" != "$code" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAILED: $* (exit $got, want $code; want output matching '$pattern')"
    echo "$out" | head -5 | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok: $*"
  fi
}

expect 0 "median latency" -- "$tessel" run "$model" --repeat 3
expect 0 "output.npy" -- "$tessel" run "$model" --input "input=$src/examples/models/tiny_cnn.input.npy" --output-dir "$tmp/out" --repeat 1
[ -f "$tmp/out/output.npy" ] || { echo "FAILED: output.npy not written"; failures=$((failures + 1)); }
expect 0 "output.npy" -- "$tessel" run "$model" --output-dir "$tmp/nested/deeper" --repeat 1
[ -f "$tmp/nested/deeper/output.npy" ] || { echo "FAILED: nested output dir not created"; failures=$((failures + 1)); }
expect 0 '"median_ms"' -- "$tessel" run "$model" --json --repeat 1
expect 0 "FLOPs" -- "$tessel" inspect "$model"
expect 0 '"flops"' -- "$tessel" inspect "$model" --json
expect 0 "FLOPs" -- "$tessel" inspect "$model" --dot "$tmp/model.dot"
grep -q "^digraph" "$tmp/model.dot" || { echo "FAILED: --dot wrote no digraph"; failures=$((failures + 1)); }
expect 0 "^digraph" -- "$tessel" inspect "$model" --dot -
expect 1 "no/such/dir/g.dot: cannot write" -- "$tessel" inspect "$model" --dot "$tmp/no/such/dir/g.dot"
expect 0 "FLOPs" -- "$tessel" inspect "$model" --skip-pass pack_weights

expect 1 "nonexistent.onnx.*cannot open" -- "$tessel" run "$tmp/nonexistent.onnx"
head -c 300 "$model" > "$tmp/truncated.onnx"
expect 1 "truncated.onnx" -- "$tessel" run "$tmp/truncated.onnx"
printf 'garbage\xff\xfe' > "$tmp/garbage.onnx"
expect 1 "garbage.onnx.*not a valid ONNX" -- "$tessel" run "$tmp/garbage.onnx"
expect 1 "unsupported ops: NonZero" -- "$tessel" run /usr/share/libonnx-testdata/data/node/test_nonzero_example/model.onnx
expect 1 "no input named 'bogus'" -- "$tessel" run "$model" --input "bogus=$src/examples/models/tiny_cnn.input.npy"
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/int.npy', np.zeros((1,3,32,32), np.int32)); np.save('$tmp/small.npy', np.zeros((1,3,8,8), np.float32))"
expect 1 "input 'input' must be float32, got int32" -- "$tessel" run "$model" --input "input=$tmp/int.npy"
expect 1 "input 'input' must have shape \[1,3,32,32\], got \[1,3,8,8\]" -- "$tessel" run "$model" --input "input=$tmp/small.npy"
expect 1 "not an .npy file" -- "$tessel" run "$model" --input "input=$tmp/garbage.onnx"
expect 2 "" -- "$tessel" run
expect 2 "" -- "$tessel" frobnicate

# Errors are one line.
lines=$("$tessel" run "$tmp/garbage.onnx" 2>&1 | wc -l)
[ "$lines" = 1 ] || { echo "FAILED: error took $lines lines"; failures=$((failures + 1)); }

echo "$failures failure(s)"
[ "$failures" = 0 ]
