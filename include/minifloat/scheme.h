// minifloat/scheme.h: block-scaling schemes (OCP MX, NVFP4, DeepSeek FP8, integer groups) as data.
//
// A scheme is an element type, a block shape (1 x B along the last dimension, or a Br x Bc tile), a scale format
// (ue8m0, ue4m3 or f32), a scale rule, and whether a second, per-tensor f32 scale sits above the block scales
// (NVFP4). A profile selects the small choices (zero blocks, tie-breaking, how log2 is computed) that make output
// bit-identical to a named implementation. Names follow docs/spec.md#block-scaling and docs/spec.md#schemes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/format.h"

namespace mf {

// How the block scale S is chosen from amax = max |x| over the block (docs/spec.md#scale-rules).
enum class ScaleRule : std::uint8_t {
  floor,  // S = 2^(floor(log2 amax) - emax_elem)                  OCP MX v1.0, torchao FLOOR, ggml
  rceil,  // S = 2^ceil(log2(amax / max_elem)), never clips          DeepSeek ue8m0, DeepGEMM, TE/cuBLAS MXFP8
  even,   // amax rounded to the element's mantissa width, then floor  torchao EVEN
  f32,    // S = amax / max_elem, stored as f32                       DeepSeek-V3, TE Float8BlockScaling, int groups
  e4m3,   // S = ue4m3(amax / max_elem / tensor_scale)                NVFP4
  mse,    // the power of two among floor-1 .. rceil+1 with the least squared error   (minifloat's own)
  four_over_six,  // "4/6": per block, S = ue4m3(amax / 6 / ts) or ue4m3(amax / 4 / ts), whichever has the smaller
                  // squared error (ties: 6); ts = tensor amax / (6 * 256)  NVFP4 4/6: fouroversix, ModelOpt, TE
};

// Compatibility profiles: output bit-identical to a named implementation.
enum class Profile : std::uint8_t {
  ocp,       // OCP MX v1.0 as written: exact floor(log2), RNE elements saturated to +-max, -0 kept
  deepseek,  // DeepSeek inference kernels: amax clamped to >= 1e-4 before the scale is computed
  torchao,   // torchao MX / NVFP4 (see docs/schemes.md for what is matched)
  te,        // Transformer Engine
  ggml,      // llama.cpp quantize_row_mxfp4_ref: floorf(log2f(amax)), element ties to the smaller magnitude, no -0
};

// What a block holding NaN or +-Inf does: its scale becomes NaN (the block dequantizes to NaN), or quantization
// fails naming the tensor and the index.
enum class NonFinite : std::uint8_t { nan, error };

// How codes are laid out in memory (docs/spec.md#layout).
enum class Layout : std::uint8_t {
  packed,    // e2m1/int4 two per byte (element 2i in the low nibble), 6-bit four per 3 bytes, 8-bit one per byte
  unpacked,  // one code per byte
  ggml,      // mxfp4 only: 17-byte blocks, the ue8m0 scale then 16 bytes, byte j = element j | element j+16 << 4
};

// An element type: a float Format, or a symmetric integer of int_bits bits (values -(2^(b-1)-1) .. 2^(b-1)-1).
struct ElementType {
  const Format* format = nullptr;
  int int_bits = 0;

  constexpr bool is_int() const { return format == nullptr; }
  constexpr int bits() const { return is_int() ? int_bits : format->bits(); }
  // The largest magnitude an element can hold: 448 for e4m3, 6 for e2m1, 127 for int8.
  constexpr float max() const {
    return is_int() ? static_cast<float>((1 << (int_bits - 1)) - 1) : format->max_finite();
  }
  // floor(log2(max)): the emax_elem of the floor rule (e4m3 8, e5m2 15, e3m2 4, e2m3 2, e2m1 2).
  constexpr int emax() const {
    if (!is_int()) return format->emax();
    int e = 0;
    while ((2 << e) <= (1 << (int_bits - 1)) - 1) ++e;
    return e;
  }
  std::string name() const;
};

struct Scheme {
  std::string name;  // "mxfp4", or the canonical custom spelling "e2m1-1x32-ue8m0-floor"
  ElementType element;
  int block_rows = 1;  // 1 for 1 x B blocks along the last dimension
  int block_cols = 32;
  const Format* scale_format = &ue8m0;  // &ue8m0, &ue4m3 or &f32
  ScaleRule rule = ScaleRule::floor;
  bool tensor_scale = false;  // a second-level f32 scale per tensor (NVFP4)
  Profile profile = Profile::ocp;

  constexpr int block_size() const { return block_rows * block_cols; }
  // Bits per value including the block scale (the tensor scale is not counted): mxfp4 4.25, nvfp4 4.5.
  double bits_per_value() const {
    return element.bits() + static_cast<double>(scale_format->bits() <= 8 ? 8 : 32) / block_size();
  }
};

// The scheme called `name`: a named scheme (mxfp8, mxfp8-e5m2, mxfp6-e3m2, mxfp6-e2m3, mxfp4, nvfp4, fp4-e4m3-16,
// fp8-1x128, fp8-128x128, fp8-32x32, int8-1xB, int4-1xB) or a custom one spelled
// ELEMENT-BLOCK[-SCALE[-RULE]]: e.g. "e2m1-1x32-ue8m0-rceil", "e4m3-128x128-f32", "int4-1x128".
// Throws std::invalid_argument naming the bad part and listing what is known.
Scheme scheme_named(std::string_view name);
std::vector<std::string> scheme_names();  // the named ones, for help texts and `minifloat schemes`

ScaleRule scale_rule_named(std::string_view name);  // throws std::invalid_argument
Profile profile_named(std::string_view name);       // throws std::invalid_argument
Layout layout_named(std::string_view name);         // throws std::invalid_argument
std::string_view to_string(ScaleRule r);
std::string_view to_string(Profile p);
std::string_view to_string(Layout l);

// The scheme with a profile applied: the profile's rule where the scheme uses the default, plus its quirks.
// deepseek: rule rceil for ue8m0 scales; others keep the scheme's rule. Throws if the pair makes no sense.
Scheme with_profile(Scheme s, Profile p);
// The scheme with another scale rule; throws std::invalid_argument if the scale format cannot hold it
// (f32 needs an f32 scale, e4m3 a ue4m3 scale; power-of-two rules need ue8m0, ue4m3 or f32 scales).
Scheme with_rule(Scheme s, ScaleRule r);

}  // namespace mf
