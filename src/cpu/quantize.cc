// The fast path of block quantization: threads over groups of block rows, SIMD row kernels (quantize-inl.h)
// dispatched to the best target of this CPU. Scale rules that need a whole block at once in scalar (mse) and the
// ggml profile's search-based rounding run the reference.
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "../blocks/blocking.h"
#include "minifloat/hadamard.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"
#include "quantize_fast.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quantize-inl.h"

#if HWY_ONCE
namespace mf::cpu {

HWY_EXPORT(BlockMaxAbsBits);
HWY_EXPORT(EncodeRow);
HWY_EXPORT(DecodeRow);
HWY_EXPORT(FiniteAmax);
HWY_EXPORT(WidenBf16);
HWY_EXPORT(WidenF16);

ElementCodec element_codec(const Scheme& s) {
  ElementCodec ec{&s, s.element.is_int(), s.element.bits(), 0, 0, 0, Specials::finite, s.element.max()};
  if (!ec.is_int) {
    ec.exponent_bits = s.element.format->exponent_bits;
    ec.mantissa_bits = s.element.format->mantissa_bits;
    ec.bias = s.element.format->bias;
    ec.specials = s.element.format->specials;
  }
  return ec;
}

float finite_amax(const float* x, std::int64_t n, int threads) {
  std::uint32_t m = 0;
#pragma omp parallel for num_threads(threads) reduction(max : m) schedule(static)
  for (std::int64_t i = 0; i < n; i += (1 << 16)) {
    m = std::max(m, std::bit_cast<std::uint32_t>(HWY_DYNAMIC_DISPATCH(FiniteAmax)(x + i, std::min<std::int64_t>(n - i, 1 << 16))));
  }
  return std::bit_cast<float>(m);
}

void widen(const std::uint16_t* in, InputType type, std::int64_t n, float* out, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; i += (1 << 16)) {
    const std::int64_t len = std::min<std::int64_t>(n - i, 1 << 16);
    if (type == InputType::bf16) HWY_DYNAMIC_DISPATCH(WidenBf16)(in + i, len, out + i);
    else HWY_DYNAMIC_DISPATCH(WidenF16)(in + i, len, out + i);
  }
}

namespace {

int thread_count(int requested) { return requested > 0 ? requested : omp_get_max_threads(); }

// The first non-finite value in the reference's scan order (blocks row-major, rows then columns inside a block).
std::int64_t first_nonfinite(const float* x, const detail::Geometry& g) {
  for (std::int64_t bi = 0; bi < g.block_rows; ++bi)
    for (std::int64_t bj = 0; bj < g.block_cols; ++bj)
      for (std::int64_t r = bi * g.br; r < std::min(g.rows, (bi + 1) * g.br); ++r)
        for (std::int64_t c = bj * g.bc; c < std::min(g.cols, (bj + 1) * g.bc); ++c)
          if (!std::isfinite(x[r * g.cols + c])) return r * g.cols + c;
  return -1;
}

// Where each group of block rows writes: packed codes straight into the output when rows start on whole bytes.
struct Sink {
  QuantizedTensor* q = nullptr;   // quantize: codes and scales
  std::vector<std::uint8_t>* all_codes = nullptr;  // quantize, when rows cannot be packed on their own
  std::vector<std::uint32_t>* scale_codes = nullptr;
  float* fake = nullptr;          // fake_quantize: dequantized values
};

void quantize_group(const float* x, const detail::Geometry& g, const Scheme& s, const ElementCodec& ec, float ts,
                    std::int64_t bi, const Sink& sink, std::vector<std::uint8_t>& row_codes) {
  const std::int64_t r0 = bi * g.br, r1 = std::min(r0 + g.br, g.rows);
  std::vector<std::uint32_t> max_bits(static_cast<std::size_t>(g.block_cols), 0);
  for (std::int64_t r = r0; r < r1; ++r) HWY_DYNAMIC_DISPATCH(BlockMaxAbsBits)(x + r * g.cols, g.cols, g.bc, max_bits.data());
  std::vector<float> divisors(static_cast<std::size_t>(g.block_cols));
  for (std::int64_t bj = 0; bj < g.block_cols; ++bj) {
    const bool nonfinite = max_bits[bj] >= 0x7F800000u;
    const BlockScale bs = block_scale(s, nonfinite ? 0.0f : std::bit_cast<float>(max_bits[bj]), nonfinite, ts);
    divisors[bj] = bs.divisor;
    if (sink.scale_codes) (*sink.scale_codes)[bi * g.block_cols + bj] = bs.code;
  }
  const int bits = ec.bits;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * g.cols;
    std::uint8_t* codes = sink.all_codes ? sink.all_codes->data() + r * g.cols : row_codes.data();
    HWY_DYNAMIC_DISPATCH(EncodeRow)(xr, g.cols, g.bc, divisors.data(), ec, codes);
    if (sink.fake) {
      HWY_DYNAMIC_DISPATCH(DecodeRow)(codes, g.cols, g.bc, divisors.data(), ec, sink.fake + r * g.cols);
    } else if (!sink.all_codes) {
      const std::size_t row_bytes = packed_size(static_cast<std::size_t>(g.cols), bits);
      const std::span<const std::uint8_t> in(codes, static_cast<std::size_t>(g.cols));
      std::uint8_t* out = sink.q->codes.data() + static_cast<std::size_t>(r) * row_bytes;
      if (sink.q->layout == Layout::unpacked) std::memcpy(out, codes, static_cast<std::size_t>(g.cols));
      else pack_codes(in, bits, std::span<std::uint8_t>(out, row_bytes));
    }
  }
}

bool needs_reference(const Scheme& s) { return s.rule == ScaleRule::mse || s.profile == Profile::ggml; }

}  // namespace

// The fast path behind mf::quantize / mf::fake_quantize (x already rotated if asked).
QuantizedTensor quantize_fast(const float* x, std::span<const std::int64_t> shape, const Scheme& s,
                              const QuantizeOptions& o, float* fake_out) {
  const detail::Geometry g = detail::blocking(shape, s, o);
  QuantizeOptions plain = o;
  plain.rotate = 0;
  if (needs_reference(s)) {
    QuantizedTensor q = ref::quantize(x, shape, s, plain);
    if (fake_out) ref::dequantize(q, fake_out);
    q.rotate = o.rotate;
    return q;
  }
  const int threads = thread_count(o.threads);
  QuantizedTensor q = detail::empty_result(shape, s, o, g);
  if (o.nonfinite == NonFinite::error) {
    const std::int64_t bad = first_nonfinite(x, g);
    if (bad >= 0) detail::throw_nonfinite(q, bad, x[bad], o.tensor_name);
  }
  q.tensor_scale = s.tensor_scale ? tensor_scale_for(s, finite_amax(x, g.count(), threads)) : 1.0f;
  const ElementCodec ec = element_codec(s);
  const int bits = ec.bits;
  const bool rows_pack_alone = o.layout == Layout::unpacked || bits == 8 || (bits == 4 && g.cols % 2 == 0) ||
                               (bits == 6 && g.cols % 4 == 0);
  std::vector<std::uint32_t> scale_codes(static_cast<std::size_t>(g.blocks()));
  std::vector<std::uint8_t> all_codes;
  Sink sink;
  sink.scale_codes = &scale_codes;
  sink.fake = fake_out;
  if (!fake_out) {
    if (rows_pack_alone && o.layout != Layout::ggml) {
      sink.q = &q;
      q.codes.assign(o.layout == Layout::unpacked
                         ? static_cast<std::size_t>(g.count())
                         : static_cast<std::size_t>(g.rows) * packed_size(static_cast<std::size_t>(g.cols), bits),
                     0);
    } else {
      all_codes.resize(static_cast<std::size_t>(g.count()));
      sink.all_codes = &all_codes;
    }
  }
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::uint8_t> row_codes(static_cast<std::size_t>(g.cols));
#pragma omp for schedule(static)
    for (std::int64_t bi = 0; bi < g.block_rows; ++bi) quantize_group(x, g, s, ec, q.tensor_scale, bi, sink, row_codes);
  }
  if (fake_out) return q;
  if (sink.all_codes) detail::store_codes(q, all_codes);
  detail::store_scales(q, scale_codes);
  return q;
}

void dequantize_fast(const QuantizedTensor& q, float* out, int threads) {
  const detail::Geometry g = detail::geometry_of(q);
  const std::vector<float> divisors = detail::load_divisors(q);
  const ElementCodec ec = element_codec(q.scheme);
  const int bits = ec.bits;
  const bool rows_alone = q.layout == Layout::unpacked || (bits == 8) || (bits == 4 && g.cols % 2 == 0) ||
                          (bits == 6 && g.cols % 4 == 0);
  std::vector<std::uint8_t> all_codes;
  if (!rows_alone || q.layout == Layout::ggml) {
    all_codes.resize(static_cast<std::size_t>(g.count()));
    detail::load_codes(q, all_codes);
  }
  const std::size_t row_bytes = packed_size(static_cast<std::size_t>(g.cols), bits);
#pragma omp parallel num_threads(thread_count(threads))
  {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(g.cols));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < g.rows; ++r) {
      const std::uint8_t* codes = row.data();
      if (!all_codes.empty()) {
        codes = all_codes.data() + r * g.cols;
      } else if (q.layout == Layout::unpacked) {
        codes = q.codes.data() + r * g.cols;
      } else {
        unpack_codes(std::span<const std::uint8_t>(q.codes.data() + r * row_bytes, row_bytes), bits, row);
      }
      HWY_DYNAMIC_DISPATCH(DecodeRow)(codes, g.cols, g.bc, divisors.data() + (r / g.br) * g.block_cols, ec,
                                      out + r * g.cols);
    }
  }
}

}  // namespace mf::cpu
#endif  // HWY_ONCE
