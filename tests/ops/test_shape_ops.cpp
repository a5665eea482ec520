#include <catch2/catch.hpp>

#include "tests/ops/op_test_util.h"
