#pragma once
// Files a model or an artifact names are read only from inside its own folder: a relative
// path that climbs out, an absolute one, or a symbolic link (anywhere along the path) that
// leads outside is refused before anything is opened.
#include <string>

#include "base/result.h"

namespace tessel {

/// The real path of `relative` inside `folder`, which must name an existing regular file
/// whose real path lies under the folder's real path. `what` names the file in errors.
Result<std::string> resolve_inside(const std::string &folder, const std::string &relative, const std::string &what);

}  // namespace tessel
