#pragma once
// Ops tessel has no rule for but ONNX defines as a function of other ops (the loss ops,
// DynamicQuantizeLinear, the window functions, ...) are replaced at import by the body
// ONNX's schema gives them, so they run as the ops tessel does have, and fuse with them.
#include <functional>
#include <string>

#include "base/result.h"

namespace onnx {
class ModelProto;
}

namespace tessel {

/// Inlines, in the model's main graph, every default-domain node whose op tessel cannot
/// run (`is_supported` says false) and whose ONNX schema at the model's opset has a
/// function body: a fixed one, or one ONNX builds from the node's input types (these come
/// from ONNX's shape inference). Repeats while a body brings in more such nodes. Returns
/// how many nodes it inlined; nodes without a body stay, for the import to report.
/// `checked`: the model passed onnx::checker, so ONNX's shape inference may run on it.
int inline_onnx_functions(onnx::ModelProto &model, const std::function<bool(const std::string &)> &is_supported,
                          bool checked);

}  // namespace tessel
