#pragma once
// Cleanups that must run even when a library ends the process itself (LLVM exits on an
// object file it cannot write): a half-written staging directory registers its removal
// here, and the handler that sees such an exit coming runs every registered cleanup.
#include <functional>

namespace tessel {

/// Registers `cleanup`; returns a handle for unregister_exit_cleanup.
int register_exit_cleanup(std::function<void()> cleanup);
void unregister_exit_cleanup(int handle);
/// Runs (and forgets) every registered cleanup; for handlers about to end the process.
void run_exit_cleanups();

}  // namespace tessel
