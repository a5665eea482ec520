#include "peers/onednn_task_peer.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "peers/onednn_peer.h"  // kOneDnnMissing
#include "peers/problems.h"     // max_relative_error
#include "base/cache_eviction.h"

#ifndef TESSEL_HAVE_ONEDNN
namespace tessel::bench {
std::vector<KernelRow> make_onednn_rows(const PeerProblem &problem) {
  return {unavailable_row(problem.kernel, "oneDNN", kOneDnnMissing)};
}
}  // namespace tessel::bench
#else
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include "peers/onednn_layout.h"

namespace tessel::bench {

namespace {

using dt = dnnl::memory::data_type;
using Dims = dnnl::memory::dims;

// One primitive and the memories it reads and writes.
struct Launch {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

// Everything a timed run touches, kept alive by the row's closures.
struct Task {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<Launch> launches;                // in order; more than one only for a split elementwise chain
  std::vector<float> output;                   // the dense row-major result check_error compares
  std::function<void()> fetch_output = [] {};  // copies a blocked-layout result into `output`
  std::vector<dnnl::memory> constants;         // what the primitives read of the model's constants

  void keep_if_constant(const PeerBuffer &buffer, const dnnl::memory &memory) {
    if (buffer.constant) constants.push_back(memory);
  }

  void run() {
    for (Launch &launch : launches) launch.primitive.execute(stream, launch.args);
    stream.wait();
  }
};

// A problem that does not fit the PeerProblem contract; the message becomes the row's reason.
[[noreturn]] void malformed(const std::string &what) { throw std::invalid_argument(what); }

Dims dims_of(const std::vector<int64_t> &shape) {
  if (shape.empty()) return {1};  // oneDNN has no 0-D tensors
  return Dims(shape.begin(), shape.end());
}

int64_t element_count(const Dims &dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

// Dense row-major fp32 of any rank (nchw, oihw, goihw, ... are all this).
dnnl::memory::desc plain_md(const Dims &dims) {
  Dims strides(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return dnnl::memory::desc(dims, dt::f32, strides);
}

// oneDNN only reads inputs; the const_cast is for its void* handle.
dnnl::memory wrap(const dnnl::memory::desc &md, Task &task, const float *data) {
  return dnnl::memory(md, task.engine, const_cast<float *>(data));
}

const PeerBuffer &input(const PeerProblem &p, size_t index, const char *role) {
  if (index >= p.inputs.size() || !p.inputs[index].data)
    malformed("input " + std::to_string(index) + " (" + role + ") is missing");
  return p.inputs[index];
}

void expect_elements(const PeerBuffer &buffer, int64_t count, const char *role) {
  if (element_count(dims_of(buffer.shape)) != count)
    malformed(std::string(role) + " has " + std::to_string(element_count(dims_of(buffer.shape))) +
              " elements, expected " + std::to_string(count));
}

// The task's dense output (in layout `md`, plain row-major when none), after checking it
// agrees with the problem's output shape.
dnnl::memory dense_output(Task &task, const PeerProblem &p, const Dims &dims,
                          std::optional<dnnl::memory::desc> md = std::nullopt) {
  if (element_count(dims) != element_count(dims_of(p.output_shape)))
    malformed("output_shape does not match the inputs (" + std::to_string(element_count(dims)) + " elements expected)");
  task.output.assign(size_t(element_count(dims)), 0.0f);
  return dnnl::memory(md ? *md : plain_md(dims), task.engine, task.output.data());
}

// [N, C, H, W] dims over bytes laid out [N, H, W, C].
dnnl::memory::desc channels_last_md(const Dims &dims) {
  return dnnl::memory::desc(dims, dt::f32, dnnl::memory::format_tag::nhwc);
}

dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

std::string fused_epilogue_note(const PeerProblem &p) {
  std::string note;
  if (p.has_bias) note += ", bias fused";
  if (p.relu) note += ", ReLU as eltwise post-op";
  return note;
}

KernelRow finish_row(std::shared_ptr<Task> task, const PeerProblem &p, const std::string &name, std::string note) {
  KernelRow row;
  row.kernel = p.kernel;
  row.name = name;
  row.is_peer = true;
  row.flops = p.flops;
  row.note = std::move(note);
  row.run = [task] { task->run(); };
  row.evict_constants = [task] {
    for (const dnnl::memory &memory : task->constants)
      evict_from_caches(memory.get_data_handle(), memory.get_desc().get_size());
  };
  const std::vector<float> *reference = p.reference;
  row.check_error = [task, reference] {
    if (!reference) return std::numeric_limits<double>::infinity();  // nothing to compare with
    task->fetch_output();
    return max_relative_error(task->output, *reference);
  };
  return row;
}

// Builds one row; any error becomes an unavailable row that says why.
KernelRow guarded(const PeerProblem &p, const std::string &name,
                  const std::function<KernelRow(const std::string &)> &build) {
  try {
    return build(name);
  } catch (const dnnl::error &e) {
    return unavailable_row(p.kernel, name,
                           std::string("oneDNN error: ") + e.what() + " (" + dnnl_status2str(e.status) + ")");
  } catch (const std::exception &e) {
    return unavailable_row(p.kernel, name, std::string("problem not expressible for oneDNN: ") + e.what());
  }
}

KernelRow matmul_row(const PeerProblem &p, const std::string &name) {
  const PeerBuffer &a = input(p, 0, "A"), &b = input(p, 1, "B");
  const size_t rank = a.shape.size();
  if (rank < 2 || b.shape.size() < 2) malformed("A and B need at least 2 dims");
  if (b.shape.size() != 2 && b.shape.size() != rank) malformed("B must be 2-D or carry A's batch dims");
  const int64_t k = a.shape[rank - 1], n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k) malformed("A's K and B's K differ");

  const Dims a_dims = dims_of(a.shape);
  // oneDNN wants equal ranks: a 2-D B becomes [1, ..., 1, K, N], which it broadcasts over the batch.
  Dims b_dims(rank, 1);
  b_dims[rank - 2] = k;
  b_dims[rank - 1] = n;
  if (b.shape.size() == rank) b_dims = dims_of(b.shape);
  Dims c_dims = a_dims;
  c_dims[rank - 1] = n;

  auto task = std::make_shared<Task>();
  const dnnl::memory::desc a_md = plain_md(a_dims), b_md = plain_md(b_dims), c_md = plain_md(c_dims);
  Dims bias_dims(rank, 1);
  bias_dims[rank - 1] = n;
  const dnnl::memory::desc bias_md = plain_md(bias_dims);
  const dnnl::matmul::desc desc =
      p.has_bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md);
  const dnnl::matmul::primitive_desc pd(desc, relu_attr(p.relu), task->engine);

  Launch launch{dnnl::matmul(pd),
                {{DNNL_ARG_SRC, wrap(a_md, *task, a.data)},
                 {DNNL_ARG_WEIGHTS, wrap(b_md, *task, b.data)},
                 {DNNL_ARG_DST, dense_output(*task, p, c_dims)}}};
  if (p.has_bias) {
    const PeerBuffer &bias = input(p, 2, "bias");
    expect_elements(bias, n, "the bias");
    launch.args[DNNL_ARG_BIAS] = wrap(bias_md, *task, bias.data);
    task->keep_if_constant(bias, launch.args[DNNL_ARG_BIAS]);
  }
  task->keep_if_constant(b, launch.args[DNNL_ARG_WEIGHTS]);
  task->launches.push_back(std::move(launch));
  const bool b_broadcast = b.shape.size() == 2 && rank > 2;
  return finish_row(task, p, name,
                    std::string("impl ") + pd.impl_info_str() + (b_broadcast ? ", B broadcast" : "") +
                        fused_epilogue_note(p));
}

KernelRow conv_row(const PeerProblem &p, bool preferred_layout, const std::string &name) {
  const PeerBuffer &x = input(p, 0, "X"), &w = input(p, 1, "W");
  if (x.shape.size() != 4 || w.shape.size() != 4) malformed("conv needs X[N, C, H, W] and W[K, C / groups, R, S]");
  const bool nhwc = p.channels_last;  // X [N, H, W, C], the output [N, OH, OW, K]
  const int64_t batch = x.shape[0], channels = x.shape[nhwc ? 3 : 1], height = x.shape[nhwc ? 1 : 2],
                width = x.shape[nhwc ? 2 : 3];
  const int64_t filters = w.shape[0], group_channels = w.shape[1], kernel_h = w.shape[2], kernel_w = w.shape[3];
  const int64_t groups = p.groups;
  if (groups < 1 || channels != group_channels * groups || filters % groups != 0)
    malformed("channels, filters and groups disagree");
  const auto [stride_h, stride_w] = p.strides;
  const auto [dilation_h, dilation_w] = p.dilations;
  const auto [pad_top, pad_left, pad_bottom, pad_right] = p.pads;
  if (std::min({stride_h, stride_w, dilation_h, dilation_w}) < 1) malformed("strides and dilations must be >= 1");
  const int64_t out_h = (height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  const int64_t out_w = (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;

  const Dims src_dims{batch, channels, height, width};
  // Grouped weights are [G, K/G, C/G, R, S]: the same bytes as the dense [K, C/G, R, S].
  const Dims weight_dims = groups > 1 ? Dims{groups, filters / groups, group_channels, kernel_h, kernel_w}
                                      : Dims{filters, group_channels, kernel_h, kernel_w};
  const Dims dst_dims{batch, filters, out_h, out_w};
  const dnnl::memory::desc user_src = nhwc ? channels_last_md(src_dims) : plain_md(src_dims),
                           user_weight = plain_md(weight_dims),
                           user_dst = nhwc ? channels_last_md(dst_dims) : plain_md(dst_dims),
                           bias_md = plain_md({filters});
  // format_tag::any lets oneDNN pick the layout its fastest implementation wants.
  auto layout = [&](const Dims &dims, const dnnl::memory::desc &user) {
    return preferred_layout ? dnnl::memory::desc(dims, dt::f32, dnnl::memory::format_tag::any) : user;
  };
  // oneDNN counts dilation from 0 (0 = dense), ONNX from 1.
  const Dims strides{stride_h, stride_w}, dilates{dilation_h - 1, dilation_w - 1};
  const Dims pad_l{pad_top, pad_left}, pad_r{pad_bottom, pad_right};
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc desc =
      p.has_bias ? dnnl::convolution_forward::desc(prop, algo, layout(src_dims, user_src),
                                                   layout(weight_dims, user_weight), bias_md,
                                                   layout(dst_dims, user_dst), strides, dilates, pad_l, pad_r)
                 : dnnl::convolution_forward::desc(prop, algo, layout(src_dims, user_src),
                                                   layout(weight_dims, user_weight), layout(dst_dims, user_dst),
                                                   strides, dilates, pad_l, pad_r);
  auto task = std::make_shared<Task>();
  const dnnl::convolution_forward::primitive_desc pd(desc, relu_attr(p.relu), task->engine);

  // Inputs go into the primitive's layouts once, here, not in the timed run.
  auto in_layout = [&](const dnnl::memory::desc &user_md, const dnnl::memory::desc &wanted, const float *data) {
    dnnl::memory user = wrap(user_md, *task, data);
    if (wanted == user_md) return user;
    dnnl::memory converted(wanted, task->engine);
    dnnl::reorder(user, converted).execute(task->stream, user, converted);
    task->stream.wait();
    return converted;
  };
  dnnl::memory plain_dst = dense_output(*task, p, dst_dims, user_dst);
  dnnl::memory dst = plain_dst;
  if (!(pd.dst_desc() == user_dst)) {
    dst = dnnl::memory(pd.dst_desc(), task->engine);
    // Back to the user layout only for the check: a network would stay in the blocked one.
    task->fetch_output = [t = task.get(), dst, plain_dst]() mutable {
      dnnl::reorder(dst, plain_dst).execute(t->stream, dst, plain_dst);
      t->stream.wait();
    };
  }
  Launch launch{dnnl::convolution_forward(pd),
                {{DNNL_ARG_SRC, in_layout(user_src, pd.src_desc(), x.data)},
                 {DNNL_ARG_WEIGHTS, in_layout(user_weight, pd.weights_desc(), w.data)},
                 {DNNL_ARG_DST, dst}}};
  if (p.has_bias) {
    const PeerBuffer &bias = input(p, 2, "bias");
    expect_elements(bias, filters, "the bias");
    launch.args[DNNL_ARG_BIAS] = in_layout(bias_md, pd.bias_desc(), bias.data);
    task->keep_if_constant(bias, launch.args[DNNL_ARG_BIAS]);
  }
  task->keep_if_constant(w, launch.args[DNNL_ARG_WEIGHTS]);
  task->launches.push_back(std::move(launch));
  return finish_row(task, p, name,
                    std::string("impl ") + pd.impl_info_str() + "; " + onednn_layout_note("src", pd.src_desc()) +
                        ", " + onednn_layout_note("weights", pd.weights_desc()) + ", " +
                        onednn_layout_note("dst", pd.dst_desc()) + fused_epilogue_note(p));
}

KernelRow softmax_row(const PeerProblem &p, const std::string &name) {
  const PeerBuffer &x = input(p, 0, "X");
  const Dims dims = dims_of(x.shape);
  const dnnl::memory::desc md = plain_md(dims);
  auto task = std::make_shared<Task>();
  const dnnl::softmax_forward::primitive_desc pd(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, int(dims.size()) - 1), task->engine);
  task->launches.push_back(Launch{dnnl::softmax_forward(pd),
                                  {{DNNL_ARG_SRC, wrap(md, *task, x.data)},
                                   {DNNL_ARG_DST, dense_output(*task, p, dims)}}});
  return finish_row(task, p, name, std::string("impl ") + pd.impl_info_str());
}

KernelRow layernorm_row(const PeerProblem &p, const std::string &name) {
  const PeerBuffer &x = input(p, 0, "X"), &scale = input(p, 1, "scale"), &shift = input(p, 2, "bias");
  const Dims dims = dims_of(x.shape);
  const int64_t depth = dims.back();
  expect_elements(scale, depth, "the scale");
  expect_elements(shift, depth, "the bias");
  const dnnl::memory::desc md = plain_md(dims), param_md = plain_md({depth});
  auto task = std::make_shared<Task>();
  // Inference without global statistics: oneDNN computes mean and variance itself.
  const dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, p.epsilon,
                                              dnnl::normalization_flags::use_scale |
                                                  dnnl::normalization_flags::use_shift),
      task->engine);
  Launch launch{dnnl::layer_normalization_forward(pd),
                {{DNNL_ARG_SRC, wrap(md, *task, x.data)},
                 {DNNL_ARG_DST, dense_output(*task, p, dims)},
                 {DNNL_ARG_SCALE, wrap(param_md, *task, scale.data)},
                 {DNNL_ARG_SHIFT, wrap(param_md, *task, shift.data)}}};
  // Some implementations still want somewhere to write the statistics.
  task->keep_if_constant(scale, launch.args[DNNL_ARG_SCALE]);
  task->keep_if_constant(shift, launch.args[DNNL_ARG_SHIFT]);
  if (pd.mean_desc().get_size() > 0) launch.args[DNNL_ARG_MEAN] = dnnl::memory(pd.mean_desc(), task->engine);
  if (pd.variance_desc().get_size() > 0)
    launch.args[DNNL_ARG_VARIANCE] = dnnl::memory(pd.variance_desc(), task->engine);
  task->launches.push_back(std::move(launch));
  return finish_row(task, p, name, std::string("impl ") + pd.impl_info_str());
}

dnnl::algorithm reduction_algorithm(const std::string &kind) {
  if (kind == "sum") return dnnl::algorithm::reduction_sum;
  if (kind == "mean") return dnnl::algorithm::reduction_mean;
  if (kind == "max") return dnnl::algorithm::reduction_max;
  malformed("unknown reduce kind '" + kind + "' (sum, mean or max)");
}

KernelRow reduce_row(const PeerProblem &p, const std::string &name) {
  const PeerBuffer &x = input(p, 0, "X");
  const Dims src_dims = dims_of(x.shape);
  Dims dst_dims = src_dims;
  dst_dims.back() = 1;
  const dnnl::memory::desc src_md = plain_md(src_dims), dst_md = plain_md(dst_dims);
  auto task = std::make_shared<Task>();
  const dnnl::reduction::primitive_desc pd(
      dnnl::reduction::desc(reduction_algorithm(p.reduce_kind), src_md, dst_md, 0.0f, 0.0f), task->engine);
  task->launches.push_back(Launch{dnnl::reduction(pd),
                                  {{DNNL_ARG_SRC, wrap(src_md, *task, x.data)},
                                   {DNNL_ARG_DST, dense_output(*task, p, dst_dims)}}});
  return finish_row(task, p, name, std::string("impl ") + pd.impl_info_str());
}

// One step of an elementwise chain as oneDNN names it.
struct ChainStep {
  bool binary = false;
  dnnl::algorithm algorithm = dnnl::algorithm::undef;
  std::string onednn_name;          // for the note, e.g. "eltwise_logistic"
  const float *operand = nullptr;   // binary steps: the other input
};

std::vector<ChainStep> parse_chain(const PeerProblem &p, int64_t elements) {
  if (p.steps.empty()) malformed("the elementwise chain has no steps");
  std::vector<ChainStep> chain;
  size_t next_input = 1;
  for (const std::string &step : p.steps) {
    ChainStep s;
    if (step == "add" || step == "sub" || step == "mul") {
      s.binary = true;
      s.algorithm = step == "add"   ? dnnl::algorithm::binary_add
                    : step == "sub" ? dnnl::algorithm::binary_sub
                                    : dnnl::algorithm::binary_mul;
      s.onednn_name = "binary_" + step;
      const PeerBuffer &operand = input(p, next_input++, "binary operand");
      expect_elements(operand, elements, "a binary operand");
      s.operand = operand.data;
    } else if (step == "relu" || step == "sigmoid" || step == "tanh" || step == "exp" || step == "abs") {
      s.algorithm = step == "relu"      ? dnnl::algorithm::eltwise_relu
                    : step == "sigmoid" ? dnnl::algorithm::eltwise_logistic
                    : step == "tanh"    ? dnnl::algorithm::eltwise_tanh
                    : step == "exp"     ? dnnl::algorithm::eltwise_exp
                                        : dnnl::algorithm::eltwise_abs;
      s.onednn_name = step == "sigmoid" ? "eltwise_logistic" : "eltwise_" + step;
    } else {
      malformed("unknown elementwise step '" + step + "'");
    }
    chain.push_back(std::move(s));
  }
  if (next_input != p.inputs.size()) malformed("the chain's binary steps do not use every input");
  return chain;
}

// One primitive of an elementwise chain, with what the row's note says about it.
struct FusedLaunch {
  Launch launch;
  std::string description;
  bool reference_impl = false;  // oneDNN's slow reference code ("ref:any")
};

// chain[first] as a binary or eltwise primitive with chain[first + 1, first + count) as its
// post-ops, reading `src` and writing `dst` (the same memory for all but the first primitive).
FusedLaunch fused_launch(const std::vector<ChainStep> &chain, size_t first, size_t count,
                         const dnnl::memory::desc &md, const dnnl::memory &src, const dnnl::memory &dst,
                         Task &task) {
  dnnl::post_ops ops;
  std::unordered_map<int, dnnl::memory> post_op_args;
  std::string post_op_names;
  for (size_t i = 1; i < count; ++i) {
    const ChainStep &step = chain[first + i];
    if (step.binary) {
      ops.append_binary(step.algorithm, md);
      post_op_args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(i - 1)) | DNNL_ARG_SRC_1] = wrap(md, task, step.operand);
    } else {
      ops.append_eltwise(1.0f, step.algorithm, 0.0f, 0.0f);
    }
    post_op_names += (i > 1 ? ", " : "") + step.onednn_name;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);

  const ChainStep &head = chain[first];
  Launch launch;
  const char *impl = nullptr;
  if (head.binary) {
    const dnnl::binary::primitive_desc pd(dnnl::binary::desc(head.algorithm, md, md, md), attr, task.engine);
    launch.primitive = dnnl::binary(pd);
    launch.args = {{DNNL_ARG_SRC_0, src}, {DNNL_ARG_SRC_1, wrap(md, task, head.operand)}, {DNNL_ARG_DST, dst}};
    impl = pd.impl_info_str();
  } else {
    const dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, head.algorithm, md, 0.0f, 0.0f), attr,
        task.engine);
    launch.primitive = dnnl::eltwise_forward(pd);
    launch.args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    impl = pd.impl_info_str();
  }
  launch.args.insert(post_op_args.begin(), post_op_args.end());
  FusedLaunch fused;
  fused.launch = std::move(launch);
  fused.description = (head.binary ? "binary primitive " : "eltwise primitive ") + head.onednn_name +
                      (post_op_names.empty() ? "" : " with post-ops " + post_op_names) + " (impl " + impl + ")";
  fused.reference_impl = std::string(impl).rfind("ref", 0) == 0;
  return fused;
}

KernelRow elementwise_row(const PeerProblem &p, const std::string &name) {
  const Dims dims = dims_of(p.output_shape);
  const std::vector<ChainStep> chain = parse_chain(p, element_count(dims));
  expect_elements(input(p, 0, "X"), element_count(dims), "the running value");
  const dnnl::memory::desc md = plain_md(dims);
  auto task = std::make_shared<Task>();
  const dnnl::memory dst = dense_output(*task, p, dims);
  const dnnl::memory first_src = wrap(md, *task, p.inputs[0].data);

  // As many steps per primitive as oneDNN fuses with a fast implementation; the rest in further
  // primitives that run in place on the output. oneDNN 2.6 runs an eltwise primitive with
  // post-ops only in its reference code, which would make a slow, unfair peer: splitting the
  // chain into jitted primitives is what a oneDNN user would do there. Only when no split
  // avoids the reference code is the longest fusion kept.
  std::string note;
  for (size_t first = 0; first < chain.size();) {
    std::unique_ptr<FusedLaunch> chosen;
    size_t chosen_count = 0;
    for (size_t count = chain.size() - first; count >= 1; --count) {
      try {
        FusedLaunch candidate = fused_launch(chain, first, count, md, first == 0 ? first_src : dst, dst, *task);
        if (!chosen || (chosen->reference_impl && !candidate.reference_impl)) {
          chosen = std::make_unique<FusedLaunch>(std::move(candidate));
          chosen_count = count;
        }
        if (!chosen->reference_impl) break;
      } catch (const dnnl::error &) {
        if (count == 1 && !chosen) throw;  // not even the step alone: the row is unavailable
      }
    }
    task->launches.push_back(std::move(chosen->launch));
    note += (note.empty() ? "" : "; then, in place, ") + chosen->description;
    first += chosen_count;
  }
  return finish_row(task, p, name, note);
}

}  // namespace

std::vector<KernelRow> make_onednn_rows(const PeerProblem &p) {
  switch (p.op) {
    case PeerOp::Matmul:
      return {guarded(p, "oneDNN matmul", [&](const std::string &name) { return matmul_row(p, name); })};
    case PeerOp::Conv:
      return {guarded(p, p.channels_last ? "oneDNN conv, plain NHWC" : "oneDNN conv, plain NCHW",
                      [&](const std::string &name) { return conv_row(p, false, name); }),
              guarded(p, "oneDNN conv, preferred (blocked) layout",
                      [&](const std::string &name) { return conv_row(p, true, name); })};
    case PeerOp::Softmax:
      return {guarded(p, "oneDNN softmax", [&](const std::string &name) { return softmax_row(p, name); })};
    case PeerOp::LayerNorm:
      return {guarded(p, "oneDNN layernorm", [&](const std::string &name) { return layernorm_row(p, name); })};
    case PeerOp::Reduce:
      return {guarded(p, "oneDNN reduction " + p.reduce_kind,
                      [&](const std::string &name) { return reduce_row(p, name); })};
    case PeerOp::Elementwise:
      return {guarded(p, "oneDNN elementwise chain",
                      [&](const std::string &name) { return elementwise_row(p, name); })};
  }
  return {unavailable_row(p.kernel, "oneDNN", "unknown PeerOp")};
}

}  // namespace tessel::bench
#endif  // TESSEL_HAVE_ONEDNN
