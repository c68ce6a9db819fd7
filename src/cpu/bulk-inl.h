// Per-target span loops of the bulk casts: the element codec (element_codec-inl.h) over whole vectors, each
// element's stochastic bits computed in the vector (random.h's stochastic_bits in 32-bit lanes), and the
// scalar codec for the tails and for any vector holding a lane the vector steps do not cover (NaN, f32 subnormals).
//
// Included once per Highway target by bulk.cc through foreach_target.h; hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_BULK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_BULK_INL_H_
#undef MINIFLOAT_SRC_CPU_BULK_INL_H_
#else
#define MINIFLOAT_SRC_CPU_BULK_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "bulk_dispatch.h"
#include "element_codec-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "minifloat/codec.h"
#include "minifloat/format.h"
#include "minifloat/random.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<std::uint32_t>;
using VU = hn::Vec<DU>;

// stochastic_hash (random.h) on each lane: two 32-bit multiply-xorshift rounds, `middle` mixed in between.
HWY_INLINE VU StochasticHash(VU x, VU middle) {
  const DU du;
  x = hn::Mul(hn::Xor(x, hn::ShiftRight<16>(x)), hn::Set(du, 0x7FEB352Du));
  x = hn::Xor(x, middle);
  x = hn::Mul(hn::Xor(x, hn::ShiftRight<15>(x)), hn::Set(du, 0x846CA68Bu));
  return hn::Xor(x, hn::ShiftRight<16>(x));
}

// stochastic_bits(seed, index + lane) for each lane; `key` is stochastic_key(seed). Lanes on both sides of a
// multiple of 2^32 (their middles differ) are computed one by one.
HWY_INLINE VU RandomBits(std::uint64_t key, std::uint64_t index) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  const auto high = static_cast<std::uint32_t>(index >> 32);
  if (HWY_UNLIKELY(static_cast<std::uint32_t>((index + N - 1) >> 32) != high)) {
    HWY_ALIGN std::uint32_t lanes[hn::MaxLanes(DU())];
    for (std::size_t j = 0; j < N; ++j) lanes[j] = stochastic_bits_keyed(key, index + j);
    return hn::Load(du, lanes);
  }
  const auto low = static_cast<std::uint32_t>(index) + static_cast<std::uint32_t>(key);
  return StochasticHash(hn::Add(hn::Set(du, low), hn::Iota(du, 0)), hn::Set(du, stochastic_middle(key, high)));
}

template <class Out>
HWY_INLINE void StoreCodes(VU c, Out* out) {
  const hn::Rebind<Out, DU> dout;
  hn::StoreU(hn::DemoteTo(dout, hn::BitCast(hn::RebindToSigned<DU>(), c)), dout, out);
}

// Vectors of codes stored together: x86 packs two vectors in one instruction (per 128-bit block; one permute puts
// the blocks in order), where DemoteTo takes three for each vector's bytes.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
template <class Out>
constexpr std::size_t kGroup = sizeof(Out) == 1 ? 4 : 2;
// A group's codes fill one vector; `stream`: out is vector-aligned, and the store non-temporal.
#if HWY_TARGET <= HWY_AVX3
HWY_INLINE void Store512(__m512i v, void* out, bool stream) {
  if (stream) {
    _mm512_stream_si512(static_cast<__m512i*>(out), v);
  } else {
    _mm512_storeu_si512(out, v);
  }
}
#else
HWY_INLINE void Store256(__m256i v, void* out, bool stream) {
  if (stream) {
    _mm256_stream_si256(static_cast<__m256i*>(out), v);
  } else {
    _mm256_storeu_si256(static_cast<__m256i*>(out), v);
  }
}
#endif
// A group's codes (one vector's bytes) from `codes` to out: the rare path's, so that every line of a streamed output
// is written by streaming stores alone (one also written by a plain store costs a read of the line: the e2m1 cast
// at 4 Mi values, whose rare groups come every few KiB, took 1.3x as long).
template <class Out>
HWY_INLINE void StreamGroup(const Out* codes, Out* out) {
#if HWY_TARGET <= HWY_AVX3
  Store512(_mm512_loadu_si512(codes), out, true);
#else
  Store256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)), out, true);
#endif
}
template <class Out>
HWY_INLINE void StoreGroup(const VU* c, Out* out, bool stream) {
#if HWY_TARGET <= HWY_AVX3
  const __m512i ab = _mm512_packus_epi32(c[0].raw, c[1].raw);
  if constexpr (sizeof(Out) == 1) {
    const __m512i bytes = _mm512_packus_epi16(ab, _mm512_packus_epi32(c[2].raw, c[3].raw));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    Store512(_mm512_permutexvar_epi32(order, bytes), out, stream);
  } else {
    Store512(_mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), ab), out, stream);
  }
#else
  const __m256i ab = _mm256_packus_epi32(c[0].raw, c[1].raw);
  if constexpr (sizeof(Out) == 1) {
    const __m256i bytes = _mm256_packus_epi16(ab, _mm256_packus_epi32(c[2].raw, c[3].raw));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    Store256(_mm256_permutevar8x32_epi32(bytes, order), out, stream);
  } else {
    Store256(_mm256_permute4x64_epi64(ab, 0xD8), out, stream);
  }
#endif
}
#else
template <class Out>
constexpr std::size_t kGroup = 1;
template <class Out>
HWY_INLINE void StoreGroup(const VU* c, Out* out, bool /*stream: plain stores on these targets*/) {
  StoreCodes(c[0], out);
}
template <class Out>
HWY_INLINE void StreamGroup(const Out* codes, Out* out) {  // plain copies: no streaming on these targets
  std::copy_n(codes, hn::Lanes(DU()), out);
}
#endif

// stochastic_any: stochastic rounding of any vector (EncodeRest's).
enum class Path { nearest, stochastic, stochastic_any, exact };

// The codes of one vector of f32 bits, none of whose lanes NeedsScalar; `index` is its first element's.
template <Path kPath>
HWY_INLINE VU Codes(const ElementCodec& k, const EncodeConstants<DU>& c, VU bits, std::uint64_t key,
                    std::uint64_t index) {
  const DU du;
  if constexpr (kPath == Path::nearest) {
    return EncodeNearest(du, k, c, bits);
  } else if constexpr (kPath == Path::stochastic) {  // EncodeLoop's groups: zeros and normals only
    return EncodeStochasticNormal(du, k, c, bits, RandomBits(key, index));
  } else if constexpr (kPath == Path::stochastic_any) {
    const VU random = RandomBits(key, index);
    return HWY_LIKELY(hn::AllFalse(du, NeedsExact(du, k, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)))))
               ? EncodeStochastic(du, k, c, bits, random)
               : EncodeExact(du, k, bits, random);
  } else {
    return EncodeExact(du, k, bits, hn::Zero(du));
  }
}

// x[begin, end) a vector at a time, a vector with a lane that NeedsScalar (and the tail) through the scalar codec:
// the rare vectors the main loop leaves, and the last few. Out of line, so that the main loop keeps its constants.
template <Path kPath, class Out>
HWY_NOINLINE void EncodeRest(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t begin,
                             std::size_t end, Out* out) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  const auto scalar = [&](std::size_t j) {
    EncodeOptions o = k.options;
    o.random_bits = kPath == Path::stochastic ? stochastic_bits(run.seed, run.first_index + j) : 0;
    out[j] = static_cast<Out>(encode(*k.format, x[j], o));
  };
  const EncodeConstants<DU> c(k);
  std::size_t i = begin;
  for (; i + N <= end; i += N) {
    const VU bits = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x + i));
    const VU mag = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
    if (HWY_UNLIKELY(
            !hn::AllFalse(du, kPath == Path::nearest ? NeedsScalarNearest(du, k, mag) : NeedsScalar(du, mag)))) {
      for (std::size_t e = i; e < i + N; ++e) scalar(e);
    } else {
      constexpr Path kAny = kPath == Path::stochastic ? Path::stochastic_any : kPath;
      StoreCodes(Codes<kAny>(k, c, bits, stochastic_key(run.seed), run.first_index + i), out + i);
    }
  }
  for (; i < end; ++i) scalar(i);
}

// EncodeRest for the group of G vectors at x[i] of a streamed output: through a buffer and StreamGroup.
template <Path kPath, class Out>
HWY_NOINLINE void EncodeRestStreamed(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t i,
                                     Out* out) {
  constexpr std::size_t G = kGroup<Out>;
  EncodeRun at = run;
  at.first_index += i;
  HWY_ALIGN Out codes[G * hn::MaxLanes(DU())];
  EncodeRest<kPath>(k, at, x + i, 0, G * hn::Lanes(DU()), codes);
  StreamGroup(codes, out + i);
}

// Loads a group of G vectors from x into bits, with each lane's largest magnitude (top) and least magnitude - 1
// (least: zero wraps to the largest).
template <std::size_t G>
HWY_INLINE void LoadGroupRange(const EncodeConstants<DU>& c, const float* x, VU (&bits)[G], VU& least, VU& top) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  const VU abs_mask = c.abs_mask, one = c.one;  // the encoder's: the same |x| computed once
  top = hn::And(bits[0] = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x)), abs_mask);
  least = hn::Sub(top, one);
  for (std::size_t g = 1; g < G; ++g) {
    bits[g] = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x + g * N));
    const VU mag = hn::And(bits[g], abs_mask);
    top = hn::Max(top, mag);
    least = hn::Min(least, hn::Sub(mag, one));
  }
}

// Loads a group of G vectors from x into bits; whether a lane needs the scalar codec (NeedsScalarNearest or
// NeedsScalar) is tested on the group's largest magnitude where only Inf and NaN do (nearest even,
// tiny_rounds_to_zero), on its range otherwise. The mask's lanes say nothing more than "some lane of the group".
template <Path kPath, std::size_t G>
HWY_INLINE hn::Mask<DU> LoadGroup(const ElementCodec& k, const EncodeConstants<DU>& c, const float* x, VU (&bits)[G]) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  const VU abs_mask = c.abs_mask;  // the encoder's: the same |x| computed once
  if (kPath == Path::nearest && k.tiny_rounds_to_zero) {
    VU top = hn::And(bits[0] = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x)), abs_mask);
    for (std::size_t g = 1; g < G; ++g) {
      bits[g] = hn::BitCast(du, hn::LoadU(hn::RebindToFloat<DU>(), x + g * N));
      top = hn::Max(top, hn::And(bits[g], abs_mask));
    }
    return NeedsScalarNearest(du, k, top);
  }
  // NeedsScalar on the group's range: a Max and a Min per vector where the test takes two compares and an Or.
  VU least, top;
  LoadGroupRange(c, x, bits, least, top);
  return hn::Or(hn::Gt(top, hn::Set(du, 0x7F7FFFFFu)), hn::Gt(c.mantissa_field, least));
}

// Whether a group's lanes are all finite with |x|bits at least `floor` or zero, given its least magnitude - 1
// (least: zero wraps to the largest) and its largest.
HWY_INLINE bool FiniteFromFloor(VU least, VU top, std::uint32_t floor) {
  const DU du;
  return hn::AllFalse(du, hn::Or(GtMagnitude(top, hn::Set(du, 0x7F7FFFFFu)), hn::Gt(hn::Set(du, floor - 1), least)));
}

// Path::stochastic, a group with lanes below the smallest normal: whether EncodeStochastic's subnormal step takes
// them all, that is none is an f32 subnormal, Inf or NaN (the scalar codec) or needs a shift of 32 or more
// (EncodeExact).
HWY_INLINE bool StochasticSubnormalSteps(const ElementCodec& k, VU least, VU top) {
  return k.min_normal_bits != 0 && FiniteFromFloor(least, top, std::max(k.stochastic_floor_bits, 0x00800000u));
}

// Whether EncodeStochastic<true> takes a group: none of its lanes Inf, NaN or an f32 subnormal.
HWY_INLINE bool StochasticTinySteps(VU least, VU top) { return FiniteFromFloor(least, top, 0x00800000u); }

// How far ahead EncodeGroups asks for its input, into L1: with the hardware prefetchers alone a 4 Mi-value encode on
// the Xeon ran at 59-78% of the read-only loop's speed from one run to the next, with this at 79-88%
// (docs/benchmark-history.md#bulk-casts-minifloatbulkh-2026-12-02-1540).
// An address past the input is never read, and its prefetch does not fault (hence the integer arithmetic).
constexpr std::uintptr_t kReadAhead = 1024;

// The groups from x[i] on while none needs the rare path (a lane for the scalar codec, or for stochastic rounding
// one below the smallest normal); returns where it stopped: a group that does, or fewer than a group's elements left.
// No call in this loop: a call clobbers every vector register, and the compiler would then build the constants again
// in every iteration rather than keep them across it.
template <Path kPath, class Out>
HWY_INLINE std::size_t EncodeGroups(const ElementCodec& k, const EncodeRun& run, std::uint64_t key, const float* x,
                                    std::size_t i, std::size_t n, Out* out, bool stream) {
  const DU du;
  const std::size_t N = hn::Lanes(du);
  constexpr std::size_t G = kGroup<Out>;
  const EncodeConstants<DU> consts(k);
  // Stochastic: lane j of the vector from element e hashes lo32(e) + lo32(key) + j with the middle of e's high 32
  // bits (RandomBits). Those inputs are counted along the loop, N a vector (one add, where a broadcast of the index
  // took two operations: 3-8% faster), while the groups stay within one 2^32-element stretch (a group that crosses
  // into the next goes to EncodeRest; the call after it starts anew).
  const auto high = static_cast<std::uint32_t>((run.first_index + i) >> 32);
  const VU middle = hn::Set(du, stochastic_middle(key, high)), step = hn::Set(du, static_cast<std::uint32_t>(N));
  VU counter = hn::Add(hn::Set(du, static_cast<std::uint32_t>(run.first_index + i) + static_cast<std::uint32_t>(key)),
                       hn::Iota(du, 0));
  for (; i + G * N <= n; i += G * N) {
    if constexpr (G > 1) {  // x86: a group is 256 or 512 bytes of input
      for (std::size_t line = 0; line < G * N * sizeof(float); line += 64) {
        hwy::Prefetch(reinterpret_cast<const float*>(reinterpret_cast<std::uintptr_t>(x + i) + kReadAhead + line));
      }
    }
    VU bits[G], c[G];
    if constexpr (kPath == Path::stochastic) {
      const std::uint64_t e = run.first_index + i;
      if (HWY_UNLIKELY(static_cast<std::uint32_t>((e + G * N - 1) >> 32) != high)) return i;
      VU least, top, random[G];
      LoadGroupRange(consts, x + i, bits, least, top);
      for (std::size_t g = 0; g < G; ++g) {  // RandomBits(key, e + g * N)
        random[g] = StochasticHash(counter, middle);
        counter = hn::Add(counter, step);
      }
      const bool subnormals = !hn::AllFalse(du, NeedsStochasticSubnormal(du, k, least, top));
      if (HWY_UNLIKELY(subnormals) && !StochasticSubnormalSteps(k, least, top)) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && HWY_TARGET > HWY_AVX3
        // AVX2: lanes below the floor (e2m1: |x| < 2^-9, in 2% of the groups of normal data) in the vector step
        // too, where the rare path took 7% of the e2m1 cast's time; Inf, NaN and f32 subnormals still go there. On
        // AVX-512 the second copy of the group loop cost e3m2 and e2m3 3-4% for e2m1's 5%
        // (docs/benchmark-history.md#bulk-casts-minifloatbulkh-2026-12-03-0515).
        if (!TinyStochasticLanes(k) || !StochasticTinySteps(least, top)) return i;
        for (std::size_t g = 0; g < G; ++g) c[g] = EncodeStochastic<true>(du, k, consts, bits[g], random[g]);
        StoreGroup(c, out + i, stream);
        continue;
#else
        return i;
#endif
      }
      for (std::size_t g = 0; g < G; ++g) {
        c[g] = subnormals ? EncodeStochastic(du, k, consts, bits[g], random[g])
                          : EncodeStochasticNormal(du, k, consts, bits[g], random[g]);
      }
      StoreGroup(c, out + i, stream);
      continue;
    } else if (HWY_UNLIKELY(!hn::AllFalse(du, LoadGroup<kPath>(k, consts, x + i, bits)))) {
      return i;
    }
    // Stochastic: a group of zeros and normals only (EncodeStochasticNormal).
    for (std::size_t g = 0; g < G; ++g) {
      c[g] = Codes<kPath>(k, consts, bits[g], key, run.first_index + i + g * N);
    }
    StoreGroup(c, out + i, stream);
  }
  return i;
}

// One loop per path, so that each holds only its own constants in registers. `k` is a compile-time constant
// (kFixedCodec below) or a copy that no store through `out` may alias (EncodeSpan); no closure holds it, so that
// the compiler sees its values in the loop (the group helpers above are inlined into it).
template <Path kPath, class Out>
HWY_INLINE void EncodeLoop(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, Out* out) {
  const std::size_t N = hn::Lanes(DU());
  const std::uint64_t key = stochastic_key(run.seed);
  constexpr std::size_t G = kGroup<Out>;
  std::size_t i = 0;
  // Streaming: the elements before the first 64-byte-aligned code through EncodeRest, then every group is aligned.
  const bool stream = run.stream_out && G > 1 && reinterpret_cast<std::uintptr_t>(out) % sizeof(Out) == 0;
  if (stream) i = std::min(n, (0 - reinterpret_cast<std::uintptr_t>(out)) % 64 / sizeof(Out));
  if (i > 0) EncodeRest<kPath>(k, run, x, 0, i, out);
  while ((i = EncodeGroups<kPath>(k, run, key, x, i, n, out, stream)) + G * N <= n) {  // the rare path
    if (stream) {
      EncodeRestStreamed<kPath>(k, run, x, i, out);
    } else {
      EncodeRest<kPath>(k, run, x, i, i + G * N, out);
    }
    i += G * N;
  }
  if (i < n) EncodeRest<kPath>(k, run, x, i, n, out);
}

// The traits copied in: stores through `out` might alias the caller's, and would reload every constant.
template <Path kPath, class Out>
HWY_INLINE void EncodeSpan(const ElementCodec k, const EncodeRun& run, const float* x, std::size_t n, Out* out) {
  EncodeLoop<kPath>(k, run, x, n, out);
}

// One format's traits as a compile-time constant: a loop given these folds the shift counts into immediates, the
// traits' branches away and the constants into the instructions.
template <const Format* F, Rounding R, Overflow O>
inline constexpr ElementCodec kFixedCodec = element_codec(*F, {R, O, 0});

// EncodeLoop on one format's constant traits: a function of its own, so that no two formats' loops are merged into
// one that reads its traits through a pointer.
template <Path kPath, const Format* F, Rounding R, Overflow O, class Out>
HWY_NOINLINE void EncodeFixedLoop(const EncodeRun& run, const float* x, std::size_t n, Out* out) {
  EncodeLoop<kPath>(kFixedCodec<F, R, O>, run, x, n, out);
}

// fn(std::integral_constant<const Format*, F>()) for the F among Fs whose format k has; false when none is.
template <const Format*... Fs, class Fn>
HWY_INLINE bool WithFixedFormat(const ElementCodec& k, const Fn& fn) {
  const auto one = [&](auto f) {
    if (!(*k.format == *decltype(f)::value)) return false;
    fn(f);
    return true;
  };
  return (one(std::integral_constant<const Format*, Fs>()) || ...);
}

// The formats whose encode and decode loops are compiled with their traits folded in (the others take the traits at
// run time), by the width of their codes in bytes.
template <std::size_t kCodeBytes, class Fn>
HWY_INLINE bool WithBuiltInFormat(const ElementCodec& k, const Fn& fn) {
  if constexpr (kCodeBytes == 1) {
    return WithFixedFormat<&e4m3, &e5m2, &e3m2, &e2m3, &e2m1, &ue8m0>(k, fn);
  } else {
    return WithFixedFormat<&bf16, &f16>(k, fn);
  }
}

// EncodeFixedLoop when k is one of the built-in formats' traits (any overflow option); false otherwise.
template <Path kPath, Rounding R, class Out>
HWY_INLINE bool EncodeFixedFormats(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n,
                                   Out* out) {
  return WithBuiltInFormat<sizeof(Out)>(k, [&](auto f) {
    constexpr const Format* F = decltype(f)::value;
    if (k.options.overflow == Overflow::format_default) {
      EncodeFixedLoop<kPath, F, R, Overflow::format_default>(run, x, n, out);
    } else {
      EncodeFixedLoop<kPath, F, R, Overflow::saturate>(run, x, n, out);
    }
  });
}

// EncodeNearest's f32 step needs the CPU to round f32 arithmetic to nearest.
template <class Out>
HWY_INLINE void Encode(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, Out* out) {
  if (k.options.rounding == Rounding::nearest_even && run.float_rounding_is_nearest) {
    if (!EncodeFixedFormats<Path::nearest, Rounding::nearest_even>(k, run, x, n, out)) {
      EncodeSpan<Path::nearest>(k, run, x, n, out);
    }
  } else if (k.options.rounding == Rounding::stochastic) {
    if (!EncodeFixedFormats<Path::stochastic, Rounding::stochastic>(k, run, x, n, out)) {
      EncodeSpan<Path::stochastic>(k, run, x, n, out);
    }
  } else {
    EncodeSpan<Path::exact>(k, run, x, n, out);
  }
}

// f32 values of codes[0, n); kStream: out through streaming (non-temporal) stores from its first vector-aligned
// element on, the caller fencing after (src/ops/bulk.cc's large outputs: no read of each line before it is written).
template <bool kStream, class In>
HWY_INLINE void DecodeSpan(const ElementCodec k, const In* codes, std::size_t n, float* out) {
  const DU du;
  const hn::RebindToFloat<DU> df;
  const hn::Rebind<In, DU> din;
  const std::size_t N = hn::Lanes(du);
  std::size_t i = 0;
  if constexpr (kStream) {
    const std::size_t to_aligned = (0 - reinterpret_cast<std::uintptr_t>(out)) % (N * sizeof(float)) / sizeof(float);
    for (; i < n && i < to_aligned; ++i) out[i] = decode(*k.format, codes[i]);
  }
  const auto store = [&](hn::Vec<decltype(df)> v, std::size_t at) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kStream) {
      hn::Stream(v, df, out + at);
    } else {
      hn::StoreU(v, df, out + at);
    }
  };
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // F16C: halves widened 8 a step (256-bit on AVX-512 too)
  // Eight f32 lanes of a 16-element step to out + at; streamed, out + at is 32-byte aligned (the prefix above aligns
  // out + i to a whole vector and steps are 16 elements).
  const auto store8 = [&](__m256 v, std::size_t at) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kStream) {
      _mm256_stream_ps(out + at, v);
    } else {
      _mm256_storeu_ps(out + at, v);
    }
  };
  if constexpr (sizeof(In) == 1) {
    if (DecodesViaHalf(k)) {  // 16 codes a step through halves: e4m3, e5m2, e3m2, e2m3, e2m1
      for (; i + 16 <= n; i += 16) {
        __m256 lo, hi;
        DecodeX16ViaHalf(k, codes + i, lo, hi);
        store8(lo, i);
        store8(hi, i + 8);
      }
    }
  } else {
    // f16: 16 halves a step widened by F16C, exact; a step holding a NaN through Decode, which keeps a signaling
    // NaN's payload as it is (F16C would quiet it).
    if (*k.format == f16) {
      for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
        const __m256i nan =
            _mm256_cmpgt_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x7C00));
        if (HWY_UNLIKELY(!_mm256_testz_si256(nan, nan))) {
          for (std::size_t j = i; j < i + 16; j += N) {
            store(hn::BitCast(df, Decode(du, k, hn::PromoteTo(du, hn::LoadU(din, codes + j)))), j);
          }
          continue;
        }
        store8(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), i);
        store8(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), i + 8);
      }
    }
  }
#endif
  for (; i + N <= n; i += N) store(hn::BitCast(df, Decode(du, k, hn::PromoteTo(du, hn::LoadU(din, codes + i)))), i);
  for (; i < n; ++i) out[i] = decode(*k.format, codes[i]);
}

// DecodeSpan on one format's constant traits (kFixedCodec; decoding reads no option): a function of its own, as
// EncodeFixedLoop, so that the traits' branches and constants fold away.
template <bool kStream, const Format* F, class In>
HWY_NOINLINE void DecodeFixedSpan(const In* codes, std::size_t n, float* out) {
  DecodeSpan<kStream>(kFixedCodec<F, Rounding::nearest_even, Overflow::format_default>, codes, n, out);
}

// DecodeFixedSpan for the built-in formats, DecodeSpan on run-time traits for the others.
template <bool kStream, class In>
HWY_INLINE void DecodeAny(const ElementCodec& k, const In* codes, std::size_t n, float* out) {
  const bool fixed =
      WithBuiltInFormat<sizeof(In)>(k, [&](auto f) { DecodeFixedSpan<kStream, decltype(f)::value>(codes, n, out); });
  if (!fixed) DecodeSpan<kStream>(k, codes, n, out);
}

template <class In>
HWY_INLINE void DecodeAll(const ElementCodec& k, const In* codes, std::size_t n, float* out, bool stream) {
  // A float* not 4-byte aligned never reaches the aligned stores (its elements are not on float boundaries).
  if (stream && reinterpret_cast<std::uintptr_t>(out) % sizeof(float) == 0) {
    DecodeAny<true>(k, codes, n, out);
  } else {
    DecodeAny<false>(k, codes, n, out);
  }
}

void EncodeBytes(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint8_t* out) {
  Encode(k, run, x, n, out);
}
void EncodeWords(const ElementCodec& k, const EncodeRun& run, const float* x, std::size_t n, std::uint16_t* out) {
  Encode(k, run, x, n, out);
}
void DecodeBytes(const ElementCodec& k, const std::uint8_t* codes, std::size_t n, float* out, bool stream) {
  DecodeAll(k, codes, n, out, stream);
}
void DecodeWords(const ElementCodec& k, const std::uint16_t* codes, std::size_t n, float* out, bool stream) {
  DecodeAll(k, codes, n, out, stream);
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // MINIFLOAT_SRC_CPU_BULK_INL_H_
