// One GEMM after its operands are checked: what the reference (src/ref/gemm_ref.cc) and the fast path
// (src/cpu/gemm.cc) both compute from. Internal; the public API is minifloat/gemm.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "minifloat/gemm.h"
#include "minifloat/text.h"

namespace mf::gemm {

enum class WeightKind : std::uint8_t { e4m3, e2m1, bf16, f32 };

// The width of an activation block (fp8-1x128) and of an accumulation group unless weight scales ask for less.
inline constexpr int kActBlock = 128;
// The number of lane-strided partial sums within a group (minifloat/gemm.h).
inline constexpr int kLanes = 16;

struct Problem {
  // Its vectors come from, and go back to, those that the thread's earlier Problems held (a, act_scales,
  // weight_scales, e4m3_factor): a call that fits in what an earlier one grew allocates nothing for them.
  Problem();
  ~Problem();
  Problem(const Problem&) = default;
  Problem(Problem&&) = default;
  Problem& operator=(const Problem&) = default;
  Problem& operator=(Problem&&) = default;

  std::int64_t m = 0, n = 0, k = 0;
  int group = kActBlock;  // G: the K range summed before its scale is applied
  // [m][k] exact: bf16 widened, or f32. Empty for act_quant's activations, which stay e4m3 codes (a_codes) until a
  // kernel reads them (activation_values): a large call then writes no f32 copy of M x K that it would only copy
  // again into its own layout.
  std::vector<float> a;
  const std::uint8_t* a_codes = nullptr;  // [m][k] e4m3 codes of act_quant's activations, or null
  std::vector<float> act_scales;          // [m][k / 128] activation scales (decoded); empty: 1
  WeightKind kind = WeightKind::f32;
  const std::uint8_t* codes = nullptr;  // e4m3 [n][k] one per byte; e2m1 [n][k / 2], element 2i in the low nibble
  const std::uint16_t* w_bf16 = nullptr;
  const float* w_f32 = nullptr;
  int br = 1, bc = 1;                  // the weight's scale block
  std::int64_t weight_scale_cols = 0;  // ceil(k / bc)
  // [ceil(n / br)][weight_scale_cols] decoded weight scales; empty: none (or weight_scale_codes)
  std::vector<float> weight_scales;
  // mxfp4 and mxfp8 weights: their ue8m0 scale codes [n][weight_scale_cols] and each code's divisor. weight_scales
  // stays empty until a kernel that wants f32 scales asks (expand_weight_scales); the M = 1 GEMV reads the bytes
  // through the table, so a decode-shaped call does not first write N x K / 32 decoded scales to memory (a third of its
  // time, docs/benchmark-history.md#block-scaled-gemm-issue-5).
  const std::uint8_t* weight_scale_codes = nullptr;
  std::array<float, 256> weight_scale_table{};
  bool weight_scales_inside = false;  // powers of two, multiplied into w (exact); else applied per group
  // mxfp8's scale codes (fp8_problem): every one at most 2^119 or NaN (ue8m0 246, 255), so that the AVX2 GEMV's factor
  // per 32 weights, the scale times 2^8 (its fp16 decode gives value x 2^-8), is finite and exact.
  bool weight_scale_codes_below_2to120 = false;
  // nvfp4 weights: the f32 second-level (tensor) scale. The E4M3 block scales go into w (element x scale: 2 x 4
  // significant bits, exact), this one into each group's factor beside the activation's; 1 for every other weight.
  float weight_tensor_scale = 1.0f;
  // Only the scalar definition computes it: the weight-only form where K is not a multiple of 128.
  bool reference_only = false;
  // e4m3 weights: weight_scales * 2^120 per scale block, the one factor that turns a code's bits moved into f32 place
  // ((code << 20), an f32 2^-120 times the value) into value * scale; empty when some scale exceeds 2^7, and for
  // mxfp8 until expand_weight_scales (AVX3_DL's GEMV reads its scale codes instead).
  std::vector<float> e4m3_factor;
  // The e4m3 GEMV may apply each row's factor once per group instead of once per weight: the factor is constant
  // over a group (scales applied per group, or ue8m0 scale blocks at least a group wide, every scale in
  // [2^-100, 2^7]), so that scaling by powers of two moves no product, partial sum or tree sum out of the normal
  // range (src/cpu/gemv_blocks-inl.h, GemvBlock).
  bool e4m3_per_group = false;
  GemmOut out;
  bool accumulate = false;
  int threads = 0;

  // Every product a * w is exact in f32, so an fma and a multiply-then-add agree: act_quant's e4m3 activations
  // (not the weight-only form's f32 or bf16 ones, taken as inexact) times e4m3 or
  // e2m1 weights whose scales (when inside w) are at most 2^100, so that no product overflows. A scan of the
  // weight scales (one code per 32 values for mxfp4), so only targets without an fma ask.
  bool products_exact() const;
  // a[row, k0 .. k0 + len) into out: a's values, or the e4m3 codes decoded (unscaled, exact).
  void activation_values(std::int64_t row, std::int64_t k0, std::int64_t len, float* out) const;
  // weight_scales from weight_scale_codes (nothing when weight_scales is filled or there are no codes); for e4m3
  // (mxfp8) e4m3_factor and e4m3_per_group too, as fp8_problem makes them for other e4m3 weights.
  void expand_weight_scales();
  // The weight scale of block (row_block, col_block): weight_scales, or the table entry of its code.
  float weight_scale(std::int64_t row_block, std::int64_t col_block) const;
  // w[n, k] as the GEMM reads it: the element, times its scale when weight_scales_inside.
  float weight(std::int64_t row, std::int64_t col) const;
  // s = act_scales[m, group] * weight_scales[n, group] (1 where absent), the factor of group g's sum: the product of
  // these two.
  float group_scale(std::int64_t row, std::int64_t col, std::int64_t g) const {
    return activation_scale(row, g) * weight_group_scale(col, g);
  }
  float activation_scale(std::int64_t row, std::int64_t g) const {  // act_scales[row, group g], or 1
    if (act_scales.empty()) return 1.0f;
    return act_scales[static_cast<std::size_t>(row * (k / kActBlock) + g * group / kActBlock)];
  }
  // weight_scales[col, group g] when applied per group, or 1
  float weight_group_scale(std::int64_t col, std::int64_t g) const;
};

Problem fp8_problem(const char* op, const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out,
                    const GemmOptions& o);
Problem fp4_problem(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& o);
// The weight-only form: a [m, w.cols()] as f32 values (a32) or bf16 bits (a16), not quantized; w any weight that
// fp8_problem or fp4_problem takes.
Problem weight_only_problem(const std::uint16_t* a16, const float* a32, std::int64_t m, const QuantizedTensor& w,
                            GemmOut out, const GemmOptions& o);
Problem plain_problem(const std::uint16_t* a16, const float* a32, const std::uint16_t* w16, const float* w32,
                      std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out, const GemmOptions& o);

// bf16 bits of x, rounded to nearest even (NaN -> the quiet NaN with x's sign, as mf::encode(bf16, x)).
std::uint16_t bf16_rne(float x);
// Writes C[row, col0 + j] for j < count from the f32 sums c[j]: c, or old + c with accumulate; bf16 rounds once.
void finish(const Problem& p, std::int64_t row, std::int64_t col0, std::int64_t count, const float* c);
// The scalar definition: all of C for p.
void reference(const Problem& p);
// The sum of 16 partial sums in the fixed tree of minifloat/gemm.h.
float tree_sum(const float* partial);
// "[4, 256]": minifloat/text.h's shape_text of a matrix.
inline std::string matrix_text(std::int64_t rows, std::int64_t cols) {
  const std::array<std::int64_t, 2> shape{rows, cols};
  return shape_text(shape);
}

}  // namespace mf::gemm
