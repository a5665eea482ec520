#!/usr/bin/env bash
# Fault injection, as SQLite tests itself: writes fail part-way (a file-size limit, `ulimit
# -f`, stands in for a full disk) during compile, db export and tune. Each must end with a
# clear error and exit 1, leave no partial artifact or log where a whole one is expected,
# and lose no record the database held before. Prints one table row per case.
# usage: test_disk_full.sh PATH/TO/tessel SOURCE_DIR
set -u
tessel=$1
src=$2
model=$src/examples/models/tiny_cnn.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failures=0

records() { "$tessel" db stats --db "$1" 2>/dev/null | awk '$1 == "records" {print $2}'; }
integrity() { /usr/bin/python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('pragma integrity_check').fetchone()[0])" "$1"; }

# row CASE LIMIT_KB PATTERN LEFTOVER_GLOB -- command...: runs the command under the limit.
row() {
  local name=$1 limit=$2 pattern=$3 leftovers=$4
  shift 5
  local out code
  out=$(ulimit -f "$limit"; "$@" 2>&1)
  code=$?
  local error
  error=$(grep '^tessel: error: ' <<<"$out" | head -1)
  local left
  left=$(compgen -G "$leftovers" | tr '\n' ' ')
  local verdict=ok
  if [ "$code" != 1 ] || ! grep -qE -- "$pattern" <<<"$error" || [ -n "$left" ]; then
    verdict=FAILED
    failures=$((failures + 1))
  fi
  printf '| %-28s | %5s KiB | exit %-3s | %-70s | %-10s | %s\n' "$name" "$limit" "$code" "${error:0:70}" "${left:-none}" "$verdict"
}

"$tessel" tune "$model" --trials 6 --batch 3 --db tuned.db >/dev/null 2>&1 || { echo "FAILED: the first tune"; exit 1; }
before=$(records tuned.db)
echo "| case                         | limit     | exit     | error                                                                  | left over  | verdict"
row "compile (kernels.so)" 40 "code generation failed: .*File too large" "out.tsl*" -- \
  "$tessel" compile "$model" --db tuned.db -o out.tsl
row "db export (log)" 40 "log.jsonl: cannot write the tuning log" "log.jsonl*" -- \
  "$tessel" db export --db tuned.db -o log.jsonl
row "db export (database -shm)" 1 "tuned.db: .*I/O error" "log.jsonl*" -- \
  "$tessel" db export --db tuned.db -o log.jsonl
row "tune (commit of a batch)" 64 "tuned.db: .*(I/O error|disk is full)" "nothing*" -- \
  "$tessel" tune "$model" --trials 60 --batch 3 --db tuned.db
after=$(records tuned.db)
state=$(integrity tuned.db)
echo "records before $before, after $after, integrity $state"
if [ -z "$before" ] || [ "${after:-0}" -lt "$before" ] || [ "$state" != ok ]; then
  echo "FAILED: records lost or the database damaged"
  failures=$((failures + 1))
fi
# With the limit gone the same commands succeed.
"$tessel" compile "$model" --db tuned.db -o out.tsl >/dev/null 2>&1 && "$tessel" run out.tsl --repeat 1 >/dev/null 2>&1 ||
  { echo "FAILED: compile after the fault"; failures=$((failures + 1)); }
[ "$failures" = 0 ] && echo "all disk-full cases ok"
exit $((failures > 0))
