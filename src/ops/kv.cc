// KV-cache entries: the block quantizer per token, and where each token's codes and scales sit in a page.
#include "minifloat/kv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "enum_names.h"
#include "minifloat/bulk.h"
#include "minifloat/quantize.h"

namespace mf {
namespace {

constexpr std::array<std::string_view, 6> kNames{"fp4-e4m3-16", "mxfp8",      "v4-mixed",
                                                 "v4-nvfp4",    "mxfp6-e3m2", "mxfp6-e2m3"};

std::int64_t whole_tokens(std::span<const float> values) {
  if (values.size() % kKvValues != 0) {
    throw KvError("KV values: " + std::to_string(values.size()) + " floats are not whole tokens of " +
                  std::to_string(kKvValues) + " values");
  }
  return static_cast<std::int64_t>(values.size() / kKvValues);
}

// Byte offsets of one slot's data row and scale row in a buffer of pages `page_stride` bytes apart.
struct Place {
  std::int64_t data, scale;
};
Place place(const KvLayout& L, int page_size, std::int64_t page_stride, std::int64_t slot) {
  const std::int64_t base = (slot / page_size) * page_stride, i = slot % page_size;
  if (L.scale_footer) return {base + i * L.data_bytes, base + page_size * L.data_bytes + i * L.scale_bytes};
  return {base + i * L.entry_bytes(), base + i * L.entry_bytes() + L.data_bytes};
}

// The values the block scheme quantizes, as a [tokens, quantized_values] tensor (v4-mixed: without the RoPE dims).
std::vector<float> quantized_part(const KvLayout& L, std::span<const float> values, std::int64_t tokens) {
  std::vector<float> part(static_cast<std::size_t>(tokens * L.quantized_values));
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::copy_n(values.data() + t * kKvValues, L.quantized_values, part.data() + t * L.quantized_values);
  }
  return part;
}

// v4-mixed's RoPE dims of one token (the values past the quantized ones; none in the other formats) as the
// little-endian bf16 that follows its e4m3 codes: cast by the bulk codec (RNE, as a plain cast), and back.
void write_rope(const KvLayout& L, std::span<const float> token, std::uint8_t* dst) {
  const std::size_t n = static_cast<std::size_t>(kKvValues - L.quantized_values);
  if (n == 0) return;
  std::array<std::uint16_t, kKvRopeDims> bits{};
  encode_bulk(bf16, token.subspan(static_cast<std::size_t>(L.quantized_values)), std::span(bits).first(n));
  for (std::size_t i = 0; i < n; ++i) {
    dst[2 * i] = static_cast<std::uint8_t>(bits[i]);
    dst[2 * i + 1] = static_cast<std::uint8_t>(bits[i] >> 8);
  }
}
void read_rope(const KvLayout& L, const std::uint8_t* src, std::span<float> token) {
  const std::size_t n = static_cast<std::size_t>(kKvValues - L.quantized_values);
  if (n == 0) return;
  std::array<std::uint16_t, kKvRopeDims> bits{};
  for (std::size_t i = 0; i < n; ++i) bits[i] = static_cast<std::uint16_t>(src[2 * i] | src[2 * i + 1] << 8);
  decode_bulk(bf16, std::span<const std::uint16_t>(bits).first(n),
              token.subspan(static_cast<std::size_t>(L.quantized_values)));
}

// Quantizes `values` (tokens x 512) and writes token t to slots[t]; page_stride is the byte distance of pages.
void write_slots(KvFormat f, int page_size, std::int64_t page_stride, std::span<std::uint8_t> buffer,
                 std::span<const float> values, std::span<const std::int64_t> slots) {
  const KvLayout L = kv_layout(f);
  const std::int64_t tokens = static_cast<std::int64_t>(slots.size());
  if (tokens == 0) return;
  const std::vector<float> part = quantized_part(L, values, tokens);
  const std::vector<std::int64_t> shape{tokens, L.quantized_values};
  const QuantizedTensor q = quantize(part.data(), shape, kv_scheme(f));
  const std::int64_t code_bytes = static_cast<std::int64_t>(q.codes.size()) / tokens;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const Place p = place(L, page_size, page_stride, slots[static_cast<std::size_t>(t)]);
    std::uint8_t* data = buffer.data() + p.data;
    std::memcpy(data, q.codes.data() + t * code_bytes, static_cast<std::size_t>(code_bytes));
    write_rope(L, values.subspan(static_cast<std::size_t>(t * kKvValues), kKvValues), data + code_bytes);
    std::uint8_t* scale = buffer.data() + p.scale;
    std::memcpy(scale, q.scales.data() + t * L.scale_count, static_cast<std::size_t>(L.scale_count));
    std::fill(scale + L.scale_count, scale + L.scale_bytes, std::uint8_t{0});
  }
}

// Gathers the tokens at `slots` into one QuantizedTensor, dequantizes it, and adds the bf16 RoPE dims.
void read_slots(KvFormat f, int page_size, std::int64_t page_stride, std::span<const std::uint8_t> buffer,
                std::span<const std::int64_t> slots, std::span<float> out) {
  const KvLayout L = kv_layout(f);
  const std::int64_t tokens = static_cast<std::int64_t>(slots.size());
  if (tokens == 0) return;
  QuantizedTensor q;
  q.shape = {tokens, L.quantized_values};
  q.scheme = kv_scheme(f);
  q.scale_shape = {tokens, L.scale_count};
  const std::int64_t code_bytes = L.quantized_values * q.scheme.element.bits() / 8;
  q.codes.resize(static_cast<std::size_t>(tokens * code_bytes));
  q.scales.resize(static_cast<std::size_t>(tokens * L.scale_count));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const Place p = place(L, page_size, page_stride, slots[static_cast<std::size_t>(t)]);
    std::memcpy(q.codes.data() + t * code_bytes, buffer.data() + p.data, static_cast<std::size_t>(code_bytes));
    std::memcpy(q.scales.data() + t * L.scale_count, buffer.data() + p.scale, static_cast<std::size_t>(L.scale_count));
  }
  std::vector<float> part(static_cast<std::size_t>(tokens * L.quantized_values));
  dequantize(q, part.data());
  for (std::int64_t t = 0; t < tokens; ++t) {
    float* dst = out.data() + t * kKvValues;
    std::copy_n(part.data() + t * L.quantized_values, L.quantized_values, dst);
    const Place p = place(L, page_size, page_stride, slots[static_cast<std::size_t>(t)]);
    read_rope(L, buffer.data() + p.data + code_bytes, out.subspan(static_cast<std::size_t>(t * kKvValues), kKvValues));
  }
}

// Checks a paged buffer and slots; returns the page stride.
std::int64_t check_pages(KvFormat f, int page_size, std::size_t buffer_bytes, std::span<const std::int64_t> slots) {
  if (page_size < 1) throw KvError("KV page size must be at least 1, not " + std::to_string(page_size));
  const std::int64_t stride = kv_page_bytes(f, page_size);
  if (static_cast<std::int64_t>(buffer_bytes) % stride != 0) {
    throw KvError("KV buffer of " + std::to_string(buffer_bytes) + " bytes is not a whole number of " +
                  std::string(to_string(f)) + " pages of " + std::to_string(stride) + " bytes (page size " +
                  std::to_string(page_size) + ")");
  }
  const std::int64_t capacity = static_cast<std::int64_t>(buffer_bytes) / stride * page_size;
  for (const std::int64_t s : slots) {
    if (s < 0 || s >= capacity) {
      throw KvError("KV slot " + std::to_string(s) + " is outside the buffer's " + std::to_string(capacity) +
                    " slots (" + std::to_string(capacity / page_size) + " pages of " + std::to_string(page_size) + ")");
    }
  }
  return stride;
}

void check_values_for_slots(std::size_t values, std::size_t slots, std::string_view what) {
  if (values != slots * kKvValues) {
    throw KvError("KV " + std::string(what) + ": " + std::to_string(values) + " floats for " + std::to_string(slots) +
                  " slots; expected [" + std::to_string(slots) + ", " + std::to_string(kKvValues) +
                  "] = " + std::to_string(slots * kKvValues));
  }
}

}  // namespace

KvLayout kv_layout(KvFormat f) {
  switch (f) {
    case KvFormat::fp4_e4m3_16: return {512, 256, 32, 32, false, 1};
    case KvFormat::mxfp8: return {512, 512, 16, 16, false, 1};
    case KvFormat::v4_mixed: return {448, 448 + 2 * kKvRopeDims, 8, 7, true, 576};
    // 224 bytes of e2m1 + 128 of bf16 per data row; 28 ue4m3 scales + 4 zero bytes per scale row; pages unpadded.
    case KvFormat::v4_nvfp4: return {448, 448 / 2 + 2 * kKvRopeDims, 32, 28, true, 1};
    case KvFormat::mxfp6_e3m2:
    case KvFormat::mxfp6_e2m3: return {512, 512 * 6 / 8, 16, 16, false, 1};
  }
  throw KvError("unknown KV format");
}

KvFormat kv_format_named(std::string_view name) { return detail::enum_named<KvFormat>(kNames, name, "KV format"); }

std::string_view to_string(KvFormat f) { return kNames[static_cast<std::size_t>(f)]; }

std::vector<std::string> kv_format_names() { return {kNames.begin(), kNames.end()}; }

Scheme kv_scheme(KvFormat f) {
  switch (f) {
    case KvFormat::fp4_e4m3_16: return scheme_named("fp4-e4m3-16");
    case KvFormat::mxfp8: return with_profile(scheme_named("mxfp8"), Profile::deepseek);
    case KvFormat::v4_mixed: return with_profile(scheme_named("e4m3-1x64-ue8m0-rceil"), Profile::deepseek);
    case KvFormat::v4_nvfp4: return scheme_named("fp4-e4m3-16");
    case KvFormat::mxfp6_e3m2: return scheme_named("mxfp6-e3m2");
    case KvFormat::mxfp6_e2m3: return scheme_named("mxfp6-e2m3");
  }
  throw KvError("unknown KV format");
}

std::int64_t kv_page_bytes(KvFormat f, int page_size) {
  if (page_size < 1) throw KvError("KV page size must be at least 1, not " + std::to_string(page_size));
  const KvLayout L = kv_layout(f);
  const std::int64_t raw = std::int64_t{page_size} * L.entry_bytes();
  return (raw + L.page_align - 1) / L.page_align * L.page_align;
}

std::vector<std::uint8_t> kv_encode(KvFormat f, std::span<const float> values) {
  const std::int64_t tokens = whole_tokens(values);
  const int entry = kv_layout(f).entry_bytes();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(tokens * entry));
  std::vector<std::int64_t> slots(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) slots[static_cast<std::size_t>(t)] = t;
  write_slots(f, 1, entry, out, values, slots);  // one entry = a one-slot page without page padding
  return out;
}

std::vector<float> kv_decode(KvFormat f, std::span<const std::uint8_t> entries) {
  const int entry = kv_layout(f).entry_bytes();
  if (entries.size() % static_cast<std::size_t>(entry) != 0) {
    throw KvError("KV entries: " + std::to_string(entries.size()) + " bytes are not whole " +
                  std::string(to_string(f)) + " entries of " + std::to_string(entry) + " bytes");
  }
  const std::int64_t tokens = static_cast<std::int64_t>(entries.size()) / entry;
  std::vector<std::int64_t> slots(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) slots[static_cast<std::size_t>(t)] = t;
  std::vector<float> out(static_cast<std::size_t>(tokens * kKvValues));
  read_slots(f, 1, entry, entries, slots, out);
  return out;
}

void write_kv_pages(KvFormat f, int page_size, std::span<std::uint8_t> pages, std::span<const float> values,
                    std::span<const std::int64_t> slots) {
  const std::int64_t stride = check_pages(f, page_size, pages.size(), slots);
  check_values_for_slots(values.size(), slots.size(), "values");
  write_slots(f, page_size, stride, pages, values, slots);
}

void read_kv_pages(KvFormat f, int page_size, std::span<const std::uint8_t> pages, std::span<const std::int64_t> slots,
                   std::span<float> out) {
  const std::int64_t stride = check_pages(f, page_size, pages.size(), slots);
  check_values_for_slots(out.size(), slots.size(), "output");
  read_slots(f, page_size, stride, pages, slots, out);
}

KvCache::KvCache(KvFormat format, int page_size, std::int64_t pages)
    : format_(format), page_size_(page_size), pages_(pages) {
  if (pages < 0) throw KvError("KV cache: a negative page count (" + std::to_string(pages) + ")");
  buffer_.assign(static_cast<std::size_t>(pages * kv_page_bytes(format, page_size)), 0);
}

std::span<const std::uint8_t> KvCache::page(std::int64_t p) const {
  if (p < 0 || p >= pages_) {
    throw KvError("KV page " + std::to_string(p) + " is outside the cache's " + std::to_string(pages_) + " pages");
  }
  const std::int64_t stride = kv_page_bytes(format_, page_size_);
  return std::span<const std::uint8_t>(buffer_).subspan(static_cast<std::size_t>(p * stride),
                                                        static_cast<std::size_t>(stride));
}

std::vector<float> KvCache::read(std::span<const std::int64_t> slots) const {
  std::vector<float> out(slots.size() * kKvValues);
  read_kv_pages(format_, page_size_, buffer_, slots, out);
  return out;
}

KvReport kv_report(KvFormat f, std::span<const float> values) {
  KvReport r;
  r.format = f;
  r.tokens = whole_tokens(values);
  r.bytes_per_token = kv_layout(f).entry_bytes();
  r.compression = 2.0 * kKvValues / r.bytes_per_token;
  r.error = kv_error_stats(values, kv_decode(f, kv_encode(f, values)));
  return r;
}

ErrorStats kv_error_stats(std::span<const float> values, std::span<const float> back) {
  ErrorStats s;
  double err2 = 0, sig2 = 0, abs_err = 0, abs_x = 0, rel = 0;
  std::int64_t nonzero = 0, zeroed = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i], q = back[i];
    if (!std::isfinite(x)) {
      ++s.nonfinite;
      continue;
    }
    const double e = std::isfinite(q) ? std::fabs(x - q) : INFINITY;
    ++s.count;
    err2 += e * e;
    sig2 += x * x;
    abs_err += e;
    abs_x += std::fabs(x);
    if (x != 0) {
      ++nonzero;
      rel += e / std::fabs(x);
      s.max_rel_error = std::max(s.max_rel_error, e / std::fabs(x));
      if (q == 0) ++zeroed;
    }
  }
  if (s.count) {
    s.mse = err2 / static_cast<double>(s.count);
    s.sqnr_db = err2 == 0 ? INFINITY : 10 * std::log10(sig2 / err2);
    s.mean_abs_error_ratio = abs_x > 0 ? abs_err / abs_x : 0;
  }
  if (nonzero) {
    s.mean_rel_error = rel / static_cast<double>(nonzero);
    s.zeroed_fraction = static_cast<double>(zeroed) / static_cast<double>(nonzero);
  }
  return s;
}

}  // namespace mf
