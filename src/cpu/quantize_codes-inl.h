// Per-target element codes of the block quantizer: a vector of quotients to codes and codes to element values, through
// the element codec (element_codec-inl.h) for float elements and by integer rounding for int8 / int4, and the codes
// of a vector stored to and loaded from a row of bytes or nibble pairs.
//
// Included once per Highway target through quantize-inl.h (foreach_target.h); hence the toggle include guard.
#if defined(MINIFLOAT_SRC_CPU_QUANTIZE_CODES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINIFLOAT_SRC_CPU_QUANTIZE_CODES_INL_H_
#undef MINIFLOAT_SRC_CPU_QUANTIZE_CODES_INL_H_
#else
#define MINIFLOAT_SRC_CPU_QUANTIZE_CODES_INL_H_
#endif

#include <cstdint>

#include "element_codec-inl.h"
#include "hwy/highway.h"
#include "quantize_element.h"
#include "quantize_input-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mf::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Encoders and decoders are functors rather than lambdas, so they carry the target's attributes; each holds its
// constants as vectors made once per row.

// Float elements: the element codec's saturating encoder, which also finds the lanes near a rounding midpoint.
struct FloatEncoder {
  static constexpr bool kFindsTies = true;  // operator()(y, near) exists
  SaturatingGrid<DF> grid;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // The same codes in fewer operations, where the format fits a table (EncodeSaturatingByTable): the quantizers'
  // loops over quotients by powers of two, which need no near mask, take it.
  bool table_fits;
  SaturatingTable<DF> table;
  explicit FloatEncoder(const ElementCodec& k) : grid(k), table_fits(SaturatingTable<DF>::Fits(k)), table(k) {}
#else
  explicit FloatEncoder(const ElementCodec& k) : grid(k) {}
#endif
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y) const { return EncodeSaturating(DF(), grid, y); }
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y, hn::Mask<DF>& near) const {
    return EncodeSaturating(DF(), grid, y, &near);
  }
};

// Symmetric integers (int8, int4; no Format): round(y) to nearest even, clamped to +-max, two's complement in
// `bits` bits.
struct IntEncoder {
  static constexpr bool kFindsTies = false;
  hn::Vec<DF> max;
  hn::Vec<DU> mask;
  explicit IntEncoder(const QuantizeElement& ec)
      : max(hn::Set(DF(), ec.max)), mask(hn::Set(DU(), (1u << ec.bits) - 1)) {}
  HWY_INLINE hn::Vec<DU> operator()(hn::Vec<DF> y) const {
    return hn::And(hn::BitCast(DU(), hn::NearestInt(hn::Min(hn::Max(y, hn::Neg(max)), max))), mask);
  }
};

// Calls fn(encoder) with the encoder of ec's element type.
template <class Fn>
HWY_INLINE void WithEncoder(const QuantizeElement& ec, const Fn& fn) {
  if (ec.is_int) return fn(IntEncoder(ec));
  fn(FloatEncoder(ec.codec));
}

// Float elements: the element codec's Decode (a copy of the traits, so the loop keeps them in registers).
struct FormatDecoder {
  ElementCodec k;
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const { return hn::BitCast(DF(), Decode(DU(), k, c)); }
};

// e4m3 elements: the GEMM kernels' decode (DecodeE4m3), Decode's bits with e4m3's constants built in and fewer
// operations per vector.
struct E4m3Decoder {
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const { return DecodeE4m3(DF(), c); }
};

// Integers: the low `bits` bits sign-extended, as element_value().
struct IntDecoder {
  int shift;  // 32 - bits
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DU> c) const {
    return hn::ConvertTo(DF(), hn::ShiftRightSame(hn::ShiftLeftSame(hn::BitCast(DI(), c), shift), shift));
  }
};

// Calls fn(decoder) with the decoder of ec's element type: by table where the format's magnitudes fit in a vector.
template <class Fn>
HWY_INLINE void WithDecoder(const QuantizeElement& ec, const Fn& fn) {
  if (ec.is_int) return fn(IntDecoder{32 - ec.bits});
  if (ec.codec.format == &mf::e4m3) return fn(E4m3Decoder{});
#if HWY_TARGET != HWY_SCALAR
  if (DecodeTable<DF>::Fits(DF(), ec.codec)) return fn(DecodeTable<DF>(ec.codec));
#endif
  fn(FormatDecoder{ec.codec});
}

// Codes of a vector (u32 lanes) into the output at column c: one per byte, or (kNibbles) two per byte, column 2i in
// the low nibble of byte i (docs/spec.md#packing), packed here so no row of codes is written twice.
template <bool kNibbles>
HWY_INLINE void StoreCodes(hn::Vec<DU> codes, std::uint8_t* out, std::int64_t c) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kNibbles) {
    const hn::Repartition<std::uint64_t, DU> d64;
    const hn::Rebind<std::uint8_t, decltype(d64)> d8;
    const auto pairs = hn::BitCast(d64, codes);  // code 2i in bits 0..3, code 2i + 1 in bits 32..35
    hn::StoreU(hn::TruncateTo(d8, hn::Or(pairs, hn::ShiftRight<28>(pairs))), d8, out + c / 2);
    return;
  }
#endif
  hn::StoreU(hn::U8FromU32(codes), D8(), out + c);
}

// Four vectors of codes for columns c .. c + 4N: the bytes four StoreCodes would write. On AVX-512, 64 codes take
// two dword-to-word packs, one word-to-byte pack and a lane permutation (packs work within 128-bit lanes), and nibble
// pairs one multiply-add of adjacent bytes (lo + 16 hi) and a truncation: 4 and 7 operations where four StoreCodes
// take 8 and 16. On AVX2 the same four for 32 bytes (nibble pairs: four StoreCodes).
template <bool kNibbles>
HWY_INLINE void StoreCodes4(hn::Vec<DU> v0, hn::Vec<DU> v1, hn::Vec<DU> v2, hn::Vec<DU> v3, std::uint8_t* out,
                            std::int64_t c) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Lane L of the packed bytes holds v0[4L, 4L + 4), v1[4L, 4L + 4), v2[..], v3[..]: dword 4L + j is vector j's.
  const __m512i packed = _mm512_packus_epi16(_mm512_packus_epi32(v0.raw, v1.raw), _mm512_packus_epi32(v2.raw, v3.raw));
  const __m512i bytes =
      _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), packed);
  if constexpr (kNibbles) {
    const __m512i pairs = _mm512_maddubs_epi16(bytes, _mm512_set1_epi16(0x1001));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c / 2), _mm512_cvtepi16_epi8(pairs));
  } else {
    _mm512_storeu_si512(out + c, bytes);
  }
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
  if constexpr (!kNibbles) {
    // The packed bytes' dwords are v0..v3's low halves, then their high halves: lane order (0, 4, 1, 5, 2, 6, 3, 7).
    const __m256i packed =
        _mm256_packus_epi16(_mm256_packus_epi32(v0.raw, v1.raw), _mm256_packus_epi32(v2.raw, v3.raw));
    const __m256i bytes = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), bytes);
    return;
  }
  const auto N = static_cast<std::int64_t>(hn::Lanes(DU()));
  StoreCodes<kNibbles>(v0, out, c);
  StoreCodes<kNibbles>(v1, out, c + N);
  StoreCodes<kNibbles>(v2, out, c + 2 * N);
  StoreCodes<kNibbles>(v3, out, c + 3 * N);
#else
  const auto N = static_cast<std::int64_t>(hn::Lanes(DU()));
  StoreCodes<kNibbles>(v0, out, c);
  StoreCodes<kNibbles>(v1, out, c + N);
  StoreCodes<kNibbles>(v2, out, c + 2 * N);
  StoreCodes<kNibbles>(v3, out, c + 3 * N);
#endif
}

// Codes of one row, one per byte or (kNibbles: bc and cols even) two per byte as QuantizeRow packs them.
template <bool kNibbles>
HWY_INLINE hn::Vec<DU> LoadCodes(const std::uint8_t* codes, std::int64_t c) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kNibbles) {
    // Lane j takes byte j / 2 (N / 2 bytes, widened and spread by one permutation), shifted right by 4 * (j % 2).
    const DU du;
    const hn::Half<DU> dh;
    const hn::Rebind<std::uint8_t, decltype(dh)> d8h;
    const auto bytes = hn::ZeroExtendVector(du, hn::PromoteTo(dh, hn::LoadU(d8h, codes + c / 2)));
    const auto lane = hn::Iota(du, 0);
    const auto spread = hn::TableLookupLanes(bytes, hn::IndicesFromVec(du, hn::ShiftRight<1>(lane)));
    return hn::And(hn::Shr(spread, hn::ShiftLeft<2>(hn::And(lane, hn::Set(du, 1u)))), hn::Set(du, 0xFu));
  }
#endif
  return hn::PromoteTo(DU(), hn::LoadU(D8(), codes + c));
}

}  // namespace HWY_NAMESPACE
}  // namespace mf::cpu
HWY_AFTER_NAMESPACE();

#endif  // include guard
