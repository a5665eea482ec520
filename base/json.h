#pragma once
// tessel's one JSON library: nlohmann's (Debian's nlohmann-json3-dev, header-only), plus the
// helpers the modules that read JSON share, so that none of them sees an exception. The header
// is large: include it from .cpp files; a header that only passes a Json along includes
// base/json_fwd.h.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_fwd.h"
#include "base/result.h"

namespace tessel {

/// Parses one JSON document (RFC 8259: strings must be valid UTF-8, numbers finite). Stricter
/// than nlohmann's default in one way: a key given twice in one object is an error, since a
/// record or manifest that says two things cannot be trusted. Errors say where, as
/// "column 8: ..." for one-line text (a log line) and "line 3, column 1: ..." otherwise.
Result<Json> parse_json(const std::string &text);

/// `value` as text, on one line (indent < 0) or pretty-printed `indent` spaces deep. Bytes that
/// are not UTF-8 become U+FFFD, so the output is always valid JSON; non-finite numbers are
/// written as null (JSON has no NaN or infinity).
std::string dump_json(const Json &value, int indent = -1);

/// "null", "a boolean", "a number", "a string", "an array", "an object": for messages.
const char *json_kind_name(const Json &value);

/// The number as an int64 when it was written as an integer (no fraction or exponent) in
/// range. Exact beyond 2^53, where byte counts and flops can go and a double cannot.
std::optional<int64_t> json_int64(const Json &value);

/// The member `key` of an object; null when absent or when `object` is not an object.
const Json *json_find(const Json &object, const std::string &key);

/// "<field> must be <expected>, not <kind found>", or "missing <field>" when `found` is null.
/// `field` names the field as its reader does: "\"compile_seconds\"",
/// "manifest field \"files.plan.bytes\"".
Error json_field_error(const std::string &field, const std::string &expected, const Json *found);

/// The elements of an array that holds only numbers; else json_field_error's message for
/// `field`, expecting "an array of numbers".
Result<std::vector<double>> json_numbers(const Json &value, const std::string &field);

}  // namespace tessel
