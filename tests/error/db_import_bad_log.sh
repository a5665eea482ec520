#!/usr/bin/env bash
# db import of a JSON-lines log with a broken line: nothing imported.
source "$(dirname "$0")/error_test_lib.sh"
printf '{"not": "a record"\n' > bad.jsonl
expect_error "bad.jsonl:1: .*\(nothing was imported\)" -- "$tessel" db import bad.jsonl --db "$tmp/imp.db"
