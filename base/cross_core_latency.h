#pragma once
// How long a cache line takes to travel between two CPUs and back. On the virtual machines
// tessel is measured on, this is a property of where the hypervisor placed the two vCPUs at
// that moment, and it changes over minutes: 70-110 ns round trip most of the time, 470-510
// ns at others (AMD EPYC, 2 vCPUs). While it is high, every kernel that reads what the
// other thread wrote runs slower (ResNet-18's Winograd input transform 0.10 -> 0.24 ms) and
// so does every other runtime. Reported beside latencies so two runs can be compared.
#include <optional>

namespace tessel {

/// The median over batches of the mean round trip, in nanoseconds, of one cache line
/// between a thread on the first and a thread on the second CPU the calling thread may run
/// on; nothing when it may run on fewer than two. Takes a few milliseconds.
std::optional<double> cross_core_round_trip_ns();

}  // namespace tessel
