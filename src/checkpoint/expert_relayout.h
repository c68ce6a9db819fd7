// Internal: MXFP4 MoE experts between gpt-oss's fused blocks and per-expert Linear weights, moved row by row with
// their codes and block scales unchanged.
//
// gpt-oss stores a layer's experts as PREFIX gate_up_proj_blocks U8 [E, 2I, H/32, 16] (+ _scales U8 [E, 2I, H/32])
// and PREFIX down_proj_blocks U8 [E, H, I/32, 16]: each expert's rows are its Linear's output rows, gate and up rows
// interleaved (row 2j gate_proj's row j, row 2j + 1 up_proj's), element 2i of a row in a byte's low nibble. Those
// are the bytes of the per-expert weights PREFIX e.{gate,up,down}_proj.weight in every packed MXFP4 dialect
// (minifloat's F4 [R, C], DeepSeek-V4's I8 [R, C/2], compressed-tensors' and ModelOpt's U8 [R, C/2], each with one
// E8M0 byte per 32 elements), so a re-layout only reorders whole rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minifloat/checkpoint_tensors.h"

namespace mf::io::detail {

// e2m1 in 1x32 blocks with ue8m0 scales and no second level: what every dialect's MXFP4 holds.
bool is_mxfp4(const std::optional<Scheme>& s);

// An expert's Linear weight: PREFIX E.NAME.weight, PREFIX ending in "experts.", NAME gate_proj, up_proj or
// down_proj (Hugging Face's names) or w1, w3 or w2 (DeepSeek's, the same three in that order).
struct ExpertWeight {
  enum Proj { gate, up, down };
  std::string prefix;
  std::uint64_t expert = 0;
  Proj proj = gate;
};
std::optional<ExpertWeight> expert_weight(std::string_view name);

// One output tensor of a move: its name, its logical shape ([R, C] for a per-expert weight; [E, in, out], the
// transformers parameter, for a fused gpt-oss tensor) and, for each of its rows in order, the source pair and row.
struct MovedTensor {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> rows;
};

// Rows of MXFP4 pairs (`sources`, each [R, cols] logically) regrouped into `outputs`.
struct ExpertMove {
  std::vector<const QuantizedPair*> sources;
  std::uint64_t cols = 0;
  std::vector<MovedTensor> outputs;
  bool fused = false;    // outputs are gpt-oss fused tensors (X_blocks, X_scales), else per-expert pairs
  std::string reported;  // the name convert's report gives the move (the fused tensor's)
};

// A gpt-oss blocks pair (PREFIX gate_up_proj or PREFIX down_proj) split into its per-expert weights; or, `keep_fused`,
// the same pair as it is. Throws std::invalid_argument for a blocks pair of any other name.
ExpertMove split_experts(const SafetensorsFile& file, const QuantizedPair& blocks, bool keep_fused);

// Every MXFP4 per-expert pair of `pairs` (expert_weight names) gathered into gpt-oss's fused tensors, two per
// PREFIX: gate_up_proj (rows interleaved) and down_proj. Throws std::invalid_argument naming what is missing when a
// PREFIX does not hold gate, up and down for each of experts 0..E-1 with one shape per projection, whole 32-blocks.
std::vector<ExpertMove> gather_experts(const SafetensorsFile& file, const std::vector<QuantizedPair>& pairs);

// Output `out` of `move`: its packed codes (cols / 2 bytes a row) and E8M0 scales (cols / 32 a row), bytes copied.
// Throws IoError naming a source whose bytes are not [R, cols / 2] and [R, cols / 32].
void move_rows(const SafetensorsFile& file, const ExpertMove& move, const MovedTensor& out,
               std::vector<std::uint8_t>& codes, std::vector<std::uint8_t>& scales);

}  // namespace mf::io::detail
