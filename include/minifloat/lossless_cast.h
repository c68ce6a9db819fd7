// minifloat/lossless_cast.h: a quantized tensor carried into another block scheme with its values unchanged
// (docs/checkpoints.md, "Lossless casts between schemes").
//
// The casts, and when each is exact:
//   MXFP4 -> NVFP4            the same e2m1 codes; each 1x32 block's scale 2^k becomes the E4M3 scale 2^(k-g) of its
//   two
//                             1x16 halves, under the tensor scale 2^g with g = kmax - 8 (kmax: the largest scale
//                             exponent of a block with a nonzero code). E4M3 holds the powers of two 2^-9..2^8, so a
//                             block is exact when kmax - k <= 17 (all-zero blocks always are).
//   MXFP4 -> FP8 tiles        (DeepSeek's cast_e2m1fn_to_e4m3fn, inference/convert.py): each Br x Bc tile (Bc a
//                             multiple of 32) gets the scale 2^s, s = kmax - 6 over all the tile's block scales, and
//                             each element the E4M3 code of v x 2^(k-s), rounded to nearest even. 6 x 2^6 = 384 fits;
//                             an element is exact when its lowest bit stays on E4M3's 2^-9 grid, so a tile whose
//                             block scales span at most 2^14 is exact whatever its codes.
//   FP8 tiles -> MX           (e.g. fp8-128x128 -> mxfp8) the same codes; each 1xB block (Bc a multiple of B) takes
//                             its tile's scale: exact for E8M0 scales, and for F32 ones that are powers of two
//                             2^-127..2^127.
// A block that cannot be carried exactly is still written: MXFP4 -> FP8 keeps DeepSeek's rounded codes, the others
// requantize that block from its exact values by the target scheme's own rule. The report counts such blocks and
// their errors; whether that is acceptable is the caller's decision (convert refuses it unless --allow-inexact).
#pragma once

#include <cstdint>
#include <string>

#include "minifloat/quantize.h"

namespace mf {

struct CastReport {
  std::int64_t blocks = 0;          // the target's blocks
  std::int64_t inexact_blocks = 0;  // blocks holding a value that differs from the input's
  std::int64_t first_inexact = -1;  // row-major index of the first such block in the target's scale grid, else -1
  std::string why;                  // why that block could not be carried exactly (lossless_cast only)
  double max_abs_error = 0;         // max |y - x| over the values
  double max_rel_error = 0;         // max |y - x| / |x| over the values with x != 0
};

struct CastResult {
  QuantizedTensor q;
  CastReport report;
};

// "" when lossless_cast has a cast from `from` to `to`; otherwise why not, naming the casts there are.
std::string lossless_cast_refusal(const Scheme& from, const Scheme& to);

// `in` (packed or unpacked, not rotated) as a tensor of scheme `to`, in the packed layout. Throws QuantizeError when
// there is no such cast (lossless_cast_refusal), when `in` does not validate, or when a block scale is NaN (no value
// to carry).
CastResult lossless_cast(const QuantizedTensor& in, const Scheme& to, const std::string& tensor_name = "x");

namespace ref {
// The reference check of a cast: both tensors dequantized (ref::dequantize) and compared value by value, bit for bit
// (two NaNs count as equal), block by block over `out`'s blocks. `why` stays empty.
CastReport cast_exactness(const QuantizedTensor& in, const QuantizedTensor& out);
}  // namespace ref

}  // namespace mf
