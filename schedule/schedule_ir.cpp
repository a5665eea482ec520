#include "schedule/schedule_ir.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <tuple>

#include "base/fnv_hash.h"

namespace tessel {
namespace {

const char *const kVersionLine = "tessel-schedule v1";

// ---- names of enum values in the text ----

struct TailName {
  TailStrategy tail;
  const char *text;
};
const TailName kTailNames[] = {{TailStrategy::Auto, "auto"},
                               {TailStrategy::Guard, "guard"},
                               {TailStrategy::ShiftInwards, "shift_inwards"},
                               {TailStrategy::RoundUp, "round_up"}};

struct GpuAxisName {
  GpuAxis axis;
  const char *text;
};
const GpuAxisName kGpuAxisNames[] = {
    {GpuAxis::Block, "gpu_block"}, {GpuAxis::Thread, "gpu_thread"}, {GpuAxis::Lane, "gpu_lane"}};

struct MemoryName {
  MemoryKind memory;
  const char *text;
};
const MemoryName kMemoryNames[] = {{MemoryKind::Register, "register"},
                                   {MemoryKind::Stack, "stack"},
                                   {MemoryKind::Heap, "heap"},
                                   {MemoryKind::GpuShared, "gpu_shared"}};

// ---- writing ----

/// Joins fields with single spaces.
class LineWriter {
 public:
  explicit LineWriter(const char *keyword) : line_(keyword) {}
  LineWriter &add(const std::string &field) {
    line_ += ' ';
    line_ += field;
    return *this;
  }
  LineWriter &add(int64_t value) { return add(std::to_string(value)); }
  LineWriter &add(const StageRef &stage) { return add(stage.to_text()); }
  LineWriter &add_optional(const std::optional<int64_t> &value) { return value ? add(*value) : *this; }
  std::string str() const { return line_; }

 private:
  std::string line_;
};

struct StepWriter {
  std::string operator()(const SplitStep &s) const {
    return LineWriter("split").add(s.stage).add(s.var).add(s.outer).add(s.inner).add(s.factor).add(to_text(s.tail)).str();
  }
  std::string operator()(const ReorderStep &s) const {
    LineWriter w("reorder");
    w.add(s.stage);
    for (const std::string &v : s.vars) w.add(v);
    return w.str();
  }
  std::string operator()(const FuseStep &s) const {
    return LineWriter("fuse").add(s.stage).add(s.inner).add(s.outer).add(s.fused).str();
  }
  std::string operator()(const TileStep &s) const {
    return LineWriter("tile")
        .add(s.stage)
        .add(s.x)
        .add(s.y)
        .add(s.xo)
        .add(s.yo)
        .add(s.xi)
        .add(s.yi)
        .add(s.x_factor)
        .add(s.y_factor)
        .add(to_text(s.tail))
        .str();
  }
  std::string operator()(const VectorizeStep &s) const {
    return LineWriter("vectorize").add(s.stage).add(s.var).add_optional(s.width).str();
  }
  std::string operator()(const UnrollStep &s) const {
    return LineWriter("unroll").add(s.stage).add(s.var).add_optional(s.factor).str();
  }
  std::string operator()(const ParallelStep &s) const {
    return LineWriter("parallel").add(s.stage).add(s.var).add_optional(s.task_size).str();
  }
  std::string operator()(const BindStep &s) const {
    return LineWriter("bind").add(s.stage).add(s.var).add(to_text(s.axis)).add(s.index).str();
  }
  std::string operator()(const ComputeAtStep &s) const {
    return LineWriter("compute_at").add(s.func).add(s.consumer).add(s.var).str();
  }
  std::string operator()(const StoreAtStep &s) const {
    return LineWriter("store_at").add(s.func).add(s.consumer).add(s.var).str();
  }
  std::string operator()(const ComputeInlineStep &s) const { return LineWriter("compute_inline").add(s.func).str(); }
  std::string operator()(const ComputeRootStep &s) const { return LineWriter("compute_root").add(s.func).str(); }
  std::string operator()(const StoreInStep &s) const {
    return LineWriter("store_in").add(s.func).add(to_text(s.memory)).str();
  }
  std::string operator()(const RfactorStep &s) const {
    LineWriter w("rfactor");
    w.add(s.stage).add(s.new_func);
    for (const auto &[rvar, var] : s.rvar_to_var) w.add(rvar + ":" + var);
    return w.str();
  }
  std::string operator()(const CacheInputsStep &s) const {
    LineWriter w("cache_inputs");
    w.add(s.stage).add(s.var);
    if (s.warps != 1 || s.vector != 1) w.add(s.warps);
    if (s.vector != 1) w.add(s.vector);
    return w.str();
  }
};

// ---- reading ----

/// Splits a line on runs of spaces and tabs.
std::vector<std::string> split_fields(const std::string &line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

bool is_name(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '$') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$') return false;
  return true;
}

/// The fields of one step line with typed accessors that fail with a message naming the
/// field. Throws nothing: the first failure is kept and reported by the caller.
class FieldReader {
 public:
  explicit FieldReader(std::vector<std::string> fields) : fields_(std::move(fields)) {}

  size_t count() const { return fields_.size(); }
  const std::string &raw(size_t i) const { return fields_[i]; }
  bool failed() const { return error_.has_value(); }
  const std::string &error() const { return *error_; }

  std::string name(size_t i, const char *what) {
    if (!is_name(fields_[i])) fail(std::string(what) + " '" + fields_[i] + "' is not a valid name");
    return fields_[i];
  }

  StageRef stage(size_t i, const char *what) {
    const std::string &text = fields_[i];
    StageRef ref;
    size_t dot = text.find('.');
    ref.func = text.substr(0, dot);
    if (!is_name(ref.func)) {
      fail(std::string(what) + " '" + text + "' is not FUNC or FUNC.uK");
      return ref;
    }
    if (dot == std::string::npos) return ref;
    std::string suffix = text.substr(dot + 1);
    int update = -1;
    if (suffix.size() < 2 || suffix[0] != 'u' || !parse_int(suffix.substr(1), update) || update < 0 ||
        std::to_string(update) != suffix.substr(1)) {
      fail(std::string(what) + " '" + text + "' is not FUNC or FUNC.uK");
      return ref;
    }
    ref.update = update;
    return ref;
  }

  int64_t integer(size_t i, const char *what) {
    int64_t value = 0;
    if (!parse_int(fields_[i], value)) fail(std::string(what) + " '" + fields_[i] + "' is not an integer");
    return value;
  }

  TailStrategy tail(size_t i) {
    for (const TailName &t : kTailNames)
      if (fields_[i] == t.text) return t.tail;
    fail("tail strategy '" + fields_[i] + "' is not auto, guard, shift_inwards or round_up");
    return TailStrategy::Auto;
  }

  GpuAxis gpu_axis(size_t i) {
    for (const GpuAxisName &a : kGpuAxisNames)
      if (fields_[i] == a.text) return a.axis;
    fail("GPU axis '" + fields_[i] + "' is not gpu_block, gpu_thread or gpu_lane");
    return GpuAxis::Block;
  }

  MemoryKind memory(size_t i) {
    for (const MemoryName &m : kMemoryNames)
      if (fields_[i] == m.text) return m.memory;
    fail("memory '" + fields_[i] + "' is not register, stack, heap or gpu_shared");
    return MemoryKind::Heap;
  }

  std::pair<std::string, std::string> rvar_pair(size_t i) {
    const std::string &text = fields_[i];
    size_t colon = text.find(':');
    if (colon == std::string::npos) {
      fail("'" + text + "' is not RVAR:VAR");
      return {};
    }
    std::pair<std::string, std::string> p{text.substr(0, colon), text.substr(colon + 1)};
    if (!is_name(p.first) || !is_name(p.second)) fail("'" + text + "' is not RVAR:VAR with valid names");
    return p;
  }

  void fail(std::string message) {
    if (!error_) error_ = std::move(message);
  }

 private:
  template <typename Int>
  static bool parse_int(const std::string &text, Int &value) {
    if (text.empty()) return false;
    const char *end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return ec == std::errc() && ptr == end;
  }

  std::vector<std::string> fields_;
  std::optional<std::string> error_;
};

/// How many fields (keyword included) a step takes: [min, max]; max < 0 means unbounded.
struct Arity {
  const char *keyword;
  int min_fields, max_fields;
  const char *usage;
};
const Arity kArities[] = {
    {"split", 7, 7, "split STAGE VAR OUTER INNER FACTOR TAIL"},
    {"reorder", 4, -1, "reorder STAGE VAR VAR..."},
    {"fuse", 5, 5, "fuse STAGE INNER OUTER FUSED"},
    {"tile", 11, 11, "tile STAGE X Y XO YO XI YI XFACTOR YFACTOR TAIL"},
    {"vectorize", 3, 4, "vectorize STAGE VAR [WIDTH]"},
    {"unroll", 3, 4, "unroll STAGE VAR [FACTOR]"},
    {"parallel", 3, 4, "parallel STAGE VAR [TASK_SIZE]"},
    {"bind", 5, 5, "bind STAGE VAR gpu_block|gpu_thread|gpu_lane INDEX"},
    {"compute_at", 4, 4, "compute_at FUNC CONSUMER_STAGE VAR"},
    {"store_at", 4, 4, "store_at FUNC CONSUMER_STAGE VAR"},
    {"compute_inline", 2, 2, "compute_inline FUNC"},
    {"compute_root", 2, 2, "compute_root FUNC"},
    {"store_in", 3, 3, "store_in FUNC register|stack|heap|gpu_shared"},
    {"rfactor", 4, -1, "rfactor STAGE NEW_FUNC RVAR:VAR [RVAR:VAR...]"},
    {"cache_inputs", 3, 5, "cache_inputs STAGE VAR [WARPS [VECTOR]]"},
};

/// Builds the step named by the first field; fields are known to match the arity.
ScheduleStep read_step(const std::string &keyword, FieldReader &r) {
  if (keyword == "split")
    return SplitStep{r.stage(1, "stage"), r.name(2, "var"), r.name(3, "outer var"),     r.name(4, "inner var"),
                     r.integer(5, "factor"), r.tail(6)};
  if (keyword == "reorder") {
    ReorderStep s{r.stage(1, "stage"), {}};
    for (size_t i = 2; i < r.count(); ++i) s.vars.push_back(r.name(i, "var"));
    return s;
  }
  if (keyword == "fuse")
    return FuseStep{r.stage(1, "stage"), r.name(2, "inner var"), r.name(3, "outer var"), r.name(4, "fused var")};
  if (keyword == "tile")
    return TileStep{r.stage(1, "stage"),        r.name(2, "x var"),          r.name(3, "y var"),
                    r.name(4, "xo var"),        r.name(5, "yo var"),         r.name(6, "xi var"),
                    r.name(7, "yi var"),        r.integer(8, "x factor"),    r.integer(9, "y factor"),
                    r.tail(10)};
  auto optional_integer = [&](size_t i, const char *what) -> std::optional<int64_t> {
    if (i >= r.count()) return std::nullopt;
    return r.integer(i, what);
  };
  if (keyword == "vectorize")
    return VectorizeStep{r.stage(1, "stage"), r.name(2, "var"), optional_integer(3, "width")};
  if (keyword == "unroll") return UnrollStep{r.stage(1, "stage"), r.name(2, "var"), optional_integer(3, "factor")};
  if (keyword == "parallel")
    return ParallelStep{r.stage(1, "stage"), r.name(2, "var"), optional_integer(3, "task size")};
  if (keyword == "bind") {
    BindStep s{r.stage(1, "stage"), r.name(2, "var"), r.gpu_axis(3), 0};
    int64_t index = r.integer(4, "GPU index");
    if (!r.failed() && (index < 0 || index > 2)) r.fail("GPU index " + r.raw(4) + " is not 0, 1 or 2");
    s.index = static_cast<int>(index);
    return s;
  }
  if (keyword == "compute_at")
    return ComputeAtStep{r.name(1, "func"), r.stage(2, "consumer stage"), r.name(3, "var")};
  if (keyword == "store_at") return StoreAtStep{r.name(1, "func"), r.stage(2, "consumer stage"), r.name(3, "var")};
  if (keyword == "compute_inline") return ComputeInlineStep{r.name(1, "func")};
  if (keyword == "compute_root") return ComputeRootStep{r.name(1, "func")};
  if (keyword == "store_in") return StoreInStep{r.name(1, "func"), r.memory(2)};
  if (keyword == "cache_inputs") {
    CacheInputsStep s{r.stage(1, "stage"), r.name(2, "var"), optional_integer(3, "warps").value_or(1),
                      optional_integer(4, "vector").value_or(1)};
    if (!r.failed() && (s.warps < 1 || s.warps > 32)) r.fail("warps " + r.raw(3) + " is not in 1..32");
    if (!r.failed() && s.vector != 1 && s.vector != 2 && s.vector != 4)
      r.fail("load vector " + r.raw(4) + " is not 1, 2 or 4");
    return s;
  }
  // rfactor
  RfactorStep s{r.stage(1, "stage"), r.name(2, "new func"), {}};
  for (size_t i = 3; i < r.count(); ++i) s.rvar_to_var.push_back(r.rvar_pair(i));
  return s;
}

}  // namespace

std::string StageRef::to_text() const { return update < 0 ? func : func + ".u" + std::to_string(update); }

bool operator==(const StageRef &a, const StageRef &b) { return a.func == b.func && a.update == b.update; }

const char *to_text(TailStrategy tail) {
  for (const TailName &t : kTailNames)
    if (t.tail == tail) return t.text;
  return "auto";
}
const char *to_text(GpuAxis axis) {
  for (const GpuAxisName &a : kGpuAxisNames)
    if (a.axis == axis) return a.text;
  return "gpu_block";
}
const char *to_text(MemoryKind memory) {
  for (const MemoryName &m : kMemoryNames)
    if (m.memory == memory) return m.text;
  return "heap";
}

bool operator==(const SplitStep &a, const SplitStep &b) {
  return std::tie(a.stage, a.var, a.outer, a.inner, a.factor, a.tail) ==
         std::tie(b.stage, b.var, b.outer, b.inner, b.factor, b.tail);
}
bool operator==(const ReorderStep &a, const ReorderStep &b) { return a.stage == b.stage && a.vars == b.vars; }
bool operator==(const FuseStep &a, const FuseStep &b) {
  return std::tie(a.stage, a.inner, a.outer, a.fused) == std::tie(b.stage, b.inner, b.outer, b.fused);
}
bool operator==(const TileStep &a, const TileStep &b) {
  return std::tie(a.stage, a.x, a.y, a.xo, a.yo, a.xi, a.yi, a.x_factor, a.y_factor, a.tail) ==
         std::tie(b.stage, b.x, b.y, b.xo, b.yo, b.xi, b.yi, b.x_factor, b.y_factor, b.tail);
}
bool operator==(const VectorizeStep &a, const VectorizeStep &b) {
  return std::tie(a.stage, a.var, a.width) == std::tie(b.stage, b.var, b.width);
}
bool operator==(const UnrollStep &a, const UnrollStep &b) {
  return std::tie(a.stage, a.var, a.factor) == std::tie(b.stage, b.var, b.factor);
}
bool operator==(const ParallelStep &a, const ParallelStep &b) {
  return std::tie(a.stage, a.var, a.task_size) == std::tie(b.stage, b.var, b.task_size);
}
bool operator==(const BindStep &a, const BindStep &b) {
  return std::tie(a.stage, a.var, a.axis, a.index) == std::tie(b.stage, b.var, b.axis, b.index);
}
bool operator==(const ComputeAtStep &a, const ComputeAtStep &b) {
  return std::tie(a.func, a.consumer, a.var) == std::tie(b.func, b.consumer, b.var);
}
bool operator==(const StoreAtStep &a, const StoreAtStep &b) {
  return std::tie(a.func, a.consumer, a.var) == std::tie(b.func, b.consumer, b.var);
}
bool operator==(const ComputeInlineStep &a, const ComputeInlineStep &b) { return a.func == b.func; }
bool operator==(const ComputeRootStep &a, const ComputeRootStep &b) { return a.func == b.func; }
bool operator==(const StoreInStep &a, const StoreInStep &b) { return a.func == b.func && a.memory == b.memory; }
bool operator==(const CacheInputsStep &a, const CacheInputsStep &b) {
  return a.stage == b.stage && a.var == b.var && a.warps == b.warps && a.vector == b.vector;
}
bool operator==(const RfactorStep &a, const RfactorStep &b) {
  return std::tie(a.stage, a.new_func, a.rvar_to_var) == std::tie(b.stage, b.new_func, b.rvar_to_var);
}

bool operator==(const Schedule &a, const Schedule &b) { return a.version == b.version && a.steps == b.steps; }

std::string vectorized_inner_name(const std::string &var) { return var + "_vec"; }
std::string unrolled_inner_name(const std::string &var) { return var + "_unroll"; }
std::string parallel_task_name(const std::string &var) { return var + "_task"; }

std::string to_text(const ScheduleStep &step) { return std::visit(StepWriter{}, step); }

std::string to_text(const Schedule &schedule) {
  std::string text = "tessel-schedule v" + std::to_string(schedule.version) + "\n";
  for (const ScheduleStep &step : schedule.steps) text += to_text(step) + "\n";
  return text;
}

Result<ScheduleStep> parse_step(const std::string &line) {
  std::vector<std::string> fields = split_fields(line);
  if (fields.empty()) return make_error(ErrorKind::InvalidInput, "empty step");
  const Arity *arity = nullptr;
  for (const Arity &a : kArities)
    if (fields[0] == a.keyword) arity = &a;
  if (!arity) return make_error(ErrorKind::InvalidInput, "unknown step '" + fields[0] + "'");
  const int n = static_cast<int>(fields.size());
  if (n < arity->min_fields || (arity->max_fields >= 0 && n > arity->max_fields))
    return make_error(ErrorKind::InvalidInput,
                      std::string(arity->keyword) + " takes " + arity->usage + " (got " + std::to_string(n - 1) +
                      " fields after the keyword)");
  FieldReader reader(std::move(fields));
  ScheduleStep step = read_step(arity->keyword, reader);
  if (reader.failed()) return make_error(ErrorKind::InvalidInput, std::string(arity->keyword) + ": " + reader.error());
  return step;
}

Result<Schedule> parse_schedule(const std::string &text) {
  Schedule schedule;
  bool seen_version = false;
  size_t line_start = 0;
  int line_number = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto fail = [&](const std::string &what) {
      return make_error(ErrorKind::InvalidInput, "schedule line " + std::to_string(line_number) + ": " + what);
    };
    if (!seen_version) {
      if (line != kVersionLine) {
        if (line.rfind("tessel-schedule v", 0) == 0)
          return fail("unsupported schedule version '" + line.substr(17) + "' (this build reads v1)");
        return fail("expected the version line '" + std::string(kVersionLine) + "', got '" + line + "'");
      }
      seen_version = true;
      continue;
    }
    if (split_fields(line).empty() || line[line.find_first_not_of(" \t")] == '#') continue;
    Result<ScheduleStep> step = parse_step(line);
    if (!step) return fail(step.error().message);
    schedule.steps.push_back(std::move(step).value());
  }
  if (!seen_version)
    return make_error(ErrorKind::InvalidInput,
                      "schedule line 1: empty text, expected '" + std::string(kVersionLine) + "'");
  return schedule;
}

std::string schedule_hash(const Schedule &schedule) { return fnv1a64_hex(to_text(schedule)); }

}  // namespace tessel
