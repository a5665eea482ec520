#include <Halide.h>

#include "compute/vector_math.h"

#include <initializer_list>

namespace tessel {
namespace {

using Halide::Expr;

/// c[0] t^(n-1) + ... + c[n-1], in Horner form, in float32.
Expr horner(const Expr &t, std::initializer_list<double> coefficients) {
  Expr acc;
  for (double c : coefficients) {
    const Expr term = Halide::cast(Halide::Float(32), Expr(c));
    acc = acc.defined() ? acc * t + term : term;
  }
  return acc;
}

/// x * P(x^2) / Q(x^2) on x clamped to [-bound, bound]: an odd rational function.
Expr odd_rational(const Expr &x, float bound, std::initializer_list<double> numerator,
                  std::initializer_list<double> denominator) {
  const Expr clamped = Halide::clamp(x, -bound, bound);
  const Expr t = clamped * clamped;
  return clamped * horner(t, numerator) / horner(t, denominator);
}

}  // namespace

// The coefficients are the published minimax fits Eigen and XLA evaluate in float32.

Expr vector_tanh(const Expr &x) {
  const Expr r = odd_rational(x, 7.90531110763549805f,
                              {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                               5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                               4.89352455891786e-03},
                              {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                               4.89352518554385e-03});
  // Near 0, tanh x = x to float precision (and the rational form would lose -0's sign).
  return Halide::select(Halide::is_nan(x) || Halide::abs(x) < 0.0004f, x, r);
}

Expr vector_erf(const Expr &x) {
  const Expr r = odd_rational(x, 4.0f,
                              {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                               -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                               -1.60960333262415e-02},
                              {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                               -7.37332916720468e-03, -1.42647390514189e-02});
  return Halide::select(Halide::is_nan(x), x, r);
}

}  // namespace tessel
