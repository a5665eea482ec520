#!/usr/bin/env bash
# An artifact whose kernels.so is a symbolic link to a library outside it: refused, never
# dlopened (it used to be loaded and run).
source "$(dirname "$0")/error_test_lib.sh"
artifact_copy a.tsl
mv a.tsl/kernels.so outside_kernels.so
ln -s "$PWD/outside_kernels.so" a.tsl/kernels.so
expect_error "a.tsl/kernels.so: a symbolic link" -- "$tessel" run a.tsl --repeat 1
