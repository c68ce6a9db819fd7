#include "blocking.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "minifloat/hadamard.h"
#include "minifloat/pack.h"
#include "minifloat/text.h"

namespace mf::detail {

namespace {

// rows = the product of the leading dimensions, cols = the last; a negative or overflowing shape is an error.
void set_rows_and_cols(Geometry& g, std::span<const std::int64_t> shape, const QuantizeOptions& o) {
  g.cols = shape.empty() ? 1 : shape.back();
  g.rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) {
    if (shape[i] < 0 || (shape[i] > 0 && g.rows > std::numeric_limits<std::int64_t>::max() / shape[i])) {
      throw QuantizeError("tensor '" + o.tensor_name + "': bad shape " + shape_text(shape));
    }
    g.rows *= shape[i];
  }
  if (g.cols < 0) throw QuantizeError("tensor '" + o.tensor_name + "': bad shape " + shape_text(shape));
}

// The ggml layout, the rotation group and a given tensor amax against the scheme and the shape.
void check_options(const Geometry& g, const Scheme& s, const QuantizeOptions& o) {
  if (o.layout == Layout::ggml) {
    if (!(s.element.format == &e2m1) || g.br != 1 || g.bc != 32 || !(*s.scale_format == ue8m0)) {
      throw QuantizeError("layout ggml holds mxfp4 (e2m1, 1x32, ue8m0) only, not " + s.name);
    }
    if (g.cols % 32 != 0) throw QuantizeError("layout ggml needs whole 32-value blocks: --pad does not apply");
  }
  if (o.rotate != 0) {
    if (o.rotate < 1 || (o.rotate & (o.rotate - 1)) != 0 || o.rotate > 4096) {
      throw QuantizeError("rotate = " + std::to_string(o.rotate) + " is not a power of two up to 4096");
    }
    if (g.cols % o.rotate != 0) {
      throw QuantizeError("tensor '" + o.tensor_name + "': the last dimension (" + std::to_string(g.cols) +
                          ") is not a multiple of the rotation group " + std::to_string(o.rotate));
    }
  }
  if (!(o.tensor_amax >= 0.0f) || !std::isfinite(o.tensor_amax)) {
    throw QuantizeError("tensor_amax = " + std::to_string(o.tensor_amax) + " is not a finite amax >= 0");
  }
  if (!(o.tensor_scale >= 0.0f) || !std::isfinite(o.tensor_scale)) {
    throw QuantizeError("tensor_scale = " + std::to_string(o.tensor_scale) +
                        " is not a finite scale > 0 (or 0: none given)");
  }
  if (o.tensor_scale > 0 && o.tensor_amax > 0) {
    throw QuantizeError("give tensor_scale or tensor_amax, not both");
  }
  if (o.tensor_scale > 0 && !s.tensor_scale) {  // never silently dropped
    throw QuantizeError("tensor_scale given, but scheme " + std::string(s.name) + " has no tensor scale");
  }
}

}  // namespace

Geometry blocking(std::span<const std::int64_t> shape, const Scheme& s, const QuantizeOptions& o) {
  Geometry g;
  set_rows_and_cols(g, shape, o);
  g.br = s.block_rows;
  g.bc = s.block_cols;
  const auto check = [&](std::int64_t size, std::int64_t block, const char* dim) {
    if (size % block != 0 && !o.pad) {
      throw QuantizeError("tensor '" + o.tensor_name + "' of shape " + shape_text(shape) + ": " + dim + " (" +
                          std::to_string(size) + ") is not a multiple of the " + s.name + " block's " +
                          std::to_string(block) + "; use --pad (pad = true) to quantize partial edge blocks");
    }
  };
  check(g.cols, g.bc, "the last dimension");
  if (g.br > 1) check(g.rows, g.br, shape.size() > 1 ? "the rows (product of the leading dimensions)" : "the rows");
  g.block_rows = (g.rows + g.br - 1) / g.br;
  g.block_cols = (g.cols + g.bc - 1) / g.bc;
  check_options(g, s, o);
  return g;
}

void init_result(QuantizedTensor& q, std::span<const std::int64_t> shape, const Scheme& s, const QuantizeOptions& o,
                 const Geometry& g) {
  q.shape.assign(shape.begin(), shape.end());
  q.scheme = s;
  q.layout = o.layout;
  q.rotate = o.rotate;
  q.scale_shape.clear();
  if (o.layout != Layout::ggml) q.scale_shape.assign({s.block_rows == 1 ? g.rows : g.block_rows, g.block_cols});
  q.tensor_scale = 1.0f;
}

Geometry geometry_of(const QuantizedTensor& q) {
  QuantizeOptions o;
  o.pad = true;
  o.layout = q.layout;
  return blocking(q.shape, q.scheme, o);
}

float finite_amax(const float* x, std::int64_t n) {
  float amax = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > amax && std::isfinite(a)) amax = a;
  }
  return amax;
}

namespace {
// The sum of squared errors of a block's round trip under the scale bs.
double squared_error(const Scheme& s, std::span<const float> values, const BlockScale& bs) {
  double err = 0;
  for (const float x : values) {
    const double d = static_cast<double>(x) - element_value(s.element, element_code(s, x, bs)) * bs.divisor;
    err += d * d;
  }
  return err;
}
}  // namespace

BlockScale mse_scale(const Scheme& s, std::span<const float> values, float amax, float tensor_scale) {
  if (amax == 0) return block_scale(s, 0, false, tensor_scale);
  Scheme floor_s = s, rceil_s = s;
  floor_s.rule = ScaleRule::floor;
  rceil_s.rule = ScaleRule::rceil;
  const int lo = power_of_two_exponent(floor_s, amax) - 1, hi = power_of_two_exponent(rceil_s, amax) + 1;
  BlockScale best{};
  double best_err = INFINITY;
  for (int k = lo; k <= hi; ++k) {  // ties keep the smaller scale: finer steps for the same error
    const BlockScale bs = power_of_two_scale(s, k, tensor_scale);
    const double err = squared_error(s, values, bs);
    if (err < best_err) best_err = err, best = bs;
  }
  return best;
}

BlockScale four_over_six_scale(const Scheme& s, std::span<const float> values, float amax, float tensor_scale) {
  // The M=4 ideal is the M=6 ideal times 1.5 (fouroversix's scale_expansion_factor), so it rounds from the same
  // f32 quotient.
  const float ideal6 = tensor_scale > 0 ? amax / s.element.max() / tensor_scale : 0.0f;
  const BlockScale six = e4m3_block_scale(s, ideal6, tensor_scale);
  const BlockScale four = e4m3_block_scale(s, ideal6 * 1.5f, tensor_scale);
  if (four.code == six.code) return six;
  return squared_error(s, values, four) < squared_error(s, values, six) ? four : six;
}

}  // namespace mf::detail

namespace mf {

void validate(const QuantizedTensor& q) {
  for (const std::int64_t d : q.shape) {
    if (d < 0) throw QuantizeError("bad shape [" + join_numbers(q.shape) + "]");
  }
  detail::Geometry g;
  try {
    g = detail::geometry_of(q);
  } catch (const QuantizeError& e) {
    throw QuantizeError(std::string("inconsistent quantized tensor: ") + e.what());
  }
  if (q.rotate != 0) {
    try {
      validate_rotate(static_cast<std::size_t>(g.cols), q.rotate);
    } catch (const std::invalid_argument& e) {
      throw QuantizeError(std::string("inconsistent quantized tensor: ") + e.what());
    }
  }
  const int bits = q.scheme.element.bits();
  const auto count = static_cast<std::size_t>(g.count());
  const std::size_t want_codes = q.layout == Layout::unpacked ? count
                                 : q.layout == Layout::ggml   ? count / kGgmlBlockValues * kGgmlBlockBytes
                                                              : packed_size(count, bits);
  if (q.codes.size() != want_codes) {
    throw QuantizeError("codes hold " + std::to_string(q.codes.size()) + " bytes; shape [" + join_numbers(q.shape) +
                        "] in " + q.scheme.name + " (" + std::string(to_string(q.layout)) + ") needs " +
                        std::to_string(want_codes));
  }
  if (q.layout == Layout::ggml) return;
  // An array, not a vector: every GEMM call validates its operands, and a decode loop's calls allocate nothing.
  const std::array<std::int64_t, 2> want_shape{q.scheme.block_rows == 1 ? g.rows : g.block_rows, g.block_cols};
  const std::size_t want_scales = static_cast<std::size_t>(g.blocks()) * (*q.scheme.scale_format == f32 ? 4 : 1);
  const bool shape_ok = std::equal(q.scale_shape.begin(), q.scale_shape.end(), want_shape.begin(), want_shape.end());
  if (!shape_ok || q.scales.size() != want_scales) {
    throw QuantizeError("scales of shape [" + join_numbers(q.scale_shape) + "] (" + std::to_string(q.scales.size()) +
                        " bytes); shape [" + join_numbers(q.shape) + "] in " + q.scheme.name + " needs [" +
                        join_numbers(want_shape) + "] (" + std::to_string(want_scales) + " bytes)");
  }
}

}  // namespace mf

namespace mf::detail {

void throw_nonfinite(const QuantizedTensor& q, std::int64_t i, float value, const std::string& tensor) {
  const Geometry g = geometry_of(q);
  throw QuantizeError("tensor '" + tensor + "': " + (std::isnan(value) ? "NaN" : "Inf") + " at index " +
                      std::to_string(i) + " (row " + std::to_string(i / std::max<std::int64_t>(g.cols, 1)) +
                      ", column " + std::to_string(i % std::max<std::int64_t>(g.cols, 1)) + ") and nonfinite = error");
}

void store_codes(QuantizedTensor& q, std::span<const std::uint8_t> codes) {
  if (q.layout == Layout::unpacked) {
    q.codes.assign(codes.begin(), codes.end());
    return;
  }
  q.codes.assign(packed_size(codes.size(), q.scheme.element.bits()), 0);
  pack_codes(codes, q.scheme.element.bits(), q.codes);
}

void store_scales(QuantizedTensor& q, std::span<const std::uint32_t> scale_codes) {
  const bool f32_scale = *q.scheme.scale_format == f32;
  // Into q's own buffer (a reused tensor keeps its capacity: no allocation per call), except for ggml's blocks.
  std::vector<std::uint8_t> ggml_scales;
  std::vector<std::uint8_t>& scales = q.layout == Layout::ggml ? ggml_scales : q.scales;
  scales.resize(scale_codes.size() * (f32_scale ? 4 : 1));
  for (std::size_t i = 0; i < scale_codes.size(); ++i) {
    if (f32_scale) {
      for (int b = 0; b < 4; ++b) scales[4 * i + b] = static_cast<std::uint8_t>(scale_codes[i] >> (8 * b));
    } else {
      scales[i] = static_cast<std::uint8_t>(scale_codes[i]);
    }
  }
  if (q.layout != Layout::ggml) return;
  std::vector<std::uint8_t> blocks(scales.size() * kGgmlBlockBytes);  // q.codes holds the packed OCP codes
  ocp_to_ggml_mxfp4(q.codes, scales, blocks);
  q.codes = std::move(blocks);
  q.scales.clear();
}

void load_codes(const QuantizedTensor& q, std::span<std::uint8_t> codes) {
  const int bits = q.scheme.element.bits();
  if (q.layout == Layout::unpacked) {
    std::copy(q.codes.begin(), q.codes.begin() + static_cast<std::ptrdiff_t>(codes.size()), codes.begin());
  } else if (q.layout == Layout::ggml) {
    const std::size_t blocks = q.codes.size() / kGgmlBlockBytes;
    std::vector<std::uint8_t> packed(blocks * 16), scales(blocks);
    ggml_to_ocp_mxfp4(q.codes, packed, scales);
    unpack_codes(packed, bits, codes);
  } else {
    unpack_codes(q.codes, bits, codes);
  }
}

void divisor_table(const Scheme& s, float tensor_scale, std::array<float, 256>& out) {
  if (*s.scale_format == ue8m0 && !s.tensor_scale) {
    static const std::array<float, 256> plain = [&] {
      std::array<float, 256> t{};
      for (std::uint32_t c = 0; c < 256; ++c) t[c] = scale_divisor(s, c, 1.0f);
      return t;
    }();
    out = plain;
    return;
  }
  for (std::uint32_t c = 0; c < 256; ++c) out[c] = scale_divisor(s, c, tensor_scale);
}

RowDivisors::RowDivisors(const QuantizedTensor& q)
    : q_(q), g_(geometry_of(q)), by_table_(q.layout != Layout::ggml && !(*q.scheme.scale_format == f32)) {
  if (by_table_) divisor_table(q.scheme, q.tensor_scale, table_);
}

void RowDivisors::operator()(std::int64_t block_row, float* out) const {
  const std::int64_t first = block_row * g_.block_cols;
  for (std::int64_t j = 0; j < g_.block_cols; ++j) {
    out[j] = by_table_ ? table_[q_.scales[static_cast<std::size_t>(first + j)]]
                       : scale_divisor(q_.scheme, q_.scale_code(block_row, j), q_.tensor_scale);
  }
}

void load_divisors(const QuantizedTensor& q, std::vector<float>& out) {
  const Geometry g = geometry_of(q);
  out.resize(static_cast<std::size_t>(g.blocks()));
  const RowDivisors row(q);
  for (std::int64_t i = 0; i < g.block_rows; ++i) row(i, out.data() + i * g.block_cols);
}

std::vector<float> load_divisors(const QuantizedTensor& q) {
  std::vector<float> d;
  load_divisors(q, d);
  return d;
}

}  // namespace mf::detail
