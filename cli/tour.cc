// minifloat tour: a short guided text for a new user. Every number in it is computed, none is typed.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <string>

#include "common.h"
#include "minifloat/codec.h"
#include "minifloat/scheme.h"
#include "minifloat/text.h"
#include <vector>

namespace mf::cli {
namespace {

std::string tour_text() {
  std::string s;
  s += "minifloat tour\n==============\n\n";
  s += "1. The formats\n\n"
       "A floating-point number is sign | exponent | mantissa: value = (-1)^sign x 1.mantissa x 2^(exponent - "
       "bias).\nMore exponent bits give range, more mantissa bits give precision. These are the formats of LLM "
       "inference:\n\n";
  s += formats_table_text();
  s += fmt::format("\nE4M3 ends at {} and has no Inf; E2M1 has only {} codes, its positive values are ",
                   shortest(e4m3.max_finite()), e2m1.code_count());
  for (std::uint32_t c = 0; c < 8; ++c) s += (c ? ", " : "") + shortest(decode(e2m1, c));
  s += ".\nUE8M0 is a scale: a power of two, 2^(code - 127), with no sign and no zero.\n\n";

  s += "2. One number, every format: 0.3 = 1.2 x 2^-2\n\n"
       "The exponent -2 is stored with the bias added: E4M3 7 - 2 = 5 (0101), BF16 127 - 2 = 125 (01111101).\n"
       "Each format then rounds the mantissa 0.2 to its own bits:\n\n";
  s += show_text(0.3, false, {all_formats.begin(), all_formats.end()}, 1.0, {});
  s += "\n(try: minifloat show 0.3 --formats all --json)\n\n";

  s += "3. Scales keep small formats accurate\n\n"
       "E2M1 cannot store 0.3 well: its nearest value is 0.5. Divide by a scale first, 0.0625, and 0.3 becomes 4.8,\n"
       "whose nearest code is 4; then 4 x 0.0625 = 0.25. Block formats (MXFP4, NVFP4) share one such scale per\n"
       "16 or 32 values.\n\n";
  s += show_text(0.3, false, {&e2m1}, 0.0625, {});
  s += "\n(try: minifloat show 0.3 --scale 0.0625 --formats e2m1)\n\n";

  s += "4. One scale per block, and what an outlier does\n\n"
       "MXFP4 stores 32 E2M1 values with one shared UE8M0 scale (a power of two): 17 bytes, 4.25 bits per value.\n"
       "The scale must fit the block's largest value, so one outlier makes every small value of its block round\n"
       "to 0 (the DeepInfer page's demonstration):\n\n";
  const std::vector<float> small{0.11f, -0.23f, 0.37f,  0.52f, -0.08f, 0.29f,  0.61f, -0.44f,
                                 0.05f, 0.18f,  -0.33f, 0.72f, 0.26f,  -0.15f, 0.47f, 0.09f};
  const float outlier = 40.0f;
  s += block_text(small, scheme_named("mxfp4"), &outlier);
  s += "\n(try: minifloat block 0.11,-0.23,0.37 --scheme mxfp4 --outlier 40; --scheme nvfp4 has 16-value blocks\n"
       "with E4M3 scales)\n\n";

  s += "5. The FP4 experiment (DeepSeek V4 chapter, section 12.9)\n\n"
       "randn x 3 on 128 x 128, blocks of 32, scale 2^ceil(log2(amax / 6)) (rule rceil), nearest E2M1.\n"
       "Mean |x - q| / mean |x| over five seeds:";
  for (std::uint64_t seed = 1; seed <= 5; ++seed) s += fmt::format(" {:.2f}%", 100 * fp4_experiment(seed));
  s += "\n(the seed reports about 11.7%; try: minifloat error --scheme e2m1-1x32-ue8m0-rceil --dist normal "
       "--sigma 3 --shape 128x128 --compare mxfp4,nvfp4,fp8-1x128)\n\n";

  s += "6. Block-scaled GEMM\n\n";
  s += gemm_tour_text();

  s += "7. For scripts\n\n"
       "  printf '0.3\\n448\\n500\\n' | minifloat encode e4m3         # 0x2a, 0x7e, 0x7f (NaN: E4M3 has no Inf)\n"
       "  printf '0.3\\n500\\n' | minifloat encode e4m3 --overflow saturate\n"
       "  printf '0x2a\\n0x7e\\n' | minifloat decode e4m3\n"
       "  minifloat encode bf16 --bits 0x3e99999a\n"
       "  minifloat formats --markdown\n";
  return s;
}

}  // namespace

void register_tour(CLI::App& app) {
  auto* sub = app.add_subcommand("tour", "A short guided tour of the formats, for a new user");
  sub->callback([] { write_stdout(tour_text()); });
}

}  // namespace mf::cli
