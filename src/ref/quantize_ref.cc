// The scalar reference of block quantization: a plain loop over blocks and elements using the rules of scale.h.
#include <cmath>
#include <vector>

#include "../blocks/blocking.h"
#include "minifloat/hadamard.h"
#include "minifloat/quantize.h"
#include "minifloat/scale.h"

namespace mf::ref {

QuantizedTensor quantize(const float* x, std::span<const std::int64_t> shape, const Scheme& s,
                         const QuantizeOptions& o) {
  const detail::Geometry g = detail::blocking(shape, s, o);
  QuantizedTensor q;
  detail::init_result(q, shape, s, o, g);
  std::vector<float> rotated;
  if (o.rotate) {
    rotated.assign(x, x + g.count());
    ref::rotate(rotated.data(), rotated.size(), o.rotate);
    x = rotated.data();
  }
  q.tensor_scale = s.tensor_scale && o.tensor_scale > 0
                       ? o.tensor_scale
                       : tensor_scale_for(s, o.tensor_amax > 0 ? o.tensor_amax : detail::finite_amax(x, g.count()));
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(g.count()));
  std::vector<std::uint32_t> scale_codes(static_cast<std::size_t>(g.blocks()));
  std::vector<float> values;
  for (std::int64_t bi = 0; bi < g.block_rows; ++bi) {
    for (std::int64_t bj = 0; bj < g.block_cols; ++bj) {
      const std::int64_t r0 = bi * g.br, r1 = std::min(r0 + g.br, g.rows);
      const std::int64_t c0 = bj * g.bc, c1 = std::min(c0 + g.bc, g.cols);
      float amax = 0;
      bool nonfinite = false;
      values.clear();
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          const float v = x[r * g.cols + c];
          if (!std::isfinite(v)) {
            if (o.nonfinite == NonFinite::error) detail::throw_nonfinite(q, r * g.cols + c, v, o.tensor_name);
            nonfinite = true;
          } else {
            amax = std::max(amax, std::fabs(v));
          }
          values.push_back(v);
        }
      }
      const BlockScale bs = nonfinite || (s.rule != ScaleRule::mse && s.rule != ScaleRule::four_over_six)
                                ? block_scale(s, amax, nonfinite, q.tensor_scale)
                            : s.rule == ScaleRule::mse ? detail::mse_scale(s, values, amax, q.tensor_scale)
                                                       : detail::four_over_six_scale(s, values, amax, q.tensor_scale);
      scale_codes[static_cast<std::size_t>(bi * g.block_cols + bj)] = bs.code;
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          // A non-finite block stores zero codes: its NaN scale already makes every element NaN.
          codes[static_cast<std::size_t>(r * g.cols + c)] =
              nonfinite ? 0 : static_cast<std::uint8_t>(element_code(s, x[r * g.cols + c], bs));
        }
      }
    }
  }
  detail::store_codes(q, codes);
  detail::store_scales(q, scale_codes);
  return q;
}

void dequantize(const QuantizedTensor& q, float* out) {
  validate(q);
  const detail::Geometry g = detail::geometry_of(q);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(g.count()));
  detail::load_codes(q, codes);
  const std::vector<float> divisors = detail::load_divisors(q);
  for (std::int64_t r = 0; r < g.rows; ++r) {
    for (std::int64_t c = 0; c < g.cols; ++c) {
      const float d = divisors[static_cast<std::size_t>((r / g.br) * g.block_cols + c / g.bc)];
      out[r * g.cols + c] =
          scaled_value(element_value(q.scheme.element, codes[static_cast<std::size_t>(r * g.cols + c)]), d);
    }
  }
  if (q.rotate) ref::rotate(out, static_cast<std::size_t>(g.count()), q.rotate);
}

}  // namespace mf::ref
