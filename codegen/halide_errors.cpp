#include <Halide.h>

#include "codegen/halide_errors.h"

#include <mutex>

namespace tessel {

static void quiet_print(Halide::JITUserContext *, const char *) {}
static void keep_error(Halide::JITUserContext *, const char *) {
  // A per-call context normally overrides this; without one the error is dropped here and
  // the pipeline's non-zero return still reaches the caller as an exception.
}

void install_halide_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    Halide::JITHandlers handlers;
    handlers.custom_print = quiet_print;
    handlers.custom_error = keep_error;
    Halide::Internal::JITSharedRuntime::set_default_handlers(handlers);
  });
}

}  // namespace tessel
