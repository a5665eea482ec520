#!/usr/bin/env bash
# A directory that is neither a model nor an artifact.
# EXPECTED TO FAIL: today "the file is empty", which says nothing of what a directory lacks.
source "$(dirname "$0")/error_test_lib.sh"
mkdir models.d
expect_error "models.d.*(is a directory|not an artifact|no manifest.json)" -- "$tessel" run models.d
