// The pair forms of compressed-tensors, ModelOpt's FP8 and gpt-oss, found by name and dequantized by one loop:
// value = element code's value x its block's scale (x or / the second level), each step in f32 as the libraries do.
#include "dialect_pairs.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "../io/file.h"
#include "minifloat/codec.h"
#include "minifloat/scheme.h"
#include "minifloat/text.h"

namespace mf::io::detail {
namespace {

std::uint64_t elements(const std::vector<std::uint64_t>& s) {
  std::uint64_t n = 1;
  for (const std::uint64_t d : s) n *= d;
  return n;
}

bool is_e8m0(DType t) { return t == DType::U8 || t == DType::F8_E8M0; }

// A scale of one of these dtypes, as f32 (exactly: each is a subset of f32).
bool scale_dtype(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F8_E4M3 || is_e8m0(t);
}

std::string_view scale_label(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::F8_E4M3: return "e4m3";
    default: return "ue8m0";
  }
}

float scale_at(DType t, const std::byte* p, std::size_t i) {
  std::uint32_t bits = 0;
  switch (t) {
    case DType::F32: std::memcpy(&bits, p + 4 * i, 4); return std::bit_cast<float>(bits);
    case DType::BF16: std::memcpy(&bits, p + 2 * i, 2); return std::bit_cast<float>(bits << 16);
    case DType::F16: std::memcpy(&bits, p + 2 * i, 2); return static_cast<float>(decode(f16, bits));
    case DType::F8_E4M3: return static_cast<float>(decode(e4m3, static_cast<std::uint32_t>(p[i])));
    default: return static_cast<float>(decode(ue8m0, static_cast<std::uint32_t>(p[i])));
  }
}

// The block edge that splits n into s pieces: the whole of n for one scale, else the first usual block size.
std::uint64_t block_of(std::uint64_t n, std::uint64_t s) {
  if (s == 1) return n == 0 ? 1 : n;
  for (const std::uint64_t b : {1, 16, 32, 64, 128}) {
    if ((n + b - 1) / b == s) return b;
  }
  return 0;
}

void add_extras(const SafetensorsFile& f, const std::string& module, QuantizedPair& p) {
  for (const char* part : {".input_scale", ".input_global_scale", ".weight_zero_point"}) {
    if (f.find(module + part) != nullptr) p.extras.push_back(module + part);
  }
}

[[noreturn]] void misfit(const SafetensorsFile& f, const SafetensorsTensor& w, const SafetensorsTensor& s,
                         std::string_view expected) {
  throw IoError(IoErrc::size_mismatch, f.path(), w.name,
                cat(dtype_name(w.dtype), " ", shape_text(w.shape), " with ", s.name, " ", dtype_name(s.dtype), " ",
                    shape_text(s.shape), " fits no form: ", expected));
}

// gpt-oss: X_blocks U8 [..., R, G, 16] + X_scales U8 [..., R, G].
std::optional<QuantizedPair> match_blocks(const SafetensorsFile& f, const SafetensorsTensor& w) {
  const std::string base = w.name.substr(0, w.name.size() - 7);
  const SafetensorsTensor* s = f.find(base + "_scales");
  if (s == nullptr) return std::nullopt;
  const bool fits = w.dtype == DType::U8 && w.shape.size() >= 3 && w.shape.back() == 16 && is_e8m0(s->dtype) &&
                    std::vector<std::uint64_t>(w.shape.begin(), w.shape.end() - 1) == s->shape;
  if (!fits) misfit(f, w, *s, "X_blocks U8 [..., R, C/32, 16] with X_scales U8 [..., R, C/32] (gpt-oss MXFP4)");
  QuantizedPair p;
  p.form = PairForm::blocks;
  p.weight = w.name;
  p.scale = s->name;
  p.output = base;
  // transformers loads X transposed: gate_up_proj_blocks [E, 2I, H/32, 16] is the parameter gate_up_proj [E, H, 2I].
  const std::uint64_t rows = w.shape[w.shape.size() - 3], cols = w.shape[w.shape.size() - 2] * 32;
  p.output_shape.assign(w.shape.begin(), w.shape.end() - 3);
  p.output_shape.push_back(cols);
  p.output_shape.push_back(rows);
  p.shape = {static_cast<std::int64_t>(elements(p.output_shape) / std::max<std::uint64_t>(cols, 1)),
             static_cast<std::int64_t>(cols)};
  p.block_rows = 1;
  p.block_cols = 32;
  p.scheme_name = "e2m1-1x32-ue8m0";
  return p;
}

// The module a weight belongs to: P for P.weight, the name itself otherwise.
std::string module_of(const std::string& weight) {
  return weight.size() > 7 && weight.ends_with(".weight") ? weight.substr(0, weight.size() - 7) : weight;
}

// A 2-D pair [rows, cols] with one scale per `block` elements of a row.
QuantizedPair row_pair(PairForm form, const std::string& weight, const std::string& scale, const std::string& output,
                       std::array<std::uint64_t, 2> shape, std::uint64_t block, std::string scheme_name) {
  QuantizedPair p;
  p.form = form;
  p.weight = weight;
  p.scale = scale;
  p.output = output;
  p.output_shape = {shape[0], shape[1]};
  p.shape = {static_cast<std::int64_t>(shape[0]), static_cast<std::int64_t>(shape[1])};
  p.block_rows = 1;
  p.block_cols = static_cast<int>(block);
  p.scheme_name = std::move(scheme_name);
  return p;
}

// FP4 codes packed two per byte, U8 [R, C/2]: the logical [R, C] (zeros for any other shape).
std::array<std::uint64_t, 2> packed_shape(const SafetensorsTensor& w) {
  if (w.shape.size() != 2) return {0, 0};
  return {w.shape[0], 2 * w.shape[1]};
}

// compressed-tensors' packed codes with scales of their form: E8M0 per 32, or (with a global scale g) e4m3 per 16.
bool packed_fits(const SafetensorsTensor& w, const SafetensorsTensor& s, const SafetensorsTensor* g) {
  const auto [rows, cols] = packed_shape(w);
  const std::uint64_t block = g ? 16 : 32;
  const bool scales =
      g ? s.dtype == DType::F8_E4M3 && g->dtype == DType::F32 && elements(g->shape) == 1 : is_e8m0(s.dtype);
  return w.dtype == DType::U8 && w.shape.size() == 2 && scales &&
         s.shape == std::vector<std::uint64_t>{rows, (cols + block - 1) / block};
}

// compressed-tensors: P.weight_packed U8 [R, C/2] + P.weight_scale (+ P.weight_global_scale).
std::optional<QuantizedPair> match_packed(const SafetensorsFile& f, const SafetensorsTensor& w) {
  const std::string base = w.name.substr(0, w.name.size() - 7);  // P.weight
  const SafetensorsTensor* s = f.find(base + "_scale");
  if (s == nullptr) return std::nullopt;
  const SafetensorsTensor* g = f.find(base + "_global_scale");
  if (!packed_fits(w, *s, g)) {
    misfit(f, w, *s,
           g ? "weight_packed U8 [R, C/2], weight_scale F8_E4M3 [R, C/16], weight_global_scale F32 [1] "
               "(compressed-tensors nvfp4-pack-quantized)"
             : "weight_packed U8 [R, C/2] with weight_scale U8 [R, C/32] (compressed-tensors "
               "mxfp4-pack-quantized)");
  }
  QuantizedPair p = row_pair(g ? PairForm::packed_global : PairForm::packed, w.name, s->name, base, packed_shape(w),
                             g ? 16 : 32, g ? "e2m1-1x16-e4m3-global" : "e2m1-1x32-ue8m0");
  if (g) p.tensor_scale = g->name;
  add_extras(f, module_of(base), p);
  return p;
}

bool float_scale(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }
bool int_dtype(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::I8 || t == DType::U8; }

std::int64_t int_at(const SafetensorsTensor& t, std::span<const std::byte> b, std::size_t i) {
  switch (t.dtype) {
    case DType::I64: {
      std::int64_t v;
      std::memcpy(&v, b.data() + 8 * i, 8);
      return v;
    }
    case DType::I32: {
      std::int32_t v;
      std::memcpy(&v, b.data() + 4 * i, 4);
      return v;
    }
    case DType::I8: return static_cast<std::int8_t>(b[i]);
    default: return static_cast<std::uint8_t>(b[i]);
  }
}

// The group of columns each of G scales covers over C columns: C for one scale (channel), else the size whose
// ceil(C / size) is G; 0 when none is.
std::uint64_t group_of(std::uint64_t cols, std::uint64_t groups) {
  if (groups == 1) return cols == 0 ? 1 : cols;
  const std::uint64_t g = (cols + groups - 1) / groups;
  return g > 0 && (cols + g - 1) / g == groups ? g : 0;
}

// A group index (compressed-tensors' weight_g_idx, GPTQ's g_idx): one integer per column, each a group of the
// scales; its name, or an IoError naming it.
std::string checked_group_index(const SafetensorsFile& f, const SafetensorsTensor& g, const QuantizedPair& p,
                                std::uint64_t cols, std::uint64_t groups) {
  if (!int_dtype(g.dtype) || g.shape != std::vector<std::uint64_t>{cols}) {
    throw IoError(IoErrc::size_mismatch, f.path(), g.name,
                  cat(dtype_name(g.dtype), " ", shape_text(g.shape), " is no group index of ", p.weight,
                      ": one integer per column, [", cols, "] expected"));
  }
  if (!f.has_data()) return g.name;  // read headers-only: its shape checked, its values not read
  const std::span<const std::byte> b = f.bytes(g);
  for (std::uint64_t c = 0; c < cols; ++c) {
    const std::int64_t v = int_at(g, b, c);
    if (v < 0 || static_cast<std::uint64_t>(v) >= groups) {
      throw IoError(IoErrc::size_mismatch, f.path(), g.name,
                    cat("column ", c, " is in group ", v, ", outside the ", groups, " groups of its scales"));
    }
  }
  return g.name;
}

// The integer form's optional parts, checked against [rows, groups] (zero points: packed along the rows when the
// codes are; the group index: one I32 per column).
void integer_parts(const SafetensorsFile& f, const std::string& module, QuantizedPair& p, std::uint64_t rows,
                   std::uint64_t cols, std::uint64_t groups, bool packed) {
  if (const SafetensorsTensor* z = f.find(module + ".weight_zero_point")) {
    const std::vector<std::uint64_t> want =
        packed ? std::vector<std::uint64_t>{(rows * static_cast<std::uint64_t>(p.bits) + 31) / 32, groups}
               : std::vector<std::uint64_t>{rows, groups};
    if (!int_dtype(z->dtype) || z->shape != want || (packed && z->dtype != DType::I32)) {
      throw IoError(IoErrc::size_mismatch, f.path(), z->name,
                    cat(dtype_name(z->dtype), " ", shape_text(z->shape), " is no zero point of ", p.weight, ": ",
                        packed ? "I32 packed along the rows, " : "integers ", shape_text(want), " expected"));
    }
    p.zero_point = z->name;
  }
  if (const SafetensorsTensor* g = f.find(module + ".weight_g_idx"))
    p.group_index = checked_group_index(f, *g, p, cols, groups);
}

// weight_shape's [R, C]; read headers-only, R from the words and C = 32 x words / packed_bits (config.json's num_bits:
// exact unless C x bits is not a multiple of 32, when C reads as the words' whole width), or an IoError naming the
// tensor without packed_bits.
std::array<std::int64_t, 2> packed_rows_cols(const SafetensorsFile& f, const SafetensorsTensor& w,
                                             const SafetensorsTensor& shape, int packed_bits) {
  if (f.has_data()) {
    const auto rows_cols = f.bytes(shape);
    return {int_at(shape, rows_cols, 0), int_at(shape, rows_cols, 1)};
  }
  if (packed_bits < 2 || packed_bits > 8) {
    throw IoError(IoErrc::size_mismatch, f.path(), w.name,
                  "read headers-only, and config.json gives no one num_bits for its packed integers: the columns "
                  "are in weight_shape's values, which a headers-only reading does not read");
  }
  return {static_cast<std::int64_t>(w.shape[0]), static_cast<std::int64_t>(32 * w.shape[1] / packed_bits)};
}

// compressed-tensors pack-quantized: P.weight_packed I32 [R, ceil(C x b / 32)] + P.weight_scale (float [R, G]) +
// P.weight_shape [2] (R, C); b read off the widths (2 to 8 bits; exactly one may fit).
std::optional<QuantizedPair> match_packed_int(const SafetensorsFile& f, const SafetensorsTensor& w, int packed_bits) {
  const std::string base = w.name.substr(0, w.name.size() - 7);  // P.weight
  const std::string module = base.substr(0, base.size() - 7);    // P
  const SafetensorsTensor* s = f.find(base + "_scale");
  const SafetensorsTensor* shape = f.find(base + "_shape");
  if (s == nullptr) return std::nullopt;
  const std::string expected =
      "weight_packed I32 [R, ceil(C x b / 32)], weight_scale BF16/F16/F32 [R, G] and "
      "weight_shape [2] = [R, C] (compressed-tensors pack-quantized)";
  if (shape == nullptr || !int_dtype(shape->dtype) || shape->shape != std::vector<std::uint64_t>{2} ||
      w.shape.size() != 2 || !float_scale(s->dtype) || s->shape.size() != 2) {
    misfit(f, w, *s, expected);
  }
  const auto [r64, c64] = packed_rows_cols(f, w, *shape, packed_bits);
  // C is at most 32 columns per word (2 bits each would be 16): a larger one is no shape of these words.
  if (r64 < 0 || c64 <= 0 || static_cast<std::uint64_t>(r64) != w.shape[0] || s->shape[0] != w.shape[0] ||
      static_cast<std::uint64_t>(c64) > 16 * w.shape[1]) {
    misfit(f, w, *s, expected);
  }
  const auto rows = static_cast<std::uint64_t>(r64), cols = static_cast<std::uint64_t>(c64);
  // The width whose codes fill the words exactly (32 x words / C), else the one width whose padded rows fit.
  int bits = 0;
  if ((32 * w.shape[1]) % cols == 0 && 32 * w.shape[1] / cols >= 2 && 32 * w.shape[1] / cols <= 8) {
    bits = static_cast<int>(32 * w.shape[1] / cols);
  }
  for (int b = 2; b <= 8 && bits == 0; ++b) {
    if ((cols * static_cast<std::uint64_t>(b) + 31) / 32 != w.shape[1]) continue;
    for (int b2 = b + 1; b2 <= 8; ++b2) {
      if ((cols * static_cast<std::uint64_t>(b2) + 31) / 32 == w.shape[1]) {
        misfit(f, w, *s,
               cat(expected, "; ", b, " and ", b2, " bits both fit ", w.shape[1], " words of ", cols, " columns"));
      }
    }
    bits = b;
  }
  const std::uint64_t groups = s->shape[1], group = group_of(cols, groups);
  if (bits == 0 || group == 0) misfit(f, w, *s, expected);
  QuantizedPair p = row_pair(
      PairForm::integer, w.name, s->name, base, {rows, cols}, group,
      cat("int", bits, "-", groups == 1 ? std::string("channel") : cat("1x", group), "-", scale_label(s->dtype)));
  p.bits = bits;
  p.extras.push_back(shape->name);
  integer_parts(f, module, p, rows, cols, groups, true);
  add_extras(f, module, p);  // input scales, the zero point and group index: parts of the pair
  if (f.find(module + ".weight_g_idx") != nullptr) p.extras.push_back(module + ".weight_g_idx");
  return p;
}

// AutoAWQ (GEMM) and AutoGPTQ: M.qweight I32 + M.qzeros I32 + M.scales F16 (+ M.g_idx), told apart by the packed
// dimension (AWQ packs 8 outputs per word: qweight [C, R/8]; GPTQ packs the inputs: qweight [C x b / 32, R]).
std::optional<QuantizedPair> match_awq_gptq(const SafetensorsFile& f, const SafetensorsTensor& w) {
  const std::string module = w.name.substr(0, w.name.size() - 8);
  const SafetensorsTensor* s = f.find(module + ".scales");
  const SafetensorsTensor* z = f.find(module + ".qzeros");
  if (s == nullptr) return std::nullopt;
  const std::string expected =
      "AutoAWQ GEMM (qweight I32 [C, R/8], qzeros I32 [C/G, R/8], scales F16 [C/G, R]) or "
      "AutoGPTQ (qweight I32 [C x b / 32, R], qzeros I32 [C/G, R x b / 32], scales [C/G, R])";
  if (w.dtype != DType::I32 || w.shape.size() != 2 || s->shape.size() != 2 || !float_scale(s->dtype) || z == nullptr ||
      z->dtype != DType::I32 || z->shape.size() != 2 || z->shape[0] != s->shape[0]) {
    misfit(f, w, *s, expected);
  }
  const std::uint64_t groups = s->shape[0], rows = s->shape[1];  // R outputs
  QuantizedPair p;
  std::uint64_t cols = 0;
  if (w.shape[1] * 8 == rows && z->shape[1] * 8 == rows) {  // AWQ: 4-bit, 8 outputs per word
    p.packing = QuantizedPair::Packing::awq;
    p.bits = 4;
    cols = w.shape[0];
  } else if (w.shape[1] == rows && rows > 0 && (z->shape[1] * 32) % rows == 0) {  // GPTQ
    p.packing = QuantizedPair::Packing::gptq;
    p.bits = static_cast<int>(z->shape[1] * 32 / rows);
    if (p.bits < 2 || p.bits > 8) misfit(f, w, *s, expected);
    cols = w.shape[0] * 32 / static_cast<std::uint64_t>(p.bits);
    if (const SafetensorsTensor* g = f.find(module + ".g_idx"); g != nullptr && g->shape.size() == 1) {
      cols = g->shape[0];
    }
    if ((cols * static_cast<std::uint64_t>(p.bits) + 31) / 32 != w.shape[0]) misfit(f, w, *s, expected);
  } else {
    misfit(f, w, *s, expected);
  }
  const std::uint64_t group = group_of(cols, groups);
  if (group == 0) misfit(f, w, *s, expected);
  const std::string name = p.packing == QuantizedPair::Packing::awq ? "awq" : "gptq";
  const QuantizedPair base =
      row_pair(PairForm::integer, w.name, s->name, module + ".weight", {rows, cols}, group,
               cat(name, "-int", p.bits, "-", groups == 1 ? std::string("channel") : cat("1x", group), "-",
                   scale_label(s->dtype)));
  const auto packing = p.packing;
  const int bits = p.bits;
  p = base;
  p.packing = packing;
  p.bits = bits;
  p.zero_point = z->name;
  p.extras.push_back(z->name);
  if (const SafetensorsTensor* g = f.find(module + ".g_idx")) {
    p.group_index = checked_group_index(f, *g, p, cols, groups);
    p.extras.push_back(g->name);
  }
  return p;
}

// compressed-tensors int-quantized: W I8 [R, C] + W_scale (float [R, G] or [R, 1]), an optional W_zero_point;
// ModelOpt's INT8 (W8A16, W8A8_SQ_PER_CHANNEL): W_scale [R], one per output row.
std::optional<QuantizedPair> match_int8(const SafetensorsFile& f, const SafetensorsTensor& w,
                                        const SafetensorsTensor& s) {
  const std::string module = module_of(w.name);
  if (w.shape.size() != 2 || !float_scale(s.dtype) || s.shape.empty() || s.shape.size() > 2 ||
      s.shape[0] != w.shape[0]) {
    misfit(f, w, s,
           "an I8 weight [R, C] with W_scale BF16/F16/F32 [R, G] (compressed-tensors int-quantized) or [R] "
           "(ModelOpt INT8)");
  }
  const std::uint64_t rows = w.shape[0], cols = w.shape[1], groups = s.shape.size() == 2 ? s.shape[1] : 1;
  const std::uint64_t group = group_of(cols, groups);
  if (group == 0) misfit(f, w, s, "a scale grid of [R, G] groups over the columns");
  QuantizedPair p =
      row_pair(PairForm::integer, w.name, s.name, w.name, {rows, cols}, group,
               cat("int8-", groups == 1 ? std::string("channel") : cat("1x", group), "-", scale_label(s.dtype)));
  p.bits = 8;
  integer_parts(f, module, p, rows, cols, groups, false);
  add_extras(f, module, p);
  if (f.find(module + ".weight_g_idx") != nullptr) p.extras.push_back(module + ".weight_g_idx");
  return p;
}

// ModelOpt's INT4 (W4A16_AWQ; quant_utils.py pack_int4_in_uint8): W U8 [R/2, C], output rows 2i and 2i+1 in the
// low and high nibble of byte [i, c], + W_scale float [R, C/G], one scale per G input columns of a row.
std::optional<QuantizedPair> match_modelopt_int4(const SafetensorsFile& f, const SafetensorsTensor& w,
                                                 const SafetensorsTensor& s) {
  const std::string expected =
      "W U8 [R/2, C] with W_scale BF16/F16/F32 [R, C/G] (ModelOpt INT4, two output rows per byte)";
  if (w.shape.size() != 2 || s.shape.size() != 2 || s.shape[0] != 2 * w.shape[0]) misfit(f, w, s, expected);
  const std::uint64_t rows = s.shape[0], cols = w.shape[1], groups = s.shape[1], group = group_of(cols, groups);
  if (group == 0) misfit(f, w, s, expected);
  QuantizedPair p =
      row_pair(PairForm::integer, w.name, s.name, w.name, {rows, cols}, group,
               cat("int4-", groups == 1 ? std::string("channel") : cat("1x", group), "-", scale_label(s.dtype)));
  p.bits = 4;
  p.packing = QuantizedPair::Packing::modelopt_int4;
  add_extras(f, module_of(w.name), p);
  return p;
}

// ModelOpt's MXFP4: W U8 [R, C/2] + W_scale E8M0 [R, C/32], named as a plain weight.
std::optional<QuantizedPair> match_packed_weight(const SafetensorsFile& f, const SafetensorsTensor& w,
                                                 const SafetensorsTensor& s) {
  const auto [rows, cols] = packed_shape(w);
  if (w.shape.size() != 2 || !is_e8m0(s.dtype) || s.shape != std::vector<std::uint64_t>{rows, (cols + 31) / 32}) {
    misfit(f, w, s, "W U8 [R, C/2] with W_scale U8 [R, C/32] (MXFP4 packed two per byte)");
  }
  QuantizedPair p = row_pair(PairForm::packed, w.name, s.name, w.name, {rows, cols}, 32, "e2m1-1x32-ue8m0");
  add_extras(f, module_of(w.name), p);
  return p;
}

// A scale grid as two dimensions: [Sr, Sc], one value ([], [1], [1, 1]) as [1, 1], ModelOpt's per-channel [R]
// (FP8_PER_CHANNEL_PER_TOKEN: one scale per output row) as [R, 1], and its per-block [Sr, 1, Sc, 1] as [Sr, Sc];
// nullopt for any other shape.
std::optional<std::array<std::uint64_t, 2>> scale_grid(const std::vector<std::uint64_t>& s) {
  if (elements(s) == 1 && s.size() <= 2) return std::array<std::uint64_t, 2>{1, 1};
  if (s.size() == 1) return std::array<std::uint64_t, 2>{s[0], 1};
  if (s.size() == 2) return std::array<std::uint64_t, 2>{s[0], s[1]};
  if (s.size() == 4 && s[1] == 1 && s[3] == 1) return std::array<std::uint64_t, 2>{s[0], s[2]};
  return std::nullopt;
}

// e.g. e4m3-128x128-f32, e4m3-channel-bf16, e5m2-tensor-f32: the element, the block (read off the scale grid) and
// the dtype the scales are stored in.
std::string scaled_scheme_name(DType element, DType scale, std::array<std::uint64_t, 2> grid,
                               std::array<std::uint64_t, 2> block) {
  const std::string e = element == DType::F8_E4M3 ? "e4m3" : "e5m2";
  const std::string b = grid[0] == 1 && grid[1] == 1    ? "tensor"
                        : grid[1] == 1 && block[0] == 1 ? "channel"
                                                        : cat(block[0], "x", block[1]);
  return cat(e, "-", b, "-", scale_label(scale));
}

// W (F8) + W_scale, one scale per block of a grid read off the shapes.
std::optional<QuantizedPair> match_scaled(const SafetensorsFile& f, const SafetensorsTensor& w) {
  const SafetensorsTensor* s = f.find(w.name + "_scale");
  if (s == nullptr || f.find(w.name + "_scale_2") != nullptr) return std::nullopt;
  if (w.dtype == DType::U8)
    return float_scale(s->dtype) ? match_modelopt_int4(f, w, *s) : match_packed_weight(f, w, *s);
  if (w.dtype == DType::I8) return match_int8(f, w, *s);
  if (w.dtype != DType::F8_E4M3 && w.dtype != DType::F8_E5M2) return std::nullopt;
  const std::string expected =
      "an F8 weight [R, C] with W_scale F32/BF16/F16/E8M0 of one value, [R], [R, 1], "
      "[ceil(R/128), ceil(C/128)] or [R, C/32]";
  if (w.shape.size() != 2 || !scale_dtype(s->dtype)) misfit(f, w, *s, expected);
  const std::uint64_t rows = w.shape[0], cols = w.shape[1];
  const auto grid = scale_grid(s->shape);
  if (!grid) misfit(f, w, *s, expected);
  const std::uint64_t sr = (*grid)[0], sc = (*grid)[1];
  const std::uint64_t br = block_of(rows, sr), bc = block_of(cols, sc);
  if (br == 0 || bc == 0) misfit(f, w, *s, expected);
  QuantizedPair p = row_pair(PairForm::scaled, w.name, s->name, w.name, {rows, cols}, bc,
                             scaled_scheme_name(w.dtype, s->dtype, {sr, sc}, {br, bc}));
  p.block_rows = static_cast<int>(br);
  add_extras(f, module_of(w.name), p);
  return p;
}

// [..., R, C] (values) into [..., C, R] (the shape given).
std::vector<float> transpose_last_two(const std::vector<float>& x, const std::vector<std::uint64_t>& out_shape) {
  const std::uint64_t cols = out_shape[out_shape.size() - 2], rows = out_shape.back(), plane = rows * cols;
  std::vector<float> y(x.size());
  for (std::uint64_t base = 0; base < x.size(); base += plane) {
    for (std::uint64_t r = 0; r < rows; ++r) {
      for (std::uint64_t c = 0; c < cols; ++c) y[base + c * rows + r] = x[base + r * cols + c];
    }
  }
  return y;
}

}  // namespace

std::optional<QuantizedPair> match_dialect_pair(const SafetensorsFile& file, const SafetensorsTensor& w,
                                                int packed_bits) {
  if (w.name.ends_with("_blocks")) return match_blocks(file, w);
  if (w.name.ends_with(".qweight")) return match_awq_gptq(file, w);
  if (w.name.ends_with(".weight_packed")) {
    return w.dtype == DType::I32 ? match_packed_int(file, w, packed_bits) : match_packed(file, w);
  }
  return match_scaled(file, w);
}

std::vector<float> scale_tensor_values(const SafetensorsFile& file, const SafetensorsTensor& t) {
  std::vector<float> out(elements(t.shape));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = scale_at(t.dtype, file.bytes(t).data(), i);
  return out;
}

std::vector<float> pair_scale_values(const SafetensorsFile& file, const QuantizedPair& p) {
  const SafetensorsTensor* s = file.find(p.scale);
  if (s == nullptr) throw IoError(IoErrc::invalid_tensor_entry, file.path(), p.weight, "pair is gone");
  return scale_tensor_values(file, *s);
}

float pair_second_scale(const SafetensorsFile& file, const QuantizedPair& p) {
  if (p.tensor_scale.empty()) return 1;
  const SafetensorsTensor* g = file.find(p.tensor_scale);
  return scale_at(g->dtype, file.bytes(*g).data(), 0);
}

namespace {

// AutoAWQ's and AutoGPTQ's words (checkpoint_tensors.h): the code of output n, input k, and the zero point of
// output n in group g, as each library packs them.
constexpr std::array<int, 8> kAwqNibble{0, 4, 1, 5, 2, 6, 3, 7};  // AWQ_REVERSE_ORDER: output j of a word

std::uint32_t word_at(const std::byte* words, std::uint64_t i) {
  std::uint32_t v = 0;
  std::memcpy(&v, words + 4 * i, 4);
  return v;
}

// The b-bit field at bit `at` of column `col` of a little-endian 32-bit word matrix `width` words wide and `height`
// high, the bits running down the column (a field may span two words): a row of words is width 1, height its
// length; compressed-tensors' zero points and GPTQ's codes are packed down columns.
std::uint32_t field_down(const std::byte* words, std::uint64_t width, std::uint64_t col, std::uint64_t at, int b,
                         std::uint64_t height) {
  std::uint64_t two = word_at(words, (at / 32) * width + col);
  if ((at % 32) + static_cast<std::uint64_t>(b) > 32 && at / 32 + 1 < height) {
    two |= static_cast<std::uint64_t>(word_at(words, (at / 32 + 1) * width + col)) << 32;
  }
  return static_cast<std::uint32_t>((two >> (at % 32)) & ((1u << b) - 1));
}

}  // namespace

// AutoAWQ's words: qweight [C, R/8] and qzeros [G, R/8], output n at nibble kAwqNibble[n % 8] of word [line][n / 8];
// no zero offset. AutoGPTQ's: qweight [C b / 32, R] packed down the inputs; qzeros [G, R b / 32] along the outputs,
// stored as zero - 1 (v1: read back masked, a stored 2^b - 1 is 0) or as they are (gptq_v2). compressed-tensors':
// weight_packed [R, W] along the rows, weight_zero_point [R b / 32, G] down the rows, both as q + 2^(b-1) (so a missing
// zero point is 2^(b-1)); its I8 codes and unpacked zero points are signed.
IntegerNumbers integer_numbers(const SafetensorsFile& f, const QuantizedPair& p) {
  const SafetensorsTensor& w = *f.find(p.weight);
  const SafetensorsTensor& s = *f.find(p.scale);
  IntegerNumbers n;
  n.rows = static_cast<std::uint64_t>(p.shape[0]);
  n.cols = static_cast<std::uint64_t>(p.shape[1]);
  n.bits = p.bits;
  n.group = static_cast<std::uint64_t>(p.block_cols);
  const bool ct = p.packing == QuantizedPair::Packing::compressed_tensors;
  const bool modelopt = p.packing == QuantizedPair::Packing::modelopt_int4;
  const bool row_major = ct || modelopt;  // scales [R, G] (ModelOpt's INT8: [R]); AWQ, GPTQ [G, R]
  const bool packed = !row_major || (ct && w.dtype == DType::I32);
  n.groups = s.shape.size() < 2 ? 1 : row_major ? s.shape[1] : s.shape[0];
  n.scale_dtype = s.dtype;
  const std::vector<float> stored = pair_scale_values(f, p);
  n.scales.resize(n.rows * n.groups);
  for (std::uint64_t r = 0; r < n.rows; ++r) {
    for (std::uint64_t k = 0; k < n.groups; ++k) {
      n.scales[r * n.groups + k] = stored[row_major ? r * n.groups + k : k * n.rows + r];
    }
  }
  const SafetensorsTensor* g = p.group_index.empty() ? nullptr : f.find(p.group_index);
  n.group_of_col.resize(n.cols);
  for (std::uint64_t c = 0; c < n.cols; ++c) {
    n.group_of_col[c] = g ? static_cast<std::uint64_t>(int_at(*g, f.bytes(*g), c)) : c / n.group;
    n.act_order = n.act_order || n.group_of_col[c] != c / n.group;
  }
  const int b = n.bits;
  const auto ub = static_cast<std::uint64_t>(b);
  const std::uint32_t mask = (1u << b) - 1;
  const std::byte* q = f.bytes(w).data();
  const SafetensorsTensor* z = p.zero_point.empty() ? nullptr : f.find(p.zero_point);
  const std::span<const std::byte> zspan = z ? f.bytes(*z) : std::span<const std::byte>();
  n.zero_stored = z != nullptr;
  n.codes.resize(n.rows * n.cols);
  n.zeros.assign(n.rows * n.groups, packed ? std::int32_t{1} << (b - 1) : 0);
  for (std::uint64_t r = 0; r < n.rows; ++r) {
    for (std::uint64_t c = 0; c < n.cols; ++c) {
      std::int32_t code = 0;
      if (p.packing == QuantizedPair::Packing::awq) {
        code = static_cast<std::int32_t>((word_at(q, c * (n.rows / 8) + r / 8) >> (4 * kAwqNibble[r % 8])) & 15);
      } else if (p.packing == QuantizedPair::Packing::gptq) {
        code = static_cast<std::int32_t>(field_down(q, n.rows, r, c * ub, b, w.shape[0]));
      } else if (modelopt) {  // pack_int4_in_uint8: output rows 2i, 2i+1 in the low, high nibble of byte [i, c]
        const auto byte = static_cast<std::uint32_t>(q[(r / 2) * n.cols + c]);
        const std::uint32_t nibble = r % 2 == 0 ? byte & 15 : byte >> 4;
        code = static_cast<std::int32_t>(nibble) - static_cast<std::int32_t>((nibble & 8) << 1);  // signed int4
      } else if (packed) {
        code = static_cast<std::int32_t>(field_down(q + 4 * r * w.shape[1], 1, 0, c * ub, b, w.shape[1]));
      } else {
        code = static_cast<std::int8_t>(q[r * n.cols + c]);
      }
      n.codes[r * n.cols + c] = static_cast<std::int16_t>(code);
    }
    if (z == nullptr) continue;
    const std::byte* zp = zspan.data();
    for (std::uint64_t k = 0; k < n.groups; ++k) {
      std::int64_t zero = 0;
      if (p.packing == QuantizedPair::Packing::awq) {
        zero = (word_at(zp, k * (n.rows / 8) + r / 8) >> (4 * kAwqNibble[r % 8])) & 15;
      } else if (p.packing == QuantizedPair::Packing::gptq) {
        const std::uint32_t stored = field_down(zp + 4 * k * z->shape[1], 1, 0, r * ub, b, z->shape[1]);
        zero = p.gptq_v2 ? stored : (stored + 1) & mask;
      } else if (packed) {
        zero = field_down(zp, n.groups, k, r * ub, b, z->shape[0]);
      } else {
        zero = int_at(*z, zspan, r * n.groups + k);
      }
      n.zeros[r * n.groups + k] = static_cast<std::int32_t>(zero);
    }
  }
  return n;
}

namespace {

// (q - zero point) x scale: each difference an integer of at most 9 bits, so the product is exact in f32 for BF16
// and F16 scales (and rounded once for F32 ones), as compressed-tensors computes it in the scale's dtype.
std::vector<float> dequantize_integer(const SafetensorsFile& file, const QuantizedPair& p, bool unit) {
  const IntegerNumbers n = integer_numbers(file, p);
  std::vector<float> out(n.rows * n.cols);
  for (std::uint64_t r = 0; r < n.rows; ++r) {
    for (std::uint64_t c = 0; c < n.cols; ++c) {
      const std::uint64_t i = r * n.groups + n.group_of_col[c];
      out[r * n.cols + c] = static_cast<float>(n.codes[r * n.cols + c] - n.zeros[i]) * (unit ? 1.0f : n.scales[i]);
    }
  }
  return out;
}

}  // namespace

std::vector<float> dequantize_dialect_pair(const SafetensorsFile& file, const QuantizedPair& p, bool unit) {
  const SafetensorsTensor* w = file.find(p.weight);
  const SafetensorsTensor* s = file.find(p.scale);
  if (w == nullptr || s == nullptr) throw IoError(IoErrc::invalid_tensor_entry, file.path(), p.weight, "pair is gone");
  if (p.form == PairForm::integer) {
    return dequantize_integer(file, p, unit);
  }
  const std::byte* codes = file.bytes(*w).data();
  const auto rows = static_cast<std::uint64_t>(p.shape[0]), cols = static_cast<std::uint64_t>(p.shape[1]);
  const auto br = static_cast<std::uint64_t>(p.block_rows), bc = static_cast<std::uint64_t>(p.block_cols);
  const std::uint64_t scale_cols = (cols + bc - 1) / bc;
  const bool fp4 = p.form != PairForm::scaled;
  const Format& element = fp4 ? e2m1 : w->dtype == DType::F8_E4M3 ? e4m3 : e5m2;
  std::array<float, 256> value{};
  for (std::uint32_t c = 0; c < (fp4 ? 16u : 256u); ++c) value[c] = static_cast<float>(decode(element, c));
  // Each block's scale decoded once (and divided by the second level first, in f32, as compressed-tensors does).
  std::vector<float> scales = pair_scale_values(file, p);
  if (unit) {
    std::fill(scales.begin(), scales.end(), 1.0f);
  } else if (p.form == PairForm::packed_global) {
    const float global = pair_second_scale(file, p);
    for (float& v : scales) v = v / global;
  }
  std::vector<float> out(rows * cols);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) {
      const std::uint64_t i = r * cols + c;
      // FP4: element 2k in the low nibble of byte k (compressed-tensors and gpt-oss alike).
      const auto byte = static_cast<std::uint32_t>(codes[fp4 ? i / 2 : i]);
      const float v = value[fp4 ? (i % 2 == 0 ? byte & 15 : byte >> 4) : byte];
      out[i] = v * scales[(r / br) * scale_cols + c / bc];
    }
  }
  if (p.form == PairForm::blocks) return transpose_last_two(out, p.output_shape);
  return out;
}

std::optional<Scheme> held_scheme(const QuantizedPair& p) {
  // Smoothing folded in: the values are no longer the codes times their scales.
  if (!p.pre_quant_scale.empty()) return std::nullopt;
  if (p.form == PairForm::deepseek || p.form == PairForm::nvfp4) return p.scheme;
  if (p.form == PairForm::integer) return std::nullopt;  // float scales per group and zero points: no Scheme of ours
  try {
    return scheme_named(p.form == PairForm::packed_global ? std::string("nvfp4") : p.scheme_name);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace mf::io::detail
