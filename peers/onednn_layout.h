#pragma once
// How a oneDNN memory descriptor is laid out, in oneDNN's own letter notation (e.g. "aBcd16b"):
// the blocked layouts are what make the "preferred layout" rows fast, so their notes say which
// one the library chose. Only compiled with oneDNN (TESSEL_HAVE_ONEDNN).
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

namespace tessel::bench {

/// "`what` aBcd16b" for a blocked descriptor, "`what` non-blocked" otherwise.
std::string onednn_layout_note(const char *what, const dnnl::memory::desc &desc);

}  // namespace tessel::bench
