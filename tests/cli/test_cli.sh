#!/usr/bin/env bash
# CLI behaviour: the working paths, exit codes, outputs written. Errors that need no state
# from these runs have a script each in tests/error/.
# usage: test_cli.sh PATH/TO/tessel SOURCE_DIR [FAKE_CUDA_DIR]
set -u
tessel=$1
src=$2
fake_cuda=${3:-}  # a directory holding tests/fake_cuda's libcuda.so.1 (kernel launches fail)
model=$src/examples/models/tiny_cnn.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Scratch directories of the tessel processes this test kills with -9 (no destructor
# removes them then) go under $tmp too.
export TMPDIR="$tmp"
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
expect 0 "FLOPs" -- "$tessel" inspect "$model" --skip-pass pack_weights
# A model with external data runs from any working directory (the checker once looked the
# data file up relative to the current one).
mkdir -p "$tmp/external"
/usr/bin/python3 - "$tmp/external/m.onnx" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model
w = numpy_helper.from_array(np.full((2, 2), 3, np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "add", [x], [y], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
save_model(model, sys.argv[1], save_as_external_data=True, location="w.bin", size_threshold=0)
PY
expect 0 "median latency" -- bash -c "cd / && '$tessel' run '$tmp/external/m.onnx' --repeat 1"


# Schedules, tuning and the database.
expect 0 "loop nest" -- "$tessel" inspect "$model" --task 0 --schedule default
# `tessel bench`: tessel's row and the peers, timed briefly (XDG_CACHE_HOME keeps the peak cache here).
quick_bench() { XDG_CACHE_HOME="$tmp/cache" "$tessel" bench "$@" --rounds 1 --min-time 0.01 --db "$tmp/bench_none.db"; }
expect 0 "tessel \(default schedule\).*-" -- quick_bench matmul 48x40x32 --vs default
expect 0 "Adams2019 \(same pipeline\)" -- quick_bench softmax 8x64 --vs adams2019
expect 0 '"rows"' -- quick_bench conv 1,8,10,10,8,3,3,1,1,2 --bias-relu --json --vs default
expect 0 "Add\+Relu\+Mul" -- quick_bench elementwise 16x16 --vs default
# With the vendor libraries installed (scripts/test.sh installs them) their rows run and match.
if [ -e /usr/include/oneapi/dnnl/dnnl.hpp ] && [ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ]; then
  expect 0 "OpenBLAS cblas_sgemm +[0-9]" -- quick_bench matmul 48x40x32 --vs onednn,openblas
  out=$(quick_bench depthwise 1,8,12,12,3,3,2 --bias-relu --vs onednn 2>&1)
  if ! grep -q "oneDNN conv, preferred (blocked) la[a-z.]* *[0-9]" <<<"$out" || grep -q WRONG <<<"$out"; then
    echo "FAILED: oneDNN depthwise row missing or wrong"; echo "$out" | tail -8; failures=$((failures + 1))
  else
    echo "ok: oneDNN depthwise row"
  fi
fi
expect 0 "task 0: " -- quick_bench "$model" --vs default
# --cold: every row's weights evicted before each run, and the timing line says so.
expect 0 "constant operands evicted from the caches" -- quick_bench matmul 48x40x32 --vs default --cold
[ ! -e "$tmp/bench_none.db" ] || { echo "FAILED: bench created a database it was not asked to fill"; failures=$((failures + 1)); }
expect 0 "candidates measured" -- "$tessel" tune "$model" --trials 6 --batch 3 --db "$tmp/tune.db"
expect 0 "records +(1[0-9]|[2-9][0-9])" -- "$tessel" db stats --db "$tmp/tune.db"
expect 0 "fused groups run tuned schedules" -- "$tessel" run "$model" --db "$tmp/tune.db" --repeat 2
expect 0 "" -- "$tessel" db export --db "$tmp/tune.db" -o "$tmp/log.jsonl"
# A damaged record costs that record, not the database: compile skips it with a warning and
# deploys the next best; run --db on a database it cannot read says so.
cp "$tmp/tune.db" "$tmp/damaged.db"
/usr/bin/python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute(\"UPDATE records SET timings = 'not json' WHERE id = (SELECT id FROM records WHERE status = 'ok' ORDER BY median_seconds LIMIT 1)\")
db.commit()" "$tmp/damaged.db"
expect 0 "warning: skipped .*damaged.db: record [0-9]+: malformed timings" -- "$tessel" compile "$model" --db "$tmp/damaged.db" -o "$tmp/damaged.tsl"
cp "$tmp/tune.db" "$tmp/no_records.db"
/usr/bin/python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute('DROP TABLE records')
db.commit()" "$tmp/no_records.db"
expect 0 "warning: cannot read tuning records .*no_records.db.*default schedules" -- "$tessel" run "$model" --db "$tmp/no_records.db" --repeat 1
expect 0 "" -- "$tessel" db import "$tmp/log.jsonl" --db "$tmp/copy.db"
expect 0 "removed [0-9]+ records" -- "$tessel" db prune --db "$tmp/copy.db" --failed --keep-best 1
expect 0 "trials/s" -- "$tessel" tune --op matmul --shape 32x24x16 --trials 3 --batch 3 --db "$tmp/op.db" --min-repeat-ms 5
# --cold-weights: records marked as timed cold; one way of timing per database and target.
expect 0 "candidates measured" -- "$tessel" tune "$model" --trials 4 --batch 2 --db "$tmp/cold.db" --min-repeat-ms 5 --cold-weights
expect 0 "\[weights cold\]" -- "$tessel" db stats --db "$tmp/cold.db"
expect 1 "timed with --cold-weights; tune without it into another database" -- "$tessel" tune "$model" --trials 2 --db "$tmp/cold.db"
expect 1 "timed with warm caches; tune with --cold-weights into another database" -- "$tessel" tune --op matmul --shape 32x24x16 --trials 2 --db "$tmp/op.db" --cold-weights
expect 0 "with tuned records" -- "$tessel" compile "$model" --db "$tmp/cold.db" -o "$tmp/cold.tsl"
# A 3x3 conv with 32+ channels is tuned as its Winograd kernels; a benchmark graph's Reshapes
# read their shape input (they once read an attribute, as before opset 5, and failed).
expect 0 "TesselWinogradInput" -- "$tessel" tune --op conv --shape 1,32,28,28,32,3,3 --trials 2 --batch 2 --db "$tmp/conv.db" --min-repeat-ms 5
# bench conv times the conv as a model runs it (here Winograd's three kernels in an artifact, on the records
# just tuned) first, then the single kernel its peers are compared with.
expect 0 "tessel Winograd F\(4x4, 3x3\): 3 kernels \([1-3] on records\), compiled and run as by" -- "$tessel" bench conv 1,32,28,28,32,3,3 --vs default --db "$tmp/conv.db" --rounds 1 --min-time 0.01
expect 0 "tessel one kernel \(default schedule\) +[0-9.]+ " -- quick_bench conv 1,32,28,28,32,3,3 --vs default
# The pretrained cost model: trained from a database, started from by a tune (which says so),
# too few records or a missing file said plainly; transfer from the matmul's other shape.
expect 1 "too few to train on" -- "$tessel" db train-model --db "$tmp/op.db" -o "$tmp/model.json"
expect 0 "candidates measured" -- "$tessel" tune --op matmul --shape 48x32x16 --trials 12 --batch 6 --db "$tmp/op.db" --min-repeat-ms 5
expect 0 "trained on [0-9]+ samples of [0-9]+ workloads" -- "$tessel" db train-model --db "$tmp/op.db" -o "$tmp/model.json"
# --start-from: this database's records continue the given model's trees (another host's model).
expect 0 "trained on [0-9]+ samples .*\(continued from .*model.json\); wrote .*continued.json" -- "$tessel" db train-model --db "$tmp/op.db" -o "$tmp/continued.json" --start-from "$tmp/model.json"
expect 0 "cost model: pretrained, from .*continued.json" -- "$tessel" tune --op matmul --shape 56x24x16 --trials 3 --batch 3 --db "$tmp/op.db" --min-repeat-ms 5 --cost-model "$tmp/continued.json"
expect 2 "no_such_model.json" -- "$tessel" db train-model --db "$tmp/op.db" -o "$tmp/continued.json" --start-from "$tmp/no_such_model.json"
sed 's/"tessel_feature_width":"[0-9]*"/"tessel_feature_width":"3"/' "$tmp/model.json" > "$tmp/narrow.json"
expect 1 "reads 3 features, today's records [0-9]+: it cannot be continued" -- "$tessel" db train-model --db "$tmp/op.db" -o "$tmp/continued.json" --start-from "$tmp/narrow.json"
expect 0 "cost model: pretrained, from .*model.json" -- "$tessel" tune --op matmul --shape 40x24x16 --trials 3 --batch 3 --db "$tmp/op.db" --min-repeat-ms 5 --cost-model "$tmp/model.json"
expect 0 "1 of 1 tasks started from schedules transferred" -- "$tessel" tune --op matmul --shape 64x24x16 --trials 3 --batch 3 --db "$tmp/op.db" --min-repeat-ms 5 --cost-model none
expect 0 "warning: starting from an untrained cost model: .*no_such_model.json" -- "$tessel" tune --op matmul --shape 32x24x16 --trials 3 --batch 3 --db "$tmp/op.db" --min-repeat-ms 5 --cost-model "$tmp/no_such_model.json"
# bench from the records: --task rebuilds a workload from its key; --trials tops the database up.
"$tessel" db export --db "$tmp/op.db" -o "$tmp/op.jsonl" >/dev/null 2>&1
key=$(grep -o '"workload_key": *"[0-9a-f]*"' "$tmp/op.jsonl" | head -1 | grep -o '[0-9a-f]\{16\}')
[ -n "$key" ] || { echo "FAILED: no workload key in the exported log"; failures=$((failures + 1)); }
expect 0 "searched records" -- "$tessel" bench --task "$key" --db "$tmp/op.db" --vs default --rounds 1 --min-time 0.01
# --cold on a rebuilt workload: a MatMul's operands may be weights or activations (said so);
# a conv's weights are known, and evicted.
expect 0 "no operand known to be a weight" -- "$tessel" bench --task "$key" --db "$tmp/op.db" --vs default --rounds 1 --min-time 0.01 --cold
conv_key=$(grep '"workload_text": *"Conv(' "$tmp/log.jsonl" | head -1 | grep -o '"workload_key": *"[0-9a-f]*"' | grep -o '[0-9a-f]\{16\}')
if [ -z "$conv_key" ]; then
  echo "FAILED: no conv workload in the tuned model's log"; failures=$((failures + 1))
elif "$tessel" bench --task "$conv_key" --db "$tmp/tune.db" --vs default --rounds 1 --min-time 0.01 --cold 2>&1 |
  grep -q "no operand known to be a weight"; then
  echo "FAILED: bench --task --cold does not know a conv's weights"; failures=$((failures + 1))
fi
expect 0 "of [6-9] searched records" -- "$tessel" bench matmul 32x24x16 --trials 6 --db "$tmp/op.db" --vs default --rounds 1 --min-time 0.01

# The tuning report: one self-contained page.
expect 0 "wrote .*report.html" -- "$tessel" report --db "$tmp/tune.db" --model "$model" -o "$tmp/report.html"
grep -q "id='tasks'" "$tmp/report.html" && ! grep -qE 'https?://|<script' "$tmp/report.html" ||
  { echo "FAILED: report.html is not a self-contained report"; failures=$((failures + 1)); }
expect 0 "wrote .*all.html" -- "$tessel" report --db "$tmp/tune.db" -o "$tmp/all.html"
# Runs compared: another database's model curve drawn over this one's, with a checkpoint table.
expect 0 "wrote .*compare.html" -- "$tessel" report --db "$tmp/tune.db" --model "$model" --label today \
  --compare "again=$tmp/tune.db" -o "$tmp/compare.html"
grep -q "run by run" "$tmp/compare.html" && grep -q ">again<" "$tmp/compare.html" ||
  { echo "FAILED: compare.html does not draw the compared run"; failures=$((failures + 1)); }
expect 1 "--compare: .*nothere.db: no such tuning database" -- "$tessel" report --db "$tmp/tune.db" \
  --compare "x=$tmp/nothere.db" -o "$tmp/r.html"
expect 1 "no records for target 'llvm -mcpu=haswell'" -- "$tessel" report --db "$tmp/tune.db" --target "llvm -mcpu=haswell" -o "$tmp/r.html"
expect 1 "nonexistent.onnx" -- "$tessel" report --db "$tmp/tune.db" --model "$tmp/nonexistent.onnx" -o "$tmp/r.html"
expect 1 "no/such/dir/r.html: cannot write" -- "$tessel" report --db "$tmp/tune.db" -o "$tmp/no/such/dir/r.html"
[ ! -e "$tmp/r.html" ] || { echo "FAILED: a failed report left $tmp/r.html"; failures=$((failures + 1)); }

# tune -> compile -> run: the artifact from the database and from its exported log (the same
# bytes, unless a measurement chose other kernel calls to run on one thread: not measured here).
expect 0 "with tuned records" -- "$tessel" compile "$model" --db "$tmp/tune.db" -o "$tmp/tiny.tsl" --no-thread-choice --select-in-graph 0
expect 0 "with tuned records" -- "$tessel" compile "$model" --log "$tmp/log.jsonl" -o "$tmp/tiny_log.tsl" --no-thread-choice --select-in-graph 0
cmp -s "$tmp/tiny.tsl/plan.txt" "$tmp/tiny_log.tsl/plan.txt" && cmp -s "$tmp/tiny.tsl/kernels.so" "$tmp/tiny_log.tsl/kernels.so" ||
  { echo "FAILED: compile --log differs from compile --db"; failures=$((failures + 1)); }
expect 0 "of [0-9]+ kernel calls run on one thread \(measured in the model, [0-9]+ runs: median" -- \
  "$tessel" compile "$model" --db "$tmp/tune.db" -o "$tmp/tiny_threads.tsl" --threads 2
expect 0 "median latency" -- "$tessel" run "$tmp/tiny_threads.tsl" --repeat 3 --threads 2
expect 0 "tuned" -- "$tessel" inspect "$tmp/tiny.tsl"
# With records, compile times each task's fastest record and its built-in inside the model by
# default; --select-in-graph 0 deploys the fastest alone.
expect 0 "in-graph selection: compiling up to 2 records per task .*--select-in-graph 0" -- \
  "$tessel" compile "$model" --db "$tmp/tune.db" -o "$tmp/tiny_default.tsl" --no-thread-choice
ls -d "$tmp"/tiny_default.tsl.trial-* >/dev/null 2>&1 && { echo "FAILED: the default selection left its trial artifact"; failures=$((failures + 1)); }
"$tessel" compile "$model" --db "$tmp/tune.db" -o "$tmp/tiny_nosel.tsl" --no-thread-choice --select-in-graph 0 2>&1 |
  grep -q "in-graph selection" && { echo "FAILED: --select-in-graph 0 still selected"; failures=$((failures + 1)); }
# --select-in-graph: a trial artifact run on this machine, then the chosen records; no trial left.
expect 0 "in-graph selection: kernel time per run" -- "$tessel" compile "$model" --log "$tmp/log.jsonl" -o "$tmp/tiny_sel.tsl" --select-in-graph 3 --threads 2
ls -d "$tmp"/tiny_sel.tsl.trial-* >/dev/null 2>&1 && { echo "FAILED: --select-in-graph left its trial artifact"; failures=$((failures + 1)); }
expect 0 "median latency" -- "$tessel" run "$tmp/tiny_sel.tsl" --repeat 2
expect 0 "median latency .* over 5 runs \(p10 .*, p90 " -- "$tessel" run "$tmp/tiny.tsl" --repeat 5
expect 0 "median latency .* over 2 runs" -- "$tessel" run "$tmp/tiny.tsl" --warmup 4 --repeat 2
expect 0 "median latency .* over 2 runs" -- "$tessel" run "$model" --warmup 3 --repeat 2
expect 2 "--warmup: must be a number greater than 0" -- "$tessel" run "$tmp/tiny.tsl" --warmup 0
expect 0 '"p90_ms":.*"runs_ms":\[[0-9.e-]+(,[0-9.e-]+){4}\]' -- "$tessel" run "$tmp/tiny.tsl" --repeat 5 --json
expect 0 "output.npy" -- "$tessel" run "$tmp/tiny.tsl" --input "input=$src/examples/models/tiny_cnn.input.npy" --output-dir "$tmp/tsl_out" --repeat 2
/usr/bin/python3 - "$tmp/tsl_out/output.npy" "$src/examples/models/tiny_cnn.expected.npy" <<'PY' || { echo "FAILED: artifact output differs from PyTorch"; failures=$((failures + 1)); }
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
raise SystemExit(0 if np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-4 else 1)
PY
# --profile: every kernel call timed against its tuning record; only for artifacts.
expect 0 "kernel calls: .* ms of the .* ms median run" -- "$tessel" run "$tmp/tiny.tsl" --profile --repeat 3
expect 0 '"kernels":\[\{"step"' -- "$tessel" run "$tmp/tiny.tsl" --profile --repeat 3 --json
# ... and the host's cross-core round trip beside it, where there are two CPUs to measure.
if [ "$(nproc)" -ge 2 ]; then
  expect 0 "cross-core round trip [0-9]+ ns before loading" -- "$tessel" run "$tmp/tiny.tsl" --profile --repeat 2
  expect 0 '"cross_core_round_trip_ns":[0-9.e+]+' -- "$tessel" run "$tmp/tiny.tsl" --profile --repeat 2 --json
fi
expect 1 "give --db or --log, not both" -- "$tessel" compile "$model" --db "$tmp/tune.db" --log "$tmp/log.jsonl" -o "$tmp/x.tsl"
[ ! -e "$tmp/x.tsl" ] || { echo "FAILED: a failed compile left $tmp/x.tsl"; failures=$((failures + 1)); }

# kill -9 in the middle of a tuning run loses no record: every measurement is its own
# transaction; a rerun continues from what is there and measures nothing twice.
records() { "$tessel" db stats --db "$1" --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])' 2>/dev/null || echo 0; }
"$tessel" tune "$model" --trials 400 --batch 2 --db "$tmp/killed.db" >/dev/null 2>&1 &
tuner=$!
for _ in $(seq 1 600); do
  [ "$(records "$tmp/killed.db")" -ge 12 ] && break
  sleep 0.2
done
kill -9 "$tuner" 2>/dev/null
wait "$tuner" 2>/dev/null
before=$(records "$tmp/killed.db")
if [ "$before" -lt 12 ]; then
  echo "FAILED: the killed tuning run left $before records (want >= 12)"
  failures=$((failures + 1))
else
  echo "ok: killed tuning run left $before records"
fi
expect 0 "candidates measured" -- "$tessel" tune "$model" --trials 4 --batch 2 --db "$tmp/killed.db"
after=$(records "$tmp/killed.db")
if [ "$after" != $((before + 4)) ]; then
  echo "FAILED: rerun after kill -9: $before records, then $after (want $((before + 4)))"
  failures=$((failures + 1))
else
  echo "ok: rerun after kill -9 added exactly 4 records ($before -> $after)"
fi

# CUDA without a GPU: PTX for every task, clear errors for what needs a device.
expect 0 "PTX for cuda -arch=sm_90" -- "$tessel" compile "$model" --target "cuda -arch=sm_90" --ptx "$tmp/ptx"
ls "$tmp/ptx"/*.ptx >/dev/null 2>&1 || { echo "FAILED: --ptx wrote no .ptx file"; failures=$((failures + 1)); }
grep -q "\.entry" "$tmp"/ptx/*.ptx || { echo "FAILED: the PTX has no kernel entry"; failures=$((failures + 1)); }
expect 0 "wrote .*cuda.tsl" -- "$tessel" compile "$model" --target "cuda -arch=sm_90" -o "$tmp/cuda.tsl"
grep -q '"target": "cuda -arch=sm_90"' "$tmp/cuda.tsl/manifest.json" || { echo "FAILED: the cuda artifact's manifest names no sm_90 target"; failures=$((failures + 1)); }
if ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1"; then
  expect 1 "does not apply to --target cuda" -- "$tessel" tune "$model" --target cuda --cold-weights --trials 2 --db "$tmp/cuda.db"
  expect 1 "measures on a CUDA GPU, and none is usable here" -- "$tessel" tune "$model" --target cuda --trials 2 --db "$tmp/cuda.db"
  [ ! -e "$tmp/cuda.db" ] || { echo "FAILED: a refused cuda tune created its database"; failures=$((failures + 1)); }
  expect 1 "CUDA driver cannot be loaded here" -- "$tessel" run "$tmp/cuda.tsl" --repeat 1
  expect 1 "times kernels on a CUDA GPU, and none is usable here" -- "$tessel" bench matmul 64x64x64 --target cuda
  if [ -n "$fake_cuda" ]; then
    # Against the fake driver every GPU path gets as far as launching a kernel: the driver is
    # found (libcuda.so.1 alone, as in a container), memory and copies work, the launch fails.
    with_fake=(env LD_LIBRARY_PATH="$fake_cuda")
    expect 1 "kernel tessel_k[0-9]+ failed: CUDA: cuLaunchKernel failed" -- "${with_fake[@]}" "$tessel" run "$tmp/cuda.tsl" --repeat 1
    expect 1 "tessel default +failed: .*cuLaunchKernel failed" -- "${with_fake[@]}" "$tessel" bench conv 1,8,10,10,16,3,3 --target cuda
    expect 1 "no task could be tuned .*cuLaunchKernel failed" -- "${with_fake[@]}" "$tessel" tune "$model" --target cuda --trials 2 --db "$tmp/fake_cuda.db"
  fi
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]
