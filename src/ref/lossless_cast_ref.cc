// The reference check of a lossless cast (minifloat/lossless_cast.h): both tensors dequantized and compared bit for
// bit, block by block over the output's blocks. Obviously right, and what the cast's own report is tested against.
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "../blocks/blocking.h"
#include "minifloat/lossless_cast.h"

namespace mf::ref {

CastReport cast_exactness(const QuantizedTensor& in, const QuantizedTensor& out) {
  if (in.shape != out.shape) throw QuantizeError("cast_exactness: the two tensors' shapes differ");
  std::vector<float> x(static_cast<std::size_t>(in.count())), y(x.size());
  ref::dequantize(in, x.data());
  ref::dequantize(out, y.data());
  const detail::Geometry g = detail::geometry_of(out);
  CastReport r;
  r.blocks = g.blocks();
  std::vector<bool> bad(static_cast<std::size_t>(g.blocks()), false);
  for (std::int64_t row = 0; row < g.rows; ++row) {
    for (std::int64_t col = 0; col < g.cols; ++col) {
      const float a = x[static_cast<std::size_t>(row * g.cols + col)],
                  b = y[static_cast<std::size_t>(row * g.cols + col)];
      if (std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) || (std::isnan(a) && std::isnan(b))) {
        continue;
      }
      bad[static_cast<std::size_t>((row / g.br) * g.block_cols + col / g.bc)] = true;
      const double err = std::fabs(static_cast<double>(b) - static_cast<double>(a));
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
      if (a != 0) r.max_rel_error = std::max(r.max_rel_error, err / std::fabs(a));
    }
  }
  for (std::size_t i = 0; i < bad.size(); ++i) {
    if (!bad[i]) continue;
    ++r.inexact_blocks;
    if (r.first_inexact < 0) r.first_inexact = static_cast<std::int64_t>(i);
  }
  return r;
}

}  // namespace mf::ref
