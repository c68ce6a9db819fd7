// minifloat error: what a scheme costs on a tensor (from a file or drawn from a distribution), one row per scheme.
#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/error_report.h"
#include "minifloat/quantize.h"
#include "minifloat/tensor_file.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct Args {
  BlockFlags block;
  std::string in, tensor;
  std::string dist, shape = "1024x1024";
  double sigma = 1.0, dof = 3.0;
  unsigned long long seed = 0;
  std::string compare;
  bool json = false;
  int worst = 3;
};

// Values with standard deviation sigma (Student-t: scale sigma, `dof` degrees of freedom). std::mt19937_64 with the
// standard library's distributions: reproducible for a seed on one standard library.
std::vector<float> draw(const std::string& dist, std::int64_t n, double sigma, double dof, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> x(static_cast<std::size_t>(n));
  if (dist == "normal") {
    std::normal_distribution<double> d(0, sigma);
    for (auto& v : x) v = static_cast<float>(d(rng));
  } else if (dist == "laplace") {
    std::exponential_distribution<double> e(std::sqrt(2.0) / sigma);  // Laplace(b) has sd b * sqrt(2)
    std::bernoulli_distribution sign(0.5);
    for (auto& v : x) v = static_cast<float>(sign(rng) ? e(rng) : -e(rng));
  } else if (dist == "uniform") {
    std::uniform_real_distribution<double> d(-sigma * std::sqrt(3.0), sigma * std::sqrt(3.0));
    for (auto& v : x) v = static_cast<float>(d(rng));
  } else {
    std::student_t_distribution<double> d(dof);
    for (auto& v : x) v = static_cast<float>(sigma * d(rng));
  }
  return x;
}

std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> shape;
  std::string_view rest = text;
  if (!rest.empty() && (rest.back() == 'x' || rest.front() == 'x')) {
    throw UsageError(fmt::format("--shape '{}' is not like 256x4096", text));
  }
  while (!rest.empty()) {
    const std::size_t x = rest.find('x');
    const auto v = parse_code(rest.substr(0, x), 31);
    if (!v || *v == 0) throw UsageError(fmt::format("--shape '{}' is not like 256x4096", text));
    shape.push_back(*v);
    rest = x == std::string_view::npos ? std::string_view{} : rest.substr(x + 1);
  }
  if (shape.empty()) throw UsageError(fmt::format("--shape '{}' is not like 256x4096", text));
  return shape;
}

std::string pct(double f) { return fmt::format("{:.3g}%", 100 * f); }

// JSON has no NaN or Inf: those become the strings "nan", "inf", "-inf".
nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(shortest(x)); }

nlohmann::json stats_json(const ErrorStats& e) {
  const auto num = number;
  return {{"count", e.count},
          {"nonfinite", e.nonfinite},
          {"mse", num(e.mse)},
          {"sqnr_db", num(e.sqnr_db)},
          {"mean_rel_error", num(e.mean_rel_error)},
          {"max_rel_error", num(e.max_rel_error)},
          {"mean_abs_error_ratio", num(e.mean_abs_error_ratio)},
          {"zeroed_fraction", num(e.zeroed_fraction)},
          {"clipped_fraction", num(e.clipped_fraction)}};
}

// The tensors to measure: IN's, or one drawn from --dist with --shape.
std::vector<io::FloatTensor> input_tensors(const Args& a) {
  if (a.in.empty() == a.dist.empty())
    throw UsageError("give either IN or --dist (normal, laplace, uniform, student-t)");
  if (!a.in.empty()) return io::read_float_tensors(a.in, a.tensor);
  // The distributions' preconditions: a bad sigma or dof would be undefined behaviour, not an error.
  if (!(a.sigma > 0) || !std::isfinite(a.sigma)) {
    throw UsageError(fmt::format("--sigma must be a positive finite number, not {}", shortest(a.sigma)));
  }
  if (a.dist == "student-t" && (!(a.dof > 0) || !std::isfinite(a.dof))) {
    throw UsageError(fmt::format("--dof must be a positive finite number, not {}", shortest(a.dof)));
  }
  const auto shape = parse_shape(a.shape);
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  if (n > (std::int64_t{1} << 30)) throw UsageError("--shape: more than 2^30 values");
  std::vector<io::FloatTensor> tensors;
  tensors.push_back({a.dist, shape, draw(a.dist, n, a.sigma, a.dof, a.seed)});
  return tensors;
}

// --scheme, then each of --compare's comma-separated schemes.
std::vector<std::string> scheme_names(const Args& a) {
  std::vector<std::string> names{a.block.scheme};
  for (std::string_view rest = a.compare; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    names.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return names;
}

// One scheme's report as JSON: scheme, rule, profile, bits per value, the statistics and the worst blocks.
nlohmann::json report_json(const Scheme& s, const ErrorReport& r) {
  nlohmann::json row{{"scheme", s.name},
                     {"rule", to_string(s.rule)},
                     {"profile", to_string(s.profile)},
                     {"bits_per_value", r.bits_per_value},
                     {"stats", stats_json(r.total)}};
  for (const BlockReport& b : r.worst_blocks) {
    row["worst_blocks"].push_back({{"block_row", b.block_row},
                                   {"block_col", b.block_col},
                                   {"mse", number(b.mse)},
                                   {"max_abs_error", number(b.max_abs_error)},
                                   {"amax", b.amax},
                                   {"scale_code", b.scale_code}});
  }
  return row;
}

// rows as a text table: columns padded to their widest cell, the first two left-aligned, the rest right-aligned.
std::string table_text(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string text;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += i < 2 ? fmt::format("{:<{}}  ", r[i], width[i]) : fmt::format("{:>{}}  ", r[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

void run(const Args& a) {
  const std::vector<io::FloatTensor> tensors = input_tensors(a);
  const std::vector<std::string> names = scheme_names(a);
  nlohmann::json out;
  std::vector<std::vector<std::string>> rows{
      {"tensor", "scheme", "bits/value", "SQNR dB", "MSE", "mean rel", "max rel", "|err|/|x|", "zeroed", "clipped"}};
  for (const io::FloatTensor& t : tensors) {
    nlohmann::json tj{{"name", t.name}, {"shape", t.shape}};
    for (const std::string& name : names) {
      const Scheme s = scheme_from(a.block, name);
      const QuantizedTensor q = quantize(t.values.data(), t.shape, s, options_from(a.block, t.name));
      const ErrorReport r = error_report(t.values.data(), q, a.worst);
      const ErrorStats& e = r.total;
      rows.push_back({t.name, s.name, fmt::format("{:.4g}", r.bits_per_value), fmt::format("{:.2f}", e.sqnr_db),
                      fmt::format("{:.3g}", e.mse), pct(e.mean_rel_error), pct(e.max_rel_error),
                      pct(e.mean_abs_error_ratio), pct(e.zeroed_fraction), pct(e.clipped_fraction)});
      tj["schemes"].push_back(report_json(s, r));
    }
    out["tensors"].push_back(tj);
  }
  if (a.json) return write_stdout(out.dump(2) + "\n");
  write_stdout(table_text(rows));
}

}  // namespace

double fp4_experiment(std::uint64_t seed) {
  const std::vector<float> x = draw("normal", 128 * 128, 3.0, 0, seed);
  const std::vector<std::int64_t> shape{128, 128};
  const QuantizedTensor q = quantize(x.data(), shape, scheme_named("e2m1-1x32-ue8m0-rceil"));
  return error_report(x.data(), q, 0).total.mean_abs_error_ratio;
}

void register_error(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("error", "What a block scheme costs: MSE, SQNR, relative error, zeros, clipping");
  add_block_flags(*sub, a->block, false);
  sub->add_option("IN", a->in, ".npy or .safetensors input (or use --dist)");
  sub->add_option("--tensor", a->tensor, "only this tensor of a .safetensors input");
  sub->add_option("--dist", a->dist, "draw the input: normal, laplace, uniform or student-t")
      ->check(CLI::IsMember({"normal", "laplace", "uniform", "student-t"}));
  sub->add_option("--sigma", a->sigma, "standard deviation (student-t: scale)")->capture_default_str();
  sub->add_option("--dof", a->dof, "student-t degrees of freedom")->capture_default_str();
  sub->add_option("--shape", a->shape, "shape of the drawn tensor, RxC")->capture_default_str();
  sub->add_option("--seed", a->seed, "seed of the drawn tensor")->capture_default_str();
  sub->add_option("--compare", a->compare, "more schemes, comma-separated, one row each");
  sub->add_option("--worst", a->worst, "worst blocks listed per scheme in --json")->capture_default_str();
  sub->add_flag("--json", a->json, "JSON output");
  sub->callback([a] { run(*a); });
}

}  // namespace mf::cli
