#!/usr/bin/env bash
# Remote tuning throughput on one machine: trials/s of `tessel tune --remote` with one
# worker pinned to core 0, then with two workers pinned to cores 0 and 1 (same model, same
# budget, same seed, a fresh database each), and the queue's own claim rate with no-op
# candidates (tessel_bench_queue). Writes markdown to stdout.
# usage: bench/remote_tuning.sh BUILD_DIR DB_SERVER_URL MODEL.onnx [TRIALS]
set -euo pipefail
build=$(realpath "$1")
server=$2
model=$(realpath "$3")
trials=${4:-48}
tessel=$build/bin/tessel
tmp=$(mktemp -d)
trap 'jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
psql_on() { psql -qAt "$1" -c "$2"; }

run() {  # run WORKERS: prints "seconds trials"
  local workers=$1 name=tessel_bench_remote_$$_$1
  psql_on "$server" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null
  psql_on "$server" "CREATE DATABASE $name" >/dev/null
  local url
  url=$(sed -E "s#/[^/]*\$#/$name#" <<<"$server")
  "$tessel" db stats --db "$url" >/dev/null 2>&1 || true
  for ((w = 0; w < workers; ++w)); do
    taskset -c "$w" "$tessel" worker --db "$url" --name "bench$w" -j 1 -t 1 --idle-exit 5s >"worker$w.txt" 2>&1 &
  done
  local start end
  start=$(date +%s.%N)
  "$tessel" tune "$model" --db "$url" --remote --trials "$trials" --seed 1 -t 1 -j 1 >"tune$workers.txt" 2>&1
  end=$(date +%s.%N)
  wait
  local measured
  measured=$(grep -oE '^[0-9]+ candidates measured' "tune$workers.txt" | awk '{print $1}')
  echo "$(echo "$end - $start" | bc) $measured $(psql_on "$url" "SELECT count(*) FROM records")"
  psql_on "$server" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null
}

echo "Host: $(lscpu | grep 'Model name' | sed 's/Model name: *//'), $(nproc) cores; model $(basename "$model"), $trials trials"
echo
echo "| workers (one core each) | wall s (references + trials) | trials | records | trials/s |"
echo "|---:|---:|---:|---:|---:|"
for workers in 1 2; do
  read -r seconds measured records < <(run "$workers")
  printf "| %d | %.1f | %d | %d | %.2f |\n" "$workers" "$seconds" "$measured" "$records" "$(echo "$measured / $seconds" | bc -l)"
done
echo
echo "Queue overhead (no-op candidates, claims of 1 unless said):"
echo
"$build/bench/tessel_bench_queue" --db "$server" --candidates 2000 --workers 1,4,16 2>/dev/null
"$build/bench/tessel_bench_queue" --db "$server" --candidates 2000 --workers 16 --claim 8 2>/dev/null | tail -1
