// minifloat/error_report.h: what block quantization costs, per tensor and for the worst blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "minifloat/quantize.h"

namespace mf {

struct ErrorStats {
  std::int64_t count = 0;  // finite inputs compared (non-finite ones are counted apart)
  std::int64_t nonfinite = 0;
  double mse = 0;             // mean (x - q)^2
  double sqnr_db = 0;         // 10 log10(sum x^2 / sum (x - q)^2); +Inf when exact
  double mean_rel_error = 0;  // mean over nonzero x of |x - q| / |x|
  double max_rel_error = 0;
  double mean_abs_error_ratio = 0;  // mean |x - q| / mean |x| (docs/spec.md#fp4-experiment's "relative error")
  double zeroed_fraction = 0;       // of the nonzero inputs, those that came back as 0
  double clipped_fraction = 0;      // of the inputs, those beyond the largest value of their block (saturated)
};

struct BlockReport {
  std::int64_t block_row = 0, block_col = 0;
  double mse = 0;
  double max_abs_error = 0;
  float amax = 0;
  std::uint32_t scale_code = 0;
};

struct ErrorReport {
  std::string scheme;
  double bits_per_value = 0;
  ErrorStats total;
  std::vector<BlockReport> worst_blocks;  // the blocks with the largest MSE, worst first
};

// Compare x (the tensor q was quantized from, q.count() values) with dequantize(q).
ErrorReport error_report(const float* x, const QuantizedTensor& q, int worst_blocks = 5);

}  // namespace mf
