#!/usr/bin/env bash
# db prune told nothing to delete.
source "$(dirname "$0")/error_test_lib.sh"
expect_error "say what to delete" -- "$tessel" db prune --db "$tmp/copy.db"
