// Internal: quantized checkpoints into GGUF in one pass (convert --format gguf; docs/checkpoints.md, "GGUF
// (llama.cpp)", the table "source scheme -> GGML type"): which GGML type each quantized pair becomes, and the bytes
// of the types that hold a source exactly (NVFP4 re-laid out; integer codes as Q4_0, Q4_1 or Q8_0).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "minifloat/checkpoint_tensors.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"

namespace mf::io::detail {

// How a pair's GGUF tensor is made: dequantized exactly and then encoded once (as the recipe's type, or Q8_0 for
// --fp8-as-q8), NVFP4 codes and scale bytes moved unchanged, or integer codes written as a Q4_0 / Q4_1 / Q8_0 block
// whose values are the source's exactly.
enum class SourceWay { dequantize, nvfp4, integer };

struct SourcePlan {
  SourceWay way = SourceWay::dequantize;
  GgufType type = GgufType::F32;
  std::string target;  // for the report: e.g. "Q8_0 (fp8-as-q8)", "NVFP4 re-laid out", "Q4_0 exact"
};

// One quantized pair and the file it is in.
struct PairIn {
  const SafetensorsFile* file = nullptr;
  const QuantizedPair* pair = nullptr;
};

// How a GGUF tensor holds its pairs' values: as one pair's (whole), each expert's one after another (stacked), or
// rows of a pair's sliced or transposed (moved: DeepSeek's k_b / v_b, only ever dequantized).
enum class SourceUse { whole, stacked, moved };

// What one GGUF tensor made of the 2-D pairs `in` (one pair; or each expert of a stacked tensor, in order) becomes
// under the type recipe r (r.type set); cols: the tensor's row length (ggml's ne[0]). --keep-quantized: a whole
// NVFP4 pair is re-laid out (its row must be whole 64-value blocks: IoError gguf_unsupported naming the tensor
// otherwise; nvfp4_scales checks the rest, planned with it), integer codes take the first of Q4_0, Q4_1, Q8_0 whose
// blocks hold every value of every pair exactly (the values read here, once per type tried). --fp8-as-q8: Q8_0 when
// every pair is FP8. Q8_0 for a row not whole 32-value blocks: F16, as llama.cpp's converter falls back.
SourcePlan gguf_source_plan(std::span<const PairIn> in, std::uint64_t cols, SourceUse use, const GgufRecipe& r,
                            int threads);

// True for an FP8 pair (F8_E4M3 or F8_E5M2 codes): what --fp8-as-q8 writes as Q8_0.
bool is_fp8_pair(const SafetensorsFile& f, const QuantizedPair& p);

// True for a 2-D NVFP4 pair: ModelOpt's (and minifloat's own) W + W_scale + W_scale_2, compressed-tensors'
// nvfp4-pack-quantized weight_packed + weight_scale + weight_global_scale.
bool is_nvfp4_pair(const QuantizedPair& p);

// The NVFP4 pair's codes [R, C/2] (element 2i in the low nibble of byte i) and E4M3 scale bytes [R, C/16] as
// ggml's block_nvfp4 rows: per 64 values, the 4 scale bytes, then per 16 values 8 bytes whose low nibbles are
// values 0..7 and high nibbles 8..15. Throws std::invalid_argument for a row not whole 64-value blocks, a scale byte
// with its sign bit set or the NaN byte 0x7F (ggml's UE4M3 has no sign, and reads 0x7F as 0).
std::vector<std::byte> nvfp4_blocks(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scales,
                                    std::uint64_t cols);

// The per-tensor f32 values llama.cpp's converter writes beside an NVFP4 weight X: X.scale (the second level,
// multiplied into the matmul's output) and X.input_scale (the activations' scale, which llama.cpp loads but no
// graph reads); nullopt for one that is exactly 1 (not written). compressed-tensors' global scales are divisors:
// written as their f32 reciprocals, which must give the source's values exactly (IoError naming the tensor if not).
struct Nvfp4Scales {
  std::optional<float> scale, input_scale;
};
Nvfp4Scales nvfp4_scales(const SafetensorsFile& f, const QuantizedPair& p);

// Bytes of `type` (Q4_0, Q4_1 or Q8_0) whose gguf-py dequantization is x bit for bit, where u holds each value's
// integer part (q - zero point: dequantize_dialect_pair with unit scales) and x = u x its group's scale; nullopt
// when a block's values have no such form (a block spanning two scales, a scale or offset f16 cannot hold, codes
// out of the type's range).
std::optional<std::vector<std::byte>> integer_blocks(GgufType type, std::span<const float> u, std::span<const float> x);

}  // namespace mf::io::detail
