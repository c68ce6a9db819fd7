// Scale codes in GEMM layouts: one byte-offset map per layout; pack and unpack are the same loop in two directions.
#include "minifloat/scale_layout.h"
#include "minifloat/text.h"

#include <algorithm>
#include <array>

namespace mf {
namespace {

struct LayoutName {
  ScaleLayout layout;
  std::string_view name;
};
constexpr std::array<LayoutName, 5> kNames{{{ScaleLayout::row_major, "row-major"},
                                            {ScaleLayout::nvidia_int32, "nvidia-int32"},
                                            {ScaleLayout::ascend_int16, "ascend-int16"},
                                            {ScaleLayout::deepgemm, "deepgemm"},
                                            {ScaleLayout::cublas_128x4, "cublas-128x4"}}};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t align(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

std::string_view element_name(int bytes) {
  switch (bytes) {
    case 1: return "uint8";
    case 2: return "int16";
    case 4: return "int32";
    default: return "?";
  }
}

// The code shape seen as batch x rows x cols (rank 1: one row). Checks for negative dims and for sizes that
// overflow once padded (a 2^62-code tensor is no tensor).
struct Geometry {
  std::int64_t batch = 1, rows = 1, cols = 0;
};

Geometry geometry_of(std::span<const std::int64_t> code_shape) {
  if (code_shape.empty()) throw ScaleLayoutError("scale codes need a shape of rank 1 or more, not []");
  constexpr std::int64_t kMax = std::int64_t{1} << 40;  // far above any scale tensor; keeps padded sizes in range
  Geometry g;
  std::int64_t total = 1;
  for (std::size_t i = 0; i < code_shape.size(); ++i) {
    const std::int64_t d = code_shape[i];
    if (d < 0 || d > kMax || (d && total > kMax / d)) {
      throw ScaleLayoutError("scale code shape " + shape_text(code_shape) + " is negative or too large");
    }
    total *= d;
    if (i + 2 < code_shape.size()) g.batch *= d;
  }
  g.cols = code_shape.back();
  if (code_shape.size() >= 2) g.rows = code_shape[code_shape.size() - 2];
  return g;
}

// Bytes one batch member takes in `layout`.
std::int64_t member_bytes(ScaleLayout layout, const Geometry& g) {
  switch (layout) {
    case ScaleLayout::row_major: return g.rows * g.cols;
    case ScaleLayout::nvidia_int32: return g.rows * ceil_div(g.cols, 4) * 4;
    case ScaleLayout::ascend_int16: return g.rows * ceil_div(g.cols, 2) * 2;
    case ScaleLayout::deepgemm: return ceil_div(g.cols, 4) * align(g.rows, 4) * 4;
    case ScaleLayout::cublas_128x4: return align(g.rows, 128) * align(g.cols, 4);
  }
  return 0;
}

// Where code (r, c) of one batch member lives, in bytes from the member's start. Little-endian words make the
// int layouts plain byte positions: byte k of a word is the word's bits [8k, 8k+8).
std::int64_t byte_offset(ScaleLayout layout, const Geometry& g, std::int64_t r, std::int64_t c) {
  switch (layout) {
    case ScaleLayout::row_major: return r * g.cols + c;
    case ScaleLayout::nvidia_int32: return r * ceil_div(g.cols, 4) * 4 + c;
    case ScaleLayout::ascend_int16: return r * ceil_div(g.cols, 2) * 2 + c;
    case ScaleLayout::deepgemm:  // word (c / 4) of row r, stored MN-major: word index (c / 4) * align(rows, 4) + r
      return ((c / 4) * align(g.rows, 4) + r) * 4 + c % 4;
    case ScaleLayout::cublas_128x4: {
      const std::int64_t tile = (r / 128) * ceil_div(g.cols, 4) + c / 4;
      return tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
    }
  }
  return 0;
}

std::vector<std::int64_t> stored_shape(ScaleLayout layout, std::span<const std::int64_t> code_shape,
                                       const Geometry& g) {
  std::vector<std::int64_t> s(code_shape.begin(), code_shape.end());
  switch (layout) {
    case ScaleLayout::row_major: break;
    case ScaleLayout::nvidia_int32: s.back() = ceil_div(g.cols, 4); break;
    case ScaleLayout::ascend_int16: s.back() = ceil_div(g.cols, 2); break;
    case ScaleLayout::deepgemm:
    case ScaleLayout::cublas_128x4: {
      if (s.size() >= 2) s.pop_back();
      s.back() = layout == ScaleLayout::deepgemm ? ceil_div(g.cols, 4) : align(g.rows, 128);
      s.push_back(layout == ScaleLayout::deepgemm ? align(g.rows, 4) : align(g.cols, 4));
      break;
    }
  }
  return s;
}

bool fits(ScaleLayout layout, std::span<const std::int64_t> code_shape, std::span<const std::int64_t> packed_shape,
          int element_bytes) {
  const std::vector<std::int64_t> want = packed_scale_shape(layout, code_shape);
  return element_bytes == scale_layout_element_bytes(layout) &&
         std::equal(want.begin(), want.end(), packed_shape.begin(), packed_shape.end());
}

}  // namespace

ScaleLayout scale_layout_named(std::string_view name) {
  if (name == "nvidia") return ScaleLayout::nvidia_int32;
  if (name == "ascend") return ScaleLayout::ascend_int16;
  std::string known;
  for (const LayoutName& n : kNames) {
    if (n.name == name) return n.layout;
    known += known.empty() ? "" : ", ";
    known += n.name;
  }
  throw std::invalid_argument("unknown scale layout '" + std::string(name) + "' (known: " + known +
                              "; nvidia and ascend name their int layouts)");
}

std::string_view to_string(ScaleLayout layout) { return kNames[static_cast<std::size_t>(layout)].name; }

std::vector<std::string> scale_layout_names() {
  std::vector<std::string> v;
  for (const LayoutName& n : kNames) v.emplace_back(n.name);
  return v;
}

int scale_layout_element_bytes(ScaleLayout layout) {
  switch (layout) {
    case ScaleLayout::nvidia_int32:
    case ScaleLayout::deepgemm: return 4;
    case ScaleLayout::ascend_int16: return 2;
    default: return 1;
  }
}

std::vector<std::int64_t> packed_scale_shape(ScaleLayout layout, std::span<const std::int64_t> code_shape) {
  return stored_shape(layout, code_shape, geometry_of(code_shape));
}

PackedScales pack_scales(std::span<const std::uint8_t> codes, std::span<const std::int64_t> code_shape,
                         ScaleLayout layout) {
  const Geometry g = geometry_of(code_shape);
  const std::int64_t count = g.batch * g.rows * g.cols;
  if (static_cast<std::int64_t>(codes.size()) != count) {
    throw ScaleLayoutError("scale codes: " + std::to_string(codes.size()) + " bytes do not fit the shape " +
                           shape_text(code_shape) + " (" + std::to_string(count) + " codes)");
  }
  PackedScales p;
  p.layout = layout;
  p.shape = stored_shape(layout, code_shape, g);
  p.element_bytes = scale_layout_element_bytes(layout);
  const std::int64_t member = member_bytes(layout, g);
  p.data.assign(static_cast<std::size_t>(g.batch * member), 0);  // padding is zero bytes in every layout
  for (std::int64_t b = 0; b < g.batch; ++b) {
    const std::uint8_t* src = codes.data() + b * g.rows * g.cols;
    std::uint8_t* dst = p.data.data() + b * member;
    for (std::int64_t r = 0; r < g.rows; ++r) {
      for (std::int64_t c = 0; c < g.cols; ++c) dst[byte_offset(layout, g, r, c)] = src[r * g.cols + c];
    }
  }
  return p;
}

void check_packed_scales(ScaleLayout layout, std::span<const std::int64_t> code_shape,
                         std::span<const std::int64_t> packed_shape, int element_bytes) {
  if (fits(layout, code_shape, packed_shape, element_bytes)) return;
  std::string msg = "scales " + shape_text(packed_shape) + " " + std::string(element_name(element_bytes)) +
                    " do not fit " + std::string(to_string(layout)) + " scales for codes " + shape_text(code_shape) +
                    ": expected " + shape_text(packed_scale_shape(layout, code_shape)) + " " +
                    std::string(element_name(scale_layout_element_bytes(layout)));
  for (const LayoutName& n : kNames) {
    if (n.layout != layout && fits(n.layout, code_shape, packed_shape, element_bytes)) {
      msg += " (they are " + std::string(n.name) + " scales: packed for another platform?)";
      break;
    }
  }
  throw ScaleLayoutError(msg);
}

std::vector<std::uint8_t> unpack_scales(const PackedScales& packed, std::span<const std::int64_t> code_shape) {
  check_packed_scales(packed.layout, code_shape, packed.shape, packed.element_bytes);
  const Geometry g = geometry_of(code_shape);
  const std::int64_t member = member_bytes(packed.layout, g);
  if (static_cast<std::int64_t>(packed.data.size()) != g.batch * member) {
    throw ScaleLayoutError("packed scales " + shape_text(packed.shape) + ": " + std::to_string(packed.data.size()) +
                           " bytes, expected " + std::to_string(g.batch * member));
  }
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(g.batch * g.rows * g.cols));
  for (std::int64_t b = 0; b < g.batch; ++b) {
    const std::uint8_t* src = packed.data.data() + b * member;
    std::uint8_t* dst = codes.data() + b * g.rows * g.cols;
    for (std::int64_t r = 0; r < g.rows; ++r) {
      for (std::int64_t c = 0; c < g.cols; ++c) dst[r * g.cols + c] = src[byte_offset(packed.layout, g, r, c)];
    }
  }
  return codes;
}

}  // namespace mf
