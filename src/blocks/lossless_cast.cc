// Lossless casts between block schemes (minifloat/lossless_cast.h): codes carried over, block scales re-expressed,
// exactness decided per block from the scale exponents and codes; the blocks that cannot be carried are requantized
// (or, MXFP4 -> FP8, rounded as DeepSeek's cast rounds them) and counted.
#include "minifloat/lossless_cast.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <sstream>
#include <vector>

#include "blocking.h"
#include "minifloat/codec.h"
#include "minifloat/scale.h"

namespace mf {
namespace {

template <typename... A>
std::string cat(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}

constexpr EncodeOptions kRne{Rounding::nearest_even, Overflow::saturate, 0};

enum class Kind { none, mxfp4_to_nvfp4, mxfp4_to_fp8, fp8_to_mx };

bool plain_mx(const Scheme& s, const Format& element) {
  return !s.element.is_int() && *s.element.format == element && s.block_rows == 1 && s.block_cols == 32 &&
         *s.scale_format == ue8m0 && !s.tensor_scale;
}

Kind kind_of(const Scheme& from, const Scheme& to) {
  if (plain_mx(from, e2m1) && !to.element.is_int() && *to.element.format == e2m1 && to.block_rows == 1 &&
      to.block_cols == 16 && *to.scale_format == ue4m3 && to.tensor_scale) {
    return Kind::mxfp4_to_nvfp4;
  }
  const bool to_tiles = !to.element.is_int() && *to.element.format == e4m3 && to.block_cols % 32 == 0 &&
                        (*to.scale_format == ue8m0 || *to.scale_format == f32) && !to.tensor_scale;
  if (plain_mx(from, e2m1) && to_tiles) return Kind::mxfp4_to_fp8;
  const bool from_tiles = !from.element.is_int() && from.element.bits() == 8 &&
                          (*from.scale_format == ue8m0 || *from.scale_format == f32) && !from.tensor_scale;
  if (from_tiles && !to.element.is_int() && to.element.format == from.element.format && to.block_rows == 1 &&
      from.block_cols % to.block_cols == 0 && *to.scale_format == ue8m0 && !to.tensor_scale) {
    return Kind::fp8_to_mx;
  }
  return Kind::none;
}

// The input's codes (one per byte) and geometry, the output's geometry and buffers, and the report.
struct Cast {
  Cast(const QuantizedTensor& in, const Scheme& to, const std::string& name) : in_(in), to_(to), name_(name) {
    gi_ = detail::geometry_of(in);
    codes_.resize(static_cast<std::size_t>(gi_.count()));
    detail::load_codes(in, codes_);
    QuantizeOptions o;
    o.pad = true;
    o.tensor_name = name;
    go_ = detail::blocking(in.shape, to, o);
    detail::init_result(out_.q, in.shape, to, o, go_);
    out_codes_.assign(codes_.size(), 0);
    out_scales_.assign(static_cast<std::size_t>(go_.blocks()), 0);
    out_.report.blocks = go_.blocks();
  }

  // The input's block exponent k of block (i, j) (scale 2^k); throws on a NaN scale.
  int mx_exponent(std::int64_t i, std::int64_t j) const {
    const std::uint32_t c = in_.scale_code(i, j);
    if (c == 0xFF) nan_scale(i, j);
    return static_cast<int>(c) - 127;
  }
  [[noreturn]] void nan_scale(std::int64_t i, std::int64_t j) const {
    throw QuantizeError(
        cat("tensor '", name_, "': block (", i, ", ", j, ") has the NaN scale: it holds no values to cast"));
  }

  // The value of input element (r, c) as dequantize() gives it.
  float value(std::int64_t r, std::int64_t c) const {
    const std::uint32_t s = in_.scale_code(r / gi_.br, c / gi_.bc);
    return element_value(in_.scheme.element, code(r, c)) * scale_divisor(in_.scheme, s, in_.tensor_scale);
  }
  std::uint8_t code(std::int64_t r, std::int64_t c) const { return codes_[static_cast<std::size_t>(r * gi_.cols + c)]; }
  void set_code(std::int64_t r, std::int64_t c, std::uint32_t v) {
    out_codes_[static_cast<std::size_t>(r * gi_.cols + c)] = static_cast<std::uint8_t>(v);
  }
  void set_scale(std::int64_t i, std::int64_t j, std::uint32_t code) {
    out_scales_[static_cast<std::size_t>(i * go_.block_cols + j)] = code;
  }

  // Output block (i, j) requantized from the input's values by the target's own rule; inexact unless every value
  // comes back bit for bit.
  void requantize_block(std::int64_t i, std::int64_t j, const std::string& why) {
    std::vector<float> x;
    bool nonfinite = false;
    float amax = 0;
    each(i, j, [&](std::int64_t r, std::int64_t c) {
      x.push_back(value(r, c));
      nonfinite = nonfinite || !std::isfinite(x.back());
      if (std::isfinite(x.back())) amax = std::max(amax, std::fabs(x.back()));
    });
    const float ts = out_.q.tensor_scale;
    const BlockScale bs = to_.rule == ScaleRule::mse && !nonfinite && amax > 0 ? detail::mse_scale(to_, x, amax, ts)
                                                                               : block_scale(to_, amax, nonfinite, ts);
    set_scale(i, j, bs.code);
    const float d = scale_divisor(to_, bs.code, ts);
    std::size_t k = 0;
    bool exact = true;
    each(i, j, [&](std::int64_t r, std::int64_t c) {
      const std::uint32_t e = element_code(to_, x[k], bs);
      set_code(r, c, e);
      exact = compare(x[k++], element_value(to_.element, e) * d) && exact;
    });
    if (!exact) inexact(i, j, why);
  }

  // Records one output value y for input value x; false when they differ.
  bool compare(float x, float y) {
    if (std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y) || (std::isnan(x) && std::isnan(y))) {
      return true;
    }
    const double err = std::fabs(static_cast<double>(y) - static_cast<double>(x));
    out_.report.max_abs_error = std::max(out_.report.max_abs_error, std::isnan(err) ? INFINITY : err);
    if (x != 0) out_.report.max_rel_error = std::max(out_.report.max_rel_error, err / std::fabs(x));
    return false;
  }

  void inexact(std::int64_t i, std::int64_t j, const std::string& why) {
    ++out_.report.inexact_blocks;
    const std::int64_t index = i * go_.block_cols + j;
    if (out_.report.first_inexact < 0 || index < out_.report.first_inexact) {
      out_.report.first_inexact = index;
      out_.report.why = cat("block (", i, ", ", j, ") of the output's scale grid: ", why);
    }
  }

  // f(r, c) over the elements of output block (i, j).
  template <typename F>
  void each(std::int64_t i, std::int64_t j, F&& f) const {
    for (std::int64_t r = i * go_.br; r < std::min(go_.rows, (i + 1) * go_.br); ++r) {
      for (std::int64_t c = j * go_.bc; c < std::min(go_.cols, (j + 1) * go_.bc); ++c) f(r, c);
    }
  }

  CastResult finish() {
    detail::store_codes(out_.q, out_codes_);
    detail::store_scales(out_.q, out_scales_);
    return std::move(out_);
  }

  const QuantizedTensor& in_;
  const Scheme& to_;
  const std::string& name_;
  detail::Geometry gi_, go_;
  std::vector<std::uint8_t> codes_, out_codes_;
  std::vector<std::uint32_t> out_scales_;
  CastResult out_;
};

// MXFP4 -> NVFP4: g = kmax - 8 puts the largest nonzero block's scale at E4M3's largest power of two, 2^8; every
// block down to 2^(kmax-17) (E4M3's smallest subnormal, 2^-9) keeps its codes.
void mxfp4_to_nvfp4(Cast& c) {
  int kmax = INT_MIN;
  for (std::int64_t i = 0; i < c.gi_.block_rows; ++i) {
    for (std::int64_t j = 0; j < c.gi_.block_cols; ++j) {
      const int k = c.mx_exponent(i, j);
      bool nonzero = false;
      for (std::int64_t col = j * 32; col < std::min(c.gi_.cols, (j + 1) * 32); ++col) {
        nonzero = nonzero || (c.code(i, col) & 0x7) != 0;
      }
      if (nonzero) kmax = std::max(kmax, k);
    }
  }
  const int g = kmax == INT_MIN ? 0 : kmax - 8;
  c.out_.q.tensor_scale = exp2_exact(g);  // 2^-135 at the least: an exact f32 subnormal
  for (std::int64_t i = 0; i < c.go_.block_rows; ++i) {
    for (std::int64_t j = 0; j < c.go_.block_cols; ++j) {
      const int k = c.mx_exponent(i, j * 16 / 32);
      bool nonzero = false;
      c.each(i, j, [&](std::int64_t r, std::int64_t col) { nonzero = nonzero || (c.code(r, col) & 0x7) != 0; });
      if (nonzero && (k - g < -9 || k - g > 8)) {
        c.requantize_block(i, j,
                           cat("its MXFP4 scale 2^", k,
                               " is not an E4M3 block scale (2^-9..2^8) times the tensor "
                               "scale 2^",
                               g, " that the largest nonzero block's scale 2^", kmax,
                               " sets: the tensor's block scales span more than 2^17"));
        continue;
      }
      c.set_scale(i, j, encode(ue4m3, exp2_exact(std::clamp(k - g, -9, 8)), kRne));
      c.each(i, j, [&](std::int64_t r, std::int64_t col) { c.set_code(r, col, c.code(r, col)); });
    }
  }
}

// MXFP4 -> FP8 tiles, as DeepSeek's cast_e2m1fn_to_e4m3fn: s = kmax - 6 over the tile's block scales, codes
// RNE(v x 2^(k - s)) in E4M3 (exact in double before the one rounding).
void mxfp4_to_fp8(Cast& c) {
  const Format& sf = *c.to_.scale_format;
  for (std::int64_t i = 0; i < c.go_.block_rows; ++i) {
    for (std::int64_t j = 0; j < c.go_.block_cols; ++j) {
      int kmax = INT_MIN;
      c.each(i, j, [&](std::int64_t r, std::int64_t col) {
        if (col % 32 == 0 || col == j * c.go_.bc) kmax = std::max(kmax, c.mx_exponent(r, col / 32));
      });
      const int s = std::clamp(kmax - 6, scale_exponent_min(sf), scale_exponent_max(sf));
      c.set_scale(i, j,
                  sf == ue8m0 ? static_cast<std::uint32_t>(s + 127) : std::bit_cast<std::uint32_t>(exp2_exact(s)));
      bool exact = true;
      std::string why;
      c.each(i, j, [&](std::int64_t r, std::int64_t col) {
        const int k = c.mx_exponent(r, col / 32);
        const float v = element_value(c.in_.scheme.element, c.code(r, col));
        const double want = std::ldexp(static_cast<double>(v), k - s);
        const std::uint32_t e = encode(e4m3, want, kRne);
        c.set_code(r, col, e);
        const float x = c.value(r, col);
        const float y = static_cast<float>(static_cast<double>(decode(e4m3, e)) * std::ldexp(1.0, s));
        if (!c.compare(x, y) && exact) {
          exact = false;
          why = cat("element (", r, ", ", col, ") = ", v, " x 2^", k, " is no E4M3 value times the tile's scale 2^", s,
                    " (the tile's largest block scale 2^", kmax,
                    " over 2^6): the tile's block scales span more than "
                    "2^14");
        }
      });
      if (!exact) c.inexact(i, j, why);
    }
  }
}

// FP8 tiles -> MX: each 1xB block takes its tile's scale, an E8M0 code when that scale is a power of two.
void fp8_to_mx(Cast& c) {
  const bool f32_scales = *c.in_.scheme.scale_format == f32;
  for (std::int64_t i = 0; i < c.go_.block_rows; ++i) {
    for (std::int64_t j = 0; j < c.go_.block_cols; ++j) {
      const std::int64_t ti = i / c.gi_.br, tj = j * c.go_.bc / c.gi_.bc;
      const std::uint32_t code = c.in_.scale_code(ti, tj);
      std::uint32_t e8 = code;
      if (f32_scales) {
        const float S = std::bit_cast<float>(code);
        if (std::isnan(S)) c.nan_scale(ti, tj);
        int e = 0;
        const float m = S > 0 && std::isfinite(S) ? std::frexp(S, &e) : 0;  // S = m x 2^e, m in [0.5, 1)
        if (m != 0.5f || e - 1 < -127 || e - 1 > 127) {
          c.requantize_block(i, j,
                             cat("its tile's F32 scale ", S,
                                 " is no power of two 2^-127..2^127, all an E8M0 "
                                 "scale holds"));
          continue;
        }
        e8 = static_cast<std::uint32_t>(e - 1 + 127);
      } else if (code == 0xFF) {
        c.nan_scale(ti, tj);
      }
      c.set_scale(i, j, e8);
      c.each(i, j, [&](std::int64_t r, std::int64_t col) { c.set_code(r, col, c.code(r, col)); });
    }
  }
}

}  // namespace

std::string lossless_cast_refusal(const Scheme& from, const Scheme& to) {
  if (kind_of(from, to) != Kind::none) return "";
  return cat("no lossless cast from ", from.name, " to ", to.name,
             ": minifloat casts MXFP4 (e2m1 1x32 ue8m0) to NVFP4 (e2m1 1x16 e4m3 with a tensor scale) and to E4M3 "
             "tiles whose width is a multiple of 32 (fp8-128x128, fp8-32x32, mxfp8; ue8m0 or f32 scales), and FP8 "
             "tiles with ue8m0 or f32 scales to 1xB ue8m0 blocks of the same element that divide the tile's width "
             "(fp8-128x128 -> mxfp8)");
}

CastResult lossless_cast(const QuantizedTensor& in, const Scheme& to, const std::string& tensor_name) {
  const Kind kind = kind_of(in.scheme, to);
  if (kind == Kind::none)
    throw QuantizeError(cat("tensor '", tensor_name, "': ", lossless_cast_refusal(in.scheme, to)));
  if (in.layout == Layout::ggml || in.rotate != 0) {
    throw QuantizeError(
        cat("tensor '", tensor_name, "': lossless casts take the packed or unpacked layout, unrotated"));
  }
  validate(in);
  Cast c(in, to, tensor_name);
  if (kind == Kind::mxfp4_to_nvfp4) mxfp4_to_nvfp4(c);
  if (kind == Kind::mxfp4_to_fp8) mxfp4_to_fp8(c);
  if (kind == Kind::fp8_to_mx) fp8_to_mx(c);
  return c.finish();
}

}  // namespace mf
