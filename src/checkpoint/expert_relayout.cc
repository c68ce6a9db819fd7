// MXFP4 MoE experts re-laid out between gpt-oss's fused blocks and per-expert weights (expert_relayout.h).
#include "expert_relayout.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <stdexcept>

#include "dialect_pairs.h"
#include "../io/file.h"
#include "minifloat/codec.h"
#include "minifloat/text.h"

namespace mf::io::detail {
namespace {

constexpr std::string_view kGateUp = "gate_up_proj", kDown = "down_proj";

std::string proj_name(ExpertWeight::Proj p) {
  return p == ExpertWeight::gate ? "gate_proj" : p == ExpertWeight::up ? "up_proj" : "down_proj";
}

std::string expert_name(const std::string& prefix, std::uint64_t e, ExpertWeight::Proj p) {
  return cat(prefix, e, ".", proj_name(p), ".weight");
}

// The per-expert weights' rows of one layer, by expert then projection (nullptr where missing).
struct Layer {
  std::vector<std::array<const QuantizedPair*, 3>> experts;
};

[[noreturn]] void incomplete(const SafetensorsFile& f, const std::string& prefix, const std::string& why) {
  throw std::invalid_argument(cat(f.path().string(), ": the MXFP4 experts ", prefix, "*: ", why,
                                  ": --format gpt-oss fuses every layer's experts 0..E-1 (gate_proj, up_proj and "
                                  "down_proj of one shape each, in one shard) into gate_up_proj_blocks and "
                                  "down_proj_blocks; nothing was written"));
}

std::array<std::uint64_t, 2> logical(const QuantizedPair& p) {
  return {static_cast<std::uint64_t>(p.shape[0]), static_cast<std::uint64_t>(p.shape[1])};
}

// One projection of every expert of `layer` as one shape, whole 32-blocks; its [R, C].
std::array<std::uint64_t, 2> common_shape(const SafetensorsFile& f, const std::string& prefix, const Layer& layer,
                                          ExpertWeight::Proj proj) {
  const std::array<std::uint64_t, 2> shape = logical(*layer.experts[0][proj]);
  for (std::uint64_t e = 0; e < layer.experts.size(); ++e) {
    const QuantizedPair* p = layer.experts[e][proj];
    if (p == nullptr) incomplete(f, prefix, cat(expert_name(prefix, e, proj), " is missing or not MXFP4"));
    if (logical(*p) != shape) {
      incomplete(f, prefix,
                 cat(p->output, " is ", shape_text(p->output_shape), ", expert 0's ",
                     shape_text(std::vector<std::uint64_t>{shape[0], shape[1]})));
    }
  }
  if (shape[1] % 32 != 0)
    incomplete(f, prefix, cat(proj_name(proj), " rows of ", shape[1], " are not whole 32-blocks"));
  return shape;
}

std::vector<ExpertMove> gather_layer(const SafetensorsFile& f, const std::string& prefix, const Layer& layer) {
  const std::uint64_t n = layer.experts.size();
  const auto gu = common_shape(f, prefix, layer, ExpertWeight::gate);
  if (common_shape(f, prefix, layer, ExpertWeight::up) != gu)
    incomplete(f, prefix, "gate_proj and up_proj differ in shape");
  const auto down = common_shape(f, prefix, layer, ExpertWeight::down);
  ExpertMove fused_gu{{}, gu[1], {{cat(prefix, kGateUp), {n, gu[1], 2 * gu[0]}, {}}}, true, cat(prefix, kGateUp)};
  ExpertMove fused_down{{}, down[1], {{cat(prefix, kDown), {n, down[1], down[0]}, {}}}, true, cat(prefix, kDown)};
  for (std::uint64_t e = 0; e < n; ++e) {
    const auto g = static_cast<std::uint32_t>(fused_gu.sources.size());
    fused_gu.sources.push_back(layer.experts[e][ExpertWeight::gate]);
    fused_gu.sources.push_back(layer.experts[e][ExpertWeight::up]);
    for (std::uint64_t r = 0; r < gu[0]; ++r) {
      fused_gu.outputs[0].rows.emplace_back(g, r);  // row 2r: gate, row 2r + 1: up (gpt-oss interleaves them)
      fused_gu.outputs[0].rows.emplace_back(g + 1, r);
    }
    const auto d = static_cast<std::uint32_t>(fused_down.sources.size());
    fused_down.sources.push_back(layer.experts[e][ExpertWeight::down]);
    for (std::uint64_t r = 0; r < down[0]; ++r) fused_down.outputs[0].rows.emplace_back(d, r);
  }
  return {std::move(fused_gu), std::move(fused_down)};
}

std::span<const std::uint8_t> bytes_u8(std::span<const std::byte> b) {
  return {reinterpret_cast<const std::uint8_t*>(b.data()), b.size()};
}

}  // namespace

bool is_mxfp4(const std::optional<Scheme>& s) {
  return s && s->element.format != nullptr && *s->element.format == e2m1 && s->block_rows == 1 && s->block_cols == 32 &&
         *s->scale_format == ue8m0 && !s->tensor_scale;
}

std::optional<ExpertWeight> expert_weight(std::string_view name) {
  constexpr std::string_view kExperts = "experts.", kWeight = ".weight";
  const std::size_t at = name.rfind(kExperts);
  if (at == std::string_view::npos || !name.ends_with(kWeight) || (at != 0 && name[at - 1] != '.')) return std::nullopt;
  const std::string_view rest = name.substr(at + kExperts.size(), name.size() - at - kExperts.size() - kWeight.size());
  ExpertWeight w;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), w.expert);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.') return std::nullopt;
  const std::string_view proj(end + 1, static_cast<std::size_t>(rest.data() + rest.size() - end - 1));
  if (proj == "gate_proj" || proj == "w1") {
    w.proj = ExpertWeight::gate;
  } else if (proj == "up_proj" || proj == "w3") {
    w.proj = ExpertWeight::up;
  } else if (proj == "down_proj" || proj == "w2") {
    w.proj = ExpertWeight::down;
  } else {
    return std::nullopt;
  }
  w.prefix = std::string(name.substr(0, at + kExperts.size()));
  return w;
}

ExpertMove split_experts(const SafetensorsFile& f, const QuantizedPair& p, bool keep_fused) {
  // p: X_blocks [E, R, C/32, 16] read as X [E, C, R]; p.shape is [E x R, C].
  const bool gate_up = p.output.ends_with(cat(".experts.", kGateUp));
  if (p.output_shape.size() != 3 || (!gate_up && !p.output.ends_with(cat(".experts.", kDown)))) {
    throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight,
                                    "' is gpt-oss MXFP4 blocks but not "
                                    "PREFIX.experts.gate_up_proj_blocks or down_proj_blocks [E, R, C/32, 16]: not "
                                    "MoE experts, which are all gpt-oss quantizes; nothing was written"));
  }
  const std::uint64_t n = p.output_shape[0], cols = p.output_shape[1], rows = p.output_shape[2];
  if (gate_up && rows % 2 != 0) {
    throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight, "' holds ", rows,
                                    " rows per expert: "
                                    "not gate and up rows in pairs; nothing was written"));
  }
  ExpertMove m{{&p}, cols, {}, keep_fused, p.output};
  if (keep_fused) {
    m.outputs.push_back({p.output, p.output_shape, {}});
    for (std::uint64_t r = 0; r < n * rows; ++r) m.outputs[0].rows.emplace_back(0, r);
    return m;
  }
  const std::string prefix = p.output.substr(0, p.output.size() - (gate_up ? kGateUp : kDown).size());
  for (std::uint64_t e = 0; e < n; ++e) {
    const std::uint64_t first = e * rows;
    if (!gate_up) {
      m.outputs.push_back({expert_name(prefix, e, ExpertWeight::down), {rows, cols}, {}});
      for (std::uint64_t r = 0; r < rows; ++r) m.outputs.back().rows.emplace_back(0, first + r);
      continue;
    }
    for (const ExpertWeight::Proj proj : {ExpertWeight::gate, ExpertWeight::up}) {
      m.outputs.push_back({expert_name(prefix, e, proj), {rows / 2, cols}, {}});
      for (std::uint64_t r = proj == ExpertWeight::gate ? 0 : 1; r < rows; r += 2) {
        m.outputs.back().rows.emplace_back(0, first + r);
      }
    }
  }
  return m;
}

std::vector<ExpertMove> gather_experts(const SafetensorsFile& f, const std::vector<QuantizedPair>& pairs) {
  std::map<std::string, Layer> layers;
  for (const QuantizedPair& p : pairs) {
    const std::optional<ExpertWeight> w = expert_weight(p.output);
    if (!w || !is_mxfp4(held_scheme(p)) || p.form == PairForm::blocks || p.shape.size() != 2) continue;
    // A layer with expert i holds i + 1 experts of up to three tensors each: an index past that many pairs cannot be
    // a complete layer, and would make the table below as large as the number in its name.
    if (w->expert >= pairs.size()) {
      incomplete(f, w->prefix,
                 cat(p.output, " has expert index ", w->expert, ", but the checkpoint holds only ", pairs.size(),
                     " quantized tensors"));
    }
    Layer& layer = layers[w->prefix];
    if (layer.experts.size() <= w->expert) layer.experts.resize(w->expert + 1, {nullptr, nullptr, nullptr});
    layer.experts[w->expert][w->proj] = &p;
  }
  std::vector<ExpertMove> moves;
  for (const auto& [prefix, layer] : layers) {
    for (ExpertMove& m : gather_layer(f, prefix, layer)) moves.push_back(std::move(m));
  }
  return moves;
}

void move_rows(const SafetensorsFile& f, const ExpertMove& m, const MovedTensor& out, std::vector<std::uint8_t>& codes,
               std::vector<std::uint8_t>& scales) {
  const std::uint64_t code_row = m.cols / 2, scale_row = m.cols / 32;
  std::vector<std::span<const std::uint8_t>> from_codes, from_scales;
  for (const QuantizedPair* p : m.sources) {
    const SafetensorsTensor& w = *f.find(p->weight);
    const SafetensorsTensor& s = *f.find(p->scale);
    const auto rows = static_cast<std::uint64_t>(p->shape[0]);
    from_codes.push_back(bytes_u8(f.bytes(w)));
    from_scales.push_back(bytes_u8(f.bytes(s)));
    if (from_codes.back().size() != rows * code_row || from_scales.back().size() != rows * scale_row) {
      throw IoError(IoErrc::size_mismatch, f.path(), p->weight,
                    cat("codes or scales are not [", rows, ", ", code_row, "] and [", rows, ", ", scale_row,
                        "] bytes: not MXFP4 packed two per byte"));
    }
  }
  codes.resize(out.rows.size() * code_row);
  scales.resize(out.rows.size() * scale_row);
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const auto [src, r] = out.rows[i];
    std::copy_n(from_codes[src].data() + r * code_row, code_row, codes.data() + i * code_row);
    std::copy_n(from_scales[src].data() + r * scale_row, scale_row, scales.data() + i * scale_row);
  }
}

}  // namespace mf::io::detail
