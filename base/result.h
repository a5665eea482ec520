#pragma once
// Recoverable errors as values (LLVM's Expected idea): anything user input can break
// returns a Result<T> that the caller must look at.
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace tessel {

/// A recoverable failure with a message that names the culprit (file, node, op, value).
struct Error {
  std::string message;
};

/// Either a value of T or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & { return std::get<0>(state_); }
  const T &value() const & { return std::get<0>(state_); }
  T &&value() && { return std::get<0>(std::move(state_)); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() { return value(); }

  const Error &error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

/// Result of an operation that yields nothing on success.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error &error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

/// Thrown only inside a module and turned into an Error at its boundary; lets deep
/// helpers (attribute parsing, shape checks) bail out without threading Results through.
struct TesselException : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tessel
