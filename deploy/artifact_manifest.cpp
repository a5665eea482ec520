#include "deploy/artifact_manifest.h"

#include <cstdio>
#include <sstream>

#include "deploy/execution_plan.h"
#include "deploy/json_value.h"

namespace tessel::deploy {

namespace {

constexpr const char *kFormat = "tessel-artifact";

std::string int_list(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string tensor_json(const ArtifactTensor &t) {
  return "{\"name\": " + json_quote(t.name) + ", \"dtype\": " + json_quote(dtype_name(t.dtype)) +
         ", \"shape\": " + int_list(t.shape) + "}";
}

std::string file_json(const ArtifactFile &f) {
  return "{\"path\": " + json_quote(f.path) + ", \"bytes\": " + std::to_string(f.bytes) +
         ", \"fnv1a64\": " + json_quote(f.fnv1a64) + "}";
}

std::string task_json(const ArtifactTask &t) {
  std::string s = "{\"kernel\": " + json_quote(t.kernel) + ", \"ops\": " + json_quote(t.ops) +
                  ", \"workload_key\": " + json_quote(t.workload_key) + ", \"flops\": " + std::to_string(t.flops) +
                  ", \"schedule\": " + (t.tuned ? "\"tuned\"" : "\"default\"");
  if (t.tuned) {
    s += ", \"schedule_hash\": " + json_quote(t.schedule_hash);
    if (t.record_median_seconds) s += ", \"record_median_seconds\": " + json_number(*t.record_median_seconds);
  }
  return s + "}";
}

// One array element per line: the manifest is read by people too (`cat model.tsl/manifest.json`).
template <typename T, typename F>
std::string json_lines(const std::vector<T> &items, F &&one) {
  if (items.empty()) return "[]";
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i) s += "    " + one(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  return s + "  ]";
}

bool is_hash_text(const std::string &s) {
  if (s.size() != 16) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Typed access to the manifest's fields; errors name the field by its path ("files.plan.bytes").
class Fields {
 public:
  static Error wrong(const std::string &path, const std::string &what, const JsonValue *v) {
    return make_error("manifest field \"" + path + "\" must be " + what + (v ? std::string(", found ") + JsonValue::kind_name(v->kind()) : std::string(" (missing)")));
  }

  static Result<const JsonValue *> get(const JsonValue &obj, const std::string &key, const std::string &path,
                                       JsonValue::Kind kind, const char *what) {
    const JsonValue *v = obj.find(key);
    if (!v || v->kind() != kind) return wrong(path, what, v);
    return v;
  }

  static Result<std::string> string(const JsonValue &obj, const std::string &key, const std::string &path) {
    Result<const JsonValue *> v = get(obj, key, path, JsonValue::Kind::String, "a string");
    if (!v.ok()) return v.error();
    return v.value()->text();
  }

  static Result<std::string> optional_string(const JsonValue &obj, const std::string &key, const std::string &path) {
    if (!obj.find(key)) return std::string();
    return string(obj, key, path);
  }

  static Result<int64_t> count(const JsonValue &obj, const std::string &key, const std::string &path) {
    const JsonValue *v = obj.find(key);
    std::optional<int64_t> n = v && v->is_number() ? v->as_int64() : std::nullopt;
    if (!n || *n < 0) return wrong(path, "a non-negative integer", v);
    return *n;
  }

  static Result<ArtifactTensor> tensor(const JsonValue &v, const std::string &path) {
    if (!v.is_object()) return wrong(path, "an object", &v);
    ArtifactTensor t;
    Result<std::string> name = string(v, "name", path + ".name");
    if (!name.ok()) return name.error();
    t.name = name.value();
    Result<std::string> dtype = string(v, "dtype", path + ".dtype");
    if (!dtype.ok()) return dtype.error();
    std::optional<DType> d = parse_artifact_dtype(dtype.value());
    if (!d) return make_error("manifest field \"" + path + ".dtype\": unknown dtype \"" + dtype.value() + "\"");
    t.dtype = *d;
    Result<const JsonValue *> shape = get(v, "shape", path + ".shape", JsonValue::Kind::Array, "an array");
    if (!shape.ok()) return shape.error();
    for (size_t i = 0; i < shape.value()->items().size(); ++i) {
      const JsonValue &dim = shape.value()->items()[i];
      std::optional<int64_t> n = dim.is_number() ? dim.as_int64() : std::nullopt;
      if (!n || *n < 0) return wrong(path + ".shape[" + std::to_string(i) + "]", "a non-negative integer", &dim);
      t.shape.push_back(*n);
    }
    return t;
  }

  static Result<std::vector<ArtifactTensor>> tensors(const JsonValue &obj, const std::string &key) {
    Result<const JsonValue *> list = get(obj, key, key, JsonValue::Kind::Array, "an array");
    if (!list.ok()) return list.error();
    std::vector<ArtifactTensor> out;
    for (size_t i = 0; i < list.value()->items().size(); ++i) {
      Result<ArtifactTensor> t = tensor(list.value()->items()[i], key + "[" + std::to_string(i) + "]");
      if (!t.ok()) return t.error();
      out.push_back(std::move(t).value());
    }
    return out;
  }

  static Result<ArtifactTask> task(const JsonValue &v, const std::string &path) {
    if (!v.is_object()) return wrong(path, "an object", &v);
    ArtifactTask t;
    for (auto [key, field] : {std::pair{"kernel", &t.kernel}, std::pair{"ops", &t.ops}, std::pair{"workload_key", &t.workload_key}}) {
      Result<std::string> s = optional_string(v, key, path + "." + key);
      if (!s.ok()) return s.error();
      *field = s.value();
    }
    if (v.find("flops")) {
      Result<int64_t> flops = count(v, "flops", path + ".flops");
      if (!flops.ok()) return flops.error();
      t.flops = flops.value();
    }
    Result<std::string> schedule = string(v, "schedule", path + ".schedule");
    if (!schedule.ok()) return schedule.error();
    if (schedule.value() != "tuned" && schedule.value() != "default")
      return make_error("manifest field \"" + path + ".schedule\" must be \"tuned\" or \"default\", found \"" +
                        schedule.value() + "\"");
    t.tuned = schedule.value() == "tuned";
    Result<std::string> hash = optional_string(v, "schedule_hash", path + ".schedule_hash");
    if (!hash.ok()) return hash.error();
    t.schedule_hash = hash.value();
    if (const JsonValue *median = v.find("record_median_seconds")) {
      if (!median->is_number()) return wrong(path + ".record_median_seconds", "a number", median);
      t.record_median_seconds = median->as_double();
    }
    return t;
  }

  static Result<ArtifactFile> file(const JsonValue &files, const std::string &key) {
    const std::string path = "files." + key;
    Result<const JsonValue *> v = get(files, key, path, JsonValue::Kind::Object, "an object");
    if (!v.ok()) return v.error();
    ArtifactFile f;
    Result<std::string> p = string(*v.value(), "path", path + ".path");
    if (!p.ok()) return p.error();
    f.path = p.value();
    Result<int64_t> bytes = count(*v.value(), "bytes", path + ".bytes");
    if (!bytes.ok()) return bytes.error();
    f.bytes = bytes.value();
    Result<std::string> hash = string(*v.value(), "fnv1a64", path + ".fnv1a64");
    if (!hash.ok()) return hash.error();
    if (!is_hash_text(hash.value()))
      return make_error("manifest field \"" + path + ".fnv1a64\" must be 16 lower-case hex digits, found \"" +
                        hash.value() + "\"");
    f.fnv1a64 = hash.value();
    return f;
  }
};

}  // namespace

bool operator==(const ArtifactFile &a, const ArtifactFile &b) {
  return a.path == b.path && a.bytes == b.bytes && a.fnv1a64 == b.fnv1a64;
}
bool operator==(const ArtifactTensor &a, const ArtifactTensor &b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape;
}
bool operator==(const ArtifactTask &a, const ArtifactTask &b) {
  return a.kernel == b.kernel && a.ops == b.ops && a.workload_key == b.workload_key && a.flops == b.flops &&
         a.tuned == b.tuned && a.schedule_hash == b.schedule_hash && a.record_median_seconds == b.record_median_seconds;
}
bool operator==(const ArtifactManifest &a, const ArtifactManifest &b) {
  return a.format_version == b.format_version && a.tessel_version == b.tessel_version && a.target == b.target &&
         a.halide_target == b.halide_target && a.arch == b.arch && a.required_cpu_features == b.required_cpu_features &&
         a.model_path == b.model_path && a.model_fnv1a64 == b.model_fnv1a64 && a.created_utc == b.created_utc &&
         a.arena_bytes == b.arena_bytes && a.inputs == b.inputs && a.outputs == b.outputs && a.tasks == b.tasks &&
         a.plan == b.plan && a.weights == b.weights && a.kernels == b.kernels;
}

std::string to_json(const ArtifactManifest &m) {
  std::string features = "[";
  for (size_t i = 0; i < m.required_cpu_features.size(); ++i)
    features += (i ? ", " : "") + json_quote(m.required_cpu_features[i]);
  features += "]";
  std::ostringstream os;
  os << "{\n"
     << "  \"format\": " << json_quote(kFormat) << ",\n"
     << "  \"format_version\": " << m.format_version << ",\n"
     << "  \"tessel_version\": " << json_quote(m.tessel_version) << ",\n"
     << "  \"target\": " << json_quote(m.target) << ",\n"
     << "  \"halide_target\": " << json_quote(m.halide_target) << ",\n"
     << "  \"arch\": " << json_quote(m.arch) << ",\n"
     << "  \"required_cpu_features\": " << features << ",\n"
     << "  \"model\": {\"path\": " << json_quote(m.model_path) << ", \"fnv1a64\": " << json_quote(m.model_fnv1a64) << "},\n"
     << "  \"created_utc\": " << json_quote(m.created_utc) << ",\n"
     << "  \"arena_bytes\": " << m.arena_bytes << ",\n"
     << "  \"inputs\": " << json_lines(m.inputs, tensor_json) << ",\n"
     << "  \"outputs\": " << json_lines(m.outputs, tensor_json) << ",\n"
     << "  \"tasks\": " << json_lines(m.tasks, task_json) << ",\n"
     << "  \"files\": {\n"
     << "    \"plan\": " << file_json(m.plan) << ",\n"
     << "    \"weights\": " << file_json(m.weights) << ",\n"
     << "    \"kernels\": " << file_json(m.kernels) << "\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

Result<ArtifactManifest> parse_manifest(const std::string &json) {
  Result<JsonValue> doc = parse_json(json);
  if (!doc.ok()) return make_error("not a tessel artifact: " + doc.error().message);
  const JsonValue &root = doc.value();
  const JsonValue *format = root.find("format");
  if (!format || !format->is_string() || format->text() != kFormat)
    return make_error(std::string("not a tessel artifact (\"format\" is ") +
                      (format ? (format->is_string() ? json_quote(format->text()) : JsonValue::kind_name(format->kind())) : "missing") +
                      ", expected \"" + kFormat + "\")");
  // The version comes before every other field: a newer format may have changed them.
  const JsonValue *version = root.find("format_version");
  std::optional<int64_t> v = version && version->is_number() ? version->as_int64() : std::nullopt;
  if (!v) return Fields::wrong("format_version", "an integer", version);
  if (*v != kArtifactFormatVersion)
    return make_error("artifact format version " + std::to_string(*v) + " is not one this runtime reads (it reads version " +
                      std::to_string(kArtifactFormatVersion) + ")");

  ArtifactManifest m;
  m.format_version = static_cast<int>(*v);
  for (auto [key, field] : {std::pair{"tessel_version", &m.tessel_version}, std::pair{"target", &m.target},
                            std::pair{"arch", &m.arch}}) {
    Result<std::string> s = Fields::string(root, key, key);
    if (!s.ok()) return s.error();
    *field = s.value();
  }
  for (auto [key, field] : {std::pair{"halide_target", &m.halide_target}, std::pair{"created_utc", &m.created_utc}}) {
    Result<std::string> s = Fields::optional_string(root, key, key);
    if (!s.ok()) return s.error();
    *field = s.value();
  }
  Result<const JsonValue *> features =
      Fields::get(root, "required_cpu_features", "required_cpu_features", JsonValue::Kind::Array, "an array of strings");
  if (!features.ok()) return features.error();
  for (size_t i = 0; i < features.value()->items().size(); ++i) {
    const JsonValue &f = features.value()->items()[i];
    if (!f.is_string()) return Fields::wrong("required_cpu_features[" + std::to_string(i) + "]", "a string", &f);
    m.required_cpu_features.push_back(f.text());
  }
  if (const JsonValue *model = root.find("model")) {
    if (!model->is_object()) return Fields::wrong("model", "an object", model);
    Result<std::string> path = Fields::optional_string(*model, "path", "model.path");
    if (!path.ok()) return path.error();
    m.model_path = path.value();
    Result<std::string> hash = Fields::optional_string(*model, "fnv1a64", "model.fnv1a64");
    if (!hash.ok()) return hash.error();
    m.model_fnv1a64 = hash.value();
  }
  Result<int64_t> arena = Fields::count(root, "arena_bytes", "arena_bytes");
  if (!arena.ok()) return arena.error();
  m.arena_bytes = arena.value();
  Result<std::vector<ArtifactTensor>> inputs = Fields::tensors(root, "inputs");
  if (!inputs.ok()) return inputs.error();
  m.inputs = std::move(inputs).value();
  Result<std::vector<ArtifactTensor>> outputs = Fields::tensors(root, "outputs");
  if (!outputs.ok()) return outputs.error();
  m.outputs = std::move(outputs).value();
  if (const JsonValue *tasks = root.find("tasks")) {
    if (!tasks->is_array()) return Fields::wrong("tasks", "an array", tasks);
    for (size_t i = 0; i < tasks->items().size(); ++i) {
      Result<ArtifactTask> t = Fields::task(tasks->items()[i], "tasks[" + std::to_string(i) + "]");
      if (!t.ok()) return t.error();
      m.tasks.push_back(std::move(t).value());
    }
  }
  Result<const JsonValue *> files = Fields::get(root, "files", "files", JsonValue::Kind::Object, "an object");
  if (!files.ok()) return files.error();
  for (auto [key, field] : {std::pair{"plan", &m.plan}, std::pair{"weights", &m.weights}, std::pair{"kernels", &m.kernels}}) {
    Result<ArtifactFile> f = Fields::file(*files.value(), key);
    if (!f.ok()) return f.error();
    *field = std::move(f).value();
  }
  return m;
}

std::string fnv1a64_hex(const void *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace tessel::deploy
