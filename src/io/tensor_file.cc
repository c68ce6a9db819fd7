#include "minifloat/tensor_file.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "minifloat/codec.h"
#include "minifloat/npy.h"
#include "minifloat/safetensors.h"
#include "minifloat/text.h"

namespace mf::io {
namespace {

bool ends_with(const std::filesystem::path& p, std::string_view ext) { return p.extension().string() == ext; }

std::vector<std::int64_t> to_signed(std::span<const std::uint64_t> shape) { return {shape.begin(), shape.end()}; }
std::vector<std::uint64_t> to_unsigned(std::span<const std::int64_t> shape) { return {shape.begin(), shape.end()}; }

// Widen little-endian f32 / f16 / bf16 bytes to f32.
std::vector<float> widen(DType t, std::span<const std::byte> bytes) {
  const std::size_t width = static_cast<std::size_t>(dtype_bits(t) / 8);
  std::vector<float> out(bytes.size() / width);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t w = 0;
    std::memcpy(&w, bytes.data() + i * width, width);  // little-endian host (x86, Arm)
    out[i] = t == DType::F32 ? std::bit_cast<float>(w) : t == DType::F16 ? decode(f16, w) : decode(bf16, w);
  }
  return out;
}

bool is_float_input(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::vector<std::int64_t> parse_shape(const std::filesystem::path& path, const std::string& name, std::string_view s) {
  std::vector<std::int64_t> shape;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    const std::string part(s.substr(0, comma));
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0)
      throw IoError(IoErrc::invalid_metadata, path, name, "bad shape in metadata");
    shape.push_back(v);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
  }
  return shape;
}

// The dtype the codes are stored as, and their shape.
std::pair<DType, std::vector<std::uint64_t>> code_dtype(const QuantizedTensor& q) {
  const auto bytes = [&] { return std::vector<std::uint64_t>{q.codes.size()}; };
  if (q.layout != Layout::packed || q.scheme.element.is_int()) {
    if (q.scheme.element.bits() == 8 && q.layout != Layout::ggml) return {DType::I8, to_unsigned(q.shape)};
    return {DType::U8, bytes()};
  }
  const Format& f = *q.scheme.element.format;
  const DType t = f == e4m3   ? DType::F8_E4M3
                  : f == e5m2 ? DType::F8_E5M2
                  : f == e3m2 ? DType::F6_E3M2
                  : f == e2m3 ? DType::F6_E2M3
                              : DType::F4;
  const auto size = tensor_size(t, to_unsigned(q.shape));
  if (size.error || size.bytes != q.codes.size()) return {DType::U8, bytes()};
  return {t, to_unsigned(q.shape)};
}

// ue5m3 has no safetensors dtype: its codes are stored as U8 bytes (as TransformerEngine#3325 keeps them), read back
// by the scheme in __metadata__.
DType scale_dtype(const Format& f) {
  return f == ue8m0 ? DType::F8_E8M0 : f == ue4m3 ? DType::F8_E4M3 : f == ue5m3 ? DType::U8 : DType::F32;
}

}  // namespace

std::vector<FloatTensor> read_float_tensors(const std::filesystem::path& path, const std::string& only) {
  std::vector<FloatTensor> out;
  if (ends_with(path, ".npy")) {
    NpyArray a = read_npy(path);
    if (a.dtype != DType::F32 && a.dtype != DType::F16) {
      throw IoError(IoErrc::npy_unsupported_dtype, path,
                    "dtype " + std::string(dtype_name(a.dtype)) + " cannot be quantized (give f32 or f16)");
    }
    out.push_back({"x", to_signed(a.shape), widen(a.dtype, a.data)});
    return out;
  }
  if (!ends_with(path, ".safetensors")) {
    throw IoError(IoErrc::open_failed, path, "expected a .npy or .safetensors file");
  }
  const SafetensorsFile file = read_safetensors(path);
  for (const SafetensorsTensor& t : file.tensors()) {
    if (!only.empty() && t.name != only) continue;
    if (!is_float_input(t.dtype)) {
      if (!only.empty()) {
        throw IoError(IoErrc::unknown_dtype, path, t.name,
                      "dtype " + std::string(dtype_name(t.dtype)) + " cannot be quantized (give F32, F16 or BF16)");
      }
      continue;
    }
    out.push_back({t.name, to_signed(t.shape), widen(t.dtype, file.bytes(t))});
  }
  if (!only.empty() && out.empty()) throw IoError(IoErrc::invalid_tensor_entry, path, only, "no such tensor");
  if (out.empty()) throw IoError(IoErrc::invalid_tensor_entry, path, "no F32, F16 or BF16 tensor to quantize");
  return out;
}

void write_quantized(const std::filesystem::path& path, const std::vector<NamedQuantized>& tensors) {
  if (!ends_with(path, ".safetensors")) throw IoError(IoErrc::write_failed, path, "the output must be .safetensors");
  if (tensors.empty()) throw IoError(IoErrc::invalid_tensor_entry, path, "nothing to write");
  const QuantizedTensor& first = tensors.front().tensor;
  std::map<std::string, std::string> meta{{"minifloat.scheme", first.scheme.name},
                                          {"minifloat.rule", std::string(to_string(first.scheme.rule))},
                                          {"minifloat.profile", std::string(to_string(first.scheme.profile))},
                                          {"minifloat.layout", std::string(to_string(first.layout))},
                                          {"minifloat.rotate", std::to_string(first.rotate)}};
  // Views point into these, so they must not move while `views` is alive.
  std::vector<std::string> names;
  std::vector<std::vector<std::uint64_t>> shapes;
  std::vector<std::vector<std::byte>> scalars;
  names.reserve(tensors.size() * 3);
  shapes.reserve(tensors.size() * 3);
  scalars.reserve(tensors.size());
  std::vector<TensorView> views;
  for (const NamedQuantized& nq : tensors) {
    const QuantizedTensor& q = nq.tensor;
    meta["minifloat.shape." + nq.name] = join_numbers(q.shape, ",");
    auto [dtype, shape] = code_dtype(q);
    names.push_back(nq.name);
    shapes.push_back(std::move(shape));
    views.push_back({names.back(), dtype, shapes.back(), std::as_bytes(std::span(q.codes))});
    if (q.layout != Layout::ggml) {
      names.push_back(nq.name + "_scale");
      shapes.push_back(to_unsigned(q.scale_shape));
      views.push_back(
          {names.back(), scale_dtype(*q.scheme.scale_format), shapes.back(), std::as_bytes(std::span(q.scales))});
    }
    if (q.scheme.tensor_scale) {
      names.push_back(nq.name + "_tensor_scale");
      shapes.emplace_back();
      scalars.emplace_back(4);
      std::memcpy(scalars.back().data(), &q.tensor_scale, 4);
      views.push_back({names.back(), DType::F32, shapes.back(), scalars.back()});
    }
  }
  write_safetensors(path, views, meta);
}

namespace {

// What `minifloat quantize` wrote into __metadata__ for every tensor: the scheme and the layout.
struct QuantizeMetadata {
  Scheme scheme;
  Layout layout{};
  int rotate = 0;
};

QuantizeMetadata quantize_metadata(const SafetensorsFile& file, const std::filesystem::path& path) {
  const auto& meta = file.metadata();
  const auto get = [&](const std::string& key) -> const std::string& {
    const auto it = meta.find(key);
    if (it == meta.end()) {
      throw IoError(IoErrc::invalid_metadata, path,
                    "no " + key + " in __metadata__: not written by minifloat quantize");
    }
    return it->second;
  };
  QuantizeMetadata m;
  try {
    m.scheme = with_profile(with_rule(scheme_named(get("minifloat.scheme")), scale_rule_named(get("minifloat.rule"))),
                            profile_named(get("minifloat.profile")));
    m.layout = layout_named(get("minifloat.layout"));
  } catch (const std::invalid_argument& e) {
    throw IoError(IoErrc::invalid_metadata, path, e.what());
  }
  m.rotate = std::atoi(get("minifloat.rotate").c_str());
  return m;
}

std::vector<std::uint8_t> copied(std::span<const std::byte> b) {
  return {reinterpret_cast<const std::uint8_t*>(b.data()), reinterpret_cast<const std::uint8_t*>(b.data()) + b.size()};
}

// Tensor `name` [shape text] of the file: its codes, scales and tensor scale, checked by validate.
NamedQuantized read_one(const SafetensorsFile& file, const std::filesystem::path& path, const QuantizeMetadata& m,
                        const std::string& name, const std::string& shape) {
  NamedQuantized nq;
  nq.name = name;
  QuantizedTensor& q = nq.tensor;
  q.shape = parse_shape(path, nq.name, shape);
  q.scheme = m.scheme;
  q.layout = m.layout;
  q.rotate = m.rotate;
  const SafetensorsTensor* codes = file.find(nq.name);
  if (!codes) throw IoError(IoErrc::invalid_tensor_entry, path, nq.name, "the codes tensor is missing");
  q.codes = copied(file.bytes(*codes));
  if (q.layout != Layout::ggml) {
    const SafetensorsTensor* scales = file.find(nq.name + "_scale");
    if (!scales) throw IoError(IoErrc::invalid_tensor_entry, path, nq.name + "_scale", "the scale tensor is missing");
    q.scales = copied(file.bytes(*scales));
    q.scale_shape = to_signed(scales->shape);
  }
  if (m.scheme.tensor_scale) {
    const SafetensorsTensor* ts = file.find(nq.name + "_tensor_scale");
    if (!ts || ts->dtype != DType::F32 || file.bytes(*ts).size() != 4) {
      throw IoError(IoErrc::invalid_tensor_entry, path, nq.name + "_tensor_scale", "missing or not one F32");
    }
    std::memcpy(&q.tensor_scale, file.bytes(*ts).data(), 4);
  }
  try {
    validate(q);
  } catch (const QuantizeError& e) {
    throw IoError(IoErrc::size_mismatch, path, nq.name, e.what());
  }
  return nq;
}

}  // namespace

std::vector<NamedQuantized> read_quantized(const std::filesystem::path& path) {
  if (!ends_with(path, ".safetensors")) {
    throw IoError(IoErrc::open_failed, path, "expected a .safetensors file written by minifloat quantize");
  }
  const SafetensorsFile file = read_safetensors(path);
  const QuantizeMetadata m = quantize_metadata(file, path);
  std::vector<NamedQuantized> out;
  for (const auto& [key, value] : file.metadata()) {
    if (key.rfind("minifloat.shape.", 0) == 0) out.push_back(read_one(file, path, m, key.substr(16), value));
  }
  if (out.empty()) throw IoError(IoErrc::invalid_metadata, path, "no minifloat.shape.* entries in __metadata__");
  return out;
}

void write_float_tensors(const std::filesystem::path& path, const std::vector<FloatTensor>& tensors, bool bf16_out) {
  std::vector<std::vector<std::byte>> data;
  std::vector<std::vector<std::uint64_t>> shapes;
  data.reserve(tensors.size());
  shapes.reserve(tensors.size());
  std::vector<TensorView> views;
  for (const FloatTensor& t : tensors) {
    const std::size_t width = bf16_out ? 2 : 4;
    data.emplace_back(t.values.size() * width);
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const std::uint32_t w = bf16_out ? encode(bf16, t.values[i]) : std::bit_cast<std::uint32_t>(t.values[i]);
      std::memcpy(data.back().data() + i * width, &w, width);
    }
    shapes.push_back(to_unsigned(t.shape));
    views.push_back({t.name, bf16_out ? DType::BF16 : DType::F32, shapes.back(), data.back()});
  }
  if (ends_with(path, ".npy")) {
    if (views.size() != 1 || bf16_out) {
      throw IoError(IoErrc::npy_unsupported_dtype, path, ".npy holds one f32 tensor: write .safetensors instead");
    }
    return write_npy(path, DType::F32, views[0].shape, views[0].data);
  }
  write_safetensors(path, views);
}

}  // namespace mf::io
