#!/usr/bin/env bash
# A schedule file naming a loop the task does not have.
source "$(dirname "$0")/error_test_lib.sh"
printf 'tessel-schedule v1\nsplit nope x xo xi 4 auto\n' > bad.sched
expect_error "does not apply to task 0.*nope" -- "$tessel" inspect "$model" --task 0 --schedule bad.sched
