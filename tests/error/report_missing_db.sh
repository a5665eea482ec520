#!/usr/bin/env bash
# report --db naming a database that does not exist: none is created.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "^tessel: error: .*missing.db: no such tuning database$" -- "$tessel" report --db "$tmp/missing.db" -o "$tmp/r.html"
[ ! -e "$tmp/missing.db" ] || { echo "FAILED: report created missing.db"; exit 1; }
[ ! -e "$tmp/r.html" ] || { echo "FAILED: a failed report left r.html"; exit 1; }
