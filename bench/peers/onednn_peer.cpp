#include "bench/peers/onednn_peer.h"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#ifndef TESSEL_HAVE_ONEDNN
namespace tessel::bench {
KernelRow make_onednn_matmul(const MatmulProblem &problem) {
  return unavailable_row(problem.title(), "oneDNN matmul", kOneDnnMissing);
}
std::vector<KernelRow> make_onednn_conv(const ConvProblem &problem) {
  return {unavailable_row(problem.title(), "oneDNN conv", kOneDnnMissing)};
}
}  // namespace tessel::bench
#else
#include <oneapi/dnnl/dnnl.hpp>

#include "bench/peers/onednn_layout.h"

namespace tessel::bench {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Everything a timed run touches, kept alive by the row's closures.
struct OneDnnKernel {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
  std::vector<float> output;  // plain-layout copy of the result, for the check
  std::function<void()> fetch_output = [] {};

  void run() {
    primitive.execute(stream, args);
    stream.wait();
  }
};

static KernelRow row_for(std::shared_ptr<OneDnnKernel> kernel, const std::vector<float> *reference) {
  KernelRow row;
  row.run = [kernel] { kernel->run(); };
  row.check_error = [kernel, reference] {
    kernel->fetch_output();
    return max_relative_error(kernel->output, *reference);
  };
  return row;
}

KernelRow make_onednn_matmul(const MatmulProblem &problem) {
  const std::string name = "oneDNN matmul";
  try {
    auto kernel = std::make_shared<OneDnnKernel>();
    const dnnl::memory::desc a_md({problem.m, problem.k}, dt::f32, tag::ab);
    const dnnl::memory::desc b_md({problem.k, problem.n}, dt::f32, tag::ab);
    const dnnl::memory::desc c_md({problem.m, problem.n}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), kernel->engine);
    kernel->primitive = dnnl::matmul(pd);
    kernel->output.resize(size_t(problem.m) * problem.n);
    // oneDNN only reads the inputs; the const_cast is for its void* handle.
    kernel->args = {{DNNL_ARG_SRC, dnnl::memory(a_md, kernel->engine, const_cast<float *>(problem.a.data()))},
                    {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, kernel->engine, const_cast<float *>(problem.b.data()))},
                    {DNNL_ARG_DST, dnnl::memory(c_md, kernel->engine, kernel->output.data())}};
    KernelRow row = row_for(kernel, &problem.reference);
    row.kernel = problem.title();
    row.name = name;
    row.flops = problem.flops();
    row.note = std::string("impl ") + pd.impl_info_str();
    return row;
  } catch (const std::exception &e) {
    return unavailable_row(problem.title(), name, std::string("oneDNN error: ") + e.what());
  }
}

static KernelRow make_conv_row(const ConvProblem &problem, bool preferred_layout) {
  const std::string name =
      preferred_layout ? "oneDNN conv, preferred (blocked) layout" : "oneDNN conv, plain NCHW";
  try {
    auto kernel = std::make_shared<OneDnnKernel>();
    dnnl::engine &engine = kernel->engine;
    const dnnl::memory::dims src_dims{problem.batch, problem.in_channels, problem.height, problem.width};
    const dnnl::memory::dims weight_dims{problem.out_channels, problem.in_channels, problem.kernel_h,
                                         problem.kernel_w};
    const dnnl::memory::dims dst_dims{problem.batch, problem.out_channels, problem.out_height(),
                                      problem.out_width()};
    const dnnl::memory::desc user_src(src_dims, dt::f32, tag::nchw);
    const dnnl::memory::desc user_weight(weight_dims, dt::f32, tag::oihw);
    const dnnl::memory::desc user_dst(dst_dims, dt::f32, tag::nchw);
    // format_tag::any lets oneDNN pick the layout its fastest implementation wants.
    auto layout = [&](const dnnl::memory::dims &dims, const dnnl::memory::desc &user) {
      return preferred_layout ? dnnl::memory::desc(dims, dt::f32, tag::any) : user;
    };
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, layout(src_dims, user_src),
        layout(weight_dims, user_weight), layout(dst_dims, user_dst), {problem.stride, problem.stride},
        {problem.pad, problem.pad}, {problem.pad, problem.pad});
    const dnnl::convolution_forward::primitive_desc pd(desc, engine);
    kernel->primitive = dnnl::convolution_forward(pd);
    kernel->output.resize(problem.reference.size());

    // Inputs go into the primitive's layouts once, here, not in the timed run.
    auto in_layout = [&](const dnnl::memory::desc &user_md, const dnnl::memory::desc &want, const float *data) {
      dnnl::memory user(user_md, engine, const_cast<float *>(data));
      if (want == user_md) return user;
      dnnl::memory converted(want, engine);
      dnnl::reorder(user, converted).execute(kernel->stream, user, converted);
      kernel->stream.wait();
      return converted;
    };
    const dnnl::memory src = in_layout(user_src, pd.src_desc(), problem.input.data());
    const dnnl::memory weight = in_layout(user_weight, pd.weights_desc(), problem.weight.data());
    dnnl::memory plain_dst(user_dst, engine, kernel->output.data());
    dnnl::memory dst = pd.dst_desc() == user_dst ? plain_dst : dnnl::memory(pd.dst_desc(), engine);
    if (!(pd.dst_desc() == user_dst)) {
      kernel->fetch_output = [k = kernel.get(), dst, plain_dst]() mutable {
        dnnl::reorder(dst, plain_dst).execute(k->stream, dst, plain_dst);
        k->stream.wait();
      };
    }
    kernel->args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weight}, {DNNL_ARG_DST, dst}};

    KernelRow row = row_for(kernel, &problem.reference);
    row.kernel = problem.title();
    row.name = name;
    row.flops = problem.flops();
    row.note = std::string("impl ") + pd.impl_info_str() + "; " + onednn_layout_note("src", pd.src_desc()) + ", " +
               onednn_layout_note("weights", pd.weights_desc()) + ", " + onednn_layout_note("dst", pd.dst_desc());
    return row;
  } catch (const std::exception &e) {
    return unavailable_row(problem.title(), name, std::string("oneDNN error: ") + e.what());
  }
}

std::vector<KernelRow> make_onednn_conv(const ConvProblem &problem) {
  return {make_conv_row(problem, false), make_conv_row(problem, true)};
}

}  // namespace tessel::bench
#endif  // TESSEL_HAVE_ONEDNN
