// Errors as values: a kind that callers can act on, context added on the way out, and the
// TESSEL_TRY macros that return an error from the enclosing function.
#include <catch2/catch.hpp>

#include <memory>

#include "base/result.h"

using namespace tessel;

namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return make_error(ErrorKind::InvalidInput, std::string("'") + c + "' is not a digit");
  return c - '0';
}

Result<int> two_digits(const std::string &text) {
  TESSEL_TRY(const int tens, parse_digit(text.at(0)));
  TESSEL_TRY(const int ones, parse_digit(text.at(1)));
  return tens * 10 + ones;
}

Result<void> check_digit(char c) {
  TESSEL_TRY_VOID(parse_digit(c));
  return {};
}

Result<void> fail_if(bool fail) {
  if (fail) return make_error(ErrorKind::Io, "disk full");
  return {};
}

Result<int> write_then_count(bool fail) {
  TESSEL_TRY_VOID(fail_if(fail));
  return 1;
}

Result<std::unique_ptr<int>> boxed(int value) { return std::make_unique<int>(value); }

Result<int> unbox(int value) {
  TESSEL_TRY(std::unique_ptr<int> box, boxed(value));
  return *box;
}

}  // namespace

TEST_CASE("an error without a kind is unspecified, as every make_error(message) was", "[base][result]") {
  const Error plain = make_error("something broke");
  CHECK(plain.kind == ErrorKind::Unspecified);
  CHECK(plain.message == "something broke");
  const Error braced{"braced"};
  CHECK(braced.kind == ErrorKind::Unspecified);

  const Error typed = make_error(ErrorKind::NotFound, "no such file");
  CHECK(typed.kind == ErrorKind::NotFound);
  CHECK(std::string(to_text(typed.kind)) == "not_found");
  CHECK(std::string(to_text(ErrorKind::InvalidInput)) == "invalid_input");
}

TEST_CASE("context goes in front of the message and keeps the kind", "[base][result]") {
  const Error inner = make_error(ErrorKind::Timeout, "no answer after 3 s");
  const Error outer = inner.with_context("device query").with_context("tune");
  CHECK(outer.message == "tune: device query: no answer after 3 s");
  CHECK(outer.kind == ErrorKind::Timeout);
  CHECK(inner.message == "no answer after 3 s");

  Result<int> failed = make_error(ErrorKind::Crash, "killed by SIGSEGV");
  const Error moved = std::move(failed).error().with_context("worker");
  CHECK(moved.message == "worker: killed by SIGSEGV");
}

TEST_CASE("TESSEL_TRY gives the value or returns the error", "[base][result]") {
  auto ok = two_digits("42");
  REQUIRE(ok.ok());
  CHECK(ok.value() == 42);

  auto bad = two_digits("4x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "'x' is not a digit");
  CHECK(bad.error().kind == ErrorKind::InvalidInput);

  auto moved = unbox(7);
  REQUIRE(moved.ok());
  CHECK(moved.value() == 7);
}

TEST_CASE("TESSEL_TRY_VOID returns the error of a failed step", "[base][result]") {
  CHECK(check_digit('5').ok());
  auto bad = check_digit('z');
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::InvalidInput);

  CHECK(write_then_count(false).value() == 1);
  auto failed = write_then_count(true);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message == "disk full");
  CHECK(failed.error().kind == ErrorKind::Io);
}
