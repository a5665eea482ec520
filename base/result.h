#pragma once
// Recoverable errors as values (LLVM's Expected idea): anything user input can break
// returns a Result<T> that the caller must look at.
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace tessel {

/// What sort of failure an Error is, for callers that react differently to each (retry
/// a timeout, skip what is unsupported, report a crash as a record).
enum class ErrorKind {
  Unspecified,   // not classified: every make_error(message)
  InvalidInput,  // a model, schedule, file or option that is wrong
  NotFound,      // a file, record, device or name that does not exist
  Unsupported,   // valid, but beyond what tessel (or this machine) does
  Io,            // reading, writing or talking to another process failed
  Unreachable,   // a server that may answer again (connection lost, restarting): worth retrying
  Internal,      // a bug or a failing system call
  Timeout,       // took longer than allowed
  Crash,         // a process died (a signal, or an exit without a result)
};

/// "unspecified", "invalid_input", "not_found", "unsupported", "io", "unreachable", "internal",
/// "timeout", "crash".
inline const char *to_text(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Unspecified: return "unspecified";
    case ErrorKind::InvalidInput: return "invalid_input";
    case ErrorKind::NotFound: return "not_found";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Io: return "io";
    case ErrorKind::Unreachable: return "unreachable";
    case ErrorKind::Internal: return "internal";
    case ErrorKind::Timeout: return "timeout";
    case ErrorKind::Crash: return "crash";
  }
  return "?";
}

/// A recoverable failure with a message that names the culprit (file, node, op, value).
struct Error {
  std::string message;  // the full text, contexts included
  ErrorKind kind = ErrorKind::Unspecified;

  /// The same error as seen from further out: "context: message".
  Error with_context(const std::string &context) const & { return Error{context + ": " + message, kind}; }
  Error with_context(const std::string &context) && {
    message.insert(0, context + ": ");
    return std::move(*this);
  }
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

  const Error &error() const & { return std::get<1>(state_); }
  Error &&error() && { return std::get<1>(std::move(state_)); }

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
  const Error &error() const & { return *error_; }
  Error &&error() && { return *std::move(error_); }

 private:
  std::optional<Error> error_;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }
inline Error make_error(ErrorKind kind, std::string message) { return Error{std::move(message), kind}; }

#define TESSEL_CONCAT_INNER(a, b) a##b
#define TESSEL_CONCAT(a, b) TESSEL_CONCAT_INNER(a, b)
#define TESSEL_TRY_INNER(declaration, expr, result)   \
  auto result = (expr);                               \
  if (!result.ok()) return std::move(result).error(); \
  declaration = std::move(result).value()

/// `TESSEL_TRY(auto kernel, compile(...));` declares `kernel` from a Result's value, or
/// returns the Result's error from the enclosing function (which returns a Result or Error).
#define TESSEL_TRY(declaration, expr) TESSEL_TRY_INNER(declaration, expr, TESSEL_CONCAT(tessel_try_, __COUNTER__))

/// `TESSEL_TRY_VOID(write_file(...));` returns the error of a failed Result<void> (or of any
/// Result, its value unused) from the enclosing function.
#define TESSEL_TRY_VOID(expr)                                                                                  \
  do {                                                                                                         \
    if (auto tessel_try_result = (expr); !tessel_try_result.ok()) return std::move(tessel_try_result).error(); \
  } while (false)

/// Thrown only inside a module and turned into an Error at its boundary; lets deep
/// helpers (attribute parsing, shape checks) bail out without threading Results through.
struct TesselException : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tessel
