#include "minifloat/error_report.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../blocks/blocking.h"
#include "minifloat/hadamard.h"

namespace mf {
namespace {

struct Sums {
  std::int64_t count = 0, nonfinite = 0, nonzero = 0, zeroed = 0, clipped = 0;
  double err2 = 0, sig2 = 0, abs_err = 0, abs_x = 0, rel = 0, max_rel = 0;
};

ErrorStats finish(const Sums& s) {
  ErrorStats e;
  e.count = s.count;
  e.nonfinite = s.nonfinite;
  if (s.count == 0) return e;
  e.mse = s.err2 / static_cast<double>(s.count);
  e.sqnr_db = s.err2 == 0 ? INFINITY : 10 * std::log10(s.sig2 / s.err2);
  e.mean_rel_error = s.nonzero ? s.rel / static_cast<double>(s.nonzero) : 0;
  e.max_rel_error = s.max_rel;
  e.mean_abs_error_ratio = s.abs_x > 0 ? s.abs_err / s.abs_x : 0;
  e.zeroed_fraction = s.nonzero ? static_cast<double>(s.zeroed) / static_cast<double>(s.nonzero) : 0;
  e.clipped_fraction = static_cast<double>(s.clipped) / static_cast<double>(s.count);
  return e;
}

}  // namespace

ErrorReport error_report(const float* x, const QuantizedTensor& q, int worst_blocks) {
  const detail::Geometry g = detail::geometry_of(q);
  std::vector<float> back(static_cast<std::size_t>(g.count()));
  dequantize(q, back.data());
  // Clipping happens where the codes live: in the rotated domain when the tensor was rotated.
  std::vector<float> rotated;
  const float* xs = x;
  if (q.rotate) {
    rotated.assign(x, x + g.count());
    rotate(rotated.data(), rotated.size(), q.rotate);
    xs = rotated.data();
  }
  const std::vector<float> divisors = detail::load_divisors(q);
  const float max_elem = q.scheme.element.max();
  Sums total;
  std::vector<BlockReport> blocks(static_cast<std::size_t>(g.blocks()));
  std::vector<std::int64_t> block_count(blocks.size(), 0);
  for (std::int64_t r = 0; r < g.rows; ++r) {
    for (std::int64_t c = 0; c < g.cols; ++c) {
      const std::int64_t i = r * g.cols + c;
      const std::size_t b = static_cast<std::size_t>((r / g.br) * g.block_cols + c / g.bc);
      const double xv = x[i], qv = back[static_cast<std::size_t>(i)];
      if (!std::isfinite(xv)) {
        ++total.nonfinite;
        continue;
      }
      const double err = std::isfinite(qv) ? std::fabs(xv - qv) : INFINITY;
      ++total.count;
      total.err2 += err * err;
      total.sig2 += xv * xv;
      total.abs_err += err;
      total.abs_x += std::fabs(xv);
      if (xv != 0) {
        ++total.nonzero;
        total.rel += err / std::fabs(xv);
        total.max_rel = std::max(total.max_rel, err / std::fabs(xv));
        if (qv == 0) ++total.zeroed;
      }
      if (std::fabs(xs[i]) > static_cast<double>(max_elem) * divisors[b]) ++total.clipped;
      BlockReport& be = blocks[b];
      be.mse += err * err;
      be.max_abs_error = std::max(be.max_abs_error, err);
      be.amax = std::max(be.amax, static_cast<float>(std::fabs(xv)));
      ++block_count[b];
    }
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    blocks[b].block_row = static_cast<std::int64_t>(b) / g.block_cols;
    blocks[b].block_col = static_cast<std::int64_t>(b) % g.block_cols;
    blocks[b].scale_code = q.scale_code(blocks[b].block_row, blocks[b].block_col);
    if (block_count[b]) blocks[b].mse /= static_cast<double>(block_count[b]);
  }
  const std::size_t k = std::min(blocks.size(), static_cast<std::size_t>(std::max(worst_blocks, 0)));
  std::partial_sort(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(k), blocks.end(),
                    [](const BlockReport& a, const BlockReport& b) { return a.mse > b.mse; });
  blocks.resize(k);
  return {q.scheme.name, q.scheme.bits_per_value(), finish(total), std::move(blocks)};
}

}  // namespace mf
