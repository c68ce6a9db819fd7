// The engine convert and dequantize share (convert_run.h): a checkpoint rewritten tensor by tensor, the tensors of
// all shards spread over a pool of workers; each output shard is filled in place (every tensor at its planned offset)
// in a temporary file and renamed whole when its last tensor is in; the index and config.json written last (or by
// the merge step of a job array).
#include "convert_run.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>

#include "convert_paths.h"
#include "deepseek_release.h"
#include "lossless_convert.h"
#include "../io/file.h"
#include "minifloat/bulk.h"
#include "minifloat/codec.h"
#include "minifloat/quantize.h"
#include "parallel.h"
#include "quantization_rule.h"
#include "tensor_values.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Spec = SafetensorsWriter::Spec;

// FP8 block scales between F32 (weight_scale_inv) and ue8m0: lossless both ways where every F32 scale is a power of
// two 2^-127..2^127 (its E8M0 code is the exponent + 127); any other F32 scale would be rounded, so it is an error
// naming the scale, never a silent rounding (requantizing from the unquantized model is the way to ue8m0 scales).
// The E8M0 code 0xFF is NaN, which no F32 scale of a weight means: an error too.
std::vector<std::byte> recode_scales(const SafetensorsFile& f, const QuantizedPair& p, ScaleRecode how,
                                     const std::string& target) {
  const SafetensorsTensor& t = *f.find(p.scale);
  const std::span<const std::byte> in = f.bytes(t);
  std::vector<std::byte> out;
  if (how == ScaleRecode::widen) {  // every BF16 and F16 value is an f32 value
    out.resize(in.size() * 2);
    for (std::size_t i = 0; i < in.size() / 2; ++i) {
      const std::uint32_t h = std::to_integer<std::uint32_t>(in[2 * i]) | std::to_integer<std::uint32_t>(in[2 * i + 1])
                                                                              << 8;
      const float v = t.dtype == DType::BF16 ? std::bit_cast<float>(h << 16) : static_cast<float>(decode(f16, h));
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
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
        throw std::invalid_argument(
            cat(f.path().string(), ": tensor '", p.scale, "' holds ", std::string_view(text.data(), end), " at index ",
                i, ", not a power of two in 2^-127..2^127: ue8m0 scales hold only those, so '", p.weight,
                "' cannot be "
                "re-laid out as ",
                target,
                " without rounding; requantize from the unquantized model instead (minifloat "
                "dequantize, then convert), or keep F32 scales (recipe fp8-block); nothing was written"));
      }
      out[i] = static_cast<std::byte>(e - 1 + 127);
    }
  } else {
    std::size_t nan_at = 0;
    out = e8m0_as_f32(in, nan_at);
    if (out.empty() && !in.empty()) {
      throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.scale,
                                      "' holds the E8M0 NaN code 0xFF at "
                                      "index ",
                                      nan_at, ": no F32 scale of '", p.weight, "'; nothing was written"));
    }
  }
  return out;
}

std::vector<std::byte> e8m0_as_f32(std::span<const std::byte> in, std::size_t& nan_at) {
  std::vector<std::byte> out(in.size() * 4);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int code = std::to_integer<int>(in[i]);
    if (code == 0xFF) {
      nan_at = i;
      return {};
    }
    const float v = std::ldexp(1.0f, code - 127);  // 2^-127 is an f32 subnormal: exact
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

SafetensorsFile open_input_shard(const Checkpoint& c, std::size_t i) {
  SafetensorsFile f = read_safetensors(c.shard_path(i));
  borrow_partners(f, c, i);
  return f;
}

std::vector<Step> plan_shard(const Checkpoint& c, std::size_t i, const SafetensorsFile& f, const Planner& plan,
                             std::vector<QuantizedPair>& pairs) {
  std::vector<Step> steps = plan(f, pairs);
  const Lent lent = lent_parts(f, c, i);
  std::erase_if(steps, [&](const Step& s) { return s.pair == nullptr && lent.contains(s.in->name); });
  return steps;
}

namespace {

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

// The codes and block scales of quantized weight `name` in minifloat's own form (--format deepseek: FP4 as I8; in
// the release form, the scale named X.scale).
void own_specs(std::vector<Spec>& specs, const std::string& name, const Scheme& q, WriteFormat format, bool release,
               const std::vector<std::uint64_t>& shape) {
  const std::uint64_t rows = shape[0], cols = shape[1];
  const Format& e = *q.element.format;
  const DType code = e == e4m3   ? DType::F8_E4M3
                     : e == e5m2 ? DType::F8_E5M2
                     : e == e3m2 ? DType::F6_E3M2
                     : e == e2m3 ? DType::F6_E2M3
                                 : DType::F4;
  const DType scale = *q.scale_format == ue8m0   ? DType::F8_E8M0
                      : *q.scale_format == ue4m3 ? DType::F8_E4M3
                                                 : DType::F32;
  const std::uint64_t br = static_cast<std::uint64_t>(q.block_rows), bc = static_cast<std::uint64_t>(q.block_cols);
  if (code == DType::F4 && format == WriteFormat::deepseek) {
    specs.push_back({name, DType::I8, {rows, cols / 2}});  // transformers' DeepSeek-V4: FP4 packed in int8
  } else {
    specs.push_back({name, code, shape});
  }
  const std::string scale_name = release ? release_scale_name(name) : name + (q.tensor_scale ? "_scale" : "_scale_inv");
  specs.push_back({scale_name, scale, {(rows + br - 1) / br, (cols + bc - 1) / bc}});
  if (q.tensor_scale) specs.push_back({name + "_scale_2", DType::F32, {}});
}

// A quantized weight's tensors as step `s`'s format writes them.
void weight_specs(std::vector<Spec>& specs, const Step& s, const std::string& name,
                  const std::vector<std::uint64_t>& shape) {
  if (s.dialect) {
    const std::vector<Spec> d = detail::dialect_specs(name, *s.dialect, s.format, shape[0], shape[1]);
    specs.insert(specs.end(), d.begin(), d.end());
  } else {
    own_specs(specs, name, *s.scheme, s.format, s.release, shape);
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

// A pair step written as plain values: dequantize's dtype, or convert's bf16 / f32 target.
bool plain_bf16(const Step& s, bool bf16_out) { return s.target == "dequantize" ? bf16_out : s.target == "bf16"; }

// The output tensors of `steps`, in order; first[j]: steps[j]'s first.
std::vector<Spec> specs_of(const std::vector<Step>& steps, bool bf16_out, std::vector<std::size_t>& first) {
  std::vector<Spec> specs;
  for (const Step& s : steps) {
    first.push_back(specs.size());
    const SafetensorsTensor& t = *s.in;
    // A pair (re-laid out, requantized or dequantized) is written as its logical weight would be.
    const std::string& name = s.pair ? s.pair->output : t.name;
    const std::vector<std::uint64_t>& shape = s.pair ? s.pair->output_shape : t.shape;
    if (s.move) {
      move_specs(specs, s);
    } else if (s.int_relayout) {
      specs.insert(specs.end(), s.int_relayout->specs.begin(), s.int_relayout->specs.end());
    } else if (s.scheme && s.experts) {
      const std::vector<Spec> d = detail::gpt_oss_specs(t.name, t.shape[0], t.shape[1], t.shape[2]);
      specs.insert(specs.end(), d.begin(), d.end());
    } else if (s.scheme) {
      weight_specs(specs, s, name, shape);
    } else if (s.pair) {
      specs.push_back({s.pair->output, plain_bf16(s, bf16_out) ? DType::BF16 : DType::F32, s.pair->output_shape});
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

// A relayout step's tensors: codes and block scales are the bytes every dialect of the scheme holds (MoE experts:
// whole rows of them regrouped), scales recoded exactly where the format keeps another scale format.
TensorReport produce_relayout(const SafetensorsFile& f, const Step& s, std::size_t k, SafetensorsWriter& w) {
  if (s.move) {
    std::vector<std::uint8_t> codes, scales;
    for (const detail::MovedTensor& out : s.move->outputs) {
      detail::move_rows(f, *s.move, out, codes, scales);
      w.write_tensor(k++, bytes_of(codes));
      w.write_tensor(k++, bytes_of(scales));
    }
    return TensorReport{s.move->reported, s.target + " re-laid out", 0, 0, 0};
  }
  w.write_tensor(k, f.bytes(*s.in));
  if (s.recode == ScaleRecode::none) {
    w.write_tensor(k + 1, f.bytes(*f.find(s.pair->scale)));
  } else {
    w.write_tensor(k + 1, recode_scales(f, *s.pair, s.recode, s.target));
  }
  if (s.scheme->tensor_scale) w.write_tensor(k + 2, std::as_bytes(std::span(&s.second, 1)));
  return TensorReport{s.pair->output, s.target + " re-laid out", 0, 0, 0};
}

// The quantized tensor's codes, block scales and second level as step `s`'s format stores them: the packed codes and
// scales are the checkpoint's bytes as they are (what pair_tensors would copy); ue8m0 FP8 block scales where the
// format keeps F32 ones (compressed-tensors) as their exact F32 values.
void write_quantized(const SafetensorsFile& f, const Step& s, const QuantizedTensor& q, std::size_t k,
                     SafetensorsWriter& w) {
  w.write_tensor(k, bytes_of(q.codes));
  if (s.dialect == WrittenKind::fp8_block && *s.scheme->scale_format == ue8m0) {
    std::size_t nan_at = 0;
    const std::vector<std::byte> f32_scales = e8m0_as_f32(bytes_of(q.scales), nan_at);
    if (f32_scales.empty()) throw IoError(IoErrc::invalid_tensor_entry, f.path(), s.in->name, "a block scale is NaN");
    w.write_tensor(k + 1, f32_scales);
  } else {
    w.write_tensor(k + 1, bytes_of(q.scales));
  }
  if (s.scheme->tensor_scale) {
    const float second =
        s.dialect ? detail::second_scale_written(s.format, q.tensor_scale, s.in->name) : q.tensor_scale;
    w.write_tensor(k + 2, std::as_bytes(std::span(&second, 1)));
  }
}

// A step quantized by the recipe's scheme (gpt-oss's experts transposed first), with its error.
TensorReport produce_quantized(const SafetensorsFile& f, const Step& s, std::size_t k, SafetensorsWriter& w,
                               int threads, Scratch& scratch) {
  const SafetensorsTensor& t = *s.in;
  std::vector<float>&x = scratch.x, &y = scratch.y;
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(t.shape[0]), static_cast<std::int64_t>(t.shape[1])};
  std::string name = t.name;
  if (s.pair) {  // a pair of another scheme: its exact values, then quantized once
    x = dequantize_pair(f, *s.pair, threads);
    shape = {static_cast<std::int64_t>(s.pair->output_shape[0]), static_cast<std::int64_t>(s.pair->output_shape[1])};
    name = s.pair->output;
  } else {
    widen(f, t, x);
  }
  QuantizeOptions o;
  o.pad = true;
  o.threads = threads;
  o.tensor_name = name;
  if (s.experts) {
    transpose_experts(x, t.shape[0], t.shape[1], t.shape[2], y);
    x.swap(y);
    shape = {static_cast<std::int64_t>(t.shape[0] * t.shape[2]), static_cast<std::int64_t>(t.shape[1])};
  }
  QuantizedTensor& q = scratch.q;
  quantize(x.data(), shape, *s.scheme, o, q);
  write_quantized(f, s, q, k, w);
  y.resize(x.size());
  dequantize(q, y.data(), threads);
  return error_of(name, s.pair ? s.target + " requantized from " + s.pair->scheme_name : s.target, x, y);
}

// Step `s`'s output tensors, placed at spec `k` (and after it, for a quantized pair's scales); its error row, for
// quantized targets. Safe to run for several steps of one shard at once: each writes only its own tensors.
std::optional<TensorReport> produce(const SafetensorsFile& f, const Step& s, std::size_t k, SafetensorsWriter& w,
                                    bool bf16_out, int threads, Scratch& scratch) {
  const SafetensorsTensor& t = *s.in;
  if (s.relayout) return produce_relayout(f, s, k, w);
  if (s.int_relayout) {
    for (const std::vector<std::byte>& bytes : detail::int_relayout_tensors(f, *s.pair, *s.int_relayout)) {
      w.write_tensor(k++, bytes);
    }
    return TensorReport{s.pair->output, s.pair->scheme_name + " re-laid out", 0, 0, 0};
  }
  if (s.cast) {
    const CastOutput c = cast_pair(f, s, threads);
    write_quantized(f, s, c.q, k, w);
    return c.row;
  }
  if (s.scheme) return produce_quantized(f, s, k, w, threads, scratch);
  if (s.pair) {
    scratch.y = dequantize_pair(f, *s.pair, threads);
    w.write_tensor(k, narrow(scratch.y, plain_bf16(s, bf16_out)));
  } else if (s.target == "bf16" || s.target == "f32") {
    widen(f, t, scratch.x);
    w.write_tensor(k, narrow(scratch.x, s.target == "bf16"));
  } else {
    w.write_tensor(k, f.bytes(t));  // zero-copy from the mapping
  }
  return std::nullopt;
}

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
      : c_(c),
        out_(out),
        o_(o),
        plan_(plan),
        bf16_out_(bf16_out),
        workers_(detail::worker_count(o.threads)),
        rows_(c.shards.size()) {
    for (std::size_t i = 0; i < c.shards.size(); ++i) {
      if (shard_is_mine(i, o.job_index, o.job_count)) total_ += fs::file_size(c.shard_path(i));
    }
  }

  ConvertReport go() {
    detail::run_in_order(workers_, [this] { return next(); });
    // Rows in shard order, then data order, however the workers finished.
    for (std::vector<std::optional<TensorReport>>& shard : rows_) {
      for (std::optional<TensorReport>& row : shard) {
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
    w->f = open_input_shard(c_, i);
    w->steps = plan_shard(c_, i, w->f, plan_, w->pairs);
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
  std::vector<std::vector<std::optional<TensorReport>>> rows_;  // by shard, by step; each slot written by its job
  std::shared_ptr<ShardWork> current_;                          // next() state, under run_in_order's lock
  std::size_t shard_ = 0, step_ = 0;
  std::mutex mutex_;  // report_ counters, done_, ShardWork::left, scratch_
  std::vector<std::unique_ptr<Scratch>> scratch_;
  ConvertReport report_;
  std::uint64_t total_ = 0, done_ = 0;
};

// Which patterns matched some tensor: --passthrough's and the recipe's rules'; and whether anything is quantized.
struct PlanCheck {
  std::vector<bool> passthrough, rules;
  bool quantized = false;
};

void check_shard(const Checkpoint& c, std::size_t i, const ConvertOptions& o, const Planner& plan, const Recipe* recipe,
                 PlanCheck& seen) {
  const SafetensorsFile f = open_input_shard(c, i);
  std::vector<QuantizedPair> pairs;
  for (const Step& s : plan_shard(c, i, f, plan, pairs)) seen.quantized = seen.quantized || s.scheme.has_value();
  seen.quantized = seen.quantized || !pairs.empty();
  for (const SafetensorsTensor& t : f.tensors()) {
    for (std::size_t k = 0; k < seen.passthrough.size(); ++k) {
      seen.passthrough[k] = seen.passthrough[k] || glob_match(o.passthrough[k], t.name);
    }
    for (std::size_t k = 0; k < seen.rules.size(); ++k) {
      seen.rules[k] = seen.rules[k] || glob_match(recipe->rules[k].pattern, t.name);
    }
  }
}

// A recipe that quantizes nothing, with the scheme rules that matched no tensor named.
[[noreturn]] void quantizes_nothing(const fs::path& where, const Recipe& recipe, const std::vector<bool>& rule_used) {
  std::vector<std::string> unmatched;
  for (std::size_t k = 0; k < rule_used.size(); ++k) {
    if (!rule_used[k] && target_scheme(recipe, recipe.rules[k].target)) {
      unmatched.push_back(cat("'", recipe.rules[k].pattern, "'"));
    }
  }
  std::string why = " (the tensors its schemes' patterns match are not 2-D float weights that fit)";
  if (!unmatched.empty()) {
    why = ": ";
    for (std::size_t k = 0; k < unmatched.size(); ++k) why += cat(k == 0 ? "" : ", ", unmatched[k]);
    why += unmatched.size() == 1 ? " matches no tensor" : " match no tensor";
  }
  throw IoError(IoErrc::unmatched_pattern, where,
                cat("recipe ", recipe.name, " quantizes no tensor of this checkpoint", why,
                    "; nothing was written (a checkpoint labelled quantized would hold no quantized weight)"));
}

// Every shard of this job planned before anything is written, so a tensor that cannot be converted fails the command
// with no output at all (not after the shards before it were written); and every --passthrough pattern must match.
// convert (a recipe): a checkpoint labelled quantized must hold something quantized, so a one-job run in which no
// tensor gets one of the recipe's schemes (and none came quantized) is refused, naming the scheme rules that matched
// nothing.
void check_plans(const Checkpoint& c, const ConvertOptions& o, const Planner& plan, const Recipe* recipe) {
  PlanCheck seen{std::vector<bool>(o.passthrough.size(), false),
                 std::vector<bool>(recipe ? recipe->rules.size() : 0, false)};
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (shard_is_mine(i, o.job_index, o.job_count)) check_shard(c, i, o, plan, recipe, seen);
  }
  if (o.job_count != 1) return;  // a job sees only its shards
  const fs::path where = c.index_path.value_or(c.directory);
  for (std::size_t k = 0; k < seen.passthrough.size(); ++k) {
    if (!seen.passthrough[k]) {
      throw IoError(IoErrc::unmatched_pattern, where, cat("--passthrough '", o.passthrough[k], "' matches no tensor"));
    }
  }
  if (recipe && !seen.quantized) quantizes_nothing(where, *recipe, seen.rules);
}

}  // namespace

ConvertReport run_plan(const fs::path& in, const fs::path& out, const ConvertOptions& o, const Planner& plan,
                       bool bf16_out, const Recipe* recipe, const std::function<void()>& checks) {
  const Checkpoint c = open_checkpoint(in);
  refuse_overwriting_input(in, c, out);
  check_understood(c, o.passthrough);
  if (checks) checks();
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

}  // namespace mf::io::detail
