#!/usr/bin/env bash
# tune into a file that is not a SQLite database.
source "$(dirname "$0")/error_test_lib.sh"
printf 'this is not sqlite at all, just text padding the header out to a page' > corrupt.db
expect_error "corrupt.db: file is not a database" -- "$tessel" tune "$model" --trials 2 --db corrupt.db
