#include "deploy/artifact_manifest.h"

#include <cstdio>

#include "base/json.h"
#include "deploy/execution_plan.h"

namespace tessel::deploy {

namespace {

constexpr const char *kFormat = "tessel-artifact";

Json tensor_json(const ArtifactTensor &t) {
  Json json;
  json["name"] = t.name;
  json["dtype"] = dtype_name(t.dtype);
  json["shape"] = t.shape;
  return json;
}

Json file_json(const ArtifactFile &f) {
  Json json;
  json["path"] = f.path;
  json["bytes"] = f.bytes;
  json["fnv1a64"] = f.fnv1a64;
  return json;
}

Json task_json(const ArtifactTask &t) {
  Json json;
  json["kernel"] = t.kernel;
  json["ops"] = t.ops;
  json["workload_key"] = t.workload_key;
  json["flops"] = t.flops;
  json["schedule"] = t.tuned ? "tuned" : "default";
  if (t.tuned) {
    json["schedule_hash"] = t.schedule_hash;
    if (t.record_median_seconds) json["record_median_seconds"] = *t.record_median_seconds;
  }
  return json;
}

template <typename T, typename F>
Json json_array(const std::vector<T> &items, F &&one) {
  Json array = Json::array();
  for (const T &item : items) array.push_back(one(item));
  return array;
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
  static Error wrong(const std::string &path, const std::string &what, const Json *v) {
    return json_field_error("manifest field \"" + path + "\"", what, v);
  }

  static Result<const Json *> get(const Json &obj, const std::string &key, const std::string &path, Json::value_t kind,
                                  const char *what) {
    const Json *v = json_find(obj, key);
    if (!v || v->type() != kind) return wrong(path, what, v);
    return v;
  }

  static Result<std::string> string(const Json &obj, const std::string &key, const std::string &path) {
    Result<const Json *> v = get(obj, key, path, Json::value_t::string, "a string");
    if (!v.ok()) return v.error();
    return v.value()->get<std::string>();
  }

  static Result<std::string> optional_string(const Json &obj, const std::string &key, const std::string &path) {
    if (!json_find(obj, key)) return std::string();
    return string(obj, key, path);
  }

  static Result<int64_t> count(const Json &v, const std::string &path) {
    std::optional<int64_t> n = json_int64(v);
    if (!n || *n < 0) return wrong(path, "a non-negative integer", &v);
    return *n;
  }

  static Result<int64_t> count(const Json &obj, const std::string &key, const std::string &path) {
    const Json *v = json_find(obj, key);
    if (!v) return wrong(path, "a non-negative integer", v);
    return count(*v, path);
  }

  static Result<ArtifactTensor> tensor(const Json &v, const std::string &path) {
    if (!v.is_object()) return wrong(path, "an object", &v);
    ArtifactTensor t;
    Result<std::string> name = string(v, "name", path + ".name");
    if (!name.ok()) return name.error();
    t.name = name.value();
    Result<std::string> dtype = string(v, "dtype", path + ".dtype");
    if (!dtype.ok()) return dtype.error();
    std::optional<DType> d = parse_artifact_dtype(dtype.value());
    if (!d)
      return make_error(ErrorKind::InvalidInput,
                        "manifest field \"" + path + ".dtype\": unknown dtype \"" + dtype.value() + "\"");
    t.dtype = *d;
    Result<const Json *> shape = get(v, "shape", path + ".shape", Json::value_t::array, "an array");
    if (!shape.ok()) return shape.error();
    for (size_t i = 0; i < shape.value()->size(); ++i) {
      // -1: an output dimension known only at run time (a detector's box count).
      if (shape.value()->at(i).is_number_integer() && shape.value()->at(i).get<int64_t>() == -1) {
        t.shape.push_back(-1);
        continue;
      }
      Result<int64_t> n = count(shape.value()->at(i), path + ".shape[" + std::to_string(i) + "]");
      if (!n.ok()) return n.error();
      t.shape.push_back(n.value());
    }
    return t;
  }

  static Result<std::vector<ArtifactTensor>> tensors(const Json &obj, const std::string &key) {
    Result<const Json *> list = get(obj, key, key, Json::value_t::array, "an array");
    if (!list.ok()) return list.error();
    std::vector<ArtifactTensor> out;
    for (size_t i = 0; i < list.value()->size(); ++i) {
      Result<ArtifactTensor> t = tensor(list.value()->at(i), key + "[" + std::to_string(i) + "]");
      if (!t.ok()) return t.error();
      out.push_back(std::move(t).value());
    }
    return out;
  }

  static Result<ArtifactTask> task(const Json &v, const std::string &path) {
    if (!v.is_object()) return wrong(path, "an object", &v);
    ArtifactTask t;
    for (auto [key, field] : {std::pair{"kernel", &t.kernel}, std::pair{"ops", &t.ops}, std::pair{"workload_key", &t.workload_key}}) {
      Result<std::string> s = optional_string(v, key, path + "." + key);
      if (!s.ok()) return s.error();
      *field = s.value();
    }
    if (json_find(v, "flops")) {
      Result<int64_t> flops = count(v, "flops", path + ".flops");
      if (!flops.ok()) return flops.error();
      t.flops = flops.value();
    }
    Result<std::string> schedule = string(v, "schedule", path + ".schedule");
    if (!schedule.ok()) return schedule.error();
    if (schedule.value() != "tuned" && schedule.value() != "default")
      return make_error(ErrorKind::InvalidInput,
                        "manifest field \"" + path + ".schedule\" must be \"tuned\" or \"default\", not \"" +
                        schedule.value() + "\"");
    t.tuned = schedule.value() == "tuned";
    Result<std::string> hash = optional_string(v, "schedule_hash", path + ".schedule_hash");
    if (!hash.ok()) return hash.error();
    t.schedule_hash = hash.value();
    if (const Json *median = json_find(v, "record_median_seconds")) {
      if (!median->is_number()) return wrong(path + ".record_median_seconds", "a number", median);
      t.record_median_seconds = median->get<double>();
    }
    return t;
  }

  static Result<ArtifactFile> file(const Json &files, const std::string &key) {
    const std::string path = "files." + key;
    Result<const Json *> v = get(files, key, path, Json::value_t::object, "an object");
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
      return make_error(ErrorKind::InvalidInput,
                        "manifest field \"" + path + ".fnv1a64\" must be 16 lower-case hex digits, not \"" +
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
         a.gpu_max_registers == b.gpu_max_registers && a.plan == b.plan && a.weights == b.weights && a.kernels == b.kernels && a.host == b.host;
}

std::string to_json(const ArtifactManifest &m) {
  Json json;
  json["format"] = kFormat;
  json["format_version"] = m.format_version;
  json["tessel_version"] = m.tessel_version;
  json["target"] = m.target;
  json["halide_target"] = m.halide_target;
  json["arch"] = m.arch;
  json["required_cpu_features"] = m.required_cpu_features;
  json["model"]["path"] = m.model_path;
  json["model"]["fnv1a64"] = m.model_fnv1a64;
  json["created_utc"] = m.created_utc;
  json["arena_bytes"] = m.arena_bytes;
  json["inputs"] = json_array(m.inputs, tensor_json);
  json["outputs"] = json_array(m.outputs, tensor_json);
  json["tasks"] = json_array(m.tasks, task_json);
  for (const auto &[symbol, registers] : m.gpu_max_registers) json["gpu_max_registers"][symbol] = registers;
  json["files"]["plan"] = file_json(m.plan);
  json["files"]["weights"] = file_json(m.weights);
  json["files"]["kernels"] = file_json(m.kernels);
  if (m.host) json["files"]["host"] = file_json(*m.host);
  // Indented, one field per line: people read it too (`cat model.tsl/manifest.json`).
  return dump_json(json, 2) + "\n";
}

Result<ArtifactManifest> parse_manifest(const std::string &json) {
  Result<Json> doc = parse_json(json);
  if (!doc.ok()) return make_error(ErrorKind::InvalidInput, "not a tessel artifact: " + doc.error().message);
  const Json &root = doc.value();
  const Json *format = json_find(root, "format");
  if (!format || !format->is_string() || format->get<std::string>() != kFormat)
    return make_error(ErrorKind::InvalidInput,
                      std::string("not a tessel artifact (\"format\" is ") +
                      (format ? (format->is_string() ? dump_json(*format) : json_kind_name(*format)) : "missing") +
                      ", expected \"" + kFormat + "\")");
  // The version comes before every other field: a newer format may have changed them.
  const Json *version = json_find(root, "format_version");
  std::optional<int64_t> v = version ? json_int64(*version) : std::nullopt;
  if (!v) return Fields::wrong("format_version", "an integer", version);
  if (*v != kArtifactFormatVersion)
    return make_error(ErrorKind::Unsupported,
                      "artifact format version " + std::to_string(*v) + " is not one this runtime reads (it reads version " +
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
  Result<const Json *> features =
      Fields::get(root, "required_cpu_features", "required_cpu_features", Json::value_t::array, "an array of strings");
  if (!features.ok()) return features.error();
  for (size_t i = 0; i < features.value()->size(); ++i) {
    const Json &f = features.value()->at(i);
    if (!f.is_string()) return Fields::wrong("required_cpu_features[" + std::to_string(i) + "]", "a string", &f);
    m.required_cpu_features.push_back(f.get<std::string>());
  }
  if (const Json *model = json_find(root, "model")) {
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
  if (const Json *tasks = json_find(root, "tasks")) {
    if (!tasks->is_array()) return Fields::wrong("tasks", "an array", tasks);
    for (size_t i = 0; i < tasks->size(); ++i) {
      Result<ArtifactTask> t = Fields::task(tasks->at(i), "tasks[" + std::to_string(i) + "]");
      if (!t.ok()) return t.error();
      m.tasks.push_back(std::move(t).value());
    }
  }
  if (const Json *registers = json_find(root, "gpu_max_registers")) {
    if (!registers->is_object()) return Fields::wrong("gpu_max_registers", "an object", registers);
    for (auto it = registers->begin(); it != registers->end(); ++it) {
      const std::string path = "gpu_max_registers." + it.key();
      Result<int64_t> n = Fields::count(it.value(), path);
      if (!n.ok()) return n.error();
      if (n.value() < 16 || n.value() > 255) return Fields::wrong(path, "a register count in [16, 255]", &it.value());
      m.gpu_max_registers[it.key()] = static_cast<int>(n.value());
    }
  }
  Result<const Json *> files = Fields::get(root, "files", "files", Json::value_t::object, "an object");
  if (!files.ok()) return files.error();
  for (auto [key, field] : {std::pair{"plan", &m.plan}, std::pair{"weights", &m.weights}, std::pair{"kernels", &m.kernels}}) {
    Result<ArtifactFile> f = Fields::file(*files.value(), key);
    if (!f.ok()) return f.error();
    *field = std::move(f).value();
  }
  if (json_find(*files.value(), "host")) {
    Result<ArtifactFile> f = Fields::file(*files.value(), "host");
    if (!f.ok()) return f.error();
    m.host = std::move(f).value();
  }
  return m;
}

}  // namespace tessel::deploy
