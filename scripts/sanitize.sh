#!/usr/bin/env bash
# Builds tessel with AddressSanitizer and UndefinedBehaviorSanitizer (GCC, -O1) in BUILD_DIR
# and runs the unit tests of the modules that read untrusted bytes (base, tensor, graph,
# deploy, tuning_db, executor), the CLI checks and every tests/error script against that
# build. Any sanitizer report fails the test it happens in.
#
# usage: scripts/sanitize.sh [BUILD_DIR] [extra ctest arguments...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-asan}
shift || true
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j"$(nproc)" --target tessel tessel_base_tests tessel_tensor_tests tessel_graph_tests \
  tessel_deploy_tests tessel_tuning_db_tests tessel_executor_tests tessel_fake_cuda
# Leaks are not errors here (Halide's JIT and LLVM keep what they allocate for the process).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" \
  -R '^(unit_base|unit_tensor|unit_graph|unit_deploy|unit_tuning_db|unit_executor|cli|error_.*)$' "$@"
