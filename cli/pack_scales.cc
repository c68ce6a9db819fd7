// minifloat pack-scales / unpack-scales: ue8m0 (or other 1-byte) scale tensors of a .safetensors file in the layout
// a platform's GEMM reads, and back (docs/spec.md#scale-layouts).
#include <CLI/CLI.hpp>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "minifloat/safetensors.h"
#include "minifloat/scale_layout.h"
#include "minifloat/text.h"

namespace mf::cli {
namespace {

struct Args {
  std::string platform;
  std::string tensor;
  std::string codes;  // unpack-scales: the code shape, when the file does not record it
  std::string in, out;
};

// Metadata keys that let unpack-scales undo pack-scales without being told the layout and the code shape.
std::string layout_key(const std::string& name) { return "minifloat.scale_layout." + name; }
std::string codes_key(const std::string& name) { return "minifloat.scale_codes." + name; }
std::string dtype_key(const std::string& name) { return "minifloat.scale_dtype." + name; }

std::vector<std::int64_t> signed_shape(std::span<const std::uint64_t> s) { return {s.begin(), s.end()}; }
std::vector<std::uint64_t> unsigned_shape(std::span<const std::int64_t> s) { return {s.begin(), s.end()}; }

ScaleLayout layout_from(const std::string& name) {
  try {
    return scale_layout_named(name);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--platform: {}", e.what()));
  }
}

void check_paths(const Args& a) {
  for (const std::string& p : {a.in, a.out}) {
    if (std::filesystem::path(p).extension() != ".safetensors") {
      throw UsageError(fmt::format("{}: pack-scales and unpack-scales read and write .safetensors files", p));
    }
  }
}

// A tensor of one-byte scale codes: F8_E8M0 (ue8m0), F8_E4M3 (ue4m3, NVFP4) or U8.
bool is_code_dtype(io::DType t) { return t == io::DType::F8_E8M0 || t == io::DType::F8_E4M3 || t == io::DType::U8; }

// Writes `kept` and `made` (the new tensors, which own their bytes) in the input's order.
struct Output {
  std::vector<std::string> names;
  std::vector<io::DType> dtypes;
  std::vector<std::vector<std::uint64_t>> shapes;
  std::vector<std::vector<std::uint8_t>> bytes;
};

void write_output(const std::string& path, const Output& o, const std::map<std::string, std::string>& metadata) {
  std::vector<io::TensorView> views;
  for (std::size_t i = 0; i < o.names.size(); ++i) {
    views.push_back({o.names[i], o.dtypes[i], o.shapes[i], std::as_bytes(std::span(o.bytes[i]))});
  }
  io::write_safetensors(path, views, metadata);
}

void add(Output& o, const std::string& name, io::DType t, std::vector<std::uint64_t> shape,
         std::vector<std::uint8_t> bytes) {
  o.names.push_back(name);
  o.dtypes.push_back(t);
  o.shapes.push_back(std::move(shape));
  o.bytes.push_back(std::move(bytes));
}

std::vector<std::uint8_t> copy_bytes(std::span<const std::byte> b) {
  std::vector<std::uint8_t> v(b.size());
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// Why a chosen tensor cannot be packed: already packed words, or not scale codes at all.
[[noreturn]] void not_codes(const Args& a, const io::SafetensorsTensor& t) {
  const std::vector<std::int64_t> shape = signed_shape(t.shape);
  std::string why = fmt::format("{}: tensor '{}' is {} [{}], not one-byte scale codes (F8_E8M0, F8_E4M3 or U8)", a.in,
                                t.name, io::dtype_name(t.dtype), join_numbers(shape));
  if ((t.dtype == io::DType::I32 || t.dtype == io::DType::I16) && !shape.empty()) {
    std::vector<std::int64_t> codes = shape;
    codes.back() *= t.dtype == io::DType::I32 ? 4 : 2;
    why += fmt::format("; it looks packed already ({} scales of up to [{}] codes)",
                       t.dtype == io::DType::I32 ? "nvidia-int32" : "ascend-int16", join_numbers(codes));
  }
  throw UsageError(why);
}

void run_pack(const Args& a) {
  const ScaleLayout layout = layout_from(a.platform);
  check_paths(a);
  const io::SafetensorsFile in = io::read_safetensors(a.in);
  if (!a.tensor.empty() && !in.find(a.tensor)) throw UsageError(fmt::format("{}: no tensor '{}'", a.in, a.tensor));
  Output o;
  std::map<std::string, std::string> metadata = in.metadata();
  std::string report;
  for (const io::SafetensorsTensor& t : in.tensors()) {
    const bool chosen = a.tensor.empty() ? t.dtype == io::DType::F8_E8M0 : t.name == a.tensor;
    if (!chosen) {
      add(o, t.name, t.dtype, t.shape, copy_bytes(in.bytes(t)));
      continue;
    }
    if (!is_code_dtype(t.dtype)) not_codes(a, t);
    const std::vector<std::int64_t> shape = signed_shape(t.shape);
    const std::span<const std::byte> b = in.bytes(t);
    const PackedScales p = pack_scales({reinterpret_cast<const std::uint8_t*>(b.data()), b.size()}, shape, layout);
    const io::DType dt = p.element_bytes == 4 ? io::DType::I32 : p.element_bytes == 2 ? io::DType::I16 : t.dtype;
    add(o, t.name, dt, unsigned_shape(p.shape), p.data);
    metadata[layout_key(t.name)] = std::string(to_string(layout));
    metadata[codes_key(t.name)] = join_numbers(shape, ",");
    metadata[dtype_key(t.name)] = std::string(io::dtype_name(t.dtype));
    report += fmt::format("{}: {} [{}] -> {} {} [{}]\n", t.name, io::dtype_name(t.dtype), join_numbers(shape),
                          to_string(layout), io::dtype_name(dt), join_numbers(p.shape));
  }
  if (report.empty()) {
    std::string names;
    for (const io::SafetensorsTensor& t : in.tensors()) {
      names += fmt::format("{}{} {} [{}]", names.empty() ? "" : ", ", t.name, io::dtype_name(t.dtype),
                           join_numbers(signed_shape(t.shape)));
    }
    throw UsageError(fmt::format("{}: no F8_E8M0 scale tensor to pack (tensors: {}); name one with --tensor", a.in,
                                 names.empty() ? std::string("none") : names));
  }
  write_output(a.out, o, metadata);
  write_stdout(report + fmt::format("wrote {}\n", a.out));
}

std::vector<std::int64_t> parse_codes(const std::string& text) {
  std::vector<std::int64_t> shape;
  for (std::string_view rest = text; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const auto v = parse_code(rest.substr(0, comma), 40);
    if (!v) throw UsageError(fmt::format("--codes '{}' is not a shape like 1536,128", text));
    shape.push_back(*v);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (shape.empty()) throw UsageError(fmt::format("--codes '{}' is not a shape like 1536,128", text));
  return shape;
}

// Tensor t of `in` unpacked into o (its codes, their dtype from the file's record or E8M0) and its pack-scales
// records dropped from metadata; returns its report line. The command line wins over the file's record: checking
// a file against the layout a GEMM expects.
std::string unpack_tensor(const Args& a, const io::SafetensorsFile& in, const io::SafetensorsTensor& t, Output& o,
                          std::map<std::string, std::string>& metadata) {
  const auto& md = in.metadata();
  const bool recorded = md.count(layout_key(t.name)) != 0;
  if (a.platform.empty() && !recorded) {
    throw UsageError(fmt::format("{}: tensor '{}': give --platform (the file does not record a layout)", a.in, t.name));
  }
  const ScaleLayout layout = layout_from(a.platform.empty() && recorded ? md.at(layout_key(t.name)) : a.platform);
  if (a.codes.empty() && !md.count(codes_key(t.name))) {
    throw UsageError(
        fmt::format("{}: tensor '{}': give the code shape with --codes (the file does not record it)", a.in, t.name));
  }
  const std::vector<std::int64_t> codes = parse_codes(a.codes.empty() ? md.at(codes_key(t.name)) : a.codes);
  const std::span<const std::byte> b = in.bytes(t);
  PackedScales p{layout, signed_shape(t.shape), io::dtype_bits(t.dtype) / 8, copy_bytes(b)};
  std::vector<std::uint8_t> out;
  try {
    out = unpack_scales(p, codes);
  } catch (const ScaleLayoutError& e) {
    throw UsageError(fmt::format("{}: tensor '{}': {}", a.in, t.name, e.what()));
  }
  io::DType dt = io::DType::F8_E8M0;
  if (md.count(dtype_key(t.name))) dt = io::find_dtype(md.at(dtype_key(t.name))).value_or(io::DType::F8_E8M0);
  add(o, t.name, dt, unsigned_shape(codes), std::move(out));
  for (const std::string& k : {layout_key(t.name), codes_key(t.name), dtype_key(t.name)}) metadata.erase(k);
  return fmt::format("{}: {} {} [{}] -> {} [{}]\n", t.name, to_string(layout), io::dtype_name(t.dtype),
                     join_numbers(signed_shape(t.shape)), io::dtype_name(dt), join_numbers(codes));
}

void run_unpack(const Args& a) {
  check_paths(a);
  const io::SafetensorsFile in = io::read_safetensors(a.in);
  if (!a.tensor.empty() && !in.find(a.tensor)) throw UsageError(fmt::format("{}: no tensor '{}'", a.in, a.tensor));
  Output o;
  std::map<std::string, std::string> metadata = in.metadata();
  std::string report;
  for (const io::SafetensorsTensor& t : in.tensors()) {
    const bool recorded = in.metadata().count(layout_key(t.name)) != 0;
    if (a.tensor.empty() ? recorded : t.name == a.tensor) {
      report += unpack_tensor(a, in, t, o, metadata);
    } else {
      add(o, t.name, t.dtype, t.shape, copy_bytes(in.bytes(t)));
    }
  }
  if (report.empty()) {
    throw UsageError(
        fmt::format("{}: no tensor packed by pack-scales; name one with --tensor, --platform and --codes", a.in));
  }
  write_output(a.out, o, metadata);
  write_stdout(report + fmt::format("wrote {}\n", a.out));
}

}  // namespace

void register_pack_scales(CLI::App& app) {
  const std::string layouts = "nvidia (int32, 4 codes each), ascend (int16, 2 codes each), deepgemm, cublas-128x4";
  auto p = std::make_shared<Args>();
  auto* ps = app.add_subcommand("pack-scales", "Pack ue8m0 scale tensors for a platform's GEMM (int32, int16, ...)");
  ps->add_option("--platform", p->platform, layouts)->required();
  ps->add_option("--tensor", p->tensor, "pack only this tensor (default: every F8_E8M0 tensor)");
  ps->add_option("IN", p->in, ".safetensors with F8_E8M0 scale codes [rows, K / block]")->required();
  ps->add_option("OUT", p->out, ".safetensors: the same tensors, the scales packed (other tensors copied)")->required();
  ps->callback([p] { run_pack(*p); });

  auto u = std::make_shared<Args>();
  auto* us = app.add_subcommand("unpack-scales", "Unpack scale tensors packed for a platform back into codes");
  us->add_option("--platform", u->platform, layouts + " (default: as recorded by pack-scales)");
  us->add_option("--codes", u->codes, "the code shape, e.g. 1536,128 (default: as recorded by pack-scales)");
  us->add_option("--tensor", u->tensor, "unpack only this tensor (default: every tensor pack-scales packed)");
  us->add_option("IN", u->in, ".safetensors with packed scales")->required();
  us->add_option("OUT", u->out, ".safetensors: the scales as one-byte codes")->required();
  us->callback([u] { run_unpack(*u); });
}

}  // namespace mf::cli
