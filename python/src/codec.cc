// encode / decode over whole arrays, with the GIL released: the bulk casts (minifloat/bulk.h) from and into f32, f64,
// bf16 and f16 wherever the codes are in their format's storage (packed FP4 / FP6 too), otherwise a loop over the
// library's scalar codec (mf::encode, mf::decode), instantiated per format so the compiler folds its constants in.
#include <nanobind/stl/string.h>

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "bindings.h"
#include "minifloat/bulk.h"
#include "minifloat/codec.h"
#include "minifloat/pack.h"
#include "minifloat/random.h"
#include "minifloat/text.h"

namespace mf::py {
namespace {

// Calls fn(std::integral_constant<const Format*, F>) with F the format equal to f, so that the codec sees a constant.
template <std::size_t I = 0, class Fn>
void with_format(const Format& f, Fn&& fn) {
  if constexpr (I < all_formats.size()) {
    constexpr const Format* F = all_formats[I];
    if (f == *F) return fn(std::integral_constant<const Format*, F>{});
    return with_format<I + 1>(f, std::forward<Fn>(fn));
  } else {
    throw std::invalid_argument("unknown format " + std::string(f.name));
  }
}

// out[i] = encode(F, load(i)) with the stochastic bits of element i (as the CLI's --seed does).
template <const Format* F, class Out, class Load>
void encode_loop(std::size_t n, Out* out, EncodeOptions o, std::uint64_t seed, Load load) {
  if (o.rounding == Rounding::stochastic) {
    for (std::size_t i = 0; i < n; ++i) {
      o.random_bits = stochastic_bits(seed, i);
      out[i] = static_cast<Out>(encode(*F, load(i), o));
    }
  } else if (o.rounding == Rounding::nearest_even && o.overflow == Overflow::format_default) {
    // The defaults as constants, so the compiler drops the other options' branches.
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(encode(*F, load(i)));
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(encode(*F, load(i), o));
  }
}

// The input as a value loader: f32 and f64 are read directly; bf16/f16 bits are widened exactly by the decoder.
// Formats whose codes fit their storage go through the bulk path.
// Formats whose codes fit their storage go through the bulk path (minifloat/bulk.h) from every input type; f32
// codes (the identity, or f64 rounded to f32) through the scalar codec.
template <const Format* F, class Out>
void encode_any(const Array& x, const std::string& input, Out* out, const EncodeOptions& o, std::uint64_t seed) {
  const std::size_t n = x.size();
  constexpr bool kBulk = (sizeof(Out) == 1 && F->bits() <= 8) || (sizeof(Out) == 2 && F->bits() == 16);
  if constexpr (kBulk) {
    const BulkOptions b{o.rounding, o.overflow, seed, 1};
    const std::span<Out> codes(out, n);
    if (input == "f32") return encode_bulk(*F, {data_as<float>(x, "array"), n}, codes, b);
    if (input == "f64") return encode_bulk(*F, {data_as<double>(x, "array"), n}, codes, b);
    if (input == "bf16" || input == "f16") {
      return encode_bulk(*F, input == "bf16" ? bf16 : f16, {data_as<std::uint16_t>(x, "array"), n}, codes, b);
    }
  }
  if (input == "f32") {
    const float* p = data_as<float>(x, "array");
    encode_loop<F>(n, out, o, seed, [p](std::size_t i) { return p[i]; });
  } else if (input == "f64") {
    const double* p = data_as<double>(x, "array");
    encode_loop<F>(n, out, o, seed, [p](std::size_t i) { return p[i]; });
  } else if (input == "bf16" || input == "f16") {
    const std::uint16_t* p = data_as<std::uint16_t>(x, "array");
    if (input == "bf16")
      encode_loop<F>(n, out, o, seed, [p](std::size_t i) { return decode(bf16, p[i]); });
    else
      encode_loop<F>(n, out, o, seed, [p](std::size_t i) { return decode(f16, p[i]); });
  } else {
    throw std::invalid_argument("array: unsupported input type " + input);
  }
}

void encode_array(const Array& x, const std::string& input, Array out, const std::string& fmt,
                  const std::string& overflow, const std::string& rounding, std::uint64_t seed) {
  const Format& f = format_arg(fmt);
  const EncodeOptions o{for_arg("rounding", [&] { return rounding_named(rounding); }),
                        for_arg("overflow", [&] { return overflow_named(overflow); }), 0};
  if (out.size() != x.size()) throw std::invalid_argument("out: size differs from the input's");
  nb::gil_scoped_release release;
  with_format(f, [&](auto F) {
    switch (F.value->storage_bytes()) {
      case 1: return encode_any<F.value>(x, input, data_as<std::uint8_t>(out, "out"), o, seed);
      case 2: return encode_any<F.value>(x, input, data_as<std::uint16_t>(out, "out"), o, seed);
      default: return encode_any<F.value>(x, input, data_as<std::uint32_t>(out, "out"), o, seed);
    }
  });
}

template <const Format* F, class In, class Out>
void decode_loop(std::size_t n, const In* codes, Out* out) {
  // decode is a pure function of the code: for formats up to 16 bits and enough codes, decode every code once with
  // the library and look the rest up (only the low bits() bits are read, as mf::decode does).
  if constexpr (F->bits() <= 16) {
    constexpr std::uint32_t count = static_cast<std::uint32_t>(F->code_count());
    if (n >= count / 8) {
      std::vector<Out> table(count);
      for (std::uint32_t c = 0; c < count; ++c) table[c] = static_cast<Out>(decode(*F, c));
      for (std::size_t i = 0; i < n; ++i) out[i] = table[codes[i] & (count - 1)];
      return;
    }
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(decode(*F, codes[i]));
}

// out[0, n) = the values of codes [begin, begin + n): codes in their format's own storage through the bulk path.
template <const Format* F, class Out>
void decode_any(const Array& codes, std::size_t begin, std::size_t n, Out* out) {
  if constexpr ((std::is_same_v<Out, float> || std::is_same_v<Out, double>)&&(F->bits() <= 8 || F->bits() == 16)) {
    using Code = std::conditional_t<F->bits() <= 8, std::uint8_t, std::uint16_t>;
    if (codes.dtype() == nb::dtype<Code>()) {
      return decode_bulk(*F, {static_cast<const Code*>(codes.data()) + begin, n}, std::span<Out>(out, n));
    }
  }
  if (codes.dtype() == nb::dtype<std::uint8_t>()) {
    return decode_loop<F>(n, static_cast<const std::uint8_t*>(codes.data()) + begin, out);
  }
  if (codes.dtype() == nb::dtype<std::uint16_t>()) {
    return decode_loop<F>(n, static_cast<const std::uint16_t*>(codes.data()) + begin, out);
  }
  decode_loop<F>(n, data_as<std::uint32_t>(codes, "codes") + begin, out);
}

// Into bf16 or f16 codes: each value rounded to nearest even in that format (exact wherever it fits, as
// ml_dtypes' astype): bulk.h's decode_bulk into bf16 / f16 for codes in their format's storage; other code arrays
// (f32's, or wider storage) decoded to f32 64 Ki at a time and rounded by the same bulk encoder.
template <const Format* F>
void decode_into_16(const Array& codes, const Format& to, std::uint16_t* out) {
  const std::size_t n = codes.size();
  if constexpr (F->bits() <= 8 || F->bits() == 16) {
    using Code = std::conditional_t<F->bits() <= 8, std::uint8_t, std::uint16_t>;
    if (codes.dtype() == nb::dtype<Code>()) {
      return decode_bulk(*F, {static_cast<const Code*>(codes.data()), n}, to, std::span<std::uint16_t>(out, n));
    }
  }
  std::vector<float> wide(std::min<std::size_t>(n, 1 << 16));
  for (std::size_t begin = 0; begin < n; begin += wide.size()) {
    const std::size_t len = std::min(wide.size(), n - begin);
    decode_any<F>(codes, begin, len, wide.data());
    encode_bulk(to, std::span<const float>(wide.data(), len), std::span<std::uint16_t>(out + begin, len));
  }
}

// Packed FP4 / FP6 codes of f32 values (bulk.h's encode_bulk_packed), and back into f32.
void encode_packed(const Array& x, Array out, const std::string& fmt, const std::string& overflow,
                   const std::string& rounding, std::uint64_t seed) {
  const Format& f = format_arg(fmt);
  const BulkOptions o{for_arg("rounding", [&] { return rounding_named(rounding); }),
                      for_arg("overflow", [&] { return overflow_named(overflow); }), seed, 1};
  const float* p = data_as<float>(x, "array");
  std::uint8_t* q = data_as<std::uint8_t>(out, "out");
  nb::gil_scoped_release release;
  encode_bulk_packed(f, {p, x.size()}, {q, out.size()}, o);
}

void decode_packed(const Array& packed, Array out, const std::string& fmt) {
  const Format& f = format_arg(fmt);
  const std::uint8_t* p = data_as<std::uint8_t>(packed, "codes");
  float* q = data_as<float>(out, "out");
  nb::gil_scoped_release release;
  decode_bulk_packed(f, {p, packed.size()}, {q, out.size()});
}

// into: "f32" or "f64" (out holds values), "bf16" or "f16" (out holds uint16 codes of that format).
void decode_array(const Array& codes, Array out, const std::string& fmt, const std::string& into) {
  const Format& f = format_arg(fmt);
  if (out.size() != codes.size()) throw std::invalid_argument("out: size differs from the codes'");
  if (into != "f32" && into != "f64" && into != "bf16" && into != "f16") {
    throw std::invalid_argument("dtype: unsupported output " + into);
  }
  nb::gil_scoped_release release;
  with_format(f, [&](auto F) {
    if (into == "f64") return decode_any<F.value>(codes, 0, codes.size(), data_as<double>(out, "out"));
    if (into == "f32") return decode_any<F.value>(codes, 0, codes.size(), data_as<float>(out, "out"));
    decode_into_16<F.value>(codes, into == "bf16" ? bf16 : f16, data_as<std::uint16_t>(out, "out"));
  });
}

std::span<const std::uint8_t> bytes_of(const Array& a, const char* what) {
  return {data_as<std::uint8_t>(a, what), a.size()};
}
std::span<std::uint8_t> bytes_of(Array& a, const char* what) { return {data_as<std::uint8_t>(a, what), a.size()}; }

}  // namespace

void bind_codec(nb::module_& m) {
  m.def("encode", &encode_array, nb::arg("x"), nb::arg("input"), nb::arg("out"), nb::arg("fmt"), nb::arg("overflow"),
        nb::arg("rounding"), nb::arg("seed"));
  m.def("decode", &decode_array, nb::arg("codes"), nb::arg("out"), nb::arg("fmt"), nb::arg("into"));
  m.def("encode_packed", &encode_packed, nb::arg("x"), nb::arg("out"), nb::arg("fmt"), nb::arg("overflow"),
        nb::arg("rounding"), nb::arg("seed"));
  m.def("decode_packed", &decode_packed, nb::arg("codes"), nb::arg("out"), nb::arg("fmt"));
  m.def("packed_size", &packed_size, nb::arg("count"), nb::arg("bits"));
  m.def("pack", [](const Array& codes, int bits, Array out) {
    if (out.size() != packed_size(codes.size(), bits)) throw std::invalid_argument("out: wrong packed size");
    pack_codes(bytes_of(codes, "codes"), bits, bytes_of(out, "out"));
  });
  m.def("unpack", [](const Array& packed, int bits, Array out) {
    if (packed.size() != packed_size(out.size(), bits)) throw std::invalid_argument("packed: wrong packed size");
    unpack_codes(bytes_of(packed, "packed"), bits, bytes_of(out, "out"));
  });
}

}  // namespace mf::py
