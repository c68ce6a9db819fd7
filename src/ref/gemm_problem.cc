// Checking GEMM operands and turning them into one Problem; writing finished rows. Shared by the reference and the
// fast path, so both see exactly the same decoded activations, scales and output rounding.
#include "gemm_problem.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "../blocks/blocking.h"
#include "minifloat/codec.h"

namespace mf::gemm {
namespace {

[[noreturn]] void fail(const char* op, const std::string& a_name, const std::string& a_shape,
                       const std::string& w_shape, const std::string& why) {
  throw GemmError(std::string(op) + ": " + a_name + " " + a_shape + " and weight " + w_shape + ": " + why);
}

std::string dims(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void check_out(const char* op, GemmOut out, const std::string& a_shape, const std::string& w_shape) {
  if ((out.f32 == nullptr) == (out.bf16 == nullptr)) {
    fail(op, "activation", a_shape, w_shape, "set exactly one output (f32 or bf16)");
  }
}

// The activation: e4m3 in 1x128 blocks with ue8m0 or f32 scales (act_quant's output).
void check_activation(const char* op, const QuantizedTensor& a, const std::string& as, const std::string& ws) {
  const Scheme& s = a.scheme;
  if (s.element.format != &e4m3 || s.block_rows != 1 || s.block_cols != kActBlock || s.tensor_scale ||
      !(*s.scale_format == ue8m0 || *s.scale_format == f32) || a.layout == Layout::ggml) {
    fail(op, "activation", as, ws,
         "the activation must be e4m3 in 1x128 blocks with ue8m0 or f32 scales "
         "(act_quant's output), not " +
             s.name);
  }
}

// Scale tensors must have exactly the shape the scheme calls for: a tensor whose scales were packed for another
// platform (NVIDIA: four ue8m0 codes per int32; Ascend: two per int16) has fewer, wider ones.
void check_scales(const char* op, const char* which, const QuantizedTensor& q, const std::string& as,
                  const std::string& ws) {
  const detail::Geometry g = detail::geometry_of(q);
  const std::array<std::int64_t, 2> expected{g.block_rows, g.block_cols};
  const std::size_t width = *q.scheme.scale_format == f32 ? 4 : 1;
  const bool shape_ok = std::equal(q.scale_shape.begin(), q.scale_shape.end(), expected.begin(), expected.end());
  if (!shape_ok || q.scales.size() != static_cast<std::size_t>(g.blocks()) * width) {
    fail(op, "activation", as, ws,
         std::string(which) + " scales " + dims(q.scale_shape) + " (" + std::to_string(q.scales.size()) +
             " bytes) are not the " + dims(expected) + " " + std::string(q.scheme.scale_format->name) + " scales of " +
             q.scheme.name + " (scales packed for another platform? unpack them first)");
  }
  try {
    validate(q);
  } catch (const QuantizeError& e) {
    fail(op, "activation", as, ws, std::string(which) + ": " + e.what());
  }
}

void set_output(Problem& p, GemmOut out, const GemmOptions& o) {
  p.out = out;
  p.accumulate = o.accumulate;
  p.threads = o.threads;
}

// Activations that are not quantized, a [p.m][p.k]: bf16 bits widened (exact), or f32 values as they are.
void load_plain_activation(Problem& p, const std::uint16_t* a16, const float* a32) {
  p.a.resize(static_cast<std::size_t>(p.m * p.k));
  for (std::size_t i = 0; i < p.a.size(); ++i) {
    p.a[i] = a16 ? std::bit_cast<float>(static_cast<std::uint32_t>(a16[i]) << 16) : a32[i];
  }
}

// The activation codes (decoded where a kernel reads them: Problem::activation_values) and the activation scales.
void load_activation(Problem& p, const QuantizedTensor& a) {
  p.a_codes = a.codes.data();
  detail::load_divisors(a, p.act_scales);
}

// nvfp4's second-level scale multiplies every group's factor: zero would zero the layer and NaN or Inf make every
// output NaN or Inf, so they are refused rather than computed.
void check_tensor_scale(const char* op, const QuantizedTensor& w, const std::string& as, const std::string& ws) {
  if (w.scheme.tensor_scale && !(std::isfinite(w.tensor_scale) && w.tensor_scale != 0.0f)) {
    fail(op, "activation", as, ws,
         "the weight's " + w.scheme.name + " tensor scale (scale_2) is " + std::to_string(w.tensor_scale) +
             ": it must be finite and non-zero");
  }
}

// The weight's side of p: its codes, scale blocks and scales, and the group they allow.
void load_weight(Problem& p, const QuantizedTensor& w, bool scales_as_codes) {
  p.n = w.rows();
  p.k = w.cols();
  p.codes = w.codes.data();
  p.br = w.scheme.block_rows;
  p.bc = w.scheme.block_cols;
  p.weight_scale_cols = (p.k + p.bc - 1) / p.bc;
  p.weight_scales_inside = *w.scheme.scale_format == ue8m0;
  if (w.scheme.tensor_scale) {
    // nvfp4: element x E4M3 block scale is exact (2 x 4 significant bits), so the block scale goes inside w like a
    // power of two; the tensor scale goes outside, per group (docs/gemm.md).
    p.weight_scales_inside = true;
    p.weight_tensor_scale = w.tensor_scale;
  }
  p.group = p.weight_scales_inside ? kActBlock : std::min(kActBlock, p.bc);
  if (scales_as_codes) {
    p.weight_scale_codes = w.scales.data();
    detail::divisor_table(w.scheme, 1.0f, p.weight_scale_table);  // the block scales alone (nvfp4: no tensor scale)
  } else {
    detail::load_divisors(w, p.weight_scales);
  }
}

Problem quantized_problem(const char* op, const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out,
                          const GemmOptions& o, const std::string& as, const std::string& ws, bool scales_as_codes) {
  check_activation(op, a, as, ws);
  if (a.cols() != w.cols()) fail(op, "activation", as, ws, "K differs");
  if (a.cols() % kActBlock != 0) fail(op, "activation", as, ws, "K is not a multiple of the activation block 128");
  check_out(op, out, as, ws);
  check_scales(op, "activation", a, as, ws);
  check_scales(op, "weight", w, as, ws);
  check_tensor_scale(op, w, as, ws);
  Problem p;
  load_weight(p, w, scales_as_codes);
  p.m = a.rows();
  set_output(p, out, o);
  load_activation(p, a);
  return p;
}

}  // namespace

namespace {

// The fp8 GEMM's weights: 2-D e4m3 with ue8m0 or f32 scales, blocks a multiple of 16 wide that divide 128 or that
// 128 divides, not in GGUF's layout.
void check_fp8_weight(const char* op, const QuantizedTensor& w, const std::string& as, const std::string& ws) {
  const Scheme& s = w.scheme;
  const bool width_ok = s.block_cols % kLanes == 0 && (kActBlock % s.block_cols == 0 || s.block_cols % kActBlock == 0);
  const bool scales_ok = *s.scale_format == ue8m0 || *s.scale_format == f32;
  if (s.element.format == &e4m3 && !s.tensor_scale && scales_ok && width_ok && w.layout != Layout::ggml &&
      w.shape.size() == 2) {
    return;
  }
  fail(op, "activation", as, ws,
       "the weight must be a 2-D e4m3 tensor with ue8m0 or f32 scales in blocks whose "
       "width is a multiple of 16 dividing 128 or a multiple of it (fp8-128x128, "
       "fp8-32x32), not " +
           s.name + " in layout " + std::string(to_string(w.layout)));
}

// The e4m3 GEMV's factors (2^120 x scale per weight scale, or one 2^120), where every scale is at most 2^7 (so not
// NaN: the GEMV skips the products of a zero-padded activation tail, and a NaN scale there must still make the
// output NaN, as 0 x (value x NaN) does in the definition), and whether they may go on the group sums
// (Problem::e4m3_per_group).
void set_e4m3_factors(Problem& p) {
  for (const float v : p.weight_scales) {
    if (!(v <= 0x1p7f)) return;
  }
  p.e4m3_factor.resize(p.weight_scales_inside ? p.weight_scales.size() : 1, 0x1p120f);
  for (std::size_t i = 0; p.weight_scales_inside && i < p.weight_scales.size(); ++i) {
    p.e4m3_factor[i] = p.weight_scales[i] * 0x1p120f;
  }
  p.e4m3_per_group = !p.weight_scales_inside || p.bc % p.group == 0;
  for (std::size_t i = 0; p.weight_scales_inside && i < p.weight_scales.size(); ++i) {
    p.e4m3_per_group = p.e4m3_per_group && p.weight_scales[i] >= 0x1p-100f;
  }
}

}  // namespace

Problem fp8_problem(const char* op, const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out,
                    const GemmOptions& o) {
  const std::string as = dims(a.shape), ws = dims(w.shape);
  check_fp8_weight(op, w, as, ws);
  // mxfp8 (1x32 ue8m0): its scale codes as they are, one byte per 32 weights, for AVX3_DL's GEMV to read in place;
  // the kernels that want f32 scales and factors make them (expand_weight_scales). Decoded here, they were written
  // and read again in every call: two f32 per 32 weights, a quarter of the weight's own bytes.
  const bool codes = *w.scheme.scale_format == ue8m0 && w.scheme.block_rows == 1 && w.scheme.block_cols == 32;
  Problem p = quantized_problem(op, a, w, out, o, as, ws, codes);
  p.kind = WeightKind::e4m3;
  if (!codes) set_e4m3_factors(p);
  if (codes) {  // branch-free, so that it vectorizes: codes 247 .. 254 (2^120 .. 2^127), c - 247 wrapping below 8
    std::uint8_t huge = 0;
    for (const std::uint8_t c : w.scales) huge |= static_cast<std::uint8_t>(static_cast<std::uint8_t>(c - 247) < 8);
    p.weight_scale_codes_below_2to120 = huge == 0;
  }
  return p;
}

namespace {

// fp4_gemm's weights: 2-D e2m1, packed two per byte, mxfp4-shaped (1x32, ue8m0, any rule) or nvfp4 (1x16, E4M3
// scales, an f32 tensor scale).
void check_fp4_weight(const char* op, const QuantizedTensor& w, const std::string& as, const std::string& ws) {
  const Scheme& s = w.scheme;
  const bool mxfp4 = s.block_cols == 32 && *s.scale_format == ue8m0 && !s.tensor_scale;
  const bool nvfp4 = s.block_cols == 16 && *s.scale_format == ue4m3 && s.tensor_scale;
  if (s.element.format == &e2m1 && s.block_rows == 1 && (mxfp4 || nvfp4) && w.layout == Layout::packed &&
      w.shape.size() == 2) {
    return;
  }
  fail(op, "activation", as, ws,
       "the weight must be a 2-D e2m1 tensor, packed two per byte, in 1x32 blocks with ue8m0 scales (mxfp4) or in "
       "1x16 blocks with E4M3 scales and an f32 tensor scale (nvfp4), not " +
           s.name + " in layout " + std::string(to_string(w.layout)));
}

}  // namespace

Problem fp4_problem(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o) {
  const char* op = "fp4_gemm";
  const std::string as = dims(a.shape), ws = dims(w.shape);
  check_fp4_weight(op, w, as, ws);
  Problem p = quantized_problem(op, a, w, out, o, as, ws, true);
  p.kind = WeightKind::e2m1;
  return p;
}

Problem weight_only_problem(const std::uint16_t* a16, const float* a32, std::int64_t m, const QuantizedTensor& w,
                            GemmOut out, const GemmOptions& o) {
  const char* op = "weight_only_gemm";
  const std::string as = matrix_text(m, w.cols()), ws = dims(w.shape);
  if (m < 0) fail(op, "activation", as, ws, "negative dimension");
  const bool fp4 = w.scheme.element.format == &e2m1;
  if (fp4) {
    check_fp4_weight(op, w, as, ws);
  } else {
    check_fp8_weight(op, w, as, ws);
  }
  check_out(op, out, as, ws);
  check_scales(op, "weight", w, as, ws);
  check_tensor_scale(op, w, as, ws);
  Problem p;
  load_weight(p, w, fp4);
  p.kind = fp4 ? WeightKind::e2m1 : WeightKind::e4m3;
  // The kernels decode whole vectors of 16 weights per row and read the activations in groups of 128, as the
  // quantized GEMMs' K (a multiple of 128) lets them; other K take the scalar definition.
  p.reference_only = p.k % kActBlock != 0;
  p.m = m;
  load_plain_activation(p, a16, a32);
  set_output(p, out, o);
  return p;
}

Problem plain_problem(const std::uint16_t* a16, const float* a32, const std::uint16_t* w16, const float* w32,
                      std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out, const GemmOptions& o) {
  const char* op = w16 ? "bf16_gemm" : "f32_gemm";
  if (m < 0 || n < 0 || k < 0) {
    fail(op, "activation", matrix_text(m, k), matrix_text(n, k), "negative dimension");
  }
  check_out(op, out, matrix_text(m, k), matrix_text(n, k));
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.kind = w16 ? WeightKind::bf16 : WeightKind::f32;
  p.w_bf16 = w16;
  p.w_f32 = w32;
  load_plain_activation(p, a16, a32);
  set_output(p, out, o);
  return p;
}

float Problem::weight(std::int64_t row, std::int64_t col) const {
  const std::size_t i = static_cast<std::size_t>(row * k + col);
  float v = 0;
  switch (kind) {
    case WeightKind::e4m3: v = decode(e4m3, codes[i]); break;
    case WeightKind::e2m1: v = decode(e2m1, codes[i / 2] >> (4 * (i % 2))); break;
    case WeightKind::bf16: return std::bit_cast<float>(static_cast<std::uint32_t>(w_bf16[i]) << 16);
    case WeightKind::f32: return w_f32[i];
  }
  if (weight_scales_inside) v *= weight_scale(row / br, col / bc);
  return v;
}

namespace {

// The vectors of the thread's last Problem, kept for its next: a decode loop makes one per layer and token, and
// allocating its scales anew each time is what `linear` is not to do (docs/gemm.md). One per member, so that each
// comes back to the member it grew for; up to kKeptFloats floats each (4 MiB): larger ones (a bf16 GEMM's widened
// activations) are freed.
constexpr std::size_t kKeptFloats = std::size_t{1} << 20;
struct KeptVectors {
  std::vector<float> a, act_scales, weight_scales, e4m3_factor;
};
thread_local KeptVectors kept;

std::vector<float> take(std::vector<float>& from) {
  std::vector<float> v = std::move(from);
  from = std::vector<float>();
  v.clear();
  return v;
}
void give_back(std::vector<float>& v, std::vector<float>& to) {
  if (v.capacity() > to.capacity() && v.capacity() <= kKeptFloats) to = std::move(v);
}

}  // namespace

Problem::Problem()
    : a(take(kept.a)),
      act_scales(take(kept.act_scales)),
      weight_scales(take(kept.weight_scales)),
      e4m3_factor(take(kept.e4m3_factor)) {}

Problem::~Problem() {
  give_back(a, kept.a);
  give_back(act_scales, kept.act_scales);
  give_back(weight_scales, kept.weight_scales);
  give_back(e4m3_factor, kept.e4m3_factor);
}

void Problem::expand_weight_scales() {
  if (!weight_scales.empty() || !weight_scale_codes) return;
  const std::int64_t rows = (n + br - 1) / br;
  weight_scales.resize(static_cast<std::size_t>(rows * weight_scale_cols));
  for (std::size_t i = 0; i < weight_scales.size(); ++i) weight_scales[i] = weight_scale_table[weight_scale_codes[i]];
  if (kind == WeightKind::e4m3) set_e4m3_factors(*this);  // mxfp8 outside AVX3_DL's GEMV: as fp8_problem made them
}

void Problem::activation_values(std::int64_t row, std::int64_t k0, std::int64_t len, float* out) const {
  const auto at = static_cast<std::size_t>(row * k + k0);
  if (a_codes == nullptr) {
    std::copy_n(a.data() + at, len, out);
    return;
  }
  static const std::array<float, 256> table = [] {  // built once: a decode step calls this per layer
    std::array<float, 256> t{};
    for (std::uint32_t c = 0; c < 256; ++c) t[c] = decode(e4m3, c);
    return t;
  }();
  for (std::int64_t i = 0; i < len; ++i) out[i] = table[a_codes[at + static_cast<std::size_t>(i)]];
}

bool Problem::products_exact() const {
  if (kind != WeightKind::e4m3 && kind != WeightKind::e2m1) return false;
  if (a_codes == nullptr) return false;  // the weight-only form: f32 activations' products round
  if (!weight_scales_inside) return true;
  // |a| <= 448 and |element| <= 448: below 2^128 while the scale is at most 2^100 (NaN scales give NaN either way).
  if (weight_scales.empty() && weight_scale_codes) {
    // ue8m0 codes 228 .. 254 (2^(c - 127) > 2^100), c - 228 wrapping below 27: branch-free, so that it vectorizes.
    const auto count = static_cast<std::size_t>((n + br - 1) / br * weight_scale_cols);
    std::uint8_t huge = 0;
    for (std::size_t i = 0; i < count; ++i) {
      huge |= static_cast<std::uint8_t>(static_cast<std::uint8_t>(weight_scale_codes[i] - 228) < 27);
    }
    return huge == 0;
  }
  bool exact = true;
  for (const float s : weight_scales) exact = exact && !(s > 0x1p100f);
  return exact;
}

float Problem::weight_scale(std::int64_t row_block, std::int64_t col_block) const {
  const auto i = static_cast<std::size_t>(row_block * weight_scale_cols + col_block);
  return weight_scales.empty() ? weight_scale_table[weight_scale_codes[i]] : weight_scales[i];
}

float Problem::weight_group_scale(std::int64_t col, std::int64_t g) const {
  if (weight_scales_inside) return weight_tensor_scale;  // 1 but for nvfp4
  if (weight_scales.empty() && !weight_scale_codes) return 1.0f;
  return weight_scale(col / br, g * group / bc);
}

std::uint16_t bf16_rne(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) & 0x8000u) | 0x7FC0u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

void finish(const Problem& p, std::int64_t row, std::int64_t col0, std::int64_t count, const float* c) {
  const std::size_t base = static_cast<std::size_t>(row * p.n + col0);
  if (p.out.f32) {
    float* y = p.out.f32 + base;
    for (std::int64_t j = 0; j < count; ++j) y[j] = p.accumulate ? y[j] + c[j] : c[j];
    return;
  }
  std::uint16_t* y = p.out.bf16 + base;
  for (std::int64_t j = 0; j < count; ++j) {
    const float old = std::bit_cast<float>(static_cast<std::uint32_t>(y[j]) << 16);
    y[j] = bf16_rne(p.accumulate ? old + c[j] : c[j]);
  }
}

float tree_sum(const float* p) {
  float q[8], r[4];
  for (int i = 0; i < 8; ++i) q[i] = p[i] + p[i + 8];
  for (int i = 0; i < 4; ++i) r[i] = q[i] + q[i + 4];
  return (r[0] + r[2]) + (r[1] + r[3]);
}

}  // namespace mf::gemm
