// minifloat kv: what each KV-cache entry format costs per token, in bytes and in error (docs/spec.md#kv).
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
};

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 20;

std::vector<KvFormat> format_list_from(const std::string& list) {
  if (list == "all") {
    return {KvFormat::fp4_e4m3_16, KvFormat::mxfp8,      KvFormat::v4_mixed,
            KvFormat::v4_nvfp4,    KvFormat::mxfp6_e3m2, KvFormat::mxfp6_e2m3};
  }
  std::vector<KvFormat> out;
  for (std::string_view rest = list; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    try {
      out.push_back(kv_format_named(rest.substr(0, comma)));
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("--format: {}", e.what()));
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (out.empty()) throw UsageError("--format: give a KV format or 'all'");
  return out;
}

// The tokens to measure: the rows of a tensor whose last dimension is 512, or normal(0, sigma) values.
std::vector<float> input_values(const Args& a, std::string& source) {
  if (!a.in.empty()) {
    const std::vector<io::FloatTensor> ts = io::read_float_tensors(a.in, a.tensor);
    if (ts.size() != 1) {
      throw UsageError(fmt::format("{}: {} floating tensors; choose one with --tensor", a.in, ts.size()));
    }
    const io::FloatTensor& t = ts.front();
    if (t.shape.empty() || t.shape.back() != kKvValues) {
      throw UsageError(fmt::format("{}: tensor '{}' [{}] does not fit KV entries of [tokens, {}]", a.in, t.name,
                                   join_numbers(t.shape), kKvValues));
    }
    source = fmt::format("{} tokens of {} '{}'", t.values.size() / kKvValues, a.in, t.name);
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
  std::vector<float> x(static_cast<std::size_t>(a.tokens * kKvValues));
  for (auto& v : x) v = static_cast<float>(d(rng));
  source = fmt::format("{} tokens of normal(0, {}), seed {}", a.tokens, shortest(a.sigma), a.seed);
  return x;
}

nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(shortest(x)); }

std::string pct(double f) { return fmt::format("{:.3g}%", 100 * f); }

void run(const Args& a) {
  const std::vector<KvFormat> formats = format_list_from(a.formats);
  std::string source;
  const std::vector<float> x = input_values(a, source);
  nlohmann::json out{{"values_per_token", kKvValues}, {"source", source}, {"bf16_bytes_per_token", 2 * kKvValues}};
  std::string text = fmt::format("KV-cache entries of {} values: {}\n\n", kKvValues, source);
  text += fmt::format("{:<12}  {:>11}  {:>7}  {:>8}  {:>10}  {:>9}  {:>9}\n", "format", "bytes/token", "vs bf16",
                      "SQNR dB", "MSE", "mean rel", "|err|/|x|");
  for (const KvFormat f : formats) {
    const KvReport r = kv_report(f, x);
    const ErrorStats& e = r.error;
    text +=
        fmt::format("{:<12}  {:>11}  {:>6.3f}x  {:>8.2f}  {:>10.3g}  {:>9}  {:>9}\n", to_string(f), r.bytes_per_token,
                    r.compression, e.sqnr_db, e.mse, pct(e.mean_rel_error), pct(e.mean_abs_error_ratio));
    out["formats"].push_back({{"format", to_string(f)},
                              {"bytes_per_token", r.bytes_per_token},
                              {"compression_vs_bf16", r.compression},
                              {"tokens", r.tokens},
                              {"stats",
                               {{"count", e.count},
                                {"nonfinite", e.nonfinite},
                                {"mse", number(e.mse)},
                                {"sqnr_db", number(e.sqnr_db)},
                                {"mean_rel_error", number(e.mean_rel_error)},
                                {"max_rel_error", number(e.max_rel_error)},
                                {"mean_abs_error_ratio", number(e.mean_abs_error_ratio)},
                                {"zeroed_fraction", number(e.zeroed_fraction)}}}});
  }
  write_stdout(a.json ? out.dump(2) + "\n" : text);
}

}  // namespace

void register_kv(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("kv", "KV-cache entry formats: bytes per token and round-trip error");
  sub->add_option("--format", a->formats,
                  "fp4-e4m3-16, mxfp8, v4-mixed, v4-nvfp4, mxfp6-e3m2, mxfp6-e2m3, a comma-separated list, or all")
      ->capture_default_str();
  sub->add_option("IN", a->in, ".npy or .safetensors tensor of shape [..., 512] (default: random tokens)");
  sub->add_option("--tensor", a->tensor, "the tensor of a .safetensors input");
  sub->add_option("--tokens", a->tokens, "random tokens to draw")->capture_default_str();
  sub->add_option("--sigma", a->sigma, "standard deviation of the random values")->capture_default_str();
  sub->add_option("--seed", a->seed, "seed of the random values")->capture_default_str();
  sub->add_flag("--json", a->json, "JSON output");
  sub->callback([a] { run(*a); });
}

}  // namespace mf::cli
