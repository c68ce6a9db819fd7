// minifloat/gemm.h: block-scaled GEMMs and the linear layer of LLM inference (docs/spec.md#gemm).
//
// Every GEMM here computes C[M, N] = A[M, K] x W[N, K]^T (weights row-major with K contiguous, as checkpoints store
// them), accumulates in f32 and writes f32 or bf16 (round to nearest even).
//
// Accumulation order: the definition that the fast path reproduces bit for bit (docs/gemm.md derives it):
//   * K is cut into groups of G values (G = 128, the activation block; G = the weight's block width when weight
//     scales are f32 and narrower than 128). Within a group, 16 partial sums run over k = 0, 1, ... mod 16, each
//     p[k % 16] = fma(a[m,k], w[n,k], p[k % 16]) from +0 in increasing k; the group's sum is the fixed tree
//     ((p0+p8)+(p4+p12)) + ((p2+p10)+(p6+p14)) + (the same over odd i), i.e. halving: q[i] = p[i] + p[i+8],
//     r[i] = q[i] + q[i+4], s[i] = r[i] + r[i+2], acc = s[0] + s[1].
//   * C starts at +0 and takes the groups in increasing order: C = C + s * acc (a rounded product, then a rounded
//     sum), s = act_scale[m, group] * weight_scale[n, group] (each 1 where absent).
//   * Weights with power-of-two (ue8m0) scales are read as element x 2^e (exact in f32), so their scale is inside
//     w and weight_scale = 1; f32 weight scales stay outside. The activation's scale is always outside.
// With e4m3 activations every product a*w is exact in f32 (4 x 4 or 4 x 2 significant bits, no underflow, and no
// overflow while weight scales are at most 2^100), so an fma and a multiply-then-add agree; the within-group sum
// is still rounded (docs/gemm.md: a 128-term sum of e4m3 products spans up to 43 bits).
//
// mf::fp8_gemm and friends run the fast path (Highway SIMD, OpenMP over N); mf::ref:: the scalar definition.
// Shapes or scales that do not fit fail with GemmError naming both operands' shapes.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "minifloat/quantize.h"

namespace mf {

// Where a GEMM writes C [M, N], row-major: f32 values, or bf16 bits (RNE). Set exactly one.
struct GemmOut {
  float* f32 = nullptr;
  std::uint16_t* bf16 = nullptr;
};

struct GemmOptions {
  bool accumulate = false;  // C = old C + A W^T: one rounded f32 add of the old value (bf16: widened) at the end
  int threads = 0;          // 0: all (OpenMP's default)
};

// Operands that do not fit: K mismatches, K not a multiple of the block, scale shapes or formats that are not what
// the scheme calls for (scales packed for another platform), a missing or doubled output.
struct GemmError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The activation's scale format: ue8m0 (powers of two, rule rceil: DeepSeek V3.1+/V4, DeepGEMM) or f32
// (amax / 448: DeepSeek V3).
enum class ActScale : std::uint8_t { ue8m0, f32 };

// Per-token FP8 quantization of activations x [..., K]: scheme fp8-1x128 (e4m3, 1x128 blocks) in the deepseek
// profile (amax clamped to >= 1e-4 first). K must be a multiple of 128.
QuantizedTensor act_quant(const float* x, std::span<const std::int64_t> shape, ActScale scale = ActScale::ue8m0,
                          int threads = 0);
// The same into `out`, reusing its buffers: a decode loop that calls it per token allocates nothing once warm.
void act_quant(const float* x, std::span<const std::int64_t> shape, ActScale scale, int threads, QuantizedTensor& out);

// a: act_quant output [M, K]. w: e4m3 weight [N, K] in 1 x B or B_r x B_c blocks with ue8m0 or f32 scales
// (fp8-128x128, fp8-32x32, fp8-1x128, mxfp8; B_c a multiple of 16 that divides 128 or is a multiple of it).
void fp8_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& options = {});
// a: act_quant output [M, K]. w: e2m1 weight [N, K], packed: mxfp4-shaped (1x32 blocks, ue8m0 scales, any rule) or
// nvfp4 (1x16 blocks, E4M3 scales, f32 tensor scale; finite and non-zero). nvfp4 weights are read as element x
// block scale (exact) and their tensor scale joins the activation's in each group's factor (docs/gemm.md); the fast
// path runs them as mxfp4's, with a scale table per 16 weights in the GEMV.
void fp4_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& options = {});
// The weight-only form (W4A16, W8A16): a [M, K] f32 values or bf16 bits, not quantized, times any weight that
// fp8_gemm or fp4_gemm takes (fp8, mxfp4, nvfp4), in the same order with no activation scale; K need not be a
// multiple of 128 (the last group may be shorter; such K take the scalar definition, the others the fast path).
void weight_only_gemm(const float* a, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& options = {});
void weight_only_gemm(const std::uint16_t* a_bf16, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& options = {});
// Plain GEMMs: a [M, K] and w [N, K] as bf16 bits or f32 values.
void bf16_gemm(const std::uint16_t* a, const std::uint16_t* w, std::int64_t m, std::int64_t n, std::int64_t k,
               GemmOut out, const GemmOptions& options = {});
void f32_gemm(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out,
              const GemmOptions& options = {});

// A linear layer's weight [N, K]: quantized (e4m3 -> fp8_gemm, e2m1 -> fp4_gemm) or plain bf16 / f32.
struct Weight {
  const QuantizedTensor* quantized = nullptr;
  const std::uint16_t* bf16 = nullptr;  // plain weights: set one pointer, n and k
  const float* f32 = nullptr;
  std::int64_t n = 0, k = 0;
  bool weight_only = false;  // quantized: x as it is (f32) into weight_only_gemm, no act_quant
  std::int64_t rows() const { return quantized ? quantized->rows() : n; }
  std::int64_t cols() const { return quantized ? quantized->cols() : k; }
};

// y = x W^T for x [..., K] (f32): quantized weights take act_quant(x) (ue8m0, or f32 when W's scales are f32) and
// the matching GEMM (nvfp4 as mxfp4: fp4_gemm), or with weight_only x as it is and weight_only_gemm; bf16 weights take
// x rounded to bf16 (RNE); f32 weights take x as it is.
void linear(const float* x, std::span<const std::int64_t> x_shape, const Weight& w, GemmOut out,
            const GemmOptions& options = {});
// The same, returning y [..., N] in f32.
std::vector<float> linear(const float* x, std::span<const std::int64_t> x_shape, const Weight& w, int threads = 0);

namespace ref {
// The scalar definitions (the order above) that the fast path is tested against.
void fp8_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& options = {});
void fp4_gemm(const QuantizedTensor& a, const QuantizedTensor& w, GemmOut out, const GemmOptions& options = {});
void weight_only_gemm(const float* a, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& options = {});
void weight_only_gemm(const std::uint16_t* a_bf16, std::int64_t m, const QuantizedTensor& w, GemmOut out,
                      const GemmOptions& options = {});
void bf16_gemm(const std::uint16_t* a, const std::uint16_t* w, std::int64_t m, std::int64_t n, std::int64_t k,
               GemmOut out, const GemmOptions& options = {});
void f32_gemm(const float* a, const float* w, std::int64_t m, std::int64_t n, std::int64_t k, GemmOut out,
              const GemmOptions& options = {});
}  // namespace ref

}  // namespace mf
