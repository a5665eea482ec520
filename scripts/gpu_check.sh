#!/usr/bin/env bash
# The prepared GPU check (issue 28): on a machine with an NVIDIA GPU, CUDA's ptxas, a C++
# compiler and PyTorch, but none of Debian's packages, runs the whole `--target cuda` path from
# a bundle made by scripts/bundle_for_gpu.sh --with-tests, and brings back its numbers.
#
#   scripts/gpu_check.sh [BUNDLE.tar.xz]        (default: gpu/tessel-bundle.tar.xz)
#
# Stages, each under its own timeout so that a hang costs one stage, not the call:
#   env       unpack the bundle, find the driver, ptxas and c++; nvidia-smi; bundle --check
#   unit      the [gpu] and [cuda] unit tests (schedule, compiler)
#   sweep     named warp-tile variants of matmul 4096^3 timed side by side, each checked
#             against the reference (the hidden [.gpu_sweep] probe of tessel_schedule_tests)
#   profile   Nsight Compute (ncu, where the machine has it) on the sweep's PROFILE_VARIANTS
#             (comma list of its labels), each run twice in one process: throughput, stalls
#   matmul    tessel bench matmul 4096^3 --target cuda, a short tune, vs cuBLAS SGEMM (TF32 off)
#   conv      tessel bench conv 1,64,56,56,64,3,3 --target cuda, a short tune, vs cuDNN (TF32 off)
#   conv7     the same for ResNet-18's stage-4 conv 1,512,7,7,512,3,3 (CONV7_TRIALS, CONV7_BUDGET)
#   export    ResNet-18 to ONNX with this machine's PyTorch (random weights, fixed seed)
#   resnet18  tune for a fixed time, compile the cuda artifact, run it, compare with PyTorch,
#             time against torchvision eager and ONNX Runtime
# then one summary table (bench/bench_gpu.py --summary), last.
#
# Everything lands in $OUT (default ./gpu_out): gpu_check.log (every stage's output),
# stages.txt, rows.jsonl, gpu.md (the table), gpu.db (the tuning records). Sizes and budgets
# come from the environment (seconds): MATMUL_TRIALS MATMUL_BUDGET CONV_TRIALS CONV_BUDGET CONV7_TRIALS CONV7_BUDGET
# MODEL_TRIALS MODEL_BUDGET, STAGES (a comma list, default all), CHECK_BUNDLE (0: skip the
# bundle's ldd check, ~10 s) and SEED_DB (a tuning database to start from). Never interactive.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-$repo/gpu/tessel-bundle.tar.xz}
out=${OUT:-$repo/gpu_out}
work=${GPU_CHECK_WORK:-/tmp/tessel_gpu_check}
stages=${STAGES:-env,unit,sweep,matmul,conv,conv7,export,resnet18}
: "${MATMUL_TRIALS:=64}" "${MATMUL_BUDGET:=45}" "${CONV_TRIALS:=64}" "${CONV_BUDGET:=40}"
: "${CONV7_TRIALS:=64}" "${CONV7_BUDGET:=40}" "${MODEL_TRIALS:=2000}" "${MODEL_BUDGET:=60}"
python=${PYTHON:-python3}

mkdir -p "$out" "$work"
log=$out/gpu_check.log
: > "$log"
: > "$out/stages.txt"
t0=$(date +%s)

want() { [[ ",$stages," == *",$1,"* ]]; }

# stage NAME LIMIT_SECONDS COMMAND...: runs COMMAND under `timeout`, its output into the log;
# prints one status line (and the stage's last lines when it fails).
stage() {
  local name=$1 limit=$2 start rc status mark
  shift 2
  want "$name" || return 0
  start=$(date +%s)
  mark=$(wc -l < "$log")
  echo "===== stage $name (limit ${limit} s) =====" >> "$log"
  # bash -c: a stage may be one of this script's functions (exported below).
  timeout -k 10 "$limit" bash -c '"$@"' _ "$@" >> "$log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status="TIMEOUT after ${limit} s" ;;
    *) status="FAILED (exit $rc)" ;;
  esac
  printf '%-9s %-24s %4d s  (at %d s)\n' "$name" "$status" $(( $(date +%s) - start )) $(( $(date +%s) - t0 )) |
    tee -a "$out/stages.txt"
  if [ $rc != 0 ]; then
    tail -n +$((mark + 1)) "$log" | tail -25 | sed 's/^/    | /'
  fi
  return $rc
}

setup_env() {
  echo "host: $(uname -srm), $(nproc) cores, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")," \
       "glibc $(ldd --version | head -1 | awk '{ print $NF }')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv || true
  rm -rf "$work/tessel-bundle"
  tar -C "$work" -xf "$bundle" || return 1
  cat "$work/tessel-bundle/BUNDLE.txt"
  echo "driver: $(ldconfig -p | grep -m1 'libcuda\.so\.1 ' || echo 'libcuda.so.1 not in ldconfig')"
  echo "ptxas: $(command -v ptxas) ($(ptxas --version | tail -1))"
  echo "c++: ${TESSEL_BUNDLE_CXX:-none found}"
  "$python" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
  "$work/tessel-bundle/tessel" --help | head -1
  echo "profilers: $(command -v ncu nsys ncu-cli 2>/dev/null | tr '\n' ' ')$(ls -d /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute* 2>/dev/null | tr '\n' ' ')"
  if [ "${CHECK_BUNDLE:-1}" = 1 ]; then
    "$repo/scripts/bundle_for_gpu.sh" --check "$bundle" "$repo/examples/models/tiny_cnn.onnx" | tail -8
  fi
}

# What the bundle takes from the host: the driver (libcuda.so.1), ptxas, a C++ compiler to link
# kernels.so. Found here once, for every stage.
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/compat; do
  if [ -e "$d/libcuda.so.1" ] && ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    break
  fi
done
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  [ -x "$d/ptxas" ] && { export PATH="$PATH:$d"; break; }
done
if [ -z "${TESSEL_BUNDLE_CXX:-}" ]; then
  for c in c++ g++ clang++; do command -v "$c" >/dev/null && { export TESSEL_BUNDLE_CXX=$c; break; }; done
fi
tessel=$work/tessel-bundle/tessel
db=$work/gpu.db
models=$work/models
rows=$out/rows.jsonl
: > "$rows"
# SEED_DB: a database of an earlier call on the same kind of GPU, copied in first, so that
# tuning goes on from its records instead of starting again.
rm -f "$db"
if [ -n "${SEED_DB:-}" ]; then cp "$SEED_DB" "$db" && chmod u+w "$db" && echo "tuning database seeded from $SEED_DB" | tee -a "$log"; fi
export repo bundle work python tessel db models rows
export -f setup_env

stage env 90 setup_env || { echo "the bundle does not run here: stopping"; cat "$out/stages.txt"; exit 1; }

stage unit 150 bash -c '
  b=$1
  rc=0
  "$b/tessel_schedule_tests" "[gpu]" --durations yes || rc=1
  "$b/tessel_compiler_tests" "[cuda]" --durations yes || rc=1
  exit $rc' _ "$work/tessel-bundle"

stage sweep 300 "$work/tessel-bundle/tessel_schedule_tests" "[.gpu_sweep]"
profile_variants() {
  local ncu
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null) || { echo "no ncu here"; return 1; }
  SWEEP_PROFILE=1 SWEEP_ONLY="${PROFILE_VARIANTS:-2x16 k16}" "$ncu" --target-processes all \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats \
    --section SchedulerStats "$work/tessel-bundle/tessel_schedule_tests" "[.gpu_sweep]"
}
export -f profile_variants
stage profile 240 profile_variants

bench() { "$python" "$repo/bench/bench_gpu.py" --tessel "$tessel" --db "$db" --models-dir "$models" \
            --work-dir "$work" --rows "$rows" --rounds 11 "$@"; }
export -f bench
stage matmul $((MATMUL_BUDGET + 120)) bench --only matmul --trials-matmul "$MATMUL_TRIALS" --budget-matmul "$MATMUL_BUDGET"
stage conv $((CONV_BUDGET + 90)) bench --only conv --trials-conv "$CONV_TRIALS" --budget-conv "$CONV_BUDGET"
stage conv7 $((CONV7_BUDGET + 90)) bench --only conv7 --trials-conv "$CONV7_TRIALS" --budget-conv "$CONV7_BUDGET"
stage export 120 "$python" "$repo/scripts/export_models.py" "$models" resnet18
stage resnet18 $((MODEL_BUDGET + 240)) bench --only resnet18 --trials-model "$MODEL_TRIALS" --budget-model "$MODEL_BUDGET"

cp "$db" "$out/gpu.db" 2>/dev/null || true
echo
echo "stages (total $(( $(date +%s) - t0 )) s):"
cat "$out/stages.txt"
echo
"$python" "$repo/bench/bench_gpu.py" --summary "$rows" --out "$out/gpu.md"
