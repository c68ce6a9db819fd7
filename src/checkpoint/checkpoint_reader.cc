// The checkpoint reader (checkpoint_reader.h): dequantize's plan (convert_run.h) kept per shard instead of carried
// out, so that one logical tensor at a time is produced by the same calls dequantize makes (dequantize_pair, widen,
// the bulk bf16 rounding; dequantize_gguf for a GGUF file).
#include "minifloat/checkpoint_reader.h"

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>

#include "convert_run.h"
#include "../io/file.h"
#include "minifloat/bulk.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/gguf.h"
#include "minifloat/tensor_file.h"
#include "quantization_rule.h"
#include "tensor_values.h"

namespace mf::io {

namespace fs = std::filesystem;

namespace {

// PairForm's enumerator, the name docs/checkpoints.md ("Dialects") gives each form.
std::string dialect_name(PairForm f) {
  switch (f) {
    case PairForm::deepseek: return "deepseek";
    case PairForm::deepseek_v4: return "deepseek_v4";
    case PairForm::nvfp4: return "nvfp4";
    case PairForm::scaled: return "scaled";
    case PairForm::packed: return "packed";
    case PairForm::packed_global: return "packed_global";
    case PairForm::blocks: return "blocks";
    case PairForm::integer: return "integer";
  }
  return "?";
}

}  // namespace

struct CheckpointReader::Impl {
  // One shard, mapped, with the pairs its plan points into.
  struct Shard {
    SafetensorsFile f;
    std::vector<QuantizedPair> pairs;
  };
  // How to produce tensors[k]: from shard `shard`, its input tensor (a pair's weight) and pair, or GGUF tensor
  // `in_gguf`.
  struct Entry {
    std::size_t shard = 0;
    const SafetensorsTensor* in = nullptr;
    const QuantizedPair* pair = nullptr;
    const GgufTensor* in_gguf = nullptr;
    const NamedQuantized* quantized = nullptr;  // a tensor of a `minifloat quantize` file
  };
  fs::path path;  // as opened: what messages name for a GGUF or quantize file
  std::optional<GgufFile> gguf;
  std::vector<NamedQuantized> quantize_output;  // read whole (read_quantized): what `minifloat quantize` wrote
  Checkpoint checkpoint;
  std::vector<std::unique_ptr<Shard>> shards;  // stable addresses: entries point into them
  std::vector<Entry> entries;
  std::vector<LogicalTensor> tensors;
  std::map<std::string, std::size_t, std::less<>> by_name;

  void open_safetensors(const fs::path& path);
  void open_gguf(const fs::path& path);
  void open_quantize_output(const fs::path& path);
  void add(LogicalTensor t, Entry e);
  std::size_t at(std::string_view name) const;
  const SafetensorsFile& file(const Entry& e) const { return shards[e.shard]->f; }
  void release(const Entry& e) const;
};

void CheckpointReader::Impl::add(LogicalTensor t, Entry e) {
  by_name.emplace(t.name, tensors.size());
  tensors.push_back(std::move(t));
  entries.push_back(e);
}

void CheckpointReader::Impl::open_safetensors(const fs::path& path) {
  checkpoint = open_checkpoint(path);
  detail::check_understood(checkpoint);  // what dequantize refuses, refused here the same way
  const detail::Planner plan =
      detail::dequantize_planner(detail::checkpoint_declaration(checkpoint), {}, /*bf16_out=*/false);
  for (std::size_t i = 0; i < checkpoint.shards.size(); ++i) {
    auto shard = std::make_unique<Shard>();
    shard->f = detail::open_input_shard(checkpoint, i);
    const std::vector<detail::Step> steps = detail::plan_shard(checkpoint, i, shard->f, plan, shard->pairs);
    for (const detail::Step& s : steps) {
      LogicalTensor t;
      t.file = checkpoint.shards[i];
      t.stored_dtype = std::string(dtype_name(s.in->dtype));
      t.stored.push_back(s.in->name);
      if (s.pair) {
        const QuantizedPair& p = *s.pair;
        t.name = p.output;
        t.dialect = dialect_name(p.form);
        t.form = std::string(to_string(p.form));
        t.scheme = p.scheme_name;
        t.shape = p.output_shape;
        for (const std::string* part : {&p.scale, &p.tensor_scale, &p.zero_point, &p.group_index, &p.pre_quant_scale}) {
          if (!part->empty()) t.stored.push_back(*part);
        }
        for (const std::string& extra : p.extras) {
          if (std::find(t.stored.begin(), t.stored.end(), extra) == t.stored.end()) t.stored.push_back(extra);
        }
      } else {
        t.name = s.in->name;
        t.dialect = "plain";
        t.shape = s.in->shape;
        t.kept = !detail::is_float(s.in->dtype);
        t.kept_dtype = s.in->dtype;
      }
      for (const std::string& part : t.stored) {
        if (const SafetensorsTensor* st = shard->f.find(part)) t.bytes += st->end - st->begin;
      }
      add(std::move(t), Entry{i, s.in, s.pair, nullptr});
    }
    shards.push_back(std::move(shard));
  }
}

void CheckpointReader::Impl::open_gguf(const fs::path& path) {
  gguf = read_gguf(path);
  for (const GgufTensor& g : gguf->tensors()) {
    LogicalTensor t;
    t.name = g.name;
    t.file = path.filename().string();
    t.dialect = "gguf";
    t.scheme = gguf_type_name(g.type);
    t.stored = {g.name};
    t.shape = g.shape();
    t.stored_dtype = t.scheme;
    t.bytes = g.bytes;
    add(std::move(t), Entry{0, nullptr, nullptr, &g});
  }
}

void CheckpointReader::Impl::open_quantize_output(const fs::path& path) {
  quantize_output = read_quantized(path);
  const SafetensorsFile f = read_safetensors_header(path);
  for (const NamedQuantized& q : quantize_output) {
    LogicalTensor t;
    t.name = q.name;
    t.file = path.filename().string();
    t.dialect = "quantize";
    t.form = "NAME + NAME_scale (+ NAME_tensor_scale), scheme in __metadata__ (minifloat quantize)";
    t.scheme = q.tensor.scheme.name;
    for (const std::string& part : {q.name, q.name + "_scale", q.name + "_tensor_scale"}) {
      if (const SafetensorsTensor* st = f.find(part)) {
        t.stored.push_back(part);
        t.bytes += st->end - st->begin;
      }
    }
    t.shape.assign(q.tensor.shape.begin(), q.tensor.shape.end());
    t.stored_dtype = std::string(dtype_name(f.find(q.name)->dtype));
    add(std::move(t), Entry{0, nullptr, nullptr, nullptr, &q});
  }
}

std::size_t CheckpointReader::Impl::at(std::string_view name) const {
  const auto it = by_name.find(name);
  if (it == by_name.end()) throw std::out_of_range(std::string(name));
  return it->second;
}

void CheckpointReader::Impl::release(const Entry& e) const {
  if (e.in == nullptr) return;
  const SafetensorsFile& f = file(e);
  f.release(*e.in);
  if (e.pair == nullptr) return;
  for (const std::string* part : {&e.pair->scale, &e.pair->tensor_scale, &e.pair->zero_point}) {
    if (const SafetensorsTensor* t = part->empty() ? nullptr : f.find(*part)) f.release(*t);
  }
}

CheckpointReader::CheckpointReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (path.extension() == ".gguf") {
    impl_->open_gguf(path);
  } else if (path.extension() == ".safetensors" &&
             read_safetensors_header(path).metadata().contains("minifloat.scheme")) {
    impl_->open_quantize_output(path);  // as dequantize tells the two apart
  } else {
    impl_->open_safetensors(path);
  }
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;
CheckpointReader& CheckpointReader::operator=(CheckpointReader&&) noexcept = default;

bool CheckpointReader::is_gguf() const { return impl_->gguf.has_value(); }

const std::vector<LogicalTensor>& CheckpointReader::tensors() const { return impl_->tensors; }

const LogicalTensor* CheckpointReader::find(std::string_view name) const {
  const auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? nullptr : &impl_->tensors[it->second];
}

std::map<std::string, std::string> CheckpointReader::metadata() const {
  std::map<std::string, std::string> out;
  if (impl_->gguf) {
    for (const auto& [key, value] : impl_->gguf->metadata()) out[key] = value.text();
    return out;
  }
  for (const std::unique_ptr<Impl::Shard>& s : impl_->shards)
    out.insert(s->f.metadata().begin(), s->f.metadata().end());
  return out;
}

std::vector<float> CheckpointReader::values(std::string_view name, int threads) const {
  const std::size_t k = impl_->at(name);
  const Impl::Entry& e = impl_->entries[k];
  const LogicalTensor& t = impl_->tensors[k];
  if (e.in_gguf) {
    if (!gguf_can_dequantize(e.in_gguf->type)) {
      throw IoError(IoErrc::not_dequantizable, impl_->gguf->path(), t.name,
                    detail::cat(t.scheme,
                                " is a GGUF type minifloat lists but does not decode (it decodes F32, F16, BF16, "
                                "Q4_0, Q4_1, Q8_0 and MXFP4)"));
    }
    return dequantize_gguf(*impl_->gguf, *e.in_gguf);
  }
  if (e.quantized) {
    std::vector<float> out(static_cast<std::size_t>(e.quantized->tensor.count()));
    dequantize(e.quantized->tensor, out.data(), threads);
    return out;
  }
  const SafetensorsFile& f = impl_->file(e);
  if (t.kept) {  // (only safetensors checkpoints keep tensors)
    throw IoError(IoErrc::not_dequantizable, f.path(), t.name,
                  detail::cat(t.stored_dtype,
                              " is not a float tensor and no quantized pair: dequantize copies it as stored; read "
                              "it as stored (get_raw), not as float values"));
  }
  std::vector<float> out;
  if (e.pair) {
    out = dequantize_pair(f, *e.pair, threads);
  } else {
    detail::widen(f, *e.in, out);
  }
  impl_->release(e);
  return out;
}

std::vector<std::uint16_t> CheckpointReader::values16(std::string_view name, const Format& format, int threads) const {
  const std::vector<float> x = values(name, threads);
  std::vector<std::uint16_t> out(x.size());
  encode_bulk(format, x, std::span<std::uint16_t>(out));  // encode(format, x) per element, as dequantize rounds
  return out;
}

std::vector<std::byte> CheckpointReader::stored(std::string_view name) const {
  const std::size_t k = impl_->at(name);
  const Impl::Entry& e = impl_->entries[k];
  const LogicalTensor& t = impl_->tensors[k];
  if (!t.kept) {
    const fs::path where = e.in ? impl_->file(e).path() : impl_->path;
    throw IoError(IoErrc::not_dequantizable, where, t.name,
                  detail::cat("a ", t.dialect == "plain" ? "float" : t.dialect + " (" + t.scheme + ")",
                              " tensor: read its values, or a pair's codes and scales as a QuantizedTensor"));
  }
  const std::span<const std::byte> b = impl_->file(e).bytes(*e.in);
  std::vector<std::byte> out(b.begin(), b.end());
  impl_->release(e);
  return out;
}

QuantizedTensor CheckpointReader::quantized(std::string_view name) const {
  const std::size_t k = impl_->at(name);
  const Impl::Entry& e = impl_->entries[k];
  const LogicalTensor& t = impl_->tensors[k];
  if (e.quantized) return e.quantized->tensor;
  const bool readable = e.pair && (e.pair->form == PairForm::deepseek || e.pair->form == PairForm::deepseek_v4 ||
                                   e.pair->form == PairForm::nvfp4);
  if (!readable) {
    const fs::path where = e.in ? impl_->file(e).path() : impl_->path;
    throw IoError(IoErrc::not_dequantizable, where, t.name,
                  detail::cat("a ", t.dialect, t.scheme.empty() ? "" : " (" + t.scheme + ")",
                              " tensor has no QuantizedTensor form (only the deepseek, deepseek_v4 and nvfp4 pair "
                              "forms: one element format times block scales); read its values instead"));
  }
  QuantizedTensor q = read_pair(impl_->file(e), *e.pair);
  impl_->release(e);
  return q;
}

}  // namespace mf::io
