#include "deploy/execution_plan.h"

#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace tessel::deploy {

namespace {

constexpr const char *kHeader = "tessel-plan 1";

bool is_plain_name_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/' || c == ':';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

const char *location_name(Location l) {
  switch (l) {
    case Location::Input: return "input";
    case Location::Output: return "output";
    case Location::Weight: return "weight";
    case Location::Arena: return "arena";
    case Location::View: return "view";
    case Location::Dynamic: return "dynamic";
  }
  return "?";
}

std::optional<Location> parse_location(const std::string &s) {
  if (s == "input") return Location::Input;
  if (s == "output") return Location::Output;
  if (s == "weight") return Location::Weight;
  if (s == "arena") return Location::Arena;
  if (s == "view") return Location::View;
  if (s == "dynamic") return Location::Dynamic;
  return std::nullopt;
}

bool is_c_identifier(const std::string &s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;  // the text ends with '\n' exactly when the last entry is empty
}

// The parser proper: one object so every error can name the line it is about.
class PlanParser {
 public:
  Result<ExecutionPlan> parse(const std::string &text) {
    if (text.empty()) return error(1, "empty plan (expected '" + std::string(kHeader) + "')");
    std::vector<std::string> lines = split_lines(text);
    // A plan the compiler wrote ends with a newline; a missing one means the file was cut short
    // (and the last line, though perhaps well-formed, is not the line that was written).
    if (!lines.back().empty())
      return error(static_cast<int>(lines.size()), "the plan ends in the middle of this line (truncated?)");
    lines.pop_back();
    if (lines[0] != kHeader) return error(1, "expected '" + std::string(kHeader) + "', found '" + lines[0] + "'");

    int section = 0;  // 0 tensors, 1 inputs, 2 outputs, 3 steps: they come in this order
    for (size_t i = 1; i < lines.size(); ++i) {
      const int number = static_cast<int>(i) + 1;
      Result<std::vector<std::string>> tokens = tokenize(number, lines[i]);
      if (!tokens.ok()) return tokens.error();
      const std::vector<std::string> &t = tokens.value();
      const std::string &kind = t[0];
      int kind_section = kind == "tensor" ? 0 : kind == "input" ? 1 : kind == "output" ? 2 :
                         (kind == "kernel" || kind == "serial-kernel" || kind == "copy" || kind == "host" || kind == "join") ? 3 : -1;
      if (kind_section < 0) return error(number, "unknown line kind '" + kind + "'");
      if (kind_section < section)
        return error(number, "'" + kind + "' line out of order (tensor lines come first, then input, output, then steps)");
      section = kind_section;
      Result<void> r = kind == "tensor" ? tensor_line(number, t)
                       : kind == "input" ? io_line(number, t, Location::Input)
                       : kind == "output" ? io_line(number, t, Location::Output)
                       : kind == "kernel" || kind == "serial-kernel" ? kernel_line(number, t)
                       : kind == "host"   ? host_line(number, t)
                       : kind == "join"   ? join_line(number, t)
                                          : copy_line(number, t);
      if (!r.ok()) return r.error();
    }
    const int end_line = static_cast<int>(lines.size());
    if (Result<void> r = check_views(); !r.ok()) return r.error();
    if (Result<void> r = check_io_complete(Location::Input); !r.ok()) return r.error();
    if (Result<void> r = check_io_complete(Location::Output); !r.ok()) return r.error();
    if (plan_.outputs.empty()) return error(end_line, "the plan has no output lines (truncated?)");
    if (Result<void> r = check_copies(); !r.ok()) return r.error();
    return std::move(plan_);
  }

 private:
  static Error error(int line, const std::string &what) {
    return make_error(ErrorKind::InvalidInput, "line " + std::to_string(line) + ": " + what);
  }

  static Result<std::vector<std::string>> tokenize(int number, const std::string &line) {
    std::vector<std::string> tokens;
    size_t start = 0;
    for (;;) {
      size_t sp = line.find(' ', start);
      std::string tok = line.substr(start, sp == std::string::npos ? std::string::npos : sp - start);
      if (tok.empty())
        return error(number, line.empty() ? "empty line" : "tokens must be separated by exactly one space");
      tokens.push_back(std::move(tok));
      if (sp == std::string::npos) break;
      start = sp + 1;
    }
    return tokens;
  }

  static Result<int64_t> non_negative(int number, const std::string &tok, const std::string &what) {
    int64_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    // from_chars accepts a leading '-': reject it along with anything else that is not a digit string.
    if (tok[0] == '-' || tok[0] == '+' || r.ec != std::errc() || r.ptr != tok.data() + tok.size())
      return error(number, "bad " + what + " '" + tok + "' (expected a non-negative integer)");
    return v;
  }

  Result<int> tensor_id(int number, const std::string &tok) {
    Result<int64_t> v = non_negative(number, tok, "tensor id");
    if (!v.ok()) return v.error();
    if (v.value() > std::numeric_limits<int>::max()) return error(number, "tensor id " + tok + " is too large");
    return static_cast<int>(v.value());
  }

  // A reference to a tensor that must already be declared.
  Result<int> declared_id(int number, const std::string &tok) {
    Result<int> id = tensor_id(number, tok);
    if (!id.ok()) return id;
    if (!index_.count(id.value())) return error(number, "undeclared tensor id " + tok);
    return id;
  }

  const PlanTensor &tensor(int id) const { return plan_.tensors[index_.at(id)]; }
  std::string describe(int id) const {
    const PlanTensor &t = tensor(id);
    return "tensor " + std::to_string(id) + " (" + t.name + ")";
  }
  int64_t numel(const PlanTensor &t) const {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;  // cannot overflow: checked when declared
    return n;
  }

  Result<void> tensor_line(int number, const std::vector<std::string> &t) {
    // tensor <id> <name> <dtype> <rank> <dims...> <location> <argument>
    if (t.size() < 5) return error(number, "tensor line too short (truncated?)");
    const bool rank_known = t[4] != "?";
    Result<int64_t> rank = rank_known ? non_negative(number, t[4], "rank") : Result<int64_t>(int64_t{0});
    if (!rank.ok()) return rank.error();
    if (static_cast<int64_t>(t.size()) != 7 + rank.value())
      return error(number, "tensor line has " + std::to_string(t.size()) + " tokens, expected " +
                               std::to_string(7 + rank.value()) + " for rank " + t[4] + " (truncated?)");
    PlanTensor pt;
    Result<int> id = tensor_id(number, t[1]);
    if (!id.ok()) return id.error();
    pt.id = id.value();
    if (index_.count(pt.id)) return error(number, "duplicate tensor id " + t[1] + " (first declared on line " +
                                                      std::to_string(line_of_.at(pt.id)) + ")");
    Result<std::string> name = decode_plan_name(t[2]);
    if (!name.ok()) return error(number, name.error().message);
    pt.name = std::move(name).value();
    std::optional<DType> dtype = parse_artifact_dtype(t[3]);
    if (!dtype) return error(number, "bad dtype '" + t[3] + "'");
    pt.dtype = *dtype;
    pt.rank_known = rank_known;
    for (int64_t i = 0; i < rank.value(); ++i) {
      if (t[5 + i] == "?") {  // known at run time
        pt.shape.push_back(-1);
        continue;
      }
      Result<int64_t> d = non_negative(number, t[5 + i], "dimension");
      if (!d.ok()) return d.error();
      pt.shape.push_back(d.value());
    }
    std::optional<Location> loc = parse_location(t[5 + rank.value()]);
    if (!loc)
      return error(number, "bad location '" + t[5 + rank.value()] +
                               "' (expected input, output, weight, arena, view or dynamic)");
    pt.location = *loc;
    if (run_time_shaped(pt)) {
      if (pt.location != Location::Dynamic && pt.location != Location::Output)
        return error(number, "tensor " + t[1] + " has a run-time shape, so it must be located at dynamic or output");
    } else if (!artifact_tensor_bytes(pt.dtype, pt.shape)) {
      return error(number, "tensor " + t[1] + " is too large (its byte size overflows int64)");
    }
    const std::string &arg = t[6 + rank.value()];
    if (pt.location == Location::View) {
      Result<int> target = tensor_id(number, arg);  // may be declared on a later tensor line
      if (!target.ok()) return target.error();
      pt.argument = target.value();
    } else {
      Result<int64_t> a = non_negative(number, arg, std::string(location_name(pt.location)) + " argument");
      if (!a.ok()) return a.error();
      pt.argument = a.value();
    }
    index_[pt.id] = plan_.tensors.size();
    line_of_[pt.id] = number;
    plan_.tensors.push_back(std::move(pt));
    return {};
  }

  Result<void> io_line(int number, const std::vector<std::string> &t, Location which) {
    const std::string kind = location_name(which);
    if (t.size() != 3) return error(number, kind + " line needs 2 values: " + kind + " <position> <tensor id>");
    std::vector<int> &list = which == Location::Input ? plan_.inputs : plan_.outputs;
    Result<int64_t> pos = non_negative(number, t[1], kind + " position");
    if (!pos.ok()) return pos.error();
    if (pos.value() != static_cast<int64_t>(list.size()))
      return error(number, kind + " position " + t[1] + " out of order (expected " + std::to_string(list.size()) + ")");
    Result<int> id = declared_id(number, t[2]);
    if (!id.ok()) return id.error();
    const PlanTensor &pt = tensor(id.value());
    if (pt.location != which || pt.argument != pos.value())
      return error(number, kind + " " + t[1] + " names " + describe(id.value()) + ", which is located at " +
                               location_name(pt.location) + " " + std::to_string(pt.argument));
    list.push_back(id.value());
    return {};
  }

  Result<void> kernel_line(int number, const std::vector<std::string> &t) {
    if (t.size() < 3) return error(number, "kernel line too short (truncated?)");
    if (!is_c_identifier(t[1])) return error(number, "kernel symbol '" + t[1] + "' is not a C identifier");
    Result<int64_t> count = non_negative(number, t[2], "argument count");
    if (!count.ok()) return count.error();
    if (count.value() == 0) return error(number, "kernel " + t[1] + " has no arguments");
    if (static_cast<int64_t>(t.size()) != 3 + count.value())
      return error(number, "kernel " + t[1] + " declares " + t[2] + " arguments but lists " +
                               std::to_string(t.size() - 3) + " (truncated?)");
    KernelStep step;
    step.symbol = t[1];
    step.serial = t[0] == "serial-kernel";
    for (size_t i = 3; i < t.size(); ++i) {
      Result<int> id = declared_id(number, t[i]);
      if (!id.ok()) return id.error();
      if (run_time_shaped(tensor(id.value())) || tensor(id.value()).location == Location::Dynamic)
        return error(number, "kernel " + t[1] + " takes " + describe(id.value()) +
                                 ", whose bytes exist only at run time (only host steps may)");
      step.args.push_back(id.value());
    }
    plan_.steps.emplace_back(std::move(step));
    return {};
  }

  // host <node> <input count> <ids or -> <output count> <ids or ->
  Result<void> host_line(int number, const std::vector<std::string> &t) {
    if (t.size() < 4) return error(number, "host line too short (truncated?)");
    HostStep step;
    Result<int64_t> node = non_negative(number, t[1], "host node index");
    if (!node.ok()) return node.error();
    if (node.value() > std::numeric_limits<int>::max()) return error(number, "host node index " + t[1] + " is too large");
    step.node = static_cast<int>(node.value());
    size_t at = 2;
    for (std::vector<int> *list : {&step.inputs, &step.outputs}) {
      if (at >= t.size()) return error(number, "host line too short (truncated?)");
      Result<int64_t> count = non_negative(number, t[at], "count");
      if (!count.ok()) return count.error();
      if (count.value() > static_cast<int64_t>(t.size() - at - 1))
        return error(number, "host step lists fewer tensors than it declares (truncated?)");
      for (int64_t i = 0; i < count.value(); ++i) {
        const std::string &tok = t[at + 1 + i];
        if (tok == "-") {
          list->push_back(-1);
          continue;
        }
        Result<int> id = declared_id(number, tok);
        if (!id.ok()) return id.error();
        list->push_back(id.value());
      }
      at += 1 + count.value();
    }
    if (at != t.size()) return error(number, "host line has " + std::to_string(t.size() - at) + " extra tokens");
    plan_.steps.emplace_back(std::move(step));
    return {};
  }

  Result<void> copy_line(int number, const std::vector<std::string> &t) {
    if (t.size() != 3) return error(number, "copy line needs 2 values: copy <source id> <destination id>");
    Result<int> src = declared_id(number, t[1]);
    if (!src.ok()) return src.error();
    Result<int> dst = declared_id(number, t[2]);
    if (!dst.ok()) return dst.error();
    const PlanTensor &a = tensor(src.value()), &b = tensor(dst.value());
    for (const PlanTensor *end : {&a, &b})
      if (run_time_shaped(*end) || end->location == Location::Dynamic)
        return error(number, "copy of " + describe(end->id) + ", whose bytes exist only at run time");
    if (a.dtype != b.dtype || numel(a) != numel(b))
      return error(number, "copy between different sizes: " + describe(src.value()) + " is " + dtype_name(a.dtype) + " x" +
                               std::to_string(numel(a)) + ", " + describe(dst.value()) + " is " + dtype_name(b.dtype) +
                               " x" + std::to_string(numel(b)));
    copy_lines_.push_back(number);
    plan_.steps.emplace_back(CopyStep{src.value(), dst.value()});
    return {};
  }

  Result<void> join_line(int number, const std::vector<std::string> &t) {
    if (t.size() < 3) return error(number, "join line too short (truncated?)");
    JoinStep step;
    Result<int> whole = declared_id(number, t[1]);
    if (!whole.ok()) return whole.error();
    step.whole = whole.value();
    Result<int64_t> count = non_negative(number, t[2], "part count");
    if (!count.ok()) return count.error();
    if (count.value() == 0) return error(number, "join into " + describe(step.whole) + " has no parts");
    if (static_cast<int64_t>(t.size()) != 3 + count.value())
      return error(number, "join declares " + t[2] + " parts but lists " + std::to_string(t.size() - 3) + " (truncated?)");
    int64_t elements = 0;
    for (size_t i = 3; i < t.size(); ++i) {
      Result<int> id = declared_id(number, t[i]);
      if (!id.ok()) return id.error();
      const PlanTensor &part = tensor(id.value());
      if (run_time_shaped(part) || part.location == Location::Dynamic || part.dtype != tensor(step.whole).dtype)
        return error(number, "join of " + describe(id.value()) + ", which is not " + dtype_name(tensor(step.whole).dtype) +
                                 " bytes of a fixed size");
      if (__builtin_add_overflow(elements, numel(part), &elements))
        return error(number, "the parts of the join into " + describe(step.whole) + " overflow int64");
      step.parts.push_back(id.value());
    }
    if (run_time_shaped(tensor(step.whole)) || elements != numel(tensor(step.whole)))
      return error(number, "the parts of the join into " + describe(step.whole) + " do not add up to its " +
                               std::to_string(numel(tensor(step.whole))) + " elements");
    plan_.steps.emplace_back(std::move(step));
    return {};
  }

  Result<void> check_views() {
    for (const PlanTensor &pt : plan_.tensors) {
      if (pt.location != Location::View) continue;
      const int number = line_of_.at(pt.id);
      // Walk the chain; more hops than tensors means a cycle.
      std::string chain = std::to_string(pt.id);
      int current = pt.id;
      for (size_t hops = 0;; ++hops) {
        const PlanTensor &c = tensor(current);
        if (c.location != Location::View) break;
        int next = static_cast<int>(c.argument);
        if (!index_.count(next)) return error(line_of_.at(current), "view of undeclared tensor id " + std::to_string(next));
        chain += " -> " + std::to_string(next);
        if (next == pt.id || hops > plan_.tensors.size()) return error(number, "view cycle: " + chain);
        current = next;
      }
      const PlanTensor &target = tensor(static_cast<int>(pt.argument));
      if (run_time_shaped(pt) || run_time_shaped(target) || target.location == Location::Dynamic)
        return error(number, "view of or with a run-time shape: " + describe(pt.id));
      if (target.dtype != pt.dtype || numel(target) != numel(pt))
        return error(number, "view size mismatch: " + describe(pt.id) + " is " + dtype_name(pt.dtype) + " x" +
                                 std::to_string(numel(pt)) + " but views " + describe(target.id) + ", " +
                                 dtype_name(target.dtype) + " x" + std::to_string(numel(target)));
    }
    return {};
  }

  Result<void> check_io_complete(Location which) {
    const std::vector<int> &list = which == Location::Input ? plan_.inputs : plan_.outputs;
    for (const PlanTensor &pt : plan_.tensors) {
      if (pt.location != which) continue;
      bool named = pt.argument < static_cast<int64_t>(list.size()) && list[pt.argument] == pt.id;
      if (!named)
        return error(line_of_.at(pt.id), describe(pt.id) + " is located at " + location_name(which) + " " +
                                             std::to_string(pt.argument) + " but no '" + location_name(which) + " " +
                                             std::to_string(pt.argument) + "' line names it (missing " +
                                             location_name(which) + " position)");
    }
    return {};
  }

  // The bytes a copy writes must be writable: not the caller's input nor the read-only weights.
  Result<void> check_copies() {
    size_t copy_index = 0;
    for (const PlanStep &step : plan_.steps) {
      const CopyStep *c = std::get_if<CopyStep>(&step);
      if (!c) continue;
      const int number = copy_lines_[copy_index++];
      int root = c->destination;
      while (tensor(root).location == Location::View) root = static_cast<int>(tensor(root).argument);
      Location l = tensor(root).location;
      if (l == Location::Input || l == Location::Weight)
        return error(number, "copy into " + describe(c->destination) + ", whose bytes are " +
                                 (l == Location::Input ? "a caller's input" : "read-only weights"));
    }
    return {};
  }

  ExecutionPlan plan_;
  std::map<int, size_t> index_;    // tensor id -> index in plan_.tensors
  std::map<int, int> line_of_;     // tensor id -> line that declared it
  std::vector<int> copy_lines_;    // line of each copy step, in order
};

}  // namespace

Result<void> check_data_flow(const ExecutionPlan &plan, const std::vector<int> &kernel_outputs) {
  std::map<int, const PlanTensor *> by_id;
  for (const PlanTensor &t : plan.tensors) by_id[t.id] = &t;
  const auto root_of = [&](int id) {
    const PlanTensor *t = by_id.at(id);
    while (t->location == Location::View) t = by_id.at(static_cast<int>(t->argument));
    return t;
  };
  const auto describe = [&](int id) { return "tensor " + std::to_string(id) + " (" + by_id.at(id)->name + ")"; };
  // Storage (root tensor ids) whose bytes hold the value the plan says.
  std::set<int> valid;
  for (const PlanTensor &t : plan.tensors)
    if (t.location == Location::Input || t.location == Location::Weight) valid.insert(t.id);
  const auto range_of = [](const PlanTensor *t) {
    return std::pair<int64_t, int64_t>{t->argument, t->argument + *artifact_tensor_bytes(t->dtype, t->shape)};
  };
  std::vector<const PlanTensor *> arena;
  for (const PlanTensor &t : plan.tensors)
    if (t.location == Location::Arena) arena.push_back(&t);
  const auto write = [&](int id) {
    const PlanTensor *root = root_of(id);
    valid.insert(root->id);
    if (root->location != Location::Arena) return;
    // The compiler gives a view or an in-place result the bytes of the tensor it replaces:
    // an arena tensor with the same bytes and dtype now holds this value too; any other
    // tensor sharing some of these bytes was overwritten.
    const auto [begin, end] = range_of(root);
    for (const PlanTensor *other : arena) {
      if (other == root) continue;
      const auto [other_begin, other_end] = range_of(other);
      if (other_begin == begin && other_end == end && other->dtype == root->dtype) valid.insert(other->id);
      else if (begin < other_end && other_begin < end) valid.erase(other->id);
    }
  };
  size_t kernel_index = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    std::vector<int> reads, writes;
    std::string what;
    if (const CopyStep *c = std::get_if<CopyStep>(&plan.steps[s])) {
      reads = {c->source};
      writes = {c->destination};
      what = "copy";
    } else if (const HostStep *h = std::get_if<HostStep>(&plan.steps[s])) {
      for (int id : h->inputs)
        if (id >= 0) reads.push_back(id);
      for (int id : h->outputs)
        if (id >= 0) writes.push_back(id);
      what = "host node " + std::to_string(h->node);
    } else if (const JoinStep *j = std::get_if<JoinStep>(&plan.steps[s])) {
      // The parts must hold their values, and their bytes tile the whole's exactly.
      const PlanTensor *whole = root_of(j->whole);
      int64_t next = range_of(whole).first;
      for (int id : j->parts) {
        const PlanTensor *part = root_of(id);
        if (!valid.count(part->id))
          return make_error(ErrorKind::InvalidInput, "plan.txt: step " + std::to_string(s + 1) + " (join) reads " +
                                                         describe(id) + ", which no earlier step wrote (or a later "
                                                         "write overwrote it)");
        if (whole->location != Location::Arena || part->location != Location::Arena || range_of(part).first != next)
          return make_error(ErrorKind::InvalidInput, "plan.txt: step " + std::to_string(s + 1) + " (join): " +
                                                         describe(id) + " does not lie where its part of " +
                                                         describe(j->whole) + " does");
        next = range_of(part).second;
      }
      // Nothing is written: the whole (and what has its bytes) is valid now, the parts stay so.
      valid.insert(whole->id);
      for (const PlanTensor *other : arena)
        if (range_of(other) == range_of(whole) && other->dtype == whole->dtype) valid.insert(other->id);
      continue;
    } else {
      const KernelStep &k = std::get<KernelStep>(plan.steps[s]);
      if (kernel_index >= kernel_outputs.size())
        return make_error(ErrorKind::InvalidInput, "plan.txt: more kernel steps than kernels described");
      const int outputs = kernel_outputs[kernel_index++];
      if (outputs < 1 || outputs > static_cast<int>(k.args.size()))
        return make_error(ErrorKind::InvalidInput,
                          "plan.txt: kernel " + k.symbol + " writes " + std::to_string(outputs) + " of its " +
                          std::to_string(k.args.size()) + " arguments");
      reads.assign(k.args.begin(), k.args.end() - outputs);
      writes.assign(k.args.end() - outputs, k.args.end());
      what = "kernel " + k.symbol;
    }
    for (int id : reads)
      if (!valid.count(root_of(id)->id))
        return make_error(ErrorKind::InvalidInput,
                          "plan.txt: step " + std::to_string(s + 1) + " (" + what + ") reads " + describe(id) +
                          ", which no earlier step wrote (or a later write overwrote it)");
    for (int id : writes) {
      const Location l = root_of(id)->location;
      if (l == Location::Input || l == Location::Weight)
        return make_error(ErrorKind::InvalidInput,
                          "plan.txt: step " + std::to_string(s + 1) + " (" + what + ") writes " + describe(id) +
                          ", whose bytes are " + (l == Location::Input ? "a caller's input" : "read-only weights"));
      write(id);
    }
  }
  for (int id : plan.outputs)
    if (!valid.count(root_of(id)->id))
      return make_error(ErrorKind::InvalidInput,
                        "plan.txt: output " + describe(id) + " is never written (or is overwritten before the end)");
  return {};
}

std::optional<DType> parse_artifact_dtype(const std::string &name) {
  static const DType kAllowed[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
                                   DType::Int16,   DType::Int32,   DType::Int64,    DType::UInt8,   DType::UInt16,
                                   DType::UInt32,  DType::UInt64,  DType::Bool};
  for (DType d : kAllowed)
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

std::optional<int64_t> artifact_tensor_bytes(DType dtype, const std::vector<int64_t> &shape) {
  int64_t n = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::string encode_plan_name(const std::string &name) {
  // A token cannot be empty, so the empty name gets a spelling no other name has.
  if (name.empty()) return "%";
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (is_plain_name_byte(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::string> decode_plan_name(const std::string &text) {
  if (text == "%") return std::string();
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '%') {
      int hi = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return make_error(ErrorKind::InvalidInput,
                          "bad escape in name '" + text + "' (expected %XX with two hex digits)");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (is_plain_name_byte(c)) {
      out += static_cast<char>(c);
    } else {
      return make_error(ErrorKind::InvalidInput, "name '" + text + "' has a byte that should have been %-encoded");
    }
  }
  return out;
}

std::string to_text(const ExecutionPlan &plan) {
  std::ostringstream os;
  os << kHeader << "\n";
  for (const PlanTensor &t : plan.tensors) {
    os << "tensor " << t.id << " " << encode_plan_name(t.name) << " " << dtype_name(t.dtype) << " ";
    if (t.rank_known) os << t.shape.size();
    else os << "?";
    for (int64_t d : t.shape) {
      if (d < 0) os << " ?";
      else os << " " << d;
    }
    os << " " << location_name(t.location) << " " << t.argument << "\n";
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) os << "input " << i << " " << plan.inputs[i] << "\n";
  for (size_t i = 0; i < plan.outputs.size(); ++i) os << "output " << i << " " << plan.outputs[i] << "\n";
  for (const PlanStep &step : plan.steps) {
    if (const KernelStep *k = std::get_if<KernelStep>(&step)) {
      os << (k->serial ? "serial-kernel " : "kernel ") << k->symbol << " " << k->args.size();
      for (int a : k->args) os << " " << a;
      os << "\n";
    } else if (const HostStep *h = std::get_if<HostStep>(&step)) {
      os << "host " << h->node;
      for (const std::vector<int> *list : {&h->inputs, &h->outputs}) {
        os << " " << list->size();
        for (int id : *list) {
          if (id < 0) os << " -";
          else os << " " << id;
        }
      }
      os << "\n";
    } else if (const JoinStep *j = std::get_if<JoinStep>(&step)) {
      os << "join " << j->whole << " " << j->parts.size();
      for (int id : j->parts) os << " " << id;
      os << "\n";
    } else {
      const CopyStep &c = std::get<CopyStep>(step);
      os << "copy " << c.source << " " << c.destination << "\n";
    }
  }
  return os.str();
}

Result<ExecutionPlan> parse_plan(const std::string &text) { return PlanParser().parse(text); }

bool operator==(const PlanTensor &a, const PlanTensor &b) {
  return a.id == b.id && a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
         a.rank_known == b.rank_known && a.location == b.location && a.argument == b.argument;
}
bool operator==(const HostStep &a, const HostStep &b) {
  return a.node == b.node && a.inputs == b.inputs && a.outputs == b.outputs;
}
bool run_time_shaped(const PlanTensor &t) {
  if (!t.rank_known) return true;
  for (int64_t d : t.shape)
    if (d < 0) return true;
  return false;
}
bool operator==(const KernelStep &a, const KernelStep &b) {
  return a.symbol == b.symbol && a.args == b.args && a.serial == b.serial;
}
bool operator==(const JoinStep &a, const JoinStep &b) { return a.whole == b.whole && a.parts == b.parts; }
bool operator==(const CopyStep &a, const CopyStep &b) {
  return a.source == b.source && a.destination == b.destination;
}
bool operator==(const ExecutionPlan &a, const ExecutionPlan &b) {
  return a.tensors == b.tensors && a.inputs == b.inputs && a.outputs == b.outputs && a.steps == b.steps;
}

}  // namespace tessel::deploy
