#!/usr/bin/env bash
# Remote tuning across network namespaces of one machine: three workers, each in its own
# namespace (its own loopback, reaching the server through a veth pair), a coordinator on the
# host. The model's records must match a local run of the same budget in count. Midway the
# first worker's link is cut: its leases run out, the others take its candidates, and when
# the link returns it reconnects. Needs root (ip netns). Prints one line per check.
# usage: test_remote_netns.sh PATH/TO/tessel SOURCE_DIR
set -uo pipefail
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/checks.sh"
tessel=$(realpath "$1")
src=$2
model=$src/examples/models/tiny_cnn.onnx
# Without root or network namespaces here, say so and skip (CTest SKIP_RETURN_CODE 77).
[ "$(id -u)" -eq 0 ] || { echo "test_remote_netns: skipped: needs root (ip netns)"; exit 77; }
ip netns add tessel-probe 2>/dev/null && ip netns del tessel-probe ||
  { echo "test_remote_netns: skipped: this machine does not allow network namespaces"; exit 77; }
tmp=$(mktemp -d)
state=$tmp/server
namespaces=(tessel-ns1 tessel-ns2 tessel-ns3)
cleanup() {
  jobs -p | xargs -r kill -9 2>/dev/null
  "$src/scripts/pg_test_server.sh" stop "$state" >/dev/null 2>&1
  for i in 1 2 3; do
    ip netns del "tessel-ns$i" 2>/dev/null
    ip link del "tessel-v$i" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

for i in 1 2 3; do
  ip netns add "tessel-ns$i"
  ip link add "tessel-v$i" type veth peer name "tessel-p$i"
  ip link set "tessel-p$i" netns "tessel-ns$i"
  ip addr add "10.231.$i.1/24" dev "tessel-v$i"
  ip link set "tessel-v$i" up
  ip -n "tessel-ns$i" addr add "10.231.$i.2/24" dev "tessel-p$i"
  ip -n "tessel-ns$i" link set "tessel-p$i" up
  ip -n "tessel-ns$i" link set lo up
done
TESSEL_PG_EXTRA_LISTEN=10.231.1.1,10.231.2.1,10.231.3.1 TESSEL_PG_EXTRA_NET=10.231.0.0/16 \
  "$src/scripts/pg_test_server.sh" start "$state" >/dev/null || { echo "FAIL server start"; exit 1; }
server=$(cat "$state/url")
port=$(sed -E 's#.*:([0-9]+)/.*#\1#' <<<"$server")
psql -qAt "$server" -c "CREATE DATABASE remote"
url=${server%/*}/remote
trials=16
"$tessel" tune "$model" --db local.db --trials "$trials" --seed 3 -t 1 -j 1 --min-repeat-ms 20 >local.txt 2>&1
local_records=$("$tessel" db stats --db local.db | awk '$1 == "records" {print $2}')

"$tessel" db stats --db "$url" >/dev/null 2>&1
for i in 1 2 3; do
  # Inside the namespace 127.0.0.1 is the namespace's own: the server is at 10.231.i.1.
  ip netns exec "tessel-ns$i" "$tessel" worker --db "postgresql://tessel@10.231.$i.1:$port/remote" --name "ns$i" \
    -t 1 -j 1 --min-repeat-ms 20 --lease 3s --idle-exit 20s --claim 2 >"worker$i.txt" 2>&1 &
done
"$tessel" tune "$model" --db "$url" --remote --trials "$trials" --seed 3 -t 1 -j 1 --min-repeat-ms 20 >remote.txt 2>&1 &
coordinator=$!
cut=0
for _ in $(seq 1 300); do
  cut=$(psql -qAt "$url" -c "SELECT count(*) FROM queue WHERE worker = 'ns1' AND state = 'claimed'" 2>/dev/null || echo 0)
  [ "${cut:-0}" -gt 0 ] && break
  sleep 0.1
done
ip link set tessel-v1 down
echo "info records when ns1's link was cut: $(psql -qAt "$url" -c "SELECT count(*) FROM records")"
sleep 8
ip link set tessel-v1 up
wait "$coordinator"
check "the coordinator finishes" grep -q "$trials candidates measured" remote.txt
wait
records=$(psql -qAt "$url" -c "SELECT count(*) FROM records")
distinct=$(psql -qAt "$url" -c "SELECT count(*) FROM (SELECT DISTINCT workload_key, schedule_hash FROM records) d")
check "worker ns1 held $cut candidates when its link was cut" test "${cut:-0}" -gt 0
check "as many records as the local run ($records vs $local_records)" test -n "$records" -a "$records" = "$local_records"
check "no record twice ($distinct distinct)" test "$distinct" = "$records"
for i in 1 2 3; do
  check "worker ns$i measured through its namespace" grep -q "^completed [1-9]" "worker$i.txt"
done
check "the queue is empty" test "$(psql -qAt "$url" -c "SELECT count(*) FROM queue")" = 0
echo "remote netns: $failures failed"
[ "$failures" -eq 0 ]
