// Quantized weights in checkpoints: W with W_scale_inv (DeepSeek) or W_scale with W_scale_2 (NVFP4), both ways.
#include "minifloat/checkpoint_tensors.h"

#include <array>
#include <bit>
#include <cstring>
#include <map>

#include "dialect_pairs.h"
#include "../io/file.h"
#include "minifloat/codec.h"
#include "minifloat/text.h"

namespace mf::io {
namespace {

using detail::cat;

// Block shapes tried in order when reading a scale grid: DeepSeek's tiles first, then the row blocks.
constexpr std::array<std::array<int, 2>, 5> kBlocks{{{128, 128}, {32, 32}, {1, 128}, {1, 32}, {1, 16}}};

const Format* element_of(DType t) {
  switch (t) {
    case DType::F8_E4M3: return &e4m3;
    case DType::F8_E5M2: return &e5m2;
    case DType::F6_E3M2: return &e3m2;
    case DType::F6_E2M3: return &e2m3;
    case DType::F4:
    case DType::U8:
    case DType::I8: return &e2m1;  // U8/I8: two e2m1 codes per byte
    default: return nullptr;
  }
}

// The scale format a stored scale dtype holds: BF16 and F16 (Qwen's FP8 releases) widen to f32 exactly, so their pairs
// are read as f32-scaled ones (read_pair widens the bytes).
const Format* scale_of(DType t) {
  switch (t) {
    case DType::F32:
    case DType::BF16:
    case DType::F16: return &f32;
    case DType::F8_E8M0: return &ue8m0;
    case DType::F8_E4M3: return &ue4m3;
    default: return nullptr;
  }
}

bool half_scale(DType t) { return t == DType::BF16 || t == DType::F16; }
bool half_or_f32(DType t) { return half_scale(t) || t == DType::F32; }

std::uint64_t element_count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::uint64_t d : shape) n *= d;
  return n;
}

DType dtype_of_scale(const Format& f) { return f == ue8m0 ? DType::F8_E8M0 : f == ue4m3 ? DType::F8_E4M3 : DType::F32; }

DType dtype_of_element(const Format& f) {
  return f == e4m3   ? DType::F8_E4M3
         : f == e5m2 ? DType::F8_E5M2
         : f == e3m2 ? DType::F6_E3M2
         : f == e2m3 ? DType::F6_E2M3
                     : DType::F4;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The logical [R, C] of a stored weight: U8/I8 hold two e2m1 codes per byte.
std::optional<std::vector<std::int64_t>> logical_shape(const SafetensorsTensor& w) {
  if (w.shape.size() != 2) return std::nullopt;
  std::vector<std::int64_t> s{static_cast<std::int64_t>(w.shape[0]), static_cast<std::int64_t>(w.shape[1])};
  if (w.dtype == DType::U8 || w.dtype == DType::I8) s[1] *= 2;
  return s;
}

std::string scheme_text(const Format& element, int br, int bc, const Format& scale) {
  const char* rule = scale == f32 ? "f32" : scale == ue4m3 ? "e4m3" : "rceil";
  return cat(element.name, "-", br, "x", bc, "-", scale.name, "-", rule);
}

// The block shapes whose scale grid over `shape` is the scale tensor's: the NVFP4 form is 1x16, or 1x32 (ModelOpt's
// W4A8_NVFP4_FP8, whose group_size is 32) where 1x16 does not fit; FP4 weights in the DeepSeek forms are
// MXFP4-shaped (1x32 along K, docs/spec.md#v4-geometry; a short row would otherwise also fit 1x128).
std::vector<std::array<int, 2>> fitting_blocks(PairForm form, const Format& element, std::array<std::int64_t, 2> shape,
                                               const SafetensorsTensor& scale) {
  std::vector<std::array<int, 2>> fits;
  for (const auto& [br, bc] : kBlocks) {
    const bool fp4_row = br == 1 && (bc == 16 || bc == 32);
    if (form == PairForm::nvfp4 ? !fp4_row : br == 1 && bc == 16) continue;
    if (form != PairForm::nvfp4 && element == e2m1 && !(br == 1 && bc == 32)) continue;
    if (ceil_div(shape[0], br) == static_cast<std::int64_t>(scale.shape[0]) &&
        ceil_div(shape[1], bc) == static_cast<std::int64_t>(scale.shape[1])) {
      fits.push_back({br, bc});
    }
  }
  if (form == PairForm::nvfp4 && fits.size() == 2) fits = {{1, 16}};  // a row of 16 or fewer: NVFP4's own block
  return fits;
}

// The name a pair's scheme is listed under: the scheme's own, or for block scales stored as BF16 / F16 (which the
// scheme reads as the f32 values they widen to) the element, block and stored dtype, e4m3-128x128-bf16, as the
// scaled form names compressed-tensors' BF16 blocks.
std::string listed_name(const Scheme& s, DType stored) {
  if (!half_scale(stored)) return s.name;
  return cat(s.element.name(), "-", s.block_rows, "x", s.block_cols, "-", stored == DType::BF16 ? "bf16" : "f16");
}

// The pair of the DeepSeek, DeepSeek-V4 or NVFP4 form, labelled with block br x bc.
QuantizedPair own_form_pair(PairForm form, const SafetensorsFile& file, const SafetensorsTensor& w,
                            const SafetensorsTensor& scale, const SafetensorsTensor* scale2,
                            std::vector<std::int64_t> shape, const Format& element, std::array<int, 2> block) {
  const auto [br, bc] = block;
  QuantizedPair p;
  p.form = form;
  p.weight = w.name;
  p.scale = scale.name;
  if (scale2) p.tensor_scale = scale2->name;
  p.shape = std::move(shape);
  p.scheme = form == PairForm::nvfp4 && bc == 16 ? scheme_named("nvfp4")
                                                 : scheme_named(scheme_text(element, br, bc, *scale_of(scale.dtype)));
  if (form == PairForm::nvfp4) p.scheme.tensor_scale = true;  // NVFP4's layout with 32-element blocks
  p.scheme_name = listed_name(p.scheme, scale.dtype);
  p.output = w.name;
  p.output_shape = {static_cast<std::uint64_t>(p.shape[0]), static_cast<std::uint64_t>(p.shape[1])};
  p.block_rows = br;
  p.block_cols = bc;
  const std::string module = w.name.ends_with(".weight") ? w.name.substr(0, w.name.size() - 7) : w.name;
  // Static activation scales: input_scale (AutoFP8, ModelOpt), activation_scale (transformers' FineGrainedFP8 with
  // activation_scheme "static", as Mistral's FP8 releases store it).
  for (const char* part : {".input_scale", ".activation_scale"}) {
    if (file.find(module + part) != nullptr) p.extras.push_back(module + part);
  }
  return p;
}

// One scale for the whole FP8 tensor ([] or [1]; or [1, 1] where no block's grid is one tile): transformers'
// FineGrainedFP8 with weight_block_size null. Its scheme's block is the whole [R, C], so the pair is one
// QuantizedTensor with one f32 scale; listed as e4m3-tensor-f32.
bool one_scale(const SafetensorsTensor& scale) { return element_count(scale.shape) == 1 && scale.shape.size() <= 2; }

QuantizedPair per_tensor_pair(const SafetensorsFile& file, const SafetensorsTensor& w, const SafetensorsTensor& scale,
                              std::vector<std::int64_t> shape, const Format& element) {
  QuantizedPair p = own_form_pair(PairForm::deepseek, file, w, scale, nullptr, shape, element, {128, 128});
  p.scheme.block_rows = static_cast<int>(shape[0]);
  p.scheme.block_cols = static_cast<int>(shape[1]);
  p.scheme.name = cat(element.name, "-tensor-f32");
  p.block_rows = p.scheme.block_rows;
  p.block_cols = p.scheme.block_cols;
  const char* stored = scale.dtype == DType::BF16 ? "bf16" : scale.dtype == DType::F16 ? "f16" : "f32";
  p.scheme_name = cat(element.name, "-tensor-", stored);
  return p;
}

// DeepSeek-V4's release names: X.weight (F8_E4M3, or FP4 packed as I8 / U8) with X.scale; nullptr when `w` is no such
// weight (a float weight beside a float X.scale is a model's own pair of parameters, not a quantized one).
const SafetensorsTensor* release_scale(const SafetensorsFile& file, const SafetensorsTensor& w) {
  if (!w.name.ends_with(".weight")) return nullptr;
  if (w.dtype != DType::F8_E4M3 && w.dtype != DType::I8 && w.dtype != DType::U8) return nullptr;
  return file.find(w.name.substr(0, w.name.size() - 7) + ".scale");
}

// The pair whose codes are `w`, labelled with the first block shape whose grid fits; every block shape that fits
// goes into `fits` (where there are several, they map every element to the same scale: only the label differs).
std::optional<QuantizedPair> match(const SafetensorsFile& file, const SafetensorsTensor& w,
                                   std::vector<std::array<int, 2>>& fits, int packed_bits) {
  fits.clear();
  const Format* element = element_of(w.dtype);
  if (w.name.ends_with("_blocks") || w.name.ends_with(".weight_packed") || w.name.ends_with(".qweight")) {
    return detail::match_dialect_pair(file, w, packed_bits);
  }
  if (element == nullptr) return std::nullopt;
  const SafetensorsTensor* scale = file.find(w.name + "_scale_inv");
  const SafetensorsTensor* scale2 = nullptr;
  PairForm form = PairForm::deepseek;
  if (scale == nullptr) {
    scale = file.find(w.name + "_scale");
    scale2 = file.find(w.name + "_scale_2");
    if (scale == nullptr && scale2 == nullptr && (scale = release_scale(file, w)) != nullptr) {
      form = PairForm::deepseek_v4;
    } else if (scale == nullptr || scale2 == nullptr) {
      return detail::match_dialect_pair(file, w, packed_bits);
    } else if (w.dtype == DType::U8 && half_or_f32(scale->dtype)) {
      // ModelOpt's W4A8_AWQ: INT4 codes with float group scales and an FP8 second level, which no form reads; the
      // quantization rule names it (quantization_rule.cc).
      return std::nullopt;
    } else {
      form = PairForm::nvfp4;
    }
  }
  const auto shape = logical_shape(w);
  // Which scale dtypes each form stores: DeepSeek's W_scale_inv F32 or F8_E8M0 (minifloat's own form also F8_E4M3,
  // fp4-e4m3-16), and Qwen's BF16 / F16; DeepSeek-V4's X.scale F8_E8M0 or F32 (V4-Flash-Base); NVFP4's W_scale
  // F8_E4M3.
  const bool dtype_fits = form == PairForm::deepseek      ? scale_of(scale->dtype) != nullptr
                          : form == PairForm::deepseek_v4 ? scale->dtype == DType::F8_E8M0 || scale->dtype == DType::F32
                                                          : scale->dtype == DType::F8_E4M3;
  const bool fp8 = *element == e4m3 || *element == e5m2;
  if (shape && form == PairForm::deepseek && scale_of(scale->dtype) == &f32 && fp8 && one_scale(*scale) &&
      (scale->shape.size() < 2 || fitting_blocks(form, *element, {(*shape)[0], (*shape)[1]}, *scale).empty()) &&
      (*shape)[0] > 0 && (*shape)[1] > 0) {
    return per_tensor_pair(file, w, *scale, *shape, *element);
  }
  if (!shape || !dtype_fits || scale->shape.size() != 2) {
    const char* expected = form == PairForm::deepseek
                               ? "a 2-D weight with a 2-D F32, F8_E8M0, F8_E4M3, BF16 or F16 scale grid, or one "
                                 "scale for an FP8 tensor"
                           : form == PairForm::deepseek_v4 ? "a 2-D weight with a 2-D F8_E8M0 or F32 scale grid"
                                                           : "a 2-D weight with a 2-D F8_E4M3 scale";
    throw IoError(IoErrc::size_mismatch, file.path(), w.name,
                  cat("weight ", dtype_name(w.dtype), " ", shape_text(w.shape), " with scale ", scale->name, " ",
                      dtype_name(scale->dtype), " ", shape_text(scale->shape), " is not ", expected));
  }
  if (form == PairForm::nvfp4 && (scale2->dtype != DType::F32 || !scale2->shape.empty() || *element != e2m1)) {
    throw IoError(IoErrc::size_mismatch, file.path(), w.name, "NVFP4 needs e2m1 data and an F32 scalar _scale_2");
  }
  fits = fitting_blocks(form, *element, {(*shape)[0], (*shape)[1]}, *scale);
  if (!fits.empty()) return own_form_pair(form, file, w, *scale, scale2, *shape, *element, fits.front());
  throw IoError(
      IoErrc::size_mismatch, file.path(), w.name,
      cat("scale ", scale->name, " [", scale->shape[0], ", ", scale->shape[1], "] fits no block of [", (*shape)[0],
          ", ", (*shape)[1], "] (tried 128x128, 32x32, 1x128, 1x32", form == PairForm::nvfp4 ? ", 1x16" : "", ")"));
}

std::vector<std::uint8_t> copy_bytes(std::span<const std::byte> b) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(b.data());
  return {p, p + b.size()};
}

// BF16 / F16 scale bytes as the f32 bytes of the same values (every BF16 and F16 value is an f32 value: exact).
std::vector<std::uint8_t> widened_scales(const std::vector<std::uint8_t>& in, DType t) {
  std::vector<std::uint8_t> out(in.size() * 2);
  for (std::size_t i = 0; i < in.size() / 2; ++i) {
    const std::uint32_t h = in[2 * i] | static_cast<std::uint32_t>(in[2 * i + 1]) << 8;
    const float v = t == DType::BF16 ? std::bit_cast<float>(h << 16) : static_cast<float>(decode(f16, h));
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

}  // namespace

// A pair that fits several block shapes (a row of 32 or fewer columns fits 1x128 and 1x32 alike) takes the shape
// that the file's unambiguous pairs of the same scheme family use most: an MXFP8 checkpoint's short rows read as
// 1x32, not as DeepSeek's 1x128.
void relabel_ambiguous(std::vector<QuantizedPair>& pairs, const std::vector<std::vector<std::array<int, 2>>>& fits,
                       const SafetensorsFile& file) {
  std::map<std::string, std::map<std::array<int, 2>, int>> used;  // element and scale -> block -> pairs
  const auto family = [](const QuantizedPair& p) {
    return cat(p.scheme.element.name(), "/", p.scheme.scale_format->name);
  };
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (fits[i].size() == 1) ++used[family(pairs[i])][fits[i][0]];
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (fits[i].size() < 2) continue;
    QuantizedPair& p = pairs[i];
    std::array<int, 2> best = fits[i][0];
    int most = 0;
    for (const std::array<int, 2>& b : fits[i]) {
      const int n = used[family(p)][b];
      if (n > most) best = b, most = n;
    }
    p.block_rows = best[0];
    p.block_cols = best[1];
    const Profile profile = p.scheme.profile;
    p.scheme = scheme_named(scheme_text(*p.scheme.element.format, best[0], best[1], *p.scheme.scale_format));
    p.scheme.profile = profile;
    p.scheme_name = listed_name(p.scheme, file.find(p.scale)->dtype);
  }
}

namespace {

// ModelOpt's AWQ / SmoothQuant smoothing beside a pair's weight: M.pre_quant_scale, one float per input column.
void attach_pre_quant_scale(const SafetensorsFile& file, QuantizedPair& p) {
  const std::string& w = p.output;
  const SafetensorsTensor* s = file.find((w.ends_with(".weight") ? w.substr(0, w.size() - 7) : w) + ".pre_quant_scale");
  if (s == nullptr || p.form == PairForm::blocks) return;
  const bool is_float = s->dtype == DType::F32 || s->dtype == DType::BF16 || s->dtype == DType::F16;
  if (!is_float || p.shape.size() != 2 ||
      s->shape != std::vector<std::uint64_t>{static_cast<std::uint64_t>(p.shape[1])}) {
    throw IoError(
        IoErrc::size_mismatch, file.path(), s->name,
        cat(dtype_name(s->dtype), " ", shape_text(s->shape), " is no pre_quant_scale of ", p.weight,
            ": one F32/BF16/F16 value per input column, [", p.shape.size() == 2 ? p.shape[1] : 0, "] expected"));
  }
  p.pre_quant_scale = s->name;
  p.extras.push_back(s->name);
}

// The weight's values with the smoothing folded in: W[r, c] x pre_quant_scale[c], rounded once to f32.
void fold_pre_quant_scale(const SafetensorsFile& file, const QuantizedPair& p, std::vector<float>& y) {
  if (p.pre_quant_scale.empty()) return;
  const std::vector<float> factor = detail::scale_tensor_values(file, *file.find(p.pre_quant_scale));
  const auto cols = static_cast<std::size_t>(p.shape[1]);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] *= factor[i % cols];
}

}  // namespace

std::vector<QuantizedPair> find_pairs(const SafetensorsFile& file, int packed_bits) {
  std::vector<QuantizedPair> out;
  std::vector<std::vector<std::array<int, 2>>> fits;
  std::vector<std::array<int, 2>> f;
  for (const SafetensorsTensor& t : file.tensors()) {
    if (std::optional<QuantizedPair> p = match(file, t, f, packed_bits)) {
      attach_pre_quant_scale(file, *p);
      out.push_back(std::move(*p));
      fits.push_back(f);
    }
  }
  relabel_ambiguous(out, fits, file);
  return out;
}

std::string_view to_string(PairForm f) {
  switch (f) {
    case PairForm::deepseek: return "W + W_scale_inv";
    case PairForm::nvfp4: return "W + W_scale + W_scale_2";
    case PairForm::scaled: return "W + W_scale";
    case PairForm::packed: return "weight_packed + weight_scale";
    case PairForm::packed_global: return "weight_packed + weight_scale + weight_global_scale";
    case PairForm::blocks: return "X_blocks + X_scales";
    case PairForm::integer: return "integer codes + weight_scale";
    case PairForm::deepseek_v4: return "X.weight + X.scale";
  }
  return "?";
}

namespace {

// The forms read as one QuantizedTensor: DeepSeek's (either naming) and ModelOpt's NVFP4.
bool own_form(PairForm f) { return f == PairForm::deepseek || f == PairForm::deepseek_v4 || f == PairForm::nvfp4; }

}  // namespace

std::vector<float> dequantize_pair(const SafetensorsFile& file, const QuantizedPair& pair, int threads) {
  std::vector<float> y;
  if (!own_form(pair.form)) {
    y = detail::dequantize_dialect_pair(file, pair);
  } else {
    const QuantizedTensor q = read_pair(file, pair);
    y.resize(static_cast<std::size_t>(q.count()));
    dequantize(q, y.data(), threads);
  }
  fold_pre_quant_scale(file, pair, y);
  return y;
}

QuantizedTensor read_pair(const SafetensorsFile& file, const QuantizedPair& pair, Profile profile) {
  if (!own_form(pair.form)) {
    throw IoError(IoErrc::invalid_tensor_entry, file.path(), pair.weight,
                  cat("a ", to_string(pair.form), " pair has no QuantizedTensor form; use dequantize_pair"));
  }
  const SafetensorsTensor* w = file.find(pair.weight);
  const SafetensorsTensor* s = file.find(pair.scale);
  if (w == nullptr || s == nullptr)
    throw IoError(IoErrc::invalid_tensor_entry, file.path(), pair.weight, "pair is gone");
  QuantizedTensor q;
  q.shape = pair.shape;
  q.scheme = pair.scheme;
  q.scheme.profile = profile;
  q.codes = copy_bytes(file.bytes(*w));
  q.scales = copy_bytes(file.bytes(*s));
  if (half_scale(s->dtype)) q.scales = widened_scales(q.scales, s->dtype);
  q.scale_shape = {1, 1};  // one scale for the tensor: [], [1] or [1, 1]
  if (s->shape.size() == 2)
    q.scale_shape = {static_cast<std::int64_t>(s->shape[0]), static_cast<std::int64_t>(s->shape[1])};
  if (!pair.tensor_scale.empty()) {
    const SafetensorsTensor* t = file.find(pair.tensor_scale);
    std::memcpy(&q.tensor_scale, file.bytes(*t).data(), 4);
  }
  try {
    validate(q);
  } catch (const QuantizeError& e) {
    throw IoError(IoErrc::size_mismatch, file.path(), pair.weight, e.what());
  }
  return q;
}

std::vector<OwnedTensor> pair_tensors(const std::string& name, const QuantizedTensor& q) {
  if (q.layout != Layout::packed || q.scheme.element.is_int() || q.shape.size() != 2) {
    throw IoError(IoErrc::invalid_tensor_entry, "", name,
                  "checkpoints hold 2-D float-element tensors in the packed layout");
  }
  std::vector<OwnedTensor> out;
  const auto bytes = [](const std::vector<std::uint8_t>& v) {
    std::vector<std::byte> b(v.size());
    std::memcpy(b.data(), v.data(), v.size());
    return b;
  };
  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(q.shape[0]),
                                         static_cast<std::uint64_t>(q.shape[1])};
  out.push_back({name, dtype_of_element(*q.scheme.element.format), shape, bytes(q.codes)});
  const std::vector<std::uint64_t> scale_shape{static_cast<std::uint64_t>(q.scale_shape[0]),
                                               static_cast<std::uint64_t>(q.scale_shape[1])};
  const bool two_level = q.scheme.tensor_scale;
  out.push_back({name + (two_level ? "_scale" : "_scale_inv"), dtype_of_scale(*q.scheme.scale_format), scale_shape,
                 bytes(q.scales)});
  if (two_level) {
    std::vector<std::byte> t(4);
    std::memcpy(t.data(), &q.tensor_scale, 4);
    out.push_back({name + "_scale_2", DType::F32, {}, std::move(t)});
  }
  return out;
}

}  // namespace mf::io
