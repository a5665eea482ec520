#pragma once
// float32 tanh and erf as Halide expressions that vectorize: the C library's tanhf and erff
// are called once per element, one lane at a time, and made a GELU epilogue (GPT-2's tanh
// form, BERT's erf form) cost ten times its matmul. Include <Halide.h> first.
#ifndef HALIDE_H
#error "include <Halide.h> before compute/vector_math.h"
#endif

namespace tessel {

/// tanh of a Float(32) x: a rational approximation on [-7.9, 7.9] (|x| beyond rounds to +-1),
/// x itself below 4e-4; within 4e-7 relative of tanh everywhere (checked over [-10, 10] in
/// steps of 1e-5). NaN stays NaN.
Halide::Expr vector_tanh(const Halide::Expr &x);

/// erf of a Float(32) x: a rational approximation on [-4, 4] (beyond, erf rounds to +-1);
/// within 4.2e-7 relative of erf. NaN stays NaN.
Halide::Expr vector_erf(const Halide::Expr &x);

}  // namespace tessel
