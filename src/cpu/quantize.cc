// The fast path of block quantization: threads over groups of block rows, SIMD row kernels (quantize-inl.h)
// dispatched to the best target of this CPU. Scale rules that need a whole block at once in scalar (mse) and the
// ggml profile's search-based rounding run the reference.
#include <omp.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "../blocks/blocking.h"
#include "minifloat/hadamard.h"
#include "minifloat/pack.h"
#include "minifloat/quantize.h"
#include "quantize_dispatch.h"
#include "thread_count.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "../src/cpu/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quantize-inl.h"

#if HWY_ONCE
namespace mf::cpu {

HWY_EXPORT(BlockMaxAbsBits);
HWY_EXPORT(EncodeRow);
HWY_EXPORT(QuantizeRow);
HWY_EXPORT(DecodeRow);
HWY_EXPORT(FiniteAmax);
HWY_EXPORT(WidenBf16);
HWY_EXPORT(WidenF16);
HWY_EXPORT(StreamCopy);
HWY_EXPORT(FlushStreams);

// The element codec of a scheme's float elements: round to nearest even, saturate (element_code()). Built once for
// the element formats of format.h (signed, 8 bits at most: a scheme names one of those), so that a call on one token
// does not redo it.
static ElementCodec saturating_codec(const Format& f) {
  constexpr EncodeOptions kSaturate{Rounding::nearest_even, Overflow::saturate, 0};
  const auto element = [](const Format& e) { return e.is_signed() && e.bits() <= 8; };
  static const auto known = [&] {
    std::array<ElementCodec, all_formats.size()> codecs{};
    for (std::size_t i = 0; i < all_formats.size(); ++i) {
      if (element(*all_formats[i])) codecs[i] = element_codec(*all_formats[i], kSaturate);
    }
    return codecs;
  }();
  for (std::size_t i = 0; i < all_formats.size(); ++i) {
    if (all_formats[i] == &f && element(f)) return known[i];
  }
  return element_codec(f, kSaturate);
}

QuantizeElement quantize_element(const Scheme& s) {
  QuantizeElement ec{&s, s.element.is_int(), s.element.bits(), s.element.max(), {}};
  if (!ec.is_int) ec.codec = saturating_codec(*s.element.format);
  return ec;
}

float tensor_amax(const float* x, std::int64_t n, int threads) {
  std::uint32_t m = 0;
#pragma omp parallel for num_threads(thread_count(threads)) reduction(max : m) schedule(static)
  for (std::int64_t i = 0; i < n; i += (1 << 16)) {
    const std::int64_t len = std::min<std::int64_t>(n - i, 1 << 16);
    m = std::max(m, std::bit_cast<std::uint32_t>(HWY_DYNAMIC_DISPATCH(FiniteAmax)(x + i, len)));
  }
  return std::bit_cast<float>(m);
}

void widen(const std::uint16_t* in, InputType type, std::int64_t n, float* out, int threads) {
#pragma omp parallel for num_threads(thread_count(threads)) schedule(static)
  for (std::int64_t i = 0; i < n; i += (1 << 16)) {
    const std::int64_t len = std::min<std::int64_t>(n - i, 1 << 16);
    if (type == InputType::bf16)
      HWY_DYNAMIC_DISPATCH(WidenBf16)(in + i, len, out + i);
    else
      HWY_DYNAMIC_DISPATCH(WidenF16)(in + i, len, out + i);
  }
}

namespace {

// max |x| over the finite values of bf16/f16 input, widened a slice at a time into a per-thread buffer (L2-sized),
// so that a two-level scheme's first pass does not widen the whole tensor into memory.
float tensor_amax_narrow(const std::uint16_t* x, InputType type, std::int64_t n, int threads) {
  constexpr std::int64_t kSlice = 1 << 14;
  std::uint32_t m = 0;
#pragma omp parallel num_threads(thread_count(threads))
  {
    std::vector<float> wide(kSlice);
#pragma omp for reduction(max : m) schedule(static)
    for (std::int64_t i = 0; i < n; i += kSlice) {
      const std::int64_t len = std::min(n - i, kSlice);
      if (type == InputType::bf16)
        HWY_DYNAMIC_DISPATCH(WidenBf16)(x + i, len, wide.data());
      else
        HWY_DYNAMIC_DISPATCH(WidenF16)(x + i, len, wide.data());
      m = std::max(m, std::bit_cast<std::uint32_t>(HWY_DYNAMIC_DISPATCH(FiniteAmax)(wide.data(), len)));
    }
  }
  return std::bit_cast<float>(m);
}

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
  QuantizedTensor* q = nullptr;                    // quantize: codes and scales
  std::vector<std::uint8_t>* all_codes = nullptr;  // quantize, when rows cannot be packed on their own
  std::vector<std::uint32_t>* scale_codes = nullptr;
  float* fake = nullptr;  // fake_quantize: dequantized values
};

// The input: f32, or bf16/f16 bits widened one group of block rows at a time into a per-thread buffer.
struct Source {
  const float* f32 = nullptr;
  const std::uint16_t* narrow = nullptr;
  InputType type = InputType::f32;
};

// Rows r0 .. r1 of the source as f32 (pointing at row r0).
const float* group_rows(const Source& src, const detail::Geometry& g, std::int64_t r0, std::int64_t r1,
                        std::vector<float>& wide) {
  if (src.type == InputType::f32) return src.f32 + r0 * g.cols;
  wide.resize(static_cast<std::size_t>((r1 - r0) * g.cols));
  const std::uint16_t* in = src.narrow + r0 * g.cols;
  if (src.type == InputType::bf16)
    HWY_DYNAMIC_DISPATCH(WidenBf16)(in, (r1 - r0) * g.cols, wide.data());
  else
    HWY_DYNAMIC_DISPATCH(WidenF16)(in, (r1 - r0) * g.cols, wide.data());
  return wide.data();
}

// A row's codes (one per byte) go on: decoded into the fake-quantize output, or packed into q's codes when rows
// pack on their own (otherwise they were written straight into the whole-tensor buffer).
void emit_row(const detail::Geometry& g, const QuantizeElement& ec, const Sink& sink, std::int64_t r,
              const std::uint8_t* codes, const float* divisors) {
  if (sink.fake) {
    HWY_DYNAMIC_DISPATCH(DecodeRow)(codes, false, g.cols, g.bc, divisors, ec, sink.fake + r * g.cols, false);
  } else if (!sink.all_codes) {
    const bool unpacked = sink.q->layout == Layout::unpacked;
    const std::size_t row_bytes =
        unpacked ? static_cast<std::size_t>(g.cols) : packed_size(static_cast<std::size_t>(g.cols), ec.bits);
    std::uint8_t* out = sink.q->codes.data() + static_cast<std::size_t>(r) * row_bytes;
    if (unpacked) {
      std::memcpy(out, codes, row_bytes);
    } else {
      pack_codes(std::span<const std::uint8_t>(codes, static_cast<std::size_t>(g.cols)), ec.bits,
                 std::span<std::uint8_t>(out, row_bytes));
    }
  }
}

void quantize_group(const Source& src, const detail::Geometry& g, const Scheme& s, const QuantizeElement& ec, float ts,
                    std::int64_t bi, const Sink& sink, std::vector<std::uint8_t>& row_codes, std::vector<float>& wide,
                    std::vector<float>& divisors) {
  const std::int64_t r0 = bi * g.br, r1 = std::min(r0 + g.br, g.rows);
  const float* x = group_rows(src, g, r0, r1, wide);  // row r is x + (r - r0) * cols
  divisors.resize(static_cast<std::size_t>(g.block_cols));
  if (g.br == 1) {  // 1 x B blocks: amax, scale and codes of each block in one pass over the row
    std::uint32_t* scales = sink.scale_codes->data() + bi * g.block_cols;
    // Bytes and e2m1/int4 nibble pairs go straight into the output; 6-bit and odd rows through a row of bytes.
    if (sink.q && (sink.q->layout == Layout::unpacked || ec.bits == 8 || (ec.bits == 4 && g.bc % 2 == 0))) {
      const bool nibbles = sink.q->layout != Layout::unpacked && ec.bits == 4;
      std::uint8_t* out = sink.q->codes.data() + (nibbles ? r0 * g.cols / 2 : r0 * g.cols);
      return HWY_DYNAMIC_DISPATCH(QuantizeRow)(x, g.cols, g.bc, ts, ec, out, nibbles, scales, divisors.data());
    }
    row_codes.resize(static_cast<std::size_t>(g.cols));
    std::uint8_t* codes = sink.all_codes ? sink.all_codes->data() + r0 * g.cols : row_codes.data();
    HWY_DYNAMIC_DISPATCH(QuantizeRow)(x, g.cols, g.bc, ts, ec, codes, false, scales, divisors.data());
    return emit_row(g, ec, sink, r0, codes, divisors.data());
  }
  std::vector<std::uint32_t> max_bits(static_cast<std::size_t>(g.block_cols), 0);
  for (std::int64_t r = r0; r < r1; ++r) {
    HWY_DYNAMIC_DISPATCH(BlockMaxAbsBits)(x + (r - r0) * g.cols, g.cols, g.bc, max_bits.data());
  }
  for (std::int64_t bj = 0; bj < g.block_cols; ++bj) {
    const bool nonfinite = max_bits[bj] >= 0x7F800000u;
    const BlockScale bs = block_scale(s, nonfinite ? 0.0f : std::bit_cast<float>(max_bits[bj]), nonfinite, ts);
    divisors[bj] = bs.divisor;
    (*sink.scale_codes)[bi * g.block_cols + bj] = bs.code;
  }
  for (std::int64_t r = r0; r < r1; ++r) {
    row_codes.resize(static_cast<std::size_t>(g.cols));
    std::uint8_t* codes = sink.all_codes ? sink.all_codes->data() + r * g.cols : row_codes.data();
    HWY_DYNAMIC_DISPATCH(EncodeRow)(x + (r - r0) * g.cols, g.cols, g.bc, divisors.data(), ec, codes);
    emit_row(g, ec, sink, r, codes, divisors.data());
  }
}

// Rules that look at a block's values (mse, 4over6) run the scalar reference.
bool needs_reference(const Scheme& s) {
  return s.rule == ScaleRule::mse || s.rule == ScaleRule::four_over_six || s.profile == Profile::ggml;
}

// Whether every row's codes start on a whole byte of the layout, so that rows pack and unpack on their own.
bool rows_pack_alone(Layout layout, int bits, std::int64_t cols) {
  return layout == Layout::unpacked || bits == 8 || (bits == 4 && cols % 2 == 0) || (bits == 6 && cols % 4 == 0);
}

// The input as the groups read it: bf16/f16 widened group by group, unless the reference or the non-finite check
// needs the whole tensor as f32 first (widened into `widened`).
Source source_of(const void* input, InputType type, const detail::Geometry& g, const Scheme& s,
                 const QuantizeOptions& o, std::vector<float>& widened) {
  if (type == InputType::f32) return {static_cast<const float*>(input), nullptr, InputType::f32};
  const auto* narrow = static_cast<const std::uint16_t*>(input);
  if (!needs_reference(s) && o.nonfinite != NonFinite::error) return {nullptr, narrow, type};
  widened.resize(static_cast<std::size_t>(g.count()));
  widen(narrow, type, g.count(), widened.data(), o.threads);
  return {widened.data(), nullptr, InputType::f32};
}

// The second-level scale (1 for one-level schemes): given, or from the tensor's finite amax (given, or found in a
// pass of its own).
float tensor_scale_of(const Source& src, std::int64_t n, const Scheme& s, const QuantizeOptions& o, int threads) {
  if (!s.tensor_scale) return 1.0f;
  if (o.tensor_scale > 0) return o.tensor_scale;
  if (o.tensor_amax > 0) return tensor_scale_for(s, o.tensor_amax);
  return tensor_scale_for(
      s, src.f32 ? tensor_amax(src.f32, n, threads) : tensor_amax_narrow(src.narrow, src.type, n, threads));
}

// Where the groups write: q's codes themselves when rows pack alone (sized, not cleared: every byte is written
// below, and resize keeps a reused buffer's capacity), else `all_codes`, one code per byte, packed at the end.
Sink sink_for(QuantizedTensor& q, const detail::Geometry& g, const QuantizeOptions& o, int bits, float* fake_out,
              std::vector<std::uint32_t>& scale_codes, std::vector<std::uint8_t>& all_codes) {
  Sink sink;
  sink.scale_codes = &scale_codes;
  sink.fake = fake_out;
  if (fake_out) return sink;
  if (rows_pack_alone(o.layout, bits, g.cols) && o.layout != Layout::ggml) {
    sink.q = &q;
    q.codes.resize(o.layout == Layout::unpacked
                       ? static_cast<std::size_t>(g.count())
                       : static_cast<std::size_t>(g.rows) * packed_size(static_cast<std::size_t>(g.cols), bits));
  } else {
    all_codes.resize(static_cast<std::size_t>(g.count()));
    sink.all_codes = &all_codes;
  }
  return sink;
}

// Where row r's codes are read from: one per byte (the whole unpacked tensor, or q's own codes when unpacked or
// 8-bit), e2m1/int4 pairs where they lie (nibbles), or unpacked into `row`.
struct RowCodes {
  const std::uint8_t* codes;
  bool nibbles;
};
RowCodes row_codes(const QuantizedTensor& q, const detail::Geometry& g, int bits,
                   const std::vector<std::uint8_t>& all_codes, std::int64_t r, std::vector<std::uint8_t>& row) {
  const std::size_t row_bytes = packed_size(static_cast<std::size_t>(g.cols), bits);
  if (!all_codes.empty()) return {all_codes.data() + r * g.cols, false};
  if (q.layout == Layout::unpacked || bits == 8) return {q.codes.data() + r * g.cols, false};
  if (bits == 4 && g.bc % 2 == 0) return {q.codes.data() + r * row_bytes, true};
  unpack_codes(std::span<const std::uint8_t>(q.codes.data() + r * row_bytes, row_bytes), bits, row);
  return {row.data(), false};
}

// Outputs of this size or more are written with non-temporal stores (they would not stay in cache anyway).
constexpr std::uint64_t kStreamBytes = 16u << 20;

// How dequantize writes: an output past what the caches keep goes out by non-temporal stores (a plain store first
// reads the line it writes, so a DRAM-sized dequantize moved 1.5x the bytes and ran at a third of memcpy):
// aligned rows straight out, others through `staged`, an L1-sized buffer of whole blocks (`chunk` columns).
struct Streaming {
  bool stream, aligned_rows;
  std::int64_t chunk;
};

void dequantize_row(const RowCodes& rc, const detail::Geometry& g, const float* divisors, const QuantizeElement& ec,
                    const Streaming& w, std::vector<float>& staged, float* out) {
  if (!w.stream || w.aligned_rows) {
    return HWY_DYNAMIC_DISPATCH(DecodeRow)(rc.codes, rc.nibbles, g.cols, g.bc, divisors, ec, out, w.stream);
  }
  for (std::int64_t c0 = 0; c0 < g.cols; c0 += w.chunk) {
    const std::int64_t n = std::min(w.chunk, g.cols - c0);
    HWY_DYNAMIC_DISPATCH(DecodeRow)
    (rc.codes + (rc.nibbles ? c0 / 2 : c0), rc.nibbles, n, g.bc, divisors + c0 / g.bc, ec, staged.data(), false);
    HWY_DYNAMIC_DISPATCH(StreamCopy)(staged.data(), n, out + c0);
  }
}

}  // namespace

// Frees a kept vector that a large call grew past kKeptBytes, so that a thread keeps no tensor-sized scratch.
constexpr std::size_t kKeptBytes = std::size_t{4} << 20;
template <typename T>
void release_if_large(std::vector<T>& v) {
  if (v.capacity() * sizeof(T) > kKeptBytes) std::vector<T>().swap(v);
}

// The fast path behind mf::quantize / mf::fake_quantize (x already rotated if asked).
void quantize_blocks(const void* input, InputType type, std::span<const std::int64_t> shape, const Scheme& s,
                     const QuantizeOptions& o, float* fake_out, QuantizedTensor& q) {
  const detail::Geometry g = detail::blocking(shape, s, o);
  std::vector<float> widened;
  const Source src = source_of(input, type, g, s, o, widened);
  const float* x = src.f32;
  if (needs_reference(s)) {
    QuantizeOptions plain = o;
    plain.rotate = 0;
    q = ref::quantize(x, shape, s, plain);
    if (fake_out) ref::dequantize(q, fake_out);
    q.rotate = o.rotate;
    return;
  }
  const int threads = thread_count(o.threads);
  detail::init_result(q, shape, s, o, g);
  if (o.nonfinite == NonFinite::error) {
    const std::int64_t bad = first_nonfinite(x, g);
    if (bad >= 0) detail::throw_nonfinite(q, bad, x[bad], o.tensor_name);
  }
  q.tensor_scale = tensor_scale_of(src, g.count(), s, o, threads);
  const QuantizeElement ec = quantize_element(s);
  // The scale codes and each thread's row scratch are kept by the thread from call to call (up to kKeptBytes each):
  // act_quant runs this once per layer and token, and a decode loop is to allocate nothing once they have grown.
  thread_local std::vector<std::uint32_t> scale_codes;
  scale_codes.resize(static_cast<std::size_t>(g.blocks()));
  std::vector<std::uint8_t> all_codes;
  const Sink sink = sink_for(q, g, o, ec.bits, fake_out, scale_codes, all_codes);
  // The groups of block rows, shared out over the threads of the parallel region it runs in, if any.
  const auto groups = [&] {
    thread_local std::vector<std::uint8_t> row_codes;  // reused from row to row, sized where a row needs them
    thread_local std::vector<float> wide, divisors;
#pragma omp for schedule(static)
    for (std::int64_t bi = 0; bi < g.block_rows; ++bi) {
      quantize_group(src, g, s, ec, q.tensor_scale, bi, sink, row_codes, wide, divisors);
    }
    release_if_large(row_codes);
    release_if_large(wide);
    release_if_large(divisors);
  };
  if (threads > 1 && g.block_rows > 1) {
#pragma omp parallel num_threads(threads)
    groups();
  } else {
    groups();  // one thread or one group (a decode step's token): no parallel region to start
  }
  if (!fake_out) {
    if (sink.all_codes) detail::store_codes(q, all_codes);
    detail::store_scales(q, scale_codes);
  }
  release_if_large(scale_codes);
}

void dequantize_blocks(const QuantizedTensor& q, float* out, int threads) {
  const detail::Geometry g = detail::geometry_of(q);
  const detail::RowDivisors divisors_of(q);  // per block row: no tensor-sized array of divisors
  const QuantizeElement ec = quantize_element(q.scheme);
  std::vector<std::uint8_t> all_codes;
  if (!rows_pack_alone(q.layout, ec.bits, g.cols) || q.layout == Layout::ggml) {
    all_codes.resize(static_cast<std::size_t>(g.count()));
    detail::load_codes(q, all_codes);
  }
  const Streaming w{static_cast<std::uint64_t>(g.count()) * sizeof(float) >= kStreamBytes,
                    reinterpret_cast<std::uintptr_t>(out) % 64 == 0 && g.cols % 16 == 0 && g.bc % 16 == 0,
                    std::max<std::int64_t>(1, 4096 / g.bc) * g.bc};  // whole blocks, about 16 KiB
#pragma omp parallel num_threads(thread_count(threads))
  {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(g.cols));
    std::vector<float> staged(w.stream ? static_cast<std::size_t>(w.chunk) : 0);
    std::vector<float> row_divisors(static_cast<std::size_t>(g.block_cols));
    std::int64_t divisors_row = -1;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < g.rows; ++r) {
      if (r / g.br != divisors_row) divisors_of(divisors_row = r / g.br, row_divisors.data());
      dequantize_row(row_codes(q, g, ec.bits, all_codes, r, row), g, row_divisors.data(), ec, w, staged,
                     out + r * g.cols);
    }
    if (w.stream) HWY_DYNAMIC_DISPATCH(FlushStreams)();
  }
}

}  // namespace mf::cpu
#endif  // HWY_ONCE
