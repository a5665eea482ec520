#!/usr/bin/env bash
# run --db naming a file that is not a SQLite database.
source "$(dirname "$0")/error_test_lib.sh"
printf 'this is not sqlite at all, just text padding the header out to a page' > corrupt.db
expect_error "corrupt.db: file is not a database" -- "$tessel" run "$model" --db corrupt.db --repeat 1
