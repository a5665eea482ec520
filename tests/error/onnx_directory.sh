#!/usr/bin/env bash
# A directory that is neither a model nor an artifact.
source "$(dirname "$0")/error_test_lib.sh"
mkdir models.d
expect_error "models.d.*(is a directory|not an artifact|no manifest.json)" -- "$tessel" run models.d
