// Internal: convert --lossless (docs/checkpoints.md, "Lossless casts between schemes"). A pair whose recipe target
// is another scheme is cast (lossless_cast.h) rather than requantized, and nothing else may round: a float tensor
// the recipe would quantize, or narrow to BF16, is refused by name. Every cast is run once before anything is
// written, so an inexact block fails the command (tensor, block, why) with no output, unless --allow-inexact.
#pragma once

#include <filesystem>
#include <string>

#include "convert_run.h"
#include "minifloat/lossless_cast.h"

namespace mf::io::detail {

// Throws std::invalid_argument, naming the tensor, unless pair `p` can be cast into `want` (its form read as a
// QuantizedTensor, and a cast between the two schemes).
void check_castable(const SafetensorsFile& f, const QuantizedPair& p, const Scheme& want, const std::string& target);

// Throws std::invalid_argument naming a tensor that --lossless cannot write as `target` without rounding: a float
// tensor given a scheme, or narrowed to BF16; a pair given BF16.
void refuse_rounding(const SafetensorsFile& f, const std::string& tensor, DType dtype, const std::string& target,
                     bool pair);

// A cast step's pair cast into its scheme, with its report row (blocks exact / inexact, errors).
struct CastOutput {
  QuantizedTensor q;
  TensorReport row;
};
CastOutput cast_pair(const SafetensorsFile& f, const Step& s, int threads);

// Every cast step of this job's shards run before anything is written: an inexact block is an error naming the
// tensor, the block and why, unless `allow_inexact`; a second-level scale the format cannot store is one too.
void check_casts(const std::filesystem::path& in, const ConvertOptions& o, const Planner& plan);

}  // namespace mf::io::detail
