#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/: clang-14 with ASan and UBSan) and runs each for
# SECONDS (default 30), starting from its committed seed corpus in fuzz/corpus/TARGET. New
# corpus entries go to WORK/TARGET/corpus, never into the repository; a crash or a
# sanitizer report fails the run and leaves its input in WORK/TARGET/.
#
# usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR] [WORK_DIR]
#   TESSEL_FUZZ_TARGETS="fuzz_npy ..." runs only those targets (default: all seven).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
build=${2:-$root/build-fuzz}
work=${3:-$build/work}
read -r -a targets <<<"${TESSEL_FUZZ_TARGETS:-fuzz_npy fuzz_manifest_plan fuzz_tuning_log_line fuzz_schedule_text fuzz_onnx_import fuzz_workload_text fuzz_host_program}"

mkdir -p "$build"
if ! { cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 &&
       cmake --build "$build" -j"$(nproc)"; } >"$build/build.log" 2>&1; then
  echo "building the fuzz targets failed:"
  grep -E "error|undefined reference" "$build/build.log" | head -10 || tail -20 "$build/build.log"
  exit 1
fi

status=0
for target in "${targets[@]}"; do
  mkdir -p "$work/$target/corpus"
  log="$work/$target.log"
  if "$build/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$work/$target/" \
      "$work/$target/corpus" "$root/fuzz/corpus/$target" >"$log" 2>&1; then
    echo "$target: $(grep -E '^#[0-9]+.*DONE' "$log" | tail -1)"
  else
    echo "$target: FAILED (log: $log)"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -5 || true
    status=1
  fi
done
exit $status
