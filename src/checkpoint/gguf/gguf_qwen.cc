// Qwen2, Qwen3 and Qwen3-MoE for convert --format gguf, as llama.cpp's convert_hf_to_gguf writes them (Qwen2Model,
// Qwen3Model, Qwen3MoeModel; arch qwen2, qwen3, qwen3moe): config.json checked, llama.cpp's names for their tensors
// (q/k/v biases, q/k norms, the router and each expert's weights stacked per layer), and their metadata
// (gguf_models.h).
#include "../../io/file.h"
#include "gguf_models.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::optional<std::string> read_text_if_present(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  const InputFile f(p);
  const std::vector<std::byte> bytes = f.read(0, f.size(), "README");
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string lowered(std::string s) {
  for (char& ch : s) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return s;
}

// Qwen2Model._try_set_pooling_type and Qwen3Model's reranker head write keys and tensors of embedding and reranking
// models: those are refused rather than written as a plain language model.
void check_plain_lm(const Json& c, const fs::path& file, GgufArch arch) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  std::error_code ec;
  if (fs::is_regular_file(dir / "modules.json", ec)) {
    gguf_unsupported(dir / "modules.json",
                     "a sentence-transformers model (pooling): --format gguf writes causal language models only");
  }
  if (c.contains("classifier_pooling")) gguf_unsupported(file, "'classifier_pooling': a classifier, not written");
  if (arch != GgufArch::qwen3) return;
  // Qwen3Model._is_qwen3_reranker's hints: the directory's name, _name_or_path, model_type, README's title.
  const std::string hint = lowered(fs::weakly_canonical(dir, ec).filename().string() + " " +
                                   c.value("_name_or_path", std::string()) + " " + c.value("model_type", ""));
  bool reranker = hint.find("qwen3-reranker") != hint.npos || hint.find("qwen3-vl-reranker") != hint.npos;
  if (const std::optional<std::string> readme = read_text_if_present(dir / "README.md")) {
    const std::string r = lowered(*readme);
    reranker = reranker || r.find("# qwen3-reranker") != r.npos || r.find("# qwen3-vl-reranker") != r.npos;
  }
  if (reranker) {
    gguf_unsupported(file,
                     "a Qwen3 reranker (by its name or README): llama.cpp's converter writes its classifier "
                     "head and pooling, --format gguf does not");
  }
}

}  // namespace

GgufModel qwen_model(const Json& c, const fs::path& file, GgufArch arch) {
  check_plain_lm(c, file, arch);
  GgufModel m;
  m.arch = arch;
  m.n_layer = count_field(c, "num_hidden_layers", file);
  m.n_vocab = count_field(c, "vocab_size", file);
  m.params = text_model_params(c, file, arch);
  if (arch != GgufArch::qwen3moe) return m;
  m.n_expert = count_field(c, c.contains("num_local_experts") ? "num_local_experts" : "num_experts", file);
  m.n_ff_exp = count_field(c, "moe_intermediate_size", file);
  const std::string a(gguf_arch_name(arch));
  m.params.emplace_back(a + ".expert_feed_forward_length", GgufValue::of_u32(m.n_ff_exp));
  if (const Json* shared = find_param(c, {"shared_expert_intermediate_size"})) {
    if (!shared->is_number_unsigned() || shared->get<std::uint64_t>() > 0xFFFFFFFFu) {
      gguf_unsupported(file, "'shared_expert_intermediate_size' must be a non-negative integer below 2^32");
    }
    m.params.emplace_back(a + ".expert_shared_feed_forward_length",
                          GgufValue::of_u32(static_cast<std::uint32_t>(shared->get<std::uint64_t>())));
  }
  return m;
}

// blk.N.ffn_{gate,up,down}_exps.weight for model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight (E below
// n_expert), the expert's slot in the stacked tensor; nullopt for another name.
std::optional<std::vector<GgufName>> expert_name(std::string_view n, std::string_view rest, std::uint32_t n_expert) {
  constexpr std::string_view prefix = "mlp.experts.";
  if (!rest.starts_with(prefix)) return std::nullopt;
  rest.remove_prefix(prefix.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos || !layer_number(rest.substr(0, dot), n_expert)) return std::nullopt;
  const auto e = static_cast<std::uint32_t>(std::stoul(std::string(rest.substr(0, dot))));
  for (const std::string_view proj : {"gate", "up", "down"}) {
    if (rest.substr(dot + 1) == cat(proj, "_proj.weight")) {
      GgufName g{cat("blk.", n, ".ffn_", proj, "_exps.weight")};
      g.expert = e;
      return std::vector<GgufName>{g};
    }
  }
  return std::nullopt;
}

std::optional<std::vector<GgufName>> qwen_names(const GgufModel& m, std::string_view hf) {
  using Names = std::vector<GgufName>;
  if (hf.ends_with(".rotary_emb.inv_freq")) return Names{};
  if (hf == "model.embed_tokens.weight") return Names{{"token_embd.weight"}};
  if (hf == "model.norm.weight") return Names{{"output_norm.weight"}};
  if (hf == "lm_head.weight") return Names{{"output.weight"}};
  const auto layer = layer_part(hf, m.n_layer);
  if (!layer) return std::nullopt;
  const auto [n, rest] = *layer;
  using Modules = std::pair<std::string_view, std::string_view>;
  static constexpr Modules kAttention[] = {
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},   {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"},
  };
  static constexpr Modules kQkNorm[] = {{"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"}};
  static constexpr Modules kDense[] = {
      {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}};
  static constexpr Modules kRouter[] = {{"mlp.gate", "ffn_gate_inp"}};
  if (auto x = module_name(n, rest, kAttention)) return x;
  if (m.arch != GgufArch::qwen2) {
    if (auto x = module_name(n, rest, kQkNorm)) return x;
  }
  if (m.arch != GgufArch::qwen3moe) return module_name(n, rest, kDense);
  if (auto x = module_name(n, rest, kRouter)) return x;
  // transformers' fused experts: gate_up [E, 2 x I, H] is gate then up (Qwen2MoeModel splits it at the half)
  if (rest == "mlp.experts.gate_up_proj" || rest == "mlp.experts.gate_up_proj.weight") {
    Names out;
    for (const std::uint32_t half : {0u, 1u}) {
      GgufName g{cat("blk.", n, half == 0 ? ".ffn_gate_exps.weight" : ".ffn_up_exps.weight")};
      g.groups = m.n_expert;
      g.group_rows = 2 * m.n_ff_exp;
      g.first = half * m.n_ff_exp;
      g.count = m.n_ff_exp;
      out.push_back(g);
    }
    return out;
  }
  if (rest == "mlp.experts.down_proj" || rest == "mlp.experts.down_proj.weight") {
    return Names{{cat("blk.", n, ".ffn_down_exps.weight")}};
  }
  return expert_name(n, rest, m.n_expert);
}

}  // namespace mf::io::detail
