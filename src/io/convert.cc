// convert and dequantize: a checkpoint rewritten shard by shard, tensor by tensor, each output shard streamed to a
// temporary file and renamed whole; the index and config.json written last (or by the merge step of a job array).
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <cstring>
#include <set>

#include "file.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/quantize.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using Spec = SafetensorsWriter::Spec;

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Exact widening; bf16 and f32 take the direct bit paths (the generic decode is the slow part of a convert otherwise).
std::vector<float> widen(const SafetensorsFile& f, const SafetensorsTensor& t) {
  const std::span<const std::byte> b = f.bytes(t);
  std::vector<float> out(b.size() / (t.dtype == DType::F32 ? 4 : 2));
  if (t.dtype == DType::F32) {
    std::memcpy(out.data(), b.data(), b.size());
  } else if (t.dtype == DType::BF16) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h = 0;
      std::memcpy(&h, b.data() + 2 * i, 2);
      out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
    }
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h = 0;
      std::memcpy(&h, b.data() + 2 * i, 2);
      out[i] = decode(f16, h);
    }
  }
  return out;
}

// f32 -> bf16 with round to nearest even, overflow to Inf, NaN to 0x7FC0 with its sign: encode(bf16, x) (SPEC 2)
// without its generality.
std::uint16_t to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

std::vector<std::byte> narrow(const std::vector<float>& x, bool to_bf16_out) {
  std::vector<std::byte> out(x.size() * (to_bf16_out ? 2 : 4));
  if (!to_bf16_out) {
    std::memcpy(out.data(), x.data(), out.size());
    return out;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint16_t h = to_bf16(x[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// Where shard `name` goes: into the directory `out`, or `out` itself for one file written to a .safetensors path.
fs::path output_path(const fs::path& out, const Checkpoint& c, const std::string& name) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out : out / name;
}

fs::path output_dir(const fs::path& out, const Checkpoint& c) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out.parent_path() : out;
}

void refuse_overwriting_input(const Checkpoint& c, const fs::path& out_dir) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(c.directory.empty() ? "." : c.directory, ec);
  const fs::path b = fs::weakly_canonical(out_dir.empty() ? "." : out_dir, ec);
  if (a == b) {
    throw IoError(IoErrc::write_failed, out_dir,
                  "OUT may not be IN (nor the input's directory): the input's shards would be overwritten");
  }
}

// Temporary files of a killed run for the files this job writes (`names`): never valid, always safe to remove.
// Only this job's: the other jobs of a job array write their own shards into the same directory at the same time.
void remove_stale_temps(const fs::path& dir, const std::set<std::string>& names) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const std::size_t tmp = n.find(".tmp-");
    if (n.starts_with(".") && tmp != std::string::npos && names.contains(n.substr(1, tmp - 1))) {
      fs::remove(e.path(), ec);
    }
  }
}

// A shard written by an earlier run: it parses with every check and holds exactly the planned tensors.
bool already_done(const fs::path& path, const std::vector<Spec>& specs) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return false;
  try {
    const SafetensorsFile f = read_safetensors(path);
    std::set<std::string> names;
    for (const SafetensorsTensor& t : f.tensors()) names.insert(t.name);
    if (names.size() != specs.size()) return false;
    for (const Spec& s : specs) {
      const SafetensorsTensor* t = f.find(s.name);
      if (t == nullptr || t->dtype != s.dtype || t->shape != s.shape) return false;
    }
    return true;
  } catch (const IoError&) {
    return false;
  }
}

// One output tensor per plan entry, produced in order.
struct Step {
  const SafetensorsTensor* in;
  std::string target;            // keep, bf16, f32, a scheme name, or "dequantize"
  std::optional<Scheme> scheme;  // quantize into
  const QuantizedPair* pair = nullptr;
};

std::vector<Spec> specs_of(const std::vector<Step>& steps, bool bf16_out) {
  std::vector<Spec> specs;
  for (const Step& s : steps) {
    const SafetensorsTensor& t = *s.in;
    if (s.scheme) {
      const Scheme& q = *s.scheme;
      const std::uint64_t rows = t.shape[0], cols = t.shape[1];
      const Format& e = *q.element.format;
      const DType code = e == e4m3 ? DType::F8_E4M3 : e == e5m2 ? DType::F8_E5M2 : e == e3m2 ? DType::F6_E3M2
                       : e == e2m3 ? DType::F6_E2M3 : DType::F4;
      const DType scale = *q.scale_format == ue8m0 ? DType::F8_E8M0 : *q.scale_format == ue4m3 ? DType::F8_E4M3 : DType::F32;
      const std::uint64_t br = static_cast<std::uint64_t>(q.block_rows), bc = static_cast<std::uint64_t>(q.block_cols);
      specs.push_back({t.name, code, t.shape});
      specs.push_back({t.name + (q.tensor_scale ? "_scale" : "_scale_inv"), scale, {(rows + br - 1) / br, (cols + bc - 1) / bc}});
      if (q.tensor_scale) specs.push_back({t.name + "_scale_2", DType::F32, {}});
    } else if (s.pair) {
      specs.push_back({t.name, bf16_out ? DType::BF16 : DType::F32,
                       {static_cast<std::uint64_t>(s.pair->shape[0]), static_cast<std::uint64_t>(s.pair->shape[1])}});
    } else if (s.target == "bf16" || s.target == "f32") {
      specs.push_back({t.name, s.target == "bf16" ? DType::BF16 : DType::F32, t.shape});
    } else {
      specs.push_back({t.name, t.dtype, t.shape});
    }
  }
  return specs;
}

// Four independent partial sums, so the loop is not one long dependency chain (a third of a convert otherwise).
TensorError error_of(const std::string& name, const std::string& target, const std::vector<float>& x,
                     const std::vector<float>& y) {
  double se[4] = {0, 0, 0, 0}, sx[4] = {0, 0, 0, 0};
  float max_abs = 0;
  std::size_t i = 0;
  for (; i + 4 <= x.size(); i += 4) {
    for (std::size_t k = 0; k < 4; ++k) {
      const float d = y[i + k] - x[i + k];  // exact enough: |d| is one rounding step of a narrow format
      se[k] += static_cast<double>(d) * d;
      sx[k] += static_cast<double>(x[i + k]) * x[i + k];
      max_abs = std::max(max_abs, std::fabs(d));
    }
  }
  for (; i < x.size(); ++i) {
    const float d = y[i] - x[i];
    se[0] += static_cast<double>(d) * d;
    sx[0] += static_cast<double>(x[i]) * x[i];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  const double e = se[0] + se[1] + se[2] + se[3], s = sx[0] + sx[1] + sx[2] + sx[3];
  const double n = x.empty() ? 1.0 : static_cast<double>(x.size());
  return {name, target, std::sqrt(e / n), max_abs, s > 0 ? std::sqrt(e / s) : 0.0};
}

void produce(const SafetensorsFile& f, const Step& s, SafetensorsWriter& w, bool bf16_out, int threads,
             ConvertReport& report) {
  const SafetensorsTensor& t = *s.in;
  if (s.scheme) {
    const std::vector<float> x = widen(f, t);
    QuantizeOptions o;
    o.pad = true;
    o.threads = threads;
    o.tensor_name = t.name;
    const std::vector<std::int64_t> shape{static_cast<std::int64_t>(t.shape[0]), static_cast<std::int64_t>(t.shape[1])};
    const QuantizedTensor q = quantize(x.data(), shape, *s.scheme, o);
    for (const OwnedTensor& part : pair_tensors(t.name, q)) w.write(part.data);
    std::vector<float> y(x.size());
    dequantize(q, y.data(), threads);
    report.tensors.push_back(error_of(t.name, s.target, x, y));
  } else if (s.pair) {
    const QuantizedTensor q = read_pair(f, *s.pair);
    std::vector<float> y(static_cast<std::size_t>(q.count()));
    dequantize(q, y.data(), threads);
    w.write(narrow(y, bf16_out));
  } else if (s.target == "bf16" || s.target == "f32") {
    w.write(narrow(widen(f, t), s.target == "bf16"));
  } else {
    w.write(f.bytes(t));  // zero-copy from the mapping
  }
}

// A scheme target the packed layout cannot hold whole-byte rows for (odd e2m1 rows) stays as it is.
bool fits(const Scheme& s, std::uint64_t cols) {
  const int bits = s.element.bits();
  return bits == 8 || (bits == 4 && cols % 2 == 0) || (bits == 6 && cols % 4 == 0);
}

using Planner = std::function<std::vector<Step>(const SafetensorsFile&, std::vector<QuantizedPair>&)>;

ConvertReport run(const fs::path& in, const fs::path& out, const ConvertOptions& o, const Planner& plan,
                  bool bf16_out, const Recipe* recipe) {
  const Checkpoint c = open_checkpoint(in);
  const fs::path dir = output_dir(out, c);
  refuse_overwriting_input(c, dir);
  fs::create_directories(dir.empty() ? "." : dir);
  std::set<std::string> mine = {"model.safetensors.index.json", "config.json"};
  if (!o.write_index) mine.clear();
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (shard_is_mine(i, o.job_index, o.job_count)) mine.insert(output_path(out, c, c.shards[i]).filename().string());
  }
  remove_stale_temps(dir.empty() ? "." : dir, mine);
  ConvertReport report;
  std::uint64_t total = 0, done = 0;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (shard_is_mine(i, o.job_index, o.job_count)) total += fs::file_size(c.shard_path(i));
  }
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = read_safetensors(c.shard_path(i));
    std::vector<QuantizedPair> pairs;
    const std::vector<Step> steps = plan(f, pairs);
    const std::vector<Spec> specs = specs_of(steps, bf16_out);
    const fs::path target = output_path(out, c, c.shards[i]);
    report.input_bytes += f.header_size() + f.data_size();
    if (o.resume && already_done(target, specs)) {
      ++report.shards_skipped;
      report.output_bytes += fs::file_size(target);
      done += f.header_size() + f.data_size();
      if (o.progress) o.progress(done, total);
      continue;
    }
    SafetensorsWriter w(target, specs, f.metadata());
    for (const Step& s : steps) {
      produce(f, s, w, bf16_out, o.threads, report);
      f.release(*s.in);  // resident memory stays near one tensor, not one shard
      done += s.in->end - s.in->begin;
      if (o.progress) o.progress(done, total);
    }
    w.commit();
    done = std::min(total, done + f.header_size());
    report.output_bytes += w.bytes_total();
    ++report.shards_written;
  }
  if (o.write_index && o.job_count == 1) merge_index(in, out, recipe);
  return report;
}

}  // namespace

void merge_index(const fs::path& in, const fs::path& out, const Recipe* recipe) {
  const Checkpoint c = open_checkpoint(in);
  const fs::path dir = output_dir(out, c);
  refuse_overwriting_input(c, dir);
  if (c.index_path) {
    CheckpointIndex index;
    index.total_size = 0;
    for (const std::string& shard : c.shards) {
      const fs::path p = output_path(out, c, shard);
      std::error_code ec;
      if (!fs::exists(p, ec)) throw IoError(IoErrc::open_failed, p, "shard not written yet: run the remaining jobs");
      const SafetensorsFile f = read_safetensors(p);
      for (const SafetensorsTensor& t : f.tensors()) index.weight_map[t.name] = shard;
      *index.total_size += f.data_size();
    }
    write_index(dir / kIndexFileName, index);
  }
  if (const auto config = c.config_path()) {
    const detail::InputFile file(*config);
    const std::vector<std::byte> bytes = file.read(0, file.size(), "config");
    const std::string text = hf_config_with_quantization(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
        recipe ? recipe->hf_quantization : std::nullopt);
    const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(text))};
    detail::write_atomically(dir / "config.json", pieces);
  }
  // Tokenizer, generation config and the like come along unchanged.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(c.directory.empty() ? "." : c.directory, ec)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.starts_with(".") || e.path().extension() == ".safetensors" || n == "config.json" ||
        n == kIndexFileName || fs::exists(dir / n)) {
      continue;
    }
    fs::copy_file(e.path(), dir / n, ec);
  }
}

ConvertReport convert_checkpoint(const fs::path& in, const fs::path& out, const Recipe& recipe,
                                 const ConvertOptions& options) {
  const Planner plan = [&recipe](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    // Parts of pairs already quantized (an F32 W_scale_inv of a V3 checkpoint) are data of their weight, never
    // weights to quantize themselves.
    pairs = find_pairs(f);
    std::set<std::string> parts;
    for (const QuantizedPair& p : pairs) parts.insert({p.scale, p.tensor_scale});
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      Step s{&t, parts.contains(t.name) ? "keep" : recipe.target_for(t.name, t.shape.size(), is_float(t.dtype)),
             std::nullopt};
      s.scheme = target_scheme(recipe, s.target);
      if (s.scheme && !fits(*s.scheme, t.shape[1])) {
        s.scheme.reset();
        s.target = "keep";
      }
      steps.push_back(std::move(s));
    }
    return steps;
  };
  return run(in, out, options, plan, false, &recipe);
}

ConvertReport dequantize_checkpoint(const fs::path& in, const fs::path& out, bool bf16_out,
                                    const ConvertOptions& options) {
  const Planner plan = [](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    pairs = find_pairs(f);
    std::set<std::string> parts;
    std::map<std::string, const QuantizedPair*> by_weight;
    for (const QuantizedPair& p : pairs) {
      parts.insert(p.scale);
      if (!p.tensor_scale.empty()) parts.insert(p.tensor_scale);
      by_weight[p.weight] = &p;
    }
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      if (parts.contains(t.name)) continue;
      Step s{&t, "keep", std::nullopt};
      if (const auto it = by_weight.find(t.name); it != by_weight.end()) {
        s.pair = it->second;
        s.target = "dequantize";
      }
      steps.push_back(std::move(s));
    }
    return steps;
  };
  return run(in, out, options, plan, bf16_out, nullptr);
}

}  // namespace mf::io
