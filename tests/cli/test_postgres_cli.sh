#!/usr/bin/env bash
# The main job with its records on a PostgreSQL server: tune the bundled model into a fresh
# database on the tests' server, read it with db stats, copy it into an SQLite file and back,
# compile and run from it; a password in the URL never shows in what tessel prints.
# usage: test_postgres_cli.sh PATH/TO/tessel SOURCE_DIR URL_FILE
set -euo pipefail
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/checks.sh"
tessel=$1
src=$2
server=$(cat "$3")
model=$src/examples/models/tiny_cnn.onnx
tmp=$(mktemp -d)
name=tessel_cli_$$
psql_server() { psql -qAt "$server" -c "$1"; }
cleanup() { psql_server "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
psql_server "CREATE DATABASE $name"
# The test server trusts every local connection, so any password is accepted: one is put in
# the URL only to see it masked.
url=$(sed -E "s#^postgresql://([^@]+)@([^/]+)/.*#postgresql://\1:sekr1t@\2/$name#" <<<"$server")
cd "$tmp"

out=$("$tessel" tune "$model" --db "$url" --trials 12 --seed 1 2>&1)
check "tune writes into the server" grep -q "records in postgresql://" <<<"$out"
check "tune output masks the password" bash -c '! grep -q sekr1t <<<"$1"' _ "$out"
stats=$("$tessel" db stats --db "$url")
records=$(awk '$1 == "records" {print $2}' <<<"$stats")
check "db stats counts the records ($records)" test "${records:-0}" -ge 12
check "db stats masks the password" bash -c '! grep -q sekr1t <<<"$1" && grep -q "tessel:\*\*\*@" <<<"$1"' _ "$stats"
"$tessel" db copy "$url" copy.db >/dev/null
copied=$("$tessel" db stats --db copy.db | awk '$1 == "records" {print $2}')
check "db copy server -> file keeps every record" test "$copied" = "$records"
again=$("$tessel" db copy copy.db "$url")
check "db copy file -> server adds nothing twice" grep -q "(0 new, $records duplicates skipped" <<<"$again"
"$tessel" compile "$model" --db "$url" -o model.tsl >compile.txt 2>&1
check "compile takes tuned records from the server" grep -Eq "[1-9][0-9]* with tuned records" compile.txt
"$tessel" run model.tsl --input "$src/examples/models/tiny_cnn.input.npy" --output-dir out >/dev/null
check "the artifact's output matches PyTorch's" /usr/bin/python3 -c '
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
raise SystemExit(0 if np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-4 else 1)' out/output.npy "$src/examples/models/tiny_cnn.expected.npy"
run=$("$tessel" run "$model" --db "$url" --repeat 2 2>&1)
# Tuned groups run a searched schedule, or the built-in one where the search kept it (12
# trials need not beat a good built-in): either way every tuned group found its record.
read -r searched builtin < <(sed -nE 's/^([0-9]+) of [0-9]+ fused groups run tuned schedules from postgresql:.*\(([0-9]+) more whose best record is the built-in schedule\)$/\1 \2/p' <<<"$run") || true
check "run --db takes tuned schedules from the server (${searched:-?} searched, ${builtin:-?} built-in)" \
  test $((${searched:-0} + ${builtin:-0})) -ge 1
err=$("$tessel" db stats --db "postgresql://tessel:sekr1t@127.0.0.1:1/none" 2>&1 || true)
check "an unreachable server is a clear error" grep -q "cannot connect to the tuning database" <<<"$err"
check "the error masks the password" bash -c '! grep -q sekr1t <<<"$1"' _ "$err"
echo "postgres cli: $failures failed"
[ "$failures" -eq 0 ]
