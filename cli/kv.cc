// minifloat kv: what each KV-cache entry format costs per token (or, for vLLM's NVFP4 cache, per head vector), in
// bytes and in error (docs/spec.md#kv, docs/kv.md#vllm-nvfp4).
#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/kv.h"
#include "minifloat/kv_vllm.h"
#include "minifloat/tensor_file.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct Args {
  std::string formats = "all";
  std::string in, tensor;
  std::int64_t tokens = 256;
  double sigma = 1.0;
  unsigned long long seed = 0;
  bool json = false;
  int head_dim = 128;         // vllm-* formats: values per entry
  double scale = 1.0;         // vllm-* formats: the per-tensor scale (vLLM's k_scale / v_scale)
  bool vllm_options = false;  // --head-dim or --scale given
};

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 20;

// The formats asked for: the 512-value entries, or vLLM's per-head ones (not both in one run: the inputs differ).
struct FormatList {
  std::vector<KvFormat> latent;
  std::vector<VllmKvFormat> vllm;
};

FormatList format_list_from(const std::string& list) {
  if (list == "all") {
    return {{KvFormat::fp4_e4m3_16, KvFormat::mxfp8, KvFormat::v4_mixed, KvFormat::v4_nvfp4, KvFormat::mxfp6_e3m2,
             KvFormat::mxfp6_e2m3},
            {}};
  }
  FormatList out;
  for (std::string_view rest = list; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    try {
      if (name.starts_with("vllm-")) {
        out.vllm.push_back(vllm_kv_format_named(name));
      } else {
        out.latent.push_back(kv_format_named(name));
      }
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("--format: {}", e.what()));
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (out.latent.empty() && out.vllm.empty()) throw UsageError("--format: give a KV format or 'all'");
  if (!out.latent.empty() && !out.vllm.empty()) {
    throw UsageError(
        "--format: the vllm-* formats (one head vector per entry) and the 512-value formats are "
        "measured in separate runs");
  }
  return out;
}

// The entries to measure: the rows of a tensor whose last dimension is `width` (512, or head_dim for vllm-*), or
// normal(0, sigma) values.
std::vector<float> input_values(const Args& a, std::int64_t width, std::string& source) {
  if (!a.in.empty()) {
    const std::vector<io::FloatTensor> ts = io::read_float_tensors(a.in, a.tensor);
    if (ts.size() != 1) {
      throw UsageError(fmt::format("{}: {} floating tensors; choose one with --tensor", a.in, ts.size()));
    }
    const io::FloatTensor& t = ts.front();
    if (t.shape.empty() || t.shape.back() != width) {
      throw UsageError(fmt::format("{}: tensor '{}' [{}] does not fit KV entries of [tokens, {}]", a.in, t.name,
                                   join_numbers(t.shape), width));
    }
    source = fmt::format("{} {} of {} '{}'", t.values.size() / static_cast<std::size_t>(width),
                         width == kKvValues ? "tokens" : "vectors", a.in, t.name);
    return t.values;
  }
  if (a.tokens < 1 || a.tokens > kMaxTokens) {
    throw UsageError(fmt::format("--tokens must be 1 to {}, not {}", kMaxTokens, a.tokens));
  }
  if (!(a.sigma > 0) || !std::isfinite(a.sigma)) {
    throw UsageError(fmt::format("--sigma must be a positive finite number, not {}", shortest(a.sigma)));
  }
  std::mt19937_64 rng(a.seed);
  std::normal_distribution<double> d(0, a.sigma);
  std::vector<float> x(static_cast<std::size_t>(a.tokens * width));
  for (auto& v : x) v = static_cast<float>(d(rng));
  source = fmt::format("{} {} of normal(0, {}), seed {}", a.tokens, width == kKvValues ? "tokens" : "vectors",
                       shortest(a.sigma), a.seed);
  return x;
}

nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(shortest(x)); }

std::string pct(double f) { return fmt::format("{:.3g}%", 100 * f); }

nlohmann::json stats_json(const ErrorStats& e) {
  return {{"count", e.count},
          {"nonfinite", e.nonfinite},
          {"mse", number(e.mse)},
          {"sqnr_db", number(e.sqnr_db)},
          {"mean_rel_error", number(e.mean_rel_error)},
          {"max_rel_error", number(e.max_rel_error)},
          {"mean_abs_error_ratio", number(e.mean_abs_error_ratio)},
          {"zeroed_fraction", number(e.zeroed_fraction)}};
}

std::string table_header(std::string_view per) {
  return fmt::format("{:<18}  {:>11}  {:>7}  {:>8}  {:>10}  {:>9}  {:>9}\n", "format", fmt::format("bytes/{}", per),
                     "vs bf16", "SQNR dB", "MSE", "mean rel", "|err|/|x|");
}

std::string table_row(std::string_view format, int bytes, double compression, const ErrorStats& e) {
  return fmt::format("{:<18}  {:>11}  {:>6.3f}x  {:>8.2f}  {:>10.3g}  {:>9}  {:>9}\n", format, bytes, compression,
                     e.sqnr_db, e.mse, pct(e.mean_rel_error), pct(e.mean_abs_error_ratio));
}

// vLLM's NVFP4 entries: one head vector of head_dim values each, with the given per-tensor scale.
void run_vllm(const Args& a, const std::vector<VllmKvFormat>& formats) {
  if (a.head_dim < 16 || a.head_dim % 16 != 0 || a.head_dim > 4096) {
    throw UsageError(fmt::format("--head-dim must be a multiple of 16 from 16 to 4096, not {}", a.head_dim));
  }
  if (!(a.scale > 0) || !std::isfinite(static_cast<float>(a.scale))) {
    throw UsageError(fmt::format("--scale must be a finite per-tensor scale > 0, not {}", shortest(a.scale)));
  }
  const float scale = static_cast<float>(a.scale);
  std::string source;
  const std::vector<float> x = input_values(a, a.head_dim, source);
  nlohmann::json out{
      {"head_dim", a.head_dim}, {"scale", scale}, {"source", source}, {"bf16_bytes_per_vector", 2 * a.head_dim}};
  std::string text = fmt::format("vLLM NVFP4 KV entries of head_dim {}, per-tensor scale {}: {}\n\n", a.head_dim,
                                 shortest(scale), source);
  text += table_header("vector");
  for (const VllmKvFormat f : formats) {
    const VllmKvReport r = vllm_kv_report(f, a.head_dim, x, scale);
    text += table_row(to_string(f), r.bytes_per_vector, r.compression, r.error);
    out["formats"].push_back({{"format", to_string(f)},
                              {"bytes_per_vector", r.bytes_per_vector},
                              {"compression_vs_bf16", r.compression},
                              {"vectors", r.vectors},
                              {"stats", stats_json(r.error)}});
  }
  write_stdout(a.json ? out.dump(2) + "\n" : text);
}

void run(const Args& a) {
  const FormatList formats = format_list_from(a.formats);
  if (!formats.vllm.empty()) return run_vllm(a, formats.vllm);
  if (a.vllm_options) throw UsageError("--head-dim and --scale apply to the vllm-* formats only");
  std::string source;
  const std::vector<float> x = input_values(a, kKvValues, source);
  nlohmann::json out{{"values_per_token", kKvValues}, {"source", source}, {"bf16_bytes_per_token", 2 * kKvValues}};
  std::string text = fmt::format("KV-cache entries of {} values: {}\n\n", kKvValues, source);
  text += fmt::format("{:<12}  {:>11}  {:>7}  {:>8}  {:>10}  {:>9}  {:>9}\n", "format", "bytes/token", "vs bf16",
                      "SQNR dB", "MSE", "mean rel", "|err|/|x|");
  for (const KvFormat f : formats.latent) {
    const KvReport r = kv_report(f, x);
    const ErrorStats& e = r.error;
    text +=
        fmt::format("{:<12}  {:>11}  {:>6.3f}x  {:>8.2f}  {:>10.3g}  {:>9}  {:>9}\n", to_string(f), r.bytes_per_token,
                    r.compression, e.sqnr_db, e.mse, pct(e.mean_rel_error), pct(e.mean_abs_error_ratio));
    out["formats"].push_back({{"format", to_string(f)},
                              {"bytes_per_token", r.bytes_per_token},
                              {"compression_vs_bf16", r.compression},
                              {"tokens", r.tokens},
                              {"stats", stats_json(e)}});
  }
  write_stdout(a.json ? out.dump(2) + "\n" : text);
}

}  // namespace

void register_kv(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("kv", "KV-cache entry formats: bytes per token and round-trip error");
  sub->add_option("--format", a->formats,
                  "fp4-e4m3-16, mxfp8, v4-mixed, v4-nvfp4, mxfp6-e3m2, mxfp6-e2m3, a comma-separated list, or all; "
                  "or vLLM's per-head NVFP4 cache: vllm-nvfp4, vllm-nvfp4-4over6")
      ->capture_default_str();
  sub->add_option("IN", a->in,
                  ".npy or .safetensors tensor of shape [..., 512] ([..., head_dim] for vllm-*; default: random)");
  sub->add_option("--tensor", a->tensor, "the tensor of a .safetensors input");
  sub->add_option("--tokens", a->tokens, "random tokens (vllm-*: head vectors) to draw")->capture_default_str();
  sub->add_option("--sigma", a->sigma, "standard deviation of the random values")->capture_default_str();
  sub->add_option("--seed", a->seed, "seed of the random values")->capture_default_str();
  sub->add_flag("--json", a->json, "JSON output");
  auto* head_dim = sub->add_option("--head-dim", a->head_dim, "vllm-*: values per head vector (a multiple of 16)")
                       ->capture_default_str();
  auto* scale = sub->add_option("--scale", a->scale, "vllm-*: the per-tensor scale (vLLM's k_scale / v_scale)")
                    ->capture_default_str();
  sub->callback([a, head_dim, scale] {
    a->vllm_options = head_dim->count() > 0 || scale->count() > 0;
    run(*a);
  });
}

}  // namespace mf::cli
