// Integer pairs re-laid out between compressed-tensors pack-quantized, AutoAWQ GEMM and AutoGPTQ v1 (int4_relayout.h).
// All three hold value = (q - z) x s with unsigned b-bit codes q and zero points z (compressed-tensors stores q and z
// as signed, q - 2^(b-1), packed as q; a symmetric pair's z is 2^(b-1)), a float scale per row and group, and
// (compressed-tensors, GPTQ) a group per column: the numbers are read whole and packed again, bit for bit.
#include "int4_relayout.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "../io/file.h"
#include "dialect_pairs.h"
#include "minifloat/codec.h"
#include "minifloat/recipe.h"

namespace mf::io::detail {
namespace {

std::string where(const SafetensorsFile& f, const std::string& tensor) {
  return cat(f.path().string(), ": tensor '", tensor, "'");
}

// The packed forms only: compressed-tensors' int-quantized I8 codes are not in words.
IntegerNumbers read_numbers(const SafetensorsFile& f, const QuantizedPair& p) {
  if (p.form != PairForm::integer || f.find(p.weight)->dtype != DType::I32) {
    throw std::invalid_argument(cat(where(f, p.weight), " (", p.scheme_name,
                                    ") is not packed in I32 words: only compressed-tensors pack-quantized, AutoAWQ "
                                    "GEMM and AutoGPTQ pairs are re-laid out; nothing was written"));
  }
  return integer_numbers(f, p);
}

// The b-bit field `v` put at bit `at` of column `col` of a word matrix `width` wide, its bits running down the column
// (the inverse of dialect_pairs.cc's reader; a row of words: width 1).
void put_field(std::uint32_t* words, std::uint64_t width, std::uint64_t col, std::uint64_t at, int b, std::uint32_t v) {
  const std::uint64_t shift = at % 32;
  words[(at / 32) * width + col] |= v << shift;
  if (shift + static_cast<std::uint64_t>(b) > 32) words[(at / 32 + 1) * width + col] |= v >> (32 - shift);
}

// AutoAWQ's pack order (its order_map): nibble i of a word holds output 8 col + kAwqPackOrder[i].
constexpr std::array<int, 8> kAwqPackOrder{0, 2, 4, 6, 1, 3, 5, 7};

void put_awq(std::uint32_t* words, std::uint64_t rows, std::uint64_t line, std::uint64_t r, std::uint32_t v) {
  const auto j = static_cast<int>(r % 8);
  const auto nibble = std::find(kAwqPackOrder.begin(), kAwqPackOrder.end(), j) - kAwqPackOrder.begin();
  words[line * (rows / 8) + r / 8] |= v << (4 * nibble);
}

std::vector<std::byte> bytes_of_words(const std::vector<std::uint32_t>& w) {
  std::vector<std::byte> out(w.size() * 4);
  std::memcpy(out.data(), w.data(), out.size());
  return out;
}

// A scale's f32 value as `t` stores it (exact: every value came from `t`, or was checked to fit it).
std::vector<std::byte> scale_bytes(const IntegerNumbers& n, DType t, bool transposed) {
  const std::size_t width = t == DType::F32 ? 4 : 2;
  std::vector<std::byte> out(n.scales.size() * width);
  for (std::uint64_t r = 0; r < n.rows; ++r) {
    for (std::uint64_t k = 0; k < n.groups; ++k) {
      const float v = n.scales[r * n.groups + k];
      const std::uint32_t bits = t == DType::F32    ? std::bit_cast<std::uint32_t>(v)
                                 : t == DType::BF16 ? std::bit_cast<std::uint32_t>(v) >> 16
                                                    : encode(f16, v);
      const std::uint64_t i = transposed ? k * n.rows + r : r * n.groups + k;
      std::memcpy(out.data() + width * i, &bits, width);
    }
  }
  return out;
}

// The first scale F16 does not hold exactly (AutoAWQ and AutoGPTQ store F16 scales), refused by name.
void check_f16_scales(const SafetensorsFile& f, const QuantizedPair& p, const IntegerNumbers& n,
                      std::string_view target) {
  if (n.scale_dtype == DType::F16) return;
  for (std::size_t i = 0; i < n.scales.size(); ++i) {
    const float v = n.scales[i];
    if (std::bit_cast<std::uint32_t>(decode(f16, encode(f16, v))) != std::bit_cast<std::uint32_t>(v)) {
      char text[32];
      std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
      throw std::invalid_argument(cat(where(f, p.scale), " holds ", std::string_view(text), " (row ", i / n.groups,
                                      ", group ", i % n.groups, ") in ", dtype_name(n.scale_dtype),
                                      ", which F16 does not hold exactly: ", target, " stores F16 scales, so '",
                                      p.weight,
                                      "' cannot be re-laid out there without rounding; write it as compressed-tensors "
                                      "(which keeps the scales' dtype); nothing was written"));
    }
  }
}

std::string module_of_output(const QuantizedPair& p) { return p.output.substr(0, p.output.size() - 7); }

// A symmetric pair's zero points are all 2^(b-1) (GPTQ's sym, AWQ's constant zero): compressed-tensors' symmetric
// form, with none stored; the source's own choice where it is compressed-tensors.
IntRelayout describe(const IntegerNumbers& n, const QuantizedPair& p) {
  IntRelayout d;
  d.to = p.packing;
  d.tensor = p.weight;
  d.bits = n.bits;
  d.group_size = n.groups == 1 ? -1 : static_cast<std::int64_t>(n.group);
  const std::uint64_t mid = 1u << (n.bits - 1);
  const bool all_mid =
      std::all_of(n.zeros.begin(), n.zeros.end(), [&](std::int32_t z) { return static_cast<std::uint64_t>(z) == mid; });
  d.zero_points = p.packing == IntPacking::compressed_tensors ? n.zero_stored : !all_mid;
  d.act_order = n.act_order;
  d.scale_dtype = n.scale_dtype;
  return d;
}

[[noreturn]] void cannot_hold(const SafetensorsFile& f, const QuantizedPair& p, std::string_view target,
                              const std::string& why) {
  throw std::invalid_argument(cat(where(f, p.weight), " (", p.scheme_name, ") cannot be re-laid out as ", target, ": ",
                                  why, "; nothing was written"));
}

}  // namespace

bool int_packing_of(WriteFormat format, IntPacking& to) {
  switch (format) {
    case WriteFormat::compressed_tensors: to = IntPacking::compressed_tensors; return true;
    case WriteFormat::awq: to = IntPacking::awq; return true;
    case WriteFormat::gptq: to = IntPacking::gptq; return true;
    default: return false;
  }
}

IntRelayout describe_int_pair(const SafetensorsFile& f, const QuantizedPair& p) {
  return describe(read_numbers(f, p), p);
}

IntRelayout plan_int_relayout(const SafetensorsFile& f, const QuantizedPair& p, IntPacking to) {
  const IntegerNumbers n = read_numbers(f, p);
  IntRelayout plan = describe(n, p);
  plan.to = to;
  const std::string m = module_of_output(p);
  const std::uint64_t b = static_cast<std::uint64_t>(n.bits);
  using Spec = SafetensorsWriter::Spec;
  if (to == IntPacking::compressed_tensors) {
    if (n.act_order) {
      cannot_hold(f, p, "compressed-tensors",
                  "its group index puts columns out of order (act-order), which compressed-tensors 0.20 (the "
                  "version written) cannot say: its actorder \"group\" and weight_g_idx were removed, and its "
                  "QuantizationArgs refuses them; write it as gptq");
    }
    plan.specs.push_back(Spec{m + ".weight_packed", DType::I32, {n.rows, (n.cols * b + 31) / 32}});
    plan.specs.push_back(Spec{m + ".weight_scale", n.scale_dtype, {n.rows, n.groups}});
    if (plan.zero_points)
      plan.specs.push_back(Spec{m + ".weight_zero_point", DType::I32, {(n.rows * b + 31) / 32, n.groups}});
    plan.specs.push_back(Spec{m + ".weight_shape", DType::I64, {2}});
    return plan;
  }
  const bool awq = to == IntPacking::awq;
  const std::string_view target = awq ? "AutoAWQ GEMM (--format awq)" : "AutoGPTQ (--format gptq)";
  if (awq) {
    if (n.bits != 4) cannot_hold(f, p, target, cat("AutoAWQ's GEMM layout holds 4-bit codes, not ", n.bits, "-bit"));
    if (n.rows % 8 != 0) cannot_hold(f, p, target, cat("its ", n.rows, " output rows are not whole words of 8"));
    if (n.groups > 1 && n.cols % n.group != 0) {
      cannot_hold(f, p, target,
                  cat("its ", n.cols, " columns are not whole groups of ", n.group, " (AutoAWQ's groups are)"));
    }
    if (n.act_order) {
      cannot_hold(f, p, target, "its group index puts columns out of order (act-order), and AWQ has no g_idx");
    }
  } else {
    if ((n.rows * b) % 32 != 0) {
      cannot_hold(f, p, target, cat("its ", n.rows, " output rows of ", b, "-bit zero points are not whole words"));
    }
    for (std::size_t i = 0; i < n.zeros.size(); ++i) {
      if (n.zeros[i] == 0) {
        cannot_hold(f, p, target,
                    cat("its zero point of row ", i / n.groups, ", group ", i % n.groups,
                        " is 0, which GPTQ v1 stores as zero - 1 = -1: wrapped to ", (1u << n.bits) - 1, " in ", n.bits,
                        " bits, AutoGPTQ's and llama.cpp's readers add 1 without wrapping and take ", 1u << n.bits));
      }
    }
  }
  check_f16_scales(f, p, n, target);
  plan.scale_dtype = DType::F16;
  if (awq) {
    plan.specs = {Spec{m + ".qweight", DType::I32, {n.cols, n.rows / 8}},
                  Spec{m + ".qzeros", DType::I32, {n.groups, n.rows / 8}},
                  Spec{m + ".scales", DType::F16, {n.groups, n.rows}}};
  } else {
    plan.specs = {Spec{m + ".qweight", DType::I32, {(n.cols * b + 31) / 32, n.rows}},
                  Spec{m + ".qzeros", DType::I32, {n.groups, n.rows * b / 32}},
                  Spec{m + ".scales", DType::F16, {n.groups, n.rows}}, Spec{m + ".g_idx", DType::I32, {n.cols}}};
  }
  return plan;
}

std::vector<std::vector<std::byte>> int_relayout_tensors(const SafetensorsFile& f, const QuantizedPair& p,
                                                         const IntRelayout& plan) {
  const IntegerNumbers n = read_numbers(f, p);
  const int b = n.bits;
  const std::uint64_t ub = static_cast<std::uint64_t>(b);
  const std::uint32_t mask = (1u << b) - 1;
  std::vector<std::vector<std::byte>> out;
  if (plan.to == IntPacking::compressed_tensors) {
    const std::uint64_t row_words = (n.cols * ub + 31) / 32;
    std::vector<std::uint32_t> codes(n.rows * row_words, 0);
    for (std::uint64_t r = 0; r < n.rows; ++r) {
      for (std::uint64_t c = 0; c < n.cols; ++c)
        put_field(codes.data() + r * row_words, 1, 0, c * ub, b, static_cast<std::uint32_t>(n.codes[r * n.cols + c]));
    }
    out.push_back(bytes_of_words(codes));
    out.push_back(scale_bytes(n, plan.scale_dtype, false));
    if (plan.zero_points) {
      std::vector<std::uint32_t> zeros(((n.rows * ub + 31) / 32) * n.groups, 0);
      for (std::uint64_t r = 0; r < n.rows; ++r) {
        for (std::uint64_t k = 0; k < n.groups; ++k)
          put_field(zeros.data(), n.groups, k, r * ub, b, static_cast<std::uint32_t>(n.zeros[r * n.groups + k]));
      }
      out.push_back(bytes_of_words(zeros));
    }
    const std::int64_t shape[2] = {static_cast<std::int64_t>(n.rows), static_cast<std::int64_t>(n.cols)};
    std::vector<std::byte> shape_bytes(16);
    std::memcpy(shape_bytes.data(), shape, 16);
    out.push_back(std::move(shape_bytes));
    return out;
  }
  const bool awq = plan.to == IntPacking::awq;
  std::vector<std::uint32_t> codes(awq ? n.cols * n.rows / 8 : ((n.cols * ub + 31) / 32) * n.rows, 0);
  const std::uint64_t zero_words = awq ? n.rows / 8 : n.rows * ub / 32;
  std::vector<std::uint32_t> zeros(n.groups * zero_words, 0);
  for (std::uint64_t r = 0; r < n.rows; ++r) {
    for (std::uint64_t c = 0; c < n.cols; ++c) {
      const auto q = static_cast<std::uint32_t>(n.codes[r * n.cols + c]);
      if (awq)
        put_awq(codes.data(), n.rows, c, r, q);
      else
        put_field(codes.data(), n.rows, r, c * ub, b, q);
    }
    for (std::uint64_t k = 0; k < n.groups; ++k) {
      const auto z = static_cast<std::uint32_t>(n.zeros[r * n.groups + k]);
      if (awq)
        put_awq(zeros.data(), n.rows, k, r, z);
      else
        put_field(zeros.data() + k * zero_words, 1, 0, r * ub, b, (z - 1) & mask);  // GPTQ v1: zero - 1
    }
  }
  out.push_back(bytes_of_words(codes));
  out.push_back(bytes_of_words(zeros));
  out.push_back(scale_bytes(n, DType::F16, true));
  if (!awq) {  // the group of each input column
    std::vector<std::uint32_t> g_idx(n.cols);
    for (std::uint64_t c = 0; c < n.cols; ++c) g_idx[c] = static_cast<std::uint32_t>(n.group_of_col[c]);
    out.push_back(bytes_of_words(g_idx));
  }
  return out;
}

void check_one_int_config(WriteFormat format, const std::vector<IntRelayout>& planned) {
  if (format != WriteFormat::awq && format != WriteFormat::gptq) return;
  for (const IntRelayout& p : planned) {
    const IntRelayout& first = planned.front();
    if (p.bits != first.bits || p.group_size != first.group_size) {
      throw std::invalid_argument(cat("--format ", to_string(format),
                                      " has one bits and group_size for the whole "
                                      "checkpoint, but '",
                                      first.tensor, "' has ", first.bits, " bits, group size ", first.group_size,
                                      " and '", p.tensor, "' ", p.bits, " bits, group size ", p.group_size,
                                      "; write them as compressed-tensors (a config group each); "
                                      "nothing was written"));
    }
  }
}

bool keeps_only(const Recipe& recipe) {
  return std::none_of(recipe.rules.begin(), recipe.rules.end(),
                      [&](const RecipeRule& r) { return target_scheme(recipe, r.target).has_value(); });
}

void check_int_recipe(const Recipe& recipe, WriteFormat format) {
  for (const RecipeRule& r : recipe.rules) {
    if (target_scheme(recipe, r.target)) {
      throw std::invalid_argument(cat("recipe ", recipe.name, " cannot be written as --format ", to_string(format),
                                      ": its rule '", r.pattern, "' quantizes into ", r.target, ", and ",
                                      to_string(format),
                                      " holds only the integer pairs the input has, re-laid out; use a recipe that "
                                      "keeps them ({\"*\": \"keep\"}), or another --format for its schemes"));
    }
  }
}

}  // namespace mf::io::detail
