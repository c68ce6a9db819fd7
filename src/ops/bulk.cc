// Bulk casts: checks, threads over chunks, f64 / bf16 / f16 staged through f32 a piece at a time, packing; each
// piece through the kernels of src/cpu/bulk_dispatch.h (the SIMD element codec on this CPU's best target, or the
// scalar codec in a build without Highway).
#include <cfenv>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../cpu/bulk_dispatch.h"
#include "../cpu/thread_count.h"
#include "minifloat/bulk.h"
#include "minifloat/pack.h"
#include "minifloat/random.h"

namespace mf {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;  // elements per thread's piece
// Elements staged at a time through a buffer that stays in L1 (widened inputs, unpacked codes): a multiple of 4, so
// that every piece but the last starts on a packed byte (FP4) or 3-byte group (FP6).
constexpr std::size_t kPiece = 2048;
// A cast whose input and output take this many bytes or more together (past any core's L2) writes its output with
// streaming stores: a plain store reads each line before writing it (a third of a widening decode's traffic, a sixth
// of a narrowing encode's), and an array that large leaves the caches anyway.
constexpr std::size_t kStreamBytes = std::size_t{4} << 20;
template <class In, class Out>
bool streams(std::span<In> in, std::span<Out> out) {
  return in.size_bytes() + out.size_bytes() >= kStreamBytes;
}

int thread_count(int requested, std::size_t n) {
  if (n < 2 * kChunk) return 1;
  return cpu::thread_count(requested);  // 1 in a build without OpenMP
}

// fn(begin, len) over [0, n) in chunks of kChunk elements, on `threads` threads when n is large.
template <class Fn>
void parallel_chunks(std::size_t n, int threads, Fn fn) {
  const int t = thread_count(threads, n);
  if (t == 1) {  // no parallel region: it costs microseconds, a small array's whole cast
    fn(std::size_t{0}, n);
    return;
  }
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(t) schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) fn(c * kChunk, std::min(kChunk, n - c * kChunk));
}

// fn(begin, len) over [begin, begin + len) in pieces of kPiece elements.
template <class Fn>
void in_pieces(std::size_t begin, std::size_t len, Fn fn) {
  for (std::size_t p = begin; p < begin + len; p += kPiece) fn(p, std::min(kPiece, begin + len - p));
}

void check(const Format& f, std::size_t n, std::size_t m, int code_bits, const char* what) {
  if (n != m) {
    throw std::invalid_argument(std::string(what) + ": codes has " + std::to_string(m) + " elements, x has " +
                                std::to_string(n) + " (one code per value)");
  }
  const bool fits = code_bits == 8 ? f.bits() <= 8 : f.bits() == 16;
  if (!fits) {
    throw std::invalid_argument(std::string(what) + ": f: " + std::string(f.name) + " has " + std::to_string(f.bits()) +
                                "-bit codes, codes holds " + (code_bits == 8 ? "8 bits or fewer" : "16 bits"));
  }
}

// bf16 or f16, the 16-bit value formats whose codes bulk.h takes as values.
void check_wide(const Format& w, const char* what, const char* arg) {
  if (w != bf16 && w != f16) {
    throw std::invalid_argument(std::string(what) + ": " + arg + ": " + std::string(w.name) +
                                " given, bf16 or f16 expected");
  }
}

// The packed length of n codes of f (packing applies to 4-, 6- and 8-bit codes).
std::size_t packed_length(const Format& f, std::size_t n, const char* what) {
  if (f.bits() != 4 && f.bits() != 6 && f.bits() != 8) {
    throw std::invalid_argument(std::string(what) + ": f: " + std::string(f.name) + " has " + std::to_string(f.bits()) +
                                "-bit codes; packing takes 4-, 6- or 8-bit codes");
  }
  return packed_size(n, f.bits());
}

template <class Out>
auto encode_kernel() {
  if constexpr (sizeof(Out) == 1) {
    return &cpu::encode_bytes;
  } else {
    return &cpu::encode_words;
  }
}
template <class In>
auto decode_kernel() {
  if constexpr (sizeof(In) == 1) {
    return &cpu::decode_bytes;
  } else {
    return &cpu::decode_words;
  }
}

// The SIMD element codecs round to nearest even, toward zero or stochastically, with the default or saturating
// overflow; the other options (away_from_zero, nearest_away; clamp, nan_outside_range) take the scalar codec element
// by element: the same codes, at scalar speed.
bool has_vector_codec(const BulkOptions& o) {
  return (o.rounding == Rounding::nearest_even || o.rounding == Rounding::toward_zero ||
          o.rounding == Rounding::stochastic) &&
         (o.overflow == Overflow::format_default || o.overflow == Overflow::saturate);
}

struct Encoder {
  cpu::ElementCodec codec;
  BulkOptions o;
  bool nearest;  // the CPU rounds f32 arithmetic to nearest
  bool stream;   // streaming stores into the codes (nothing reads them back within the cast)
  bool vector;   // has_vector_codec(o)
  Encoder(const Format& f, const BulkOptions& options, bool stream_out = false)
      : codec(cpu::element_codec(f, {options.rounding, options.overflow, 0})),
        o(options),
        nearest(std::fegetround() == FE_TONEAREST),
        stream(stream_out),
        vector(has_vector_codec(options)) {}
  // codes of x[0, n), elements begin .. begin + n of the whole array.
  template <class Out>
  void operator()(const float* x, std::size_t begin, std::size_t n, Out* codes) const {
    if (!vector) {
      EncodeOptions e = codec.options;
      for (std::size_t i = 0; i < n; ++i) {
        if (e.rounding == Rounding::stochastic) e.random_bits = stochastic_bits(o.seed, o.first_index + begin + i);
        codes[i] = static_cast<Out>(encode(*codec.format, x[i], e));
      }
      return;
    }
    encode_kernel<Out>()(codec, cpu::EncodeRun{o.seed, o.first_index + begin, nearest, stream}, x, n, codes);
  }
};

template <class Out>
void encode_f32(const Format& f, std::span<const float> x, std::span<Out> codes, const BulkOptions& o) {
  check(f, x.size(), codes.size(), 8 * sizeof(Out), "encode_bulk");
  const Encoder enc(f, o, streams(x, codes));
  parallel_chunks(x.size(), o.threads,
                  [&](std::size_t b, std::size_t n) { enc(x.data() + b, b, n, codes.data() + b); });
}

// Each element rounds once from its f64 value. Nearest-even and toward-zero codes depend on the value only, so
// elements whose value is an f32 take the SIMD path and the rest the scalar codec; stochastic codes also depend on
// the source's width (the dropped bits the random bits meet), so they all take the scalar codec.
template <class Out>
void encode_f64(const Format& f, std::span<const double> x, std::span<Out> codes, const BulkOptions& o) {
  check(f, x.size(), codes.size(), 8 * sizeof(Out), "encode_bulk");
  const Encoder enc(f, o);
  const auto scalar = [&](std::size_t i) {
    const EncodeOptions e{o.rounding, o.overflow,
                          o.rounding == Rounding::stochastic ? stochastic_bits(o.seed, o.first_index + i) : 0};
    codes[i] = static_cast<Out>(encode(f, x[i], e));
  };
  parallel_chunks(x.size(), o.threads, [&](std::size_t begin, std::size_t len) {
    if (o.rounding == Rounding::stochastic) {
      for (std::size_t i = begin; i < begin + len; ++i) scalar(i);
      return;
    }
    float narrow[kPiece] = {};  // once per chunk (zeroed: the compiler cannot see that the loop fills n of them)
    in_pieces(begin, len, [&](std::size_t b, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) narrow[i] = static_cast<float>(x[b + i]);
      enc(narrow, b, n, codes.data() + b);
      for (std::size_t i = 0; i < n; ++i) {
        if (static_cast<double>(narrow[i]) != x[b + i]) scalar(b + i);  // inexact in f32, or NaN
      }
    });
  });
}

// bf16 / f16 values are f32 values exactly: widened (SIMD decode) a piece at a time, then the f32 path.
template <class Out>
void encode_wide(const Format& f, const Format& from, std::span<const std::uint16_t> x, std::span<Out> codes,
                 const BulkOptions& o) {
  check(f, x.size(), codes.size(), 8 * sizeof(Out), "encode_bulk");
  check_wide(from, "encode_bulk", "from");
  const Encoder enc(f, o);
  const cpu::ElementCodec widen = cpu::element_codec(from);
  const auto decode_words = decode_kernel<std::uint16_t>();
  parallel_chunks(x.size(), o.threads, [&](std::size_t begin, std::size_t len) {
    in_pieces(begin, len, [&](std::size_t b, std::size_t n) {
      float wide[kPiece];
      decode_words(widen, x.data() + b, n, wide, false);
      enc(wide, b, n, codes.data() + b);
    });
  });
}

template <class In>
void decode_f32(const Format& f, std::span<const In> codes, std::span<float> x, int threads) {
  check(f, x.size(), codes.size(), 8 * sizeof(In), "decode_bulk");
  const cpu::ElementCodec codec = cpu::element_codec(f);
  const auto kernel = decode_kernel<In>();
  const bool stream = streams(codes, x);
  parallel_chunks(x.size(), threads,
                  [&](std::size_t b, std::size_t n) { kernel(codec, codes.data() + b, n, x.data() + b, stream); });
}

// Decoded into f32 a piece at a time, then put(piece's values, begin, n).
template <class In, class Put>
void decode_staged(const Format& f, std::span<const In> codes, int threads, Put put) {
  const cpu::ElementCodec codec = cpu::element_codec(f);
  const auto kernel = decode_kernel<In>();
  parallel_chunks(codes.size(), threads, [&](std::size_t begin, std::size_t len) {
    in_pieces(begin, len, [&](std::size_t b, std::size_t n) {
      float values[kPiece];
      kernel(codec, codes.data() + b, n, values, false);
      put(values, b, n);
    });
  });
}

template <class In>
void decode_f64(const Format& f, std::span<const In> codes, std::span<double> x, int threads) {
  check(f, x.size(), codes.size(), 8 * sizeof(In), "decode_bulk");
  decode_staged(f, codes, threads, [&](const float* v, std::size_t b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[b + i] = v[i];  // exact
  });
}

template <class In>
void decode_wide(const Format& f, std::span<const In> codes, const Format& to, std::span<std::uint16_t> x,
                 int threads) {
  check(f, x.size(), codes.size(), 8 * sizeof(In), "decode_bulk");
  check_wide(to, "decode_bulk", "to");
  const Encoder narrow(to, BulkOptions{});  // nearest even, the standard overflow (+-Inf)
  decode_staged(f, codes, threads,
                [&](const float* v, std::size_t b, std::size_t n) { narrow(v, b, n, x.data() + b); });
}

}  // namespace

void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint8_t> codes, const BulkOptions& o) {
  encode_f32(f, x, codes, o);
}
void encode_bulk(const Format& f, std::span<const float> x, std::span<std::uint16_t> codes, const BulkOptions& o) {
  encode_f32(f, x, codes, o);
}
void encode_bulk(const Format& f, std::span<const double> x, std::span<std::uint8_t> codes, const BulkOptions& o) {
  encode_f64(f, x, codes, o);
}
void encode_bulk(const Format& f, std::span<const double> x, std::span<std::uint16_t> codes, const BulkOptions& o) {
  encode_f64(f, x, codes, o);
}
void encode_bulk(const Format& f, const Format& from, std::span<const std::uint16_t> x, std::span<std::uint8_t> codes,
                 const BulkOptions& o) {
  encode_wide(f, from, x, codes, o);
}
void encode_bulk(const Format& f, const Format& from, std::span<const std::uint16_t> x, std::span<std::uint16_t> codes,
                 const BulkOptions& o) {
  encode_wide(f, from, x, codes, o);
}

void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<float> x, int threads) {
  decode_f32(f, codes, x, threads);
}
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<float> x, int threads) {
  decode_f32(f, codes, x, threads);
}
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, std::span<double> x, int threads) {
  decode_f64(f, codes, x, threads);
}
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, std::span<double> x, int threads) {
  decode_f64(f, codes, x, threads);
}
void decode_bulk(const Format& f, std::span<const std::uint8_t> codes, const Format& to, std::span<std::uint16_t> x,
                 int threads) {
  decode_wide(f, codes, to, x, threads);
}
void decode_bulk(const Format& f, std::span<const std::uint16_t> codes, const Format& to, std::span<std::uint16_t> x,
                 int threads) {
  decode_wide(f, codes, to, x, threads);
}

void encode_bulk_packed(const Format& f, std::span<const float> x, std::span<std::uint8_t> packed,
                        const BulkOptions& o) {
  const std::size_t want = packed_length(f, x.size(), "encode_bulk_packed");
  if (packed.size() != want) {
    throw std::invalid_argument("encode_bulk_packed: packed has " + std::to_string(packed.size()) + " bytes, " +
                                std::to_string(x.size()) + " " + std::string(f.name) + " codes pack into " +
                                std::to_string(want));
  }
  const Encoder enc(f, o);
  parallel_chunks(x.size(), o.threads, [&](std::size_t begin, std::size_t len) {
    in_pieces(begin, len, [&](std::size_t b, std::size_t n) {
      std::uint8_t codes[kPiece];
      enc(x.data() + b, b, n, codes);
      pack_codes({codes, n}, f.bits(), packed.subspan(packed_size(b, f.bits()), packed_size(n, f.bits())));
    });
  });
}

void decode_bulk_packed(const Format& f, std::span<const std::uint8_t> packed, std::span<float> x, int threads) {
  const std::size_t want = packed_length(f, x.size(), "decode_bulk_packed");
  if (packed.size() != want) {
    throw std::invalid_argument("decode_bulk_packed: packed has " + std::to_string(packed.size()) + " bytes, " +
                                std::to_string(x.size()) + " " + std::string(f.name) + " codes take " +
                                std::to_string(want));
  }
  const cpu::ElementCodec codec = cpu::element_codec(f);
  const auto kernel = decode_kernel<std::uint8_t>();
  parallel_chunks(x.size(), threads, [&](std::size_t begin, std::size_t len) {
    in_pieces(begin, len, [&](std::size_t b, std::size_t n) {
      std::uint8_t codes[kPiece];
      unpack_codes(packed.subspan(packed_size(b, f.bits()), packed_size(n, f.bits())), f.bits(), {codes, n});
      kernel(codec, codes, n, x.data() + b, false);
    });
  });
}

}  // namespace mf
