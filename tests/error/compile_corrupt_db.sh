#!/usr/bin/env bash
# compile --db naming a file that is not a SQLite database: read as a database, not a JSON log.
source "$(dirname "$0")/error_test_lib.sh"
printf 'this is not sqlite at all, just text padding the header out to a page' > corrupt.db
expect_error "corrupt.db: file is not a database" -- "$tessel" compile "$model" --db corrupt.db -o "$tmp/x.tsl"
