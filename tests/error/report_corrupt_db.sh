#!/usr/bin/env bash
# report --db naming a file that is not a SQLite database.
source "$(dirname "$0")/error_test_lib.sh"
printf 'this is not sqlite at all, just text padding the header out to a page' > corrupt_report.db
expect_error "corrupt_report.db" -- "$tessel" report --db corrupt_report.db -o "$tmp/r.html"
