// convert --lossless (lossless_convert.h): a pair read as a QuantizedTensor, cast into the recipe's scheme, its
// block report made a report row; the whole plan's casts run before anything is written.
#include "lossless_convert.h"

#include <cstring>
#include <optional>
#include <vector>

#include "../io/file.h"
#include "dialect_pairs.h"
#include "dialect_writer.h"
#include "minifloat/quantize.h"
#include "tensor_values.h"

namespace mf::io::detail {
namespace {

bool own(const QuantizedPair& p) {
  return p.form == PairForm::deepseek || p.form == PairForm::deepseek_v4 || p.form == PairForm::nvfp4;
}

// The scheme whose codes and scales pair `p` holds; nullopt when its values are not just those (ModelOpt's
// pre_quant_scale folded in) or minifloat has no Scheme for it.
std::optional<Scheme> held_of(const QuantizedPair& p) {
  if (!p.pre_quant_scale.empty()) return std::nullopt;
  return own(p) ? std::optional<Scheme>(p.scheme) : held_scheme(p);
}

// Why pair `p` cannot be read as one QuantizedTensor, or "": minifloat's own forms always can; compressed-tensors'
// and ModelOpt's packed MXFP4 and their E8M0- or F32-scaled blocks hold the same bytes (codes in the packed layout, one
// scale per block on a 2-D grid).
std::string unreadable(const SafetensorsFile& f, const QuantizedPair& p, const std::optional<Scheme>& held) {
  if (held && own(p)) return "";
  if (!held || (p.form != PairForm::packed && p.form != PairForm::scaled)) {
    return cat("its form (", to_string(p.form), " pair, ", p.scheme_name, ") holds no block scheme minifloat casts");
  }
  const SafetensorsTensor& s = *f.find(p.scale);
  const bool e8 = *held->scale_format == ue8m0 && (s.dtype == DType::F8_E8M0 || s.dtype == DType::U8);
  const bool f32_scales = *held->scale_format == f32 && s.dtype == DType::F32;
  if (s.shape.size() != 2 || !(e8 || f32_scales) || held->tensor_scale) {
    return cat("its scales ('", p.scale, "', ", dtype_name(s.dtype), ") are not one E8M0 or F32 scale per block");
  }
  return "";
}

QuantizedTensor cast_input(const SafetensorsFile& f, const QuantizedPair& p) {
  const std::optional<Scheme> held = held_of(p);
  if (held && own(p)) return read_pair(f, p);
  if (const std::string why = unreadable(f, p, held); !why.empty()) {
    throw IoError(IoErrc::invalid_tensor_entry, f.path(), p.weight, why);
  }
  const SafetensorsTensor& w = *f.find(p.weight);
  const SafetensorsTensor& s = *f.find(p.scale);
  QuantizedTensor q;
  q.shape = p.shape;
  q.scheme = *held;
  const auto copy = [](std::span<const std::byte> b) {
    std::vector<std::uint8_t> v(b.size());
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  q.codes = copy(f.bytes(w));
  q.scales = copy(f.bytes(s));
  q.scale_shape = {static_cast<std::int64_t>(s.shape[0]), static_cast<std::int64_t>(s.shape[1])};
  try {
    validate(q);
  } catch (const QuantizeError& e) {
    throw IoError(IoErrc::size_mismatch, f.path(), p.weight, e.what());
  }
  return q;
}

CastResult cast_of(const SafetensorsFile& f, const Step& s) {
  try {
    return lossless_cast(cast_input(f, *s.pair), *s.scheme, s.pair->output);
  } catch (const QuantizeError& e) {
    throw std::invalid_argument(cat(f.path().string(), ": ", e.what(), "; nothing was written"));
  }
}

}  // namespace

void check_castable(const SafetensorsFile& f, const QuantizedPair& p, const Scheme& want, const std::string& target) {
  const std::optional<Scheme> held = held_of(p);
  std::string why = unreadable(f, p, held);
  if (why.empty()) why = lossless_cast_refusal(*held, want);
  if (why.empty()) return;
  throw std::invalid_argument(cat(f.path().string(), ": tensor '", p.weight, "' (", to_string(p.form), " pair, ",
                                  p.scheme_name, "), target ", target, ": --lossless casts it or refuses it: ", why,
                                  "; nothing was written"));
}

void refuse_rounding(const SafetensorsFile& f, const std::string& tensor, DType dtype, const std::string& target,
                     bool pair) {
  throw std::invalid_argument(
      cat(f.path().string(), ": tensor '", tensor, "' (", pair ? "a quantized pair" : dtype_name(dtype),
          ") has the recipe target ", target, ": --lossless writes nothing rounded (",
          pair ? "a pair is re-laid out, cast into another scheme, or dequantized to f32"
               : "a tensor that is not quantized is kept, or widened to f32",
          "); give it keep or f32 in the recipe, or convert without --lossless; nothing was written"));
}

CastOutput cast_pair(const SafetensorsFile& f, const Step& s, int threads) {
  CastResult r = cast_of(f, s);
  TensorReport row{s.pair->output, cat(s.target, " cast from ", s.pair->scheme_name), 0, 0, 0};
  if (r.report.inexact_blocks > 0) {  // --allow-inexact: the errors over the whole tensor
    const QuantizedTensor in = cast_input(f, *s.pair);
    std::vector<float> x(static_cast<std::size_t>(in.count())), y(x.size());
    dequantize(in, x.data(), threads);
    dequantize(r.q, y.data(), threads);
    row = error_of(row.name, row.target, x, y);
  }
  row.blocks = static_cast<std::uint64_t>(r.report.blocks);
  row.inexact_blocks = static_cast<std::uint64_t>(r.report.inexact_blocks);
  row.max_rel = r.report.max_rel_error;
  return {std::move(r.q), std::move(row)};
}

void check_casts(const std::filesystem::path& in, const ConvertOptions& o, const Planner& plan) {
  const Checkpoint c = open_checkpoint(in);
  for (std::size_t i = 0; i < c.shards.size(); ++i) {
    if (!shard_is_mine(i, o.job_index, o.job_count)) continue;
    const SafetensorsFile f = open_input_shard(c, i);
    std::vector<QuantizedPair> pairs;
    for (const Step& s : plan_shard(c, i, f, plan, pairs)) {
      if (!s.cast) continue;
      const CastResult r = cast_of(f, s);
      if (r.report.inexact_blocks > 0 && !o.allow_inexact) {
        throw std::invalid_argument(cat(f.path().string(), ": tensor '", s.pair->weight, "' (", s.pair->scheme_name,
                                        ") cast as ", s.target, ": ", r.report.inexact_blocks, " of ", r.report.blocks,
                                        " blocks cannot be carried exactly; the first is ", r.report.why,
                                        ". --allow-inexact writes such blocks (requantized by the target's rule; "
                                        "into FP8 tiles rounded as DeepSeek's cast) and reports their error; "
                                        "nothing was written"));
      }
      if (s.scheme->tensor_scale && s.dialect) second_scale_written(s.format, r.q.tensor_scale, s.pair->output);
      f.release(*s.in);
    }
  }
}

}  // namespace mf::io::detail
