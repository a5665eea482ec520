#!/usr/bin/env bash
# An artifact whose plan.txt was edited in place, its size unchanged: the hash tells.
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
sed -i '0,/ arena 0$/s/ arena 0$/ arena 8/' a.tsl/plan.txt
expect_error "a.tsl: modified: plan.txt has FNV-1a 64 [0-9a-f]+, the manifest says [0-9a-f]+" -- "$tessel" run a.tsl --repeat 1
