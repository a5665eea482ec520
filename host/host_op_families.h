#pragma once
// Internal to host/: each family file registers its ops here, called once, in this order,
// when the first op is looked up (explicit calls, since a static library drops objects that
// only register themselves from a global constructor).

namespace tessel {

void register_elementwise_host_ops();  // host_elementwise_ops.cpp: unary, binary, Where, Cast, Clip
void register_shape_host_ops();        // host_shape_ops.cpp: Shape, Reshape, Concat, Slice, Transpose, ...
void register_index_host_ops();        // host_index_ops.cpp: Gather, GatherND, ScatterElements
void register_reduce_host_ops();       // host_reduce_ops.cpp: Reduce*, Softmax, ArgMax
void register_linear_host_ops();       // host_linear_ops.cpp: MatMul, Gemm
void register_detection_host_ops();    // host_detection_ops.cpp: TopK, NonZero, NonMaxSuppression, RoiAlign

}  // namespace tessel
