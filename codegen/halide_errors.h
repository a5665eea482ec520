#pragma once
// Halide's default handlers abort or print; tessel turns their messages into Errors.

namespace tessel {

/// Installs process-wide JIT handlers that never abort and keep Halide's own printing
/// quiet. Idempotent; called before the first JIT compile.
void install_halide_handlers();

}  // namespace tessel
