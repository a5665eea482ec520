#!/usr/bin/env bash
# Remote tuning on the tests' PostgreSQL server: a coordinator (`tessel tune --remote`) with
# three `tessel worker`s tunes the bundled model to its budget, and the database ends with as
# many records as a local run of the same budget; then a worker is killed with kill -9 in
# the middle of a batch: its candidates come back when its lease runs out, another worker
# finishes them, nothing is lost or recorded twice; then the server is restarted in the
# middle of a run: the coordinator and the workers reconnect and finish; last, two
# coordinators share one database. Prints one line per check.
# usage: test_remote_tune.sh PATH/TO/tessel SOURCE_DIR URL_FILE
set -uo pipefail
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/checks.sh"
tessel=$(realpath "$1")
src=$2
server=$(cat "$3")
model=$src/examples/models/tiny_cnn.onnx
tmp=$(mktemp -d)
# Scratch directories of the tessel processes this test kills with -9 (no destructor
# removes them then) go under $tmp too.
export TMPDIR="$tmp"
databases=()
psql_on() { psql -qAt "$1" -c "$2"; }
new_database() {  # prints the URL of a fresh database on the server
  local name=tessel_remote_$$_$1
  psql_on "$server" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1
  psql_on "$server" "CREATE DATABASE $name" >/dev/null
  databases+=("$name")
  sed -E "s#/[^/]*\$#/$name#" <<<"$server"
}
cleanup() {
  jobs -p | xargs -r kill -9 2>/dev/null
  for name in "${databases[@]}"; do psql_on "$server" "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
count() { psql_on "$1" "SELECT count(*) FROM records"; }
trials=16
# Timing stays short: the checks are about what gets recorded, not how fast.
tune_flags=(--trials "$trials" -t 1 -j 1 --min-repeat-ms 20 --remote-give-up 120s)
worker_flags=(-t 1 -j 1 --min-repeat-ms 20 --idle-exit 15s)

# The local run: the count to match.
"$tessel" tune "$model" --db local.db --trials "$trials" --seed 3 -t 1 -j 1 --min-repeat-ms 20 >local.txt 2>&1
local_records=$("$tessel" db stats --db local.db | awk '$1 == "records" {print $2}')

# 1. A coordinator and three workers.
url=$(new_database three)
"$tessel" db stats --db "$url" >/dev/null 2>&1  # nothing yet: the coordinator creates the schema
for w in 1 2 3; do "$tessel" worker --db "$url" --name "w$w" "${worker_flags[@]}" >"worker$w.txt" 2>&1 & done
"$tessel" tune "$model" --db "$url" --remote --seed 3 "${tune_flags[@]}" >remote.txt 2>&1
check "the coordinator finishes its budget" grep -q "$trials candidates measured" remote.txt
wait
remote_records=$(count "$url")
check "as many records as the local run ($remote_records vs $local_records)" same_count "$remote_records" "$local_records"
busy=$(for w in 1 2 3; do awk '/^completed/ {print ($2 > 0)}' "worker$w.txt"; done | grep -c 1)
check "every worker measured some ($busy of 3)" test "$busy" = 3
check "the queue is empty after the run" test "$(psql_on "$url" "SELECT count(*) FROM queue")" = 0
check "every record names the machine that measured it" \
  test "$(psql_on "$url" "SELECT count(*) FROM records WHERE machine = ''")" = 0

# 2. kill -9 of a worker in the middle of a batch.
url=$(new_database killed)
"$tessel" tune "$model" --db "$url" --remote --seed 3 "${tune_flags[@]}" >killed.txt 2>&1 &
coordinator=$!
"$tessel" worker --db "$url" --name victim --lease 2s --claim 4 "${worker_flags[@]}" >victim.txt 2>&1 &
victim=$!
claimed=0
for _ in $(seq 1 300); do
  claimed=$(psql_on "$url" "SELECT count(*) FROM queue WHERE worker = 'victim' AND state = 'claimed'" 2>/dev/null || echo 0)
  [ "${claimed:-0}" -gt 0 ] && break
  sleep 0.1
done
kill -9 "$victim"
wait "$victim" 2>/dev/null
echo "info records when the victim was killed: $(count "$url")"
check "the victim held claimed candidates when killed ($claimed)" test "${claimed:-0}" -gt 0
held=$(psql_on "$url" "SELECT count(*) FROM queue WHERE worker = 'victim' AND state = 'claimed'")
"$tessel" worker --db "$url" --name rescuer "${worker_flags[@]}" >rescuer.txt 2>&1 &
wait "$coordinator"
echo "info records after: $(count "$url")"
check "the coordinator finishes after the kill" grep -q "$trials candidates measured" killed.txt
wait
killed_records=$(count "$url")
check "no candidate lost: as many records as the local run ($killed_records)" same_count "$killed_records" "$local_records"
check "no record twice" same_count "$(psql_on "$url" "SELECT count(*) FROM (SELECT DISTINCT workload_key, schedule_hash FROM records) d")" "$killed_records"
check "the victim's $held leased candidates went to the rescuer" grep -q "^completed [1-9]" rescuer.txt

# 3. The server restarted in the middle of a run.
url=$(new_database restart)
"$tessel" tune "$model" --db "$url" --remote --seed 3 "${tune_flags[@]}" >restart.txt 2>&1 &
coordinator=$!
for w in 1 2; do "$tessel" worker --db "$url" --name "r$w" "${worker_flags[@]}" >"restart_worker$w.txt" 2>&1 & done
for _ in $(seq 1 300); do
  [ "$(psql_on "$url" "SELECT count(*) FROM records" 2>/dev/null || echo 0)" -ge 8 ] && break
  sleep 0.1
done
before=$(count "$url")
(cd / && "$src/scripts/pg_test_server.sh" restart "$(dirname "$3")")
wait "$coordinator"
check "the coordinator survives the restart (records before it: $before)" grep -q "$trials candidates measured" restart.txt
wait
check "so do the workers" bash -c '! grep -q "error" "$1" "$2"' _ restart_worker1.txt restart_worker2.txt
check "all records after the restart ($(count "$url"))" same_count "$(count "$url")" "$local_records"

# 4. Two coordinators on one database, two workers between them.
url=$(new_database two)
"$tessel" db stats --db "$url" >/dev/null 2>&1
"$tessel" tune "$model" --db "$url" --remote --seed 3 "${tune_flags[@]}" >first.txt 2>&1 &
first=$!
"$tessel" tune "$model" --db "$url" --remote --seed 4 "${tune_flags[@]}" >second.txt 2>&1 &
second=$!
for w in 1 2; do "$tessel" worker --db "$url" --name "s$w" "${worker_flags[@]}" >"shared_worker$w.txt" 2>&1 & done
wait "$first"
first_code=$?
wait "$second"
second_code=$?
# Each proposes only schedules nobody measured yet, so the two may run out of a small
# task's space before their budgets: finishing cleanly is what counts.
check "both coordinators finish (exit $first_code, $second_code)" test "$first_code$second_code" = 00
wait
shared=$(count "$url")
check "no record twice between them ($shared)" same_count \
  "$(psql_on "$url" "SELECT count(*) FROM (SELECT DISTINCT workload_key, schedule_hash FROM records) d")" "$shared"

# 5. Workers on two machine signatures: records keep apart in db stats, and the coordinator
#    compares each task's results only within its reference's signature.
url=$(new_database signatures)
"$tessel" db stats --db "$url" >/dev/null 2>&1
"$tessel" worker --db "$url" --name plain "${worker_flags[@]}" >plain.txt 2>&1 &
TESSEL_MACHINE_SIGNATURE="other machine" "$tessel" worker --db "$url" --name other "${worker_flags[@]}" >other.txt 2>&1 &
"$tessel" tune "$model" --db "$url" --remote --seed 3 "${tune_flags[@]}" >signatures.txt 2>&1
wait
signatures=$("$tessel" db stats --db "$url" --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["per_machine"]))')
check "db stats shows records per machine signature ($signatures)" test "$signatures" = 2
# Whether a task's candidates went to the other signature depends on who claimed first.
echo "info $(grep -h "came from workers on another machine" signatures.txt || echo "every task's results came from its reference's machine")"
echo "remote tune: $failures failed"
[ "$failures" -eq 0 ]
