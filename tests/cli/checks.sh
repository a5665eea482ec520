# Sourced by the CLI test scripts: `check NAME COMMAND...` runs the command and prints one
# "ok"/"FAIL" line; `failures` counts the FAILs; `same_count A B` holds when A is a positive
# number equal to B.
failures=0
check() {
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
same_count() { [ -n "$1" ] && [ "$1" -gt 0 ] && [ "$1" = "$2" ]; }
