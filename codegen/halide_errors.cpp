#include <Halide.h>

#include "codegen/halide_errors.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "base/exit_cleanup.h"
#include "llvm/Support/ErrorHandling.h"

namespace tessel {

static void quiet_print(Halide::JITUserContext *, const char *) {}
static void keep_error(Halide::JITUserContext *, const char *) {
  // A per-call context normally overrides this; without one the error is dropped here and
  // the pipeline's non-zero return still reaches the caller as an exception.
}

/// LLVM ends the process on some failures, an object file it cannot write (disk full, a
/// file-size limit) among them; there is no error value to return through Halide. This
/// says why as tessel's one-line error, removes what registered for it (the artifact's
/// staging directory) and exits 1, instead of LLVM's abort.
static void llvm_fatal_error(void *, const char *reason, bool) {
  std::fprintf(stderr, "tessel: error: code generation failed: %s\n", reason);
  std::fflush(stderr);
  run_exit_cleanups();
  std::_Exit(1);
}

void install_halide_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::install_fatal_error_handler(llvm_fatal_error, nullptr);
    Halide::JITHandlers handlers;
    handlers.custom_print = quiet_print;
    handlers.custom_error = keep_error;
    Halide::Internal::JITSharedRuntime::set_default_handlers(handlers);
  });
}

}  // namespace tessel
