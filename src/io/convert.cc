// convert and dequantize: a checkpoint rewritten tensor by tensor, the tensors of all shards spread over a pool of
// workers; each output shard is filled in place (every tensor at its planned offset) in a temporary file and renamed
// whole when its last tensor is in; the index and config.json written last (or by the merge step of a job array).
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <functional>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "dialect_pairs.h"
#include "dialect_writer.h"
#include "expert_relayout.h"
#include "file.h"
#include "minifloat/bulk.h"
#include "minifloat/checkpoint_ops.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "parallel.h"
#include "tensor_values.h"

namespace mf::io {
namespace {

namespace fs = std::filesystem;
using detail::cat;
using Spec = SafetensorsWriter::Spec;

using detail::is_float;
using detail::widen;
using detail::error_of;

std::vector<std::byte> narrow(const std::vector<float>& x, bool to_bf16_out) {
  std::vector<std::byte> out(x.size() * (to_bf16_out ? 2 : 4));
  if (!to_bf16_out) {
    std::memcpy(out.data(), x.data(), out.size());
    return out;
  }
  // The bulk codec (bulk.h): encode(bf16, x) for every element, round to nearest even, NaN kept NaN.
  std::vector<std::uint16_t> h(x.size());
  encode_bulk(bf16, x, std::span<std::uint16_t>(h));
  std::memcpy(out.data(), h.data(), out.size());
  return out;
}

// Where shard `name` goes: into the directory `out`, or `out` itself for one file written to a .safetensors path.
fs::path output_path(const fs::path& out, const Checkpoint& c, const std::string& name) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out : out / name;
}

fs::path output_dir(const fs::path& out, const Checkpoint& c) {
  return out.extension() == ".safetensors" && c.shards.size() == 1 ? out.parent_path() : out;
}

fs::path real_path(const fs::path& p) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(p.empty() ? fs::path(".") : p, ec);
  return ec ? fs::absolute(p.empty() ? fs::path(".") : p) : r;
}

// a is b or lies inside it (both real paths).
bool within(const fs::path& a, const fs::path& b) {
  return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
}

// The same file: the same device and inode where both exist (hard links, bind mounts), else the same real path.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  return real_path(a) == real_path(b);
}

// One file in (IN names a .safetensors file): refused only when an output file is the input file. A directory (or index) in: OUT may not be IN, lie
// inside it, or hold it, by real path (symbolic links resolved): the input's shards would be overwritten or read back.
void refuse_overwriting_input(const fs::path& in, const Checkpoint& c, const fs::path& out) {
  std::error_code ec;
  if (!c.index_path && !fs::is_directory(in, ec)) {
    const fs::path target = output_path(out, c, c.shards[0]);
    if (same_file(target, c.shard_path(0))) {
      throw IoError(IoErrc::write_failed, out,
                    cat("OUT is the input file ", c.shard_path(0).string(), ": it would be overwritten"));
    }
    return;
  }
  const fs::path in_dir = real_path(c.directory), out_dir = real_path(output_dir(out, c));
  if (within(out_dir, in_dir) || within(in_dir, out_dir)) {
    const char* how = out_dir == in_dir ? "is" : within(out_dir, in_dir) ? "lies inside" : "holds";
    throw IoError(IoErrc::write_failed, out,
                  cat("OUT ", how, " the input checkpoint's directory ", in_dir.string(),
                      ": write to a directory outside it"));
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

// How a re-laid-out pair's block scales change: not at all, or between F32 and E8M0 (recode_scales).
enum class ScaleRecode { none, to_ue8m0, to_f32 };

// FP8 block scales between F32 (weight_scale_inv) and ue8m0: lossless both ways where every F32 scale is a power of
// two 2^-127..2^127 (its E8M0 code is the exponent + 127); any other F32 scale would be rounded, so it is an error
// naming the scale, never a silent rounding (requantizing from the unquantized model is the way to ue8m0 scales).
// The E8M0 code 0xFF is NaN, which no F32 scale of a weight means: an error too.
std::vector<std::byte> recode_scales(const SafetensorsFile& f, const QuantizedPair& p, ScaleRecode how,
                                     const std::string& target) {
  const SafetensorsTensor& t = *f.find(p.scale);
  const std::span<const std::byte> in = f.bytes(t);
  std::vector<std::byte> out;
  if (how == ScaleRecode::to_ue8m0) {
    out.resize(in.size() / 4);
    for (std::size_t i = 0; i < out.size(); ++i) {
      float v;
      std::memcpy(&v, in.data() + 4 * i, 4);
      int e = 0;
      const float m = std::isfinite(v) && v > 0 ? std::frexp(v, &e) : 0;  // v = m * 2^e, m in [0.5, 1)
      if (m != 0.5f || e - 1 < -127 || e - 1 > 127) {
        std::array<char, 32> text{};  // shortest round-trip form
        const auto end = std::to_chars(text.data(), text.data() + text.size(), v).ptr;
        throw std::invalid_argument(cat(
            f.path().string(), ": tensor '", p.scale, "' holds ", std::string_view(text.data(), end), " at index ", i,
            ", not a power of two in 2^-127..2^127: ue8m0 scales hold only those, so '", p.weight, "' cannot be "
            "re-laid out as ", target, " without rounding; requantize from the unquantized model instead (minifloat "
            "dequantize, then convert), or keep F32 scales (recipe fp8-block); nothing was written"));
      }
      out[i] = static_cast<std::byte>(e - 1 + 127);
    }
  } else {
    out.resize(in.size() * 4);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const int code = std::to_integer<int>(in[i]);
      if (code == 0xFF) {
        throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.scale, "' holds the E8M0 NaN code 0xFF at "
                                        "index ", i, ": no F32 scale of '", p.weight, "'; nothing was written"));
      }
      const float v = std::ldexp(1.0f, code - 127);  // 2^-127 is an f32 subnormal: exact
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

// One output tensor per plan entry, produced in order.
struct Step {
  const SafetensorsTensor* in;
  std::string target;            // keep, bf16, f32, a scheme name, or "dequantize"
  std::optional<Scheme> scheme;  // quantize into
  const QuantizedPair* pair = nullptr;
  std::optional<detail::WrittenKind> dialect = std::nullopt;  // --format other than minifloat: its name of the scheme
  WriteFormat format = WriteFormat::minifloat;
  bool experts = false;  // gpt-oss: a 3-D MoE expert tensor [E, in, out], quantized as [E x out, in]
  bool relayout = false;  // `pair` holds `scheme`'s codes and scales already: copied under the format's names
  float second = 0;       // relayout, two-level schemes: the second-level scale as the format stores it
  ScaleRecode recode = ScaleRecode::none;  // relayout: the block scales rewritten exactly into the target's format
  std::shared_ptr<const detail::ExpertMove> move = nullptr;  // relayout of MoE experts to or from gpt-oss's fused blocks
};

// The codes and block scales of quantized weight `name` in minifloat's own form (--format deepseek: FP4 as I8).
void own_specs(std::vector<Spec>& specs, const std::string& name, const Scheme& q, WriteFormat format,
               const std::vector<std::uint64_t>& shape) {
  const std::uint64_t rows = shape[0], cols = shape[1];
  const Format& e = *q.element.format;
  const DType code = e == e4m3 ? DType::F8_E4M3 : e == e5m2 ? DType::F8_E5M2 : e == e3m2 ? DType::F6_E3M2
                   : e == e2m3 ? DType::F6_E2M3 : DType::F4;
  const DType scale = *q.scale_format == ue8m0 ? DType::F8_E8M0 : *q.scale_format == ue4m3 ? DType::F8_E4M3 : DType::F32;
  const std::uint64_t br = static_cast<std::uint64_t>(q.block_rows), bc = static_cast<std::uint64_t>(q.block_cols);
  if (code == DType::F4 && format == WriteFormat::deepseek) {
    specs.push_back({name, DType::I8, {rows, cols / 2}});  // transformers' DeepSeek-V4: FP4 packed in int8
  } else {
    specs.push_back({name, code, shape});
  }
  specs.push_back({name + (q.tensor_scale ? "_scale" : "_scale_inv"), scale, {(rows + br - 1) / br, (cols + bc - 1) / bc}});
  if (q.tensor_scale) specs.push_back({name + "_scale_2", DType::F32, {}});
}

// A quantized weight's tensors as step `s`'s format writes them.
void weight_specs(std::vector<Spec>& specs, const Step& s, const std::string& name,
                  const std::vector<std::uint64_t>& shape) {
  if (s.dialect) {
    const std::vector<Spec> d = detail::dialect_specs(name, *s.dialect, s.format, shape[0], shape[1]);
    specs.insert(specs.end(), d.begin(), d.end());
  } else {
    own_specs(specs, name, *s.scheme, s.format, shape);
  }
}

// An expert move's outputs: gpt-oss's fused tensors, or a quantized weight per expert.
void move_specs(std::vector<Spec>& specs, const Step& s) {
  for (const detail::MovedTensor& t : s.move->outputs) {
    if (s.move->fused) {
      const std::vector<Spec> d = detail::gpt_oss_specs(t.name, t.shape[0], t.shape[1], t.shape[2]);
      specs.insert(specs.end(), d.begin(), d.end());
    } else {
      weight_specs(specs, s, t.name, t.shape);
    }
  }
}

// The output tensors of `steps`, in order; first[j]: steps[j]'s first.
std::vector<Spec> specs_of(const std::vector<Step>& steps, bool bf16_out, std::vector<std::size_t>& first) {
  std::vector<Spec> specs;
  for (const Step& s : steps) {
    first.push_back(specs.size());
    const SafetensorsTensor& t = *s.in;
    // A re-laid-out pair is written as its logical weight would be quantized.
    const std::string& name = s.relayout ? s.pair->output : t.name;
    const std::vector<std::uint64_t>& shape = s.relayout ? s.pair->output_shape : t.shape;
    if (s.move) {
      move_specs(specs, s);
    } else if (s.scheme && s.experts) {
      const std::vector<Spec> d = detail::gpt_oss_specs(t.name, t.shape[0], t.shape[1], t.shape[2]);
      specs.insert(specs.end(), d.begin(), d.end());
    } else if (s.scheme) {
      weight_specs(specs, s, name, shape);
    } else if (s.pair) {
      specs.push_back({s.pair->output, bf16_out ? DType::BF16 : DType::F32, s.pair->output_shape});
    } else if (s.target == "bf16" || s.target == "f32") {
      specs.push_back({t.name, s.target == "bf16" ? DType::BF16 : DType::F32, t.shape});
    } else {
      specs.push_back({t.name, t.dtype, t.shape});
    }
  }
  return specs;
}

// A worker's buffers, kept from one tensor to the next: fresh ones would be fresh pages, and zero-filling page
// faults were a third of a convert's system time.
struct Scratch {
  std::vector<float> x, y;
  QuantizedTensor q;
};

// x [E, in, out] as each expert's transpose [E, out, in] in `out_x` (gpt-oss stores expert rows as outputs).
void transpose_experts(const std::vector<float>& x, std::uint64_t experts, std::uint64_t in, std::uint64_t out,
                       std::vector<float>& out_x) {
  out_x.resize(x.size());
  for (std::uint64_t e = 0; e < experts; ++e) {
    const float* from = x.data() + e * in * out;
    float* to = out_x.data() + e * in * out;
    for (std::uint64_t i = 0; i < in; ++i) {
      for (std::uint64_t o = 0; o < out; ++o) to[o * in + i] = from[i * out + o];
    }
  }
}

std::span<const std::byte> bytes_of(const std::vector<std::uint8_t>& v) { return std::as_bytes(std::span(v)); }

// Step `s`'s output tensors, placed at spec `k` (and k + 1, k + 2 for a quantized pair's scales); its error row, for
// quantized targets. Safe to run for several steps of one shard at once: each writes only its own tensors.
std::optional<TensorError> produce(const SafetensorsFile& f, const Step& s, std::size_t k, SafetensorsWriter& w,
                                   bool bf16_out, int threads, Scratch& scratch) {
  const SafetensorsTensor& t = *s.in;
  std::vector<float>&x = scratch.x, &y = scratch.y;
  if (s.move) {  // whole rows of codes and scales regrouped, every byte as it was
    std::vector<std::uint8_t> codes, scales;
    for (const detail::MovedTensor& out : s.move->outputs) {
      detail::move_rows(f, *s.move, out, codes, scales);
      w.write_tensor(k++, bytes_of(codes));
      w.write_tensor(k++, bytes_of(scales));
    }
    return TensorError{s.move->reported, s.target + " re-laid out", 0, 0, 0};
  }
  if (s.relayout) {  // the stored codes and block scales are the bytes every dialect of the scheme holds
    w.write_tensor(k, f.bytes(t));
    if (s.recode == ScaleRecode::none) {
      w.write_tensor(k + 1, f.bytes(*f.find(s.pair->scale)));
    } else {
      w.write_tensor(k + 1, recode_scales(f, *s.pair, s.recode, s.target));
    }
    if (s.scheme->tensor_scale) w.write_tensor(k + 2, std::as_bytes(std::span(&s.second, 1)));
    return TensorError{s.pair->output, s.target + " re-laid out", 0, 0, 0};
  }
  if (s.scheme) {
    widen(f, t, x);
    QuantizeOptions o;
    o.pad = true;
    o.threads = threads;
    o.tensor_name = t.name;
    std::vector<std::int64_t> shape{static_cast<std::int64_t>(t.shape[0]), static_cast<std::int64_t>(t.shape[1])};
    if (s.experts) {
      transpose_experts(x, t.shape[0], t.shape[1], t.shape[2], y);
      x.swap(y);
      shape = {static_cast<std::int64_t>(t.shape[0] * t.shape[2]), static_cast<std::int64_t>(t.shape[1])};
    }
    QuantizedTensor& q = scratch.q;
    quantize(x.data(), shape, *s.scheme, o, q);
    // The packed codes and scales are the checkpoint's bytes as they are (what pair_tensors would copy).
    w.write_tensor(k, bytes_of(q.codes));
    w.write_tensor(k + 1, bytes_of(q.scales));
    if (s.scheme->tensor_scale) {
      const float second = s.dialect ? detail::second_scale_written(s.format, q.tensor_scale, t.name) : q.tensor_scale;
      w.write_tensor(k + 2, std::as_bytes(std::span(&second, 1)));
    }
    y.resize(x.size());
    dequantize(q, y.data(), threads);
    return error_of(t.name, s.target, x, y);
  }
  if (s.pair) {
    y = dequantize_pair(f, *s.pair, threads);
    w.write_tensor(k, narrow(y, bf16_out));
  } else if (s.target == "bf16" || s.target == "f32") {
    widen(f, t, x);
    w.write_tensor(k, narrow(x, s.target == "bf16"));
  } else {
    w.write_tensor(k, f.bytes(t));  // zero-copy from the mapping
  }
  return std::nullopt;
}

// A scheme target the packed layout cannot hold whole-byte rows for (odd e2m1 rows) stays as it is.
bool fits(const Scheme& s, std::uint64_t cols) {
  const int bits = s.element.bits();
  return bits == 8 || (bits == 4 && cols % 2 == 0) || (bits == 6 && cols % 4 == 0);
}

using Planner = std::function<std::vector<Step>(const SafetensorsFile&, std::vector<QuantizedPair>&)>;

// One input shard on its way to its output shard: planned when its first tensor is handed out, committed by the
// worker that finishes its last tensor, freed (mapping unmapped, writer closed) when its last job is gone.
struct ShardWork {
  std::size_t index = 0;
  SafetensorsFile f;
  std::vector<QuantizedPair> pairs;  // steps point into these and into f
  std::vector<Step> steps;
  std::vector<std::size_t> first_spec;  // steps[j]'s first output tensor
  std::unique_ptr<SafetensorsWriter> writer;
  std::size_t left = 0;  // steps not finished yet (under Run::mutex)
};

// The state a convert or dequantize shares between its workers.
class Run {
 public:
  Run(const Checkpoint& c, const fs::path& out, const ConvertOptions& o, const Planner& plan, bool bf16_out)
      : c_(c), out_(out), o_(o), plan_(plan), bf16_out_(bf16_out), workers_(detail::worker_count(o.threads)),
        rows_(c.shards.size()) {
    for (std::size_t i = 0; i < c.shards.size(); ++i) {
      if (shard_is_mine(i, o.job_index, o.job_count)) total_ += fs::file_size(c.shard_path(i));
    }
  }

  ConvertReport go() {
    detail::run_in_order(workers_, [this] { return next(); });
    // Rows in shard order, then data order, however the workers finished.
    for (std::vector<std::optional<TensorError>>& shard : rows_) {
      for (std::optional<TensorError>& row : shard) {
        if (row) report_.tensors.push_back(std::move(*row));
      }
    }
    return std::move(report_);
  }

 private:
  // Under run_in_order's lock: the next tensor of the current shard, opening and planning the next shard of this job
  // when the current one has handed out all its tensors.
  detail::Job next() {
    while (!current_ || step_ == current_->steps.size()) {
      current_.reset();
      step_ = 0;
      while (shard_ < c_.shards.size() && !shard_is_mine(shard_, o_.job_index, o_.job_count)) ++shard_;
      if (shard_ == c_.shards.size()) return {};
      current_ = open(shard_++);
    }
    std::shared_ptr<ShardWork> w = current_;
    const std::size_t j = step_++;
    return [this, w = std::move(w), j] { run_step(*w, j); };
  }

  // The shard planned, with its writer; nullptr (and progress counted) when --resume finds it done or it is empty.
  std::shared_ptr<ShardWork> open(std::size_t i) {
    auto w = std::make_shared<ShardWork>();
    w->index = i;
    w->f = read_safetensors(c_.shard_path(i));
    w->steps = plan_(w->f, w->pairs);
    const std::vector<Spec> specs = specs_of(w->steps, bf16_out_, w->first_spec);
    const fs::path target = output_path(out_, c_, c_.shards[i]);
    const std::uint64_t shard_bytes = w->f.header_size() + w->f.data_size();
    {
      const std::lock_guard lock(mutex_);
      report_.input_bytes += shard_bytes;
    }
    if (o_.resume && already_done(target, specs)) {
      const std::lock_guard lock(mutex_);
      ++report_.shards_skipped;
      report_.output_bytes += fs::file_size(target);
      advance(shard_bytes);
      return nullptr;
    }
    w->writer = std::make_unique<SafetensorsWriter>(target, specs, w->f.metadata());
    rows_[i].resize(w->steps.size());
    w->left = w->steps.size();
    if (w->left == 0) {
      commit(*w);
      return nullptr;
    }
    return w;
  }

  void run_step(ShardWork& w, std::size_t j) {
    const Step& s = w.steps[j];
    // One thread per tensor while the workers share the cores; a tensor that alone is a worker's share of the input
    // (one large tensor in a small file) takes them all, so it does not run single-threaded while the rest idle.
    std::uint64_t bytes = s.in->end - s.in->begin;
    if (s.move) {
      bytes = 0;
      for (const QuantizedPair* p : s.move->sources) bytes += w.f.find(p->weight)->end - w.f.find(p->weight)->begin;
    }
    const int inner = bytes * static_cast<std::uint64_t>(workers_) >= total_ ? workers_ : 1;
    std::unique_ptr<Scratch> scratch = take_scratch();
    rows_[w.index][j] = produce(w.f, s, w.first_spec[j], *w.writer, bf16_out_, inner, *scratch);
    give_back(std::move(scratch));
    w.f.release(*s.in);  // resident memory stays near the tensors in flight, not whole shards
    if (s.move) {
      for (const QuantizedPair* p : s.move->sources) w.f.release(*w.f.find(p->weight));
    }
    bool last = false;
    {
      const std::lock_guard lock(mutex_);
      advance(bytes);
      last = --w.left == 0;
    }
    if (last) commit(w);
  }

  void commit(ShardWork& w) {
    w.writer->commit();  // fsync and rename: outside the lock, the other workers go on
    const std::lock_guard lock(mutex_);
    report_.output_bytes += w.writer->bytes_total();
    ++report_.shards_written;
    advance(w.f.header_size());
  }

  // At most one Scratch per worker, freed with the Run (not kept by threads after it).
  std::unique_ptr<Scratch> take_scratch() {
    const std::lock_guard lock(mutex_);
    if (scratch_.empty()) return std::make_unique<Scratch>();
    std::unique_ptr<Scratch> s = std::move(scratch_.back());
    scratch_.pop_back();
    return s;
  }
  void give_back(std::unique_ptr<Scratch> s) {
    const std::lock_guard lock(mutex_);
    scratch_.push_back(std::move(s));
  }

  // Under mutex_: progress calls are serialized and `done` only grows.
  void advance(std::uint64_t bytes) {
    done_ = std::min(total_, done_ + bytes);
    if (o_.progress) o_.progress(done_, total_);
  }

  const Checkpoint& c_;
  const fs::path& out_;
  const ConvertOptions& o_;
  const Planner& plan_;
  const bool bf16_out_;
  const int workers_;
  std::vector<std::vector<std::optional<TensorError>>> rows_;  // by shard, by step; each slot written by its job
  std::shared_ptr<ShardWork> current_;                         // next() state, under run_in_order's lock
  std::size_t shard_ = 0, step_ = 0;
  std::mutex mutex_;  // report_ counters, done_, ShardWork::left, scratch_
  std::vector<std::unique_ptr<Scratch>> scratch_;
  ConvertReport report_;
  std::uint64_t total_ = 0, done_ = 0;
};

// Every shard of this job planned before anything is written, so a tensor that cannot be converted fails the command
// with no output at all (not after the shards before it were written); and every --passthrough pattern must match.
// convert (a recipe): a checkpoint labelled quantized must hold something quantized, so a one-job run in which no
// tensor gets one of the recipe's schemes (and none came quantized) is refused, naming the scheme rules that matched
// nothing.
void check_plans(const Checkpoint& c, const ConvertOptions& o, const Planner& plan, const Recipe* recipe) {
  std::vector<bool> used(o.passthrough.size(), false);
  std::vector<bool> rule_used(recipe ? recipe->rules.size() : 0, false);
  bool quantized = false;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = read_safetensors(c.shard_path(i));
    std::vector<QuantizedPair> pairs;
    for (const Step& s : plan(f, pairs)) quantized = quantized || s.scheme.has_value();
    quantized = quantized || !pairs.empty();
    for (const SafetensorsTensor& t : f.tensors()) {
      for (std::size_t k = 0; k < used.size(); ++k) used[k] = used[k] || glob_match(o.passthrough[k], t.name);
      for (std::size_t k = 0; k < rule_used.size(); ++k) {
        rule_used[k] = rule_used[k] || glob_match(recipe->rules[k].pattern, t.name);
      }
    }
  }
  const fs::path where = c.index_path.value_or(c.directory);
  for (std::size_t k = 0; k < used.size(); ++k) {
    if (!used[k] && o.job_count == 1) {
      throw IoError(IoErrc::unmatched_pattern, where, cat("--passthrough '", o.passthrough[k], "' matches no tensor"));
    }
  }
  if (recipe && !quantized && o.job_count == 1) {
    std::vector<std::string> unmatched;
    for (std::size_t k = 0; k < rule_used.size(); ++k) {
      if (!rule_used[k] && target_scheme(*recipe, recipe->rules[k].target)) {
        unmatched.push_back(cat("'", recipe->rules[k].pattern, "'"));
      }
    }
    std::string why = " (the tensors its schemes' patterns match are not 2-D float weights that fit)";
    if (!unmatched.empty()) {
      why = ": ";
      for (std::size_t k = 0; k < unmatched.size(); ++k) why += cat(k == 0 ? "" : ", ", unmatched[k]);
      why += unmatched.size() == 1 ? " matches no tensor" : " match no tensor";
    }
    throw IoError(IoErrc::unmatched_pattern, where,
                  cat("recipe ", recipe->name, " quantizes no tensor of this checkpoint", why,
                      "; nothing was written (a checkpoint labelled quantized would hold no quantized weight)"));
  }
}

ConvertReport run(const fs::path& in, const fs::path& out, const ConvertOptions& o, const Planner& plan,
                  bool bf16_out, const Recipe* recipe) {
  const Checkpoint c = open_checkpoint(in);
  refuse_overwriting_input(in, c, out);
  check_plans(c, o, plan, recipe);
  const fs::path dir = output_dir(out, c);
  fs::create_directories(dir.empty() ? "." : dir);
  std::set<std::string> mine = {"model.safetensors.index.json", "config.json"};
  if (!o.write_index) mine.clear();
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (shard_is_mine(i, o.job_index, o.job_count)) mine.insert(output_path(out, c, c.shards[i]).filename().string());
  }
  remove_stale_temps(dir.empty() ? "." : dir, mine);
  ConvertReport report = Run(c, out, o, plan, bf16_out).go();
  if (o.write_index && o.job_count == 1) merge_index(in, out, recipe, o.format);
  return report;
}

std::vector<fs::path> output_shards(const Checkpoint& c, const fs::path& out) {
  std::vector<fs::path> paths;
  for (const std::string& shard : c.shards) paths.push_back(output_path(out, c, shard));
  return paths;
}

void write_text(const fs::path& path, const std::string& text) {
  const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(text))};
  detail::write_atomically(path, pieces);
}

}  // namespace

void merge_index(const fs::path& in, const fs::path& out, const Recipe* recipe, WriteFormat format) {
  if (format == WriteFormat::gguf) throw std::invalid_argument("--format gguf writes one file: there is nothing to merge");
  const Checkpoint c = open_checkpoint(in);
  refuse_overwriting_input(in, c, out);
  const fs::path dir = output_dir(out, c);
  // One file written beside its input: the input's config.json and tokenizer are its own, never rewritten.
  std::error_code ec;
  if (!c.index_path && !fs::is_directory(in, ec) && real_path(dir) == real_path(c.directory)) return;
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
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::optional<QuantizationConfig> none;
    const bool own = format == WriteFormat::minifloat || format == WriteFormat::deepseek;  // the recipe's config
    write_text(dir / "config.json", own || recipe == nullptr
                                        ? hf_config_with_quantization(text, recipe ? recipe->hf_quantization : none)
                                        : detail::dialect_config(text, *recipe, format, output_shards(c, out)));
  }
  if (format == WriteFormat::modelopt && recipe != nullptr) {
    write_text(dir / "hf_quant_config.json", detail::modelopt_hf_quant_config(*recipe, output_shards(c, out)));
  }
  // Tokenizer, generation config and the like come along unchanged; hf_quant_config.json (ModelOpt's note of the
  // scheme) stays behind, as quantization_config does: it would describe tensors the output does not hold.
  for (const auto& e : fs::directory_iterator(c.directory.empty() ? "." : c.directory, ec)) {
    const std::string n = e.path().filename().string();
    if (!e.is_regular_file() || n.starts_with(".") || e.path().extension() == ".safetensors" || n == "config.json" ||
        n == kIndexFileName || n == "hf_quant_config.json" || fs::exists(dir / n)) {
      continue;
    }
    fs::copy_file(e.path(), dir / n, ec);
  }
}

namespace {

// In a dialect, a weight whose shape does not divide into blocks stays as it is (and is listed as unquantized): the
// readers have no rule for minifloat's padded last block (transformers infers the block size from the scale grid).
void set_dialect(Step& s, WriteFormat format, std::optional<detail::WrittenKind> kind, const SafetensorsFile& f) {
  if (format == WriteFormat::deepseek) s.format = format;  // minifloat's form, FP4 codes as I8
  if (!s.scheme || format == WriteFormat::minifloat || format == WriteFormat::deepseek) return;
  if (s.in->shape[0] % static_cast<std::uint64_t>(s.scheme->block_rows) != 0 ||
      s.in->shape[1] % static_cast<std::uint64_t>(s.scheme->block_cols) != 0) {
    s.scheme.reset();
    s.target = "keep";
    return;
  }
  detail::check_module_weight(format, f.path(), s.in->name);
  s.dialect = kind;
  s.format = format;
}

// gpt-oss quantizes the MoE experts only: the 3-D transformers parameters mlp.experts.gate_up_proj [E, H, 2I]
// (gate and up interleaved along the last dim, as gpt-oss keeps them) and mlp.experts.down_proj [E, I, H], with the
// scheme the recipe gives that name; every other tensor stays as it is (modules_to_not_convert lists them).
bool gpt_oss_expert(const SafetensorsTensor& t) {
  return t.shape.size() == 3 && is_float(t.dtype) &&
         (t.name.ends_with(".mlp.experts.gate_up_proj") || t.name.ends_with(".mlp.experts.down_proj"));
}

Step gpt_oss_step(const SafetensorsTensor& t, const Recipe& recipe, std::optional<detail::WrittenKind> kind,
                  const SafetensorsFile& f) {
  Step s{&t, "keep", std::nullopt};
  if (!gpt_oss_expert(t)) return s;
  const std::string target = recipe.target_for(t.name, 2, true);
  s.scheme = target_scheme(recipe, target);
  if (!s.scheme) return s;
  if (t.shape[1] % 32 != 0) {
    throw IoError(IoErrc::invalid_shape, f.path(), t.name,
                  cat("--format gpt-oss: the input dim ", t.shape[1], " is not whole MXFP4 blocks of 32 (transformers' "
                      "loader expects every expert quantized)"));
  }
  s.target = target;
  s.dialect = kind;
  s.format = WriteFormat::gpt_oss;
  s.experts = true;
  return s;
}

// compressed-tensors' nvfp4 global scale is checked for every tensor before anything is written.
void check_global_scales(const fs::path& in, const ConvertOptions& o, const Planner& plan) {
  const Checkpoint c = open_checkpoint(in);
  std::vector<float> x;
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = read_safetensors(c.shard_path(i));
    std::vector<QuantizedPair> pairs;
    for (const Step& s : plan(f, pairs)) {
      if (!s.scheme || !s.scheme->tensor_scale || s.relayout) continue;  // a re-laid-out pair was checked when planned
      widen(f, *s.in, x);
      detail::check_global_scale(*s.scheme, x, s.in->name);
      f.release(*s.in);
    }
  }
}

[[noreturn]] void refuse_pair(const SafetensorsFile& f, const QuantizedPair& p, const std::string& target,
                              WriteFormat format) {
  if (format == WriteFormat::gpt_oss && p.form != PairForm::blocks && !detail::expert_weight(p.output)) {
    throw std::invalid_argument(
        cat(f.path().string(), ": tensor '", p.weight, "' is already quantized (", to_string(p.form), " pair, ",
            p.scheme_name, ") but is no MoE expert: --format gpt-oss quantizes only experts (every other weight "
            "unquantized, as gpt-oss's modules_to_not_convert says), so it has no place there; dequantize it first "
            "(minifloat dequantize), or write it as minifloat, compressed-tensors, modelopt or deepseek; nothing was "
            "written"));
  }
  throw std::invalid_argument(
      cat(f.path().string(), ": tensor '", p.weight, "' is already quantized (", to_string(p.form), " pair, ",
          p.scheme_name, ") and the recipe's target for '", p.output, "' is ", target,
          ": convert re-lays out only a pair that holds the target's own codes and block scales (MXFP4, including "
          "gpt-oss's expert blocks and per-expert weights; MXFP8; NVFP4; FP8 blocks with F32 or power-of-two "
          "scales; not BF16 scales), and would otherwise copy it under names that are not those --format ",
          to_string(format), " writes; nothing was written"));
}

// A step writing `move`'s outputs in `format` (the format's names checked for each per-expert weight).
Step move_step(const SafetensorsFile& f, const QuantizedPair& first, const std::string& target, const Scheme& want,
               detail::ExpertMove move, WriteFormat format, std::optional<detail::WrittenKind> kind) {
  Step s{f.find(first.weight), target, want, &first};
  s.relayout = true;
  s.format = format;
  if (format != WriteFormat::minifloat && format != WriteFormat::deepseek && format != WriteFormat::gpt_oss) {
    for (const detail::MovedTensor& t : move.outputs) detail::check_module_weight(format, f.path(), t.name);
    s.dialect = kind;
  }
  s.move = std::make_shared<const detail::ExpertMove>(std::move(move));
  return s;
}

// gpt-oss's MXFP4 experts (a blocks pair) whose target is MXFP4: kept as they are for --format gpt-oss, else split
// into each expert's weights in the format's MXFP4 form; any other target would be a requantization: refused.
Step plan_blocks(const SafetensorsFile& f, const QuantizedPair& p, const Recipe& recipe, WriteFormat format,
                 std::optional<detail::WrittenKind> kind) {
  const std::string target = recipe.target_for(p.output, 2, true);
  const std::optional<Scheme> want = target_scheme(recipe, target);
  if (!detail::is_mxfp4(want) || !p.extras.empty()) refuse_pair(f, p, target, format);
  return move_step(f, p, target, *want, detail::split_experts(f, p, format == WriteFormat::gpt_oss), format, kind);
}

// --format gpt-oss: each layer's per-expert MXFP4 weights gathered into gpt-oss's fused blocks, one step per fused
// tensor (at its first source's place); `moved`: every source tensor but those first ones.
std::vector<Step> plan_gathers(const SafetensorsFile& f, const std::vector<QuantizedPair>& pairs, const Recipe& recipe,
                               std::set<std::string>& moved) {
  std::vector<Step> steps;
  for (detail::ExpertMove& m : detail::gather_experts(f, pairs)) {
    const std::string target = recipe.target_for(m.reported, 2, true);
    const std::optional<Scheme> want = target_scheme(recipe, target);
    for (const QuantizedPair* p : m.sources) {
      if (!detail::is_mxfp4(want) || !p->extras.empty()) refuse_pair(f, *p, target, WriteFormat::gpt_oss);
      moved.insert({p->weight, p->scale});
    }
    moved.erase(m.sources[0]->weight);
    const QuantizedPair& first = *m.sources[0];
    steps.push_back(move_step(f, first, target, *want, std::move(m), WriteFormat::gpt_oss, std::nullopt));
  }
  return steps;
}

// A pair already in IN. minifloat's own forms written as minifloat's are copied as they are, unless the recipe asks
// for the other FP8 block scale format (recode_scales). Otherwise, when the recipe's target for its weight is the very
// scheme it holds, its codes and block scales are the bytes the format
// writes (MXFP4 and MXFP8 with one E8M0 scale per 32 elements; NVFP4's e4m3 scales per 16; FP8 blocks with F32
// scales stored as F32), so they are re-laid out
// under the format's names with no detour through floats; NVFP4's second level goes over as the format stores it
// (a multiplier, or compressed-tensors' divisor), only where that is exact. Anything else is refused before anything
// is written: it would sit under another dialect's config, or need a requantization convert does not do.
std::optional<Step> plan_pair(const SafetensorsFile& f, const QuantizedPair& p, const Recipe& recipe,
                              WriteFormat format, std::optional<detail::WrittenKind> kind) {
  if (p.form == PairForm::blocks) return plan_blocks(f, p, recipe, format, kind);
  const std::string target = recipe.target_for(p.output, 2, true);
  const std::optional<Scheme> want = target_scheme(recipe, target);
  const std::optional<Scheme> held = detail::held_scheme(p);
  const DType stored = f.find(p.scale)->dtype;
  const bool alike = want && held && want->element.format == held->element.format && !want->element.is_int() &&
                     want->block_rows == held->block_rows && want->block_cols == held->block_cols &&
                     want->tensor_scale == held->tensor_scale;
  const bool same = alike && want->scale_format == held->scale_format &&
                    (want->scale_format == &ue8m0 || (want->scale_format == &ue4m3 && want->tensor_scale) ||
                     (want->scale_format == &f32 && stored == DType::F32));
  ScaleRecode recode = ScaleRecode::none;
  if (alike && !want->tensor_scale && p.form != PairForm::blocks) {
    if (want->scale_format == &ue8m0 && held->scale_format == &f32 && stored == DType::F32) recode = ScaleRecode::to_ue8m0;
    if (want->scale_format == &f32 && held->scale_format == &ue8m0 && (stored == DType::F8_E8M0 || stored == DType::U8)) {
      recode = ScaleRecode::to_f32;
    }
  }
  if (format == WriteFormat::minifloat && (p.form == PairForm::deepseek || p.form == PairForm::nvfp4) &&
      recode == ScaleRecode::none) {
    return std::nullopt;
  }
  const bool copyable = p.form != PairForm::blocks;
  const std::uint64_t rows = p.output_shape.size() == 2 ? p.output_shape[0] : 0;
  const std::uint64_t cols = p.output_shape.size() == 2 ? p.output_shape[1] : 0;
  const bool blocks = (same || recode != ScaleRecode::none) &&
                      rows % static_cast<std::uint64_t>(want->block_rows) == 0 &&
                      cols % static_cast<std::uint64_t>(want->block_cols) == 0;
  // gpt-oss holds quantized experts only, gathered into its blocks (plan_gathers) before pairs get here.
  if (!copyable || !blocks || !p.extras.empty() || format == WriteFormat::gpt_oss) refuse_pair(f, p, target, format);
  if (recode != ScaleRecode::none) recode_scales(f, p, recode, target);  // refused here, before anything is written
  Step s{f.find(p.weight), target, want, &p};
  s.relayout = true;
  s.recode = recode;
  if (want->tensor_scale) {
    const float stored = detail::pair_second_scale(f, p);
    if (p.form == PairForm::packed_global && format == WriteFormat::compressed_tensors) {
      s.second = stored;  // the divisor as it was
    } else {
      const float t = p.form == PairForm::packed_global ? detail::tensor_scale_of_global(stored, p.weight) : stored;
      s.second = format == WriteFormat::minifloat ? t : detail::second_scale_written(format, t, p.output);
    }
  }
  if (format != WriteFormat::minifloat) {
    detail::check_module_weight(format, f.path(), p.output);
    s.dialect = kind;
    s.format = format;
  }
  return s;
}

}  // namespace

ConvertReport convert_checkpoint(const fs::path& in, const fs::path& out, const Recipe& recipe,
                                 const ConvertOptions& options) {
  const WriteFormat format = options.format;
  if (format == WriteFormat::gguf) {
    throw std::invalid_argument("convert_checkpoint writes safetensors checkpoints: GGUF is convert_to_gguf's");
  }
  std::optional<detail::WrittenKind> kind;
  if (format == WriteFormat::deepseek) {
    detail::check_deepseek(recipe);  // refused before anything
  } else if (format != WriteFormat::minifloat) {
    kind = detail::recipe_kind(recipe, format);  // refused before anything
  }
  const Planner plan = [&recipe, format, kind](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    // Parts of pairs already quantized (an F32 W_scale_inv of a V3 checkpoint) are data of their weight, never
    // weights to quantize themselves.
    pairs = find_pairs(f);
    std::set<std::string> parts, relaid_scales;
    std::map<std::string, Step> relaid;  // by the pair's weight
    if (format == WriteFormat::gpt_oss) {
      for (Step& s : plan_gathers(f, pairs, recipe, relaid_scales)) relaid.emplace(s.in->name, std::move(s));
    }
    for (const QuantizedPair& p : pairs) {
      if (relaid.contains(p.weight) || relaid_scales.contains(p.weight)) continue;  // gathered
      if (std::optional<Step> s = plan_pair(f, p, recipe, format, kind)) {
        relaid.emplace(p.weight, std::move(*s));
        relaid_scales.insert({p.scale, p.tensor_scale});
        continue;
      }
      parts.insert({p.scale, p.tensor_scale});
      parts.insert(p.extras.begin(), p.extras.end());
    }
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      if (relaid_scales.contains(t.name)) continue;  // written with its codes (or another expert's)
      if (const auto it = relaid.find(t.name); it != relaid.end()) {
        steps.push_back(it->second);
        continue;
      }
      if (format == WriteFormat::gpt_oss) {
        steps.push_back(gpt_oss_step(t, recipe, kind, f));
        continue;
      }
      Step s{&t, parts.contains(t.name) ? "keep" : recipe.target_for(t.name, t.shape.size(), is_float(t.dtype)),
             std::nullopt};
      s.scheme = target_scheme(recipe, s.target);
      if (s.scheme && !fits(*s.scheme, t.shape[1])) {
        s.scheme.reset();
        s.target = "keep";
      }
      set_dialect(s, format, kind, f);
      steps.push_back(std::move(s));
    }
    return steps;
  };
  if (format == WriteFormat::compressed_tensors && kind == detail::WrittenKind::nvfp4) {
    check_global_scales(in, options, plan);
  }
  if (format == WriteFormat::gpt_oss && options.job_count == 1) {
    // A checkpoint labelled mxfp4 with nothing quantized would load as garbage: refused.
    const Checkpoint c = open_checkpoint(in);
    std::size_t experts = 0;
    for (std::size_t i = 0; i < c.shards.size(); ++i) {
      const SafetensorsFile f = read_safetensors(c.shard_path(i));
      std::vector<QuantizedPair> pairs;
      for (const Step& s : plan(f, pairs)) experts += s.experts || s.move ? 1 : 0;
    }
    if (experts == 0) {
      throw IoError(IoErrc::unmatched_pattern, c.index_path.value_or(c.directory),
                    cat("--format gpt-oss quantizes MoE experts (3-D *.mlp.experts.gate_up_proj and down_proj, as "
                        "transformers' GptOss model holds them) that recipe ", recipe.name,
                        " quantizes: none found; nothing was written"));
    }
  }
  return run(in, out, options, plan, false, &recipe);
}

namespace {

// What dequantize may never copy unchanged without being told to: a tensor whose dtype is a quantized element or
// scale format (or packed bytes), or whose name says it is a scale or a quantized part in one of the checkpoint
// dialects (W_scale_inv, W_scale, W_scale_2, weight_global_scale, input_scale, *_blocks, *_scales, weight_packed).
bool looks_quantized(const SafetensorsTensor& t) {
  switch (t.dtype) {
    case DType::F4: case DType::F6_E2M3: case DType::F6_E3M2: case DType::U8: case DType::I8:
    case DType::F8_E5M2: case DType::F8_E4M3: case DType::F8_E8M0: return true;
    default: break;
  }
  for (const char* p : {"*_scale*", "*_blocks", "*global_scale*", "*zero_point*", "*weight_packed"}) {
    if (glob_match(p, t.name)) return true;
  }
  return false;
}

// Activation and KV-cache scales (static FP8 input scales, vLLM's and ModelOpt's k_scale and v_scale): calibration
// results for quantized arithmetic, with no place in a dequantized model, so dequantize leaves them out.
bool activation_scale(const SafetensorsTensor& t) {
  if (!is_float(t.dtype)) return false;
  for (const char* suffix : {".input_scale", ".output_scale", ".k_scale", ".v_scale", ".q_scale", ".input_global_scale"}) {
    if (t.name.ends_with(suffix)) return true;
  }
  return false;
}

bool passed_through(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

[[noreturn]] void not_dequantizable(const SafetensorsFile& f, const SafetensorsTensor& t) {
  std::string shape;
  for (std::size_t i = 0; i < t.shape.size(); ++i) shape += cat(i == 0 ? "" : ", ", t.shape[i]);
  throw IoError(IoErrc::not_dequantizable, f.path(), t.name,
                cat(dtype_name(t.dtype), " [", shape, "] looks quantized (by its ",
                    is_float(t.dtype) || t.dtype == DType::F64 ? "name" : "dtype",
                    ") but is part of no pair minifloat can dequantize (W with W_scale_inv, or W_scale and "
                    "W_scale_2); nothing was written. --passthrough '",
                    t.name, "' copies it unchanged on purpose"));
}

}  // namespace

ConvertReport dequantize_checkpoint(const fs::path& in, const fs::path& out, bool bf16_out,
                                    const ConvertOptions& options) {
  const Planner plan = [&options, bf16_out](const SafetensorsFile& f, std::vector<QuantizedPair>& pairs) {
    pairs = find_pairs(f);
    std::set<std::string> parts;
    std::map<std::string, const QuantizedPair*> by_weight;
    for (const QuantizedPair& p : pairs) {
      parts.insert(p.scale);
      if (!p.tensor_scale.empty()) parts.insert(p.tensor_scale);
      parts.insert(p.extras.begin(), p.extras.end());  // input_scale and the like: no place in a plain model
      by_weight[p.weight] = &p;
    }
    std::vector<Step> steps;
    for (const SafetensorsTensor& t : f.tensors()) {
      if (parts.contains(t.name)) continue;
      Step s{&t, "keep", std::nullopt};
      if (const auto it = by_weight.find(t.name); it != by_weight.end()) {
        s.pair = it->second;
        s.target = "dequantize";
      } else if (activation_scale(t) && !passed_through(options.passthrough, t.name)) {
        continue;
      } else if (passed_through(options.passthrough, t.name)) {
        s.target = "keep";
      } else if (looks_quantized(t)) {
        not_dequantizable(f, t);
      } else if (is_float(t.dtype)) {
        s.target = bf16_out ? "bf16" : "f32";  // every float tensor in the dtype asked for
      }
      steps.push_back(std::move(s));
    }
    return steps;
  };
  return run(in, out, options, plan, bf16_out, nullptr);
}

}  // namespace mf::io
