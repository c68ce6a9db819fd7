#include "minifloat/npy.h"

#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "file.h"

namespace mf::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlign = 64;         // np.save aligns the data to 64 bytes
constexpr std::size_t kGrowthDigits = 21;  // np.save leaves room for the first dim to grow to 21 digits

constexpr std::array<std::pair<DType, std::string_view>, 12> kDescrs{{{DType::BOOL, "|b1"},
                                                                      {DType::U8, "|u1"},
                                                                      {DType::I8, "|i1"},
                                                                      {DType::U16, "<u2"},
                                                                      {DType::I16, "<i2"},
                                                                      {DType::U32, "<u4"},
                                                                      {DType::I32, "<i4"},
                                                                      {DType::U64, "<u8"},
                                                                      {DType::I64, "<i8"},
                                                                      {DType::F16, "<f2"},
                                                                      {DType::F32, "<f4"},
                                                                      {DType::F64, "<f8"}}};

std::optional<DType> dtype_of_descr(std::string_view descr) {
  for (const auto& [dtype, d] : kDescrs) {
    if (d == descr) return dtype;
  }
  return std::nullopt;
}

std::string in_quotes(std::string_view s) { return detail::cat("'", s, "'"); }

// The header is a Python dict literal, e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }".
// Grammar (whitespace allowed between tokens, a trailing comma allowed in the dict and in tuples):
//   dict  := '{' key ':' value (',' key ':' value)* '}'      keys: exactly descr, fortran_order, shape
//   value := string | True | False | '(' ')' | '(' int ',' ')' | '(' int (',' int)+ ')'
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& file) : text_(text), file_(file) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (!accept('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !std::exchange(seen_descr, true)) {
        h.descr = string_literal();
      } else if (key == "fortran_order" && !std::exchange(seen_order, true)) {
        h.fortran_order = boolean();
      } else if (key == "shape" && !std::exchange(seen_shape, true)) {
        h.shape = shape();
      } else {
        fail(detail::cat("unexpected or repeated key ", in_quotes(key)));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("text after the closing '}'");
    if (!seen_descr || !seen_order || !seen_shape) fail("needs the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw IoError(IoErrc::npy_bad_header, file_, detail::cat("header at offset ", pos_, ": ", why));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool accept_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // 'text' or "text", without escapes (no key or descr needs them).
  std::string string_literal() {
    skip_space();
    const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    if (s.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return s;
  }

  bool boolean() {
    if (accept_word("True")) return true;
    if (accept_word("False")) return false;
    fail("expected True or False");
  }

  std::uint64_t integer() {
    skip_space();
    const std::size_t start = pos_;
    std::uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fail("dimension does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer");
    return value;
  }

  // A tuple of ints; "(3)" is the int 3 in Python, not a tuple, so one element needs its comma.
  std::vector<std::uint64_t> shape() {
    std::vector<std::uint64_t> dims;
    expect('(');
    if (accept(')')) return dims;
    dims.push_back(integer());
    expect(',');
    while (!accept(')')) {
      dims.push_back(integer());
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view text_;
  const std::filesystem::path& file_;
  std::size_t pos_ = 0;
};

DType checked_dtype(const NpyHeader& h, const std::filesystem::path& file) {
  if (const std::optional<DType> dtype = dtype_of_descr(h.descr)) return *dtype;
  if (!h.descr.empty() && h.descr[0] == '>' && dtype_of_descr(detail::cat("<", h.descr.substr(1)))) {
    throw IoError(IoErrc::npy_big_endian, file,
                  detail::cat("big-endian descr ", in_quotes(h.descr), " is not supported"));
  }
  throw IoError(IoErrc::npy_unsupported_dtype, file, detail::cat("unsupported descr ", in_quotes(h.descr)));
}

std::uint64_t little_endian(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) value = value << 8 | static_cast<std::uint64_t>(bytes[i]);
  return value;
}

// Magic, version and header length; returns the header's text and leaves `offset` at its end.
std::string read_header_text(const detail::InputFile& in, std::uint64_t& offset) {
  const std::vector<std::byte> magic = in.read(0, kMagic.size(), "magic string");
  if (std::memcmp(magic.data(), kMagic.data(), kMagic.size()) != 0) {
    throw IoError(IoErrc::npy_bad_magic, in.path(), "not a .npy file (no \\x93NUMPY magic string)");
  }
  const std::vector<std::byte> version = in.read(kMagic.size(), 2, "version");
  const auto major = static_cast<int>(version[0]), minor = static_cast<int>(version[1]);
  if (minor != 0 || major < 1 || major > 3) {
    throw IoError(IoErrc::npy_bad_version, in.path(),
                  detail::cat("format version ", major, ".", minor, " is not 1.0, 2.0 or 3.0"));
  }
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::uint64_t header_len = little_endian(in.read(kMagic.size() + 2, length_bytes, "header length"));
  offset = kMagic.size() + 2 + length_bytes;
  const std::vector<std::byte> header = in.read(offset, header_len, "header");
  offset += header_len;
  return std::string(reinterpret_cast<const char*>(header.data()), header.size());
}

}  // namespace

std::optional<std::string_view> npy_descr(DType dtype) {
  for (const auto& [t, descr] : kDescrs) {
    if (t == dtype) return descr;
  }
  return std::nullopt;
}

NpyArray read_npy(const std::filesystem::path& path) {
  const detail::InputFile in(path);
  std::uint64_t offset = 0;
  const NpyHeader header = HeaderParser(read_header_text(in, offset), path).parse();
  if (header.fortran_order) {
    throw IoError(IoErrc::npy_fortran_order, path, "fortran_order is True; only C order is supported");
  }
  NpyArray array{checked_dtype(header, path), header.shape, {}};
  const TensorSize size = tensor_size(array.dtype, array.shape);
  if (size.error) throw IoError(IoErrc::size_overflow, path, "shape x element size overflows 64 bits");
  in.require(offset, size.bytes, "data");
  if (in.size() - offset != size.bytes) {
    throw IoError(IoErrc::trailing_bytes, path,
                  detail::cat(in.size() - offset - size.bytes, " bytes after the ", size.bytes, " bytes of data"));
  }
  array.data = in.read(offset, size.bytes, "data");
  return array;
}

namespace {

// np.save's header, byte for byte: sorted keys, repr() values, room for the first dim to grow, spaces and a newline
// so that the data starts on a 64-byte boundary.
std::string npy_header(std::string_view descr, std::span<const std::uint64_t> shape) {
  std::string dict = detail::cat("{'descr': ", in_quotes(descr), ", 'fortran_order': False, 'shape': (");
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += detail::cat(i == 0 ? "" : ", ", shape[i]);
  }
  dict += shape.size() == 1 ? ",), }" : "), }";
  if (!shape.empty()) dict.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');

  for (const int major : {1, 2}) {
    const std::size_t prefix = kMagic.size() + 2 + (major == 1 ? 2 : 4);
    const std::size_t unpadded = dict.size() + 1;  // + the final newline
    const std::size_t header_len = unpadded + kAlign - (prefix + unpadded) % kAlign;
    if (major == 1 && header_len > std::numeric_limits<std::uint16_t>::max()) continue;
    std::string out(kMagic);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < prefix - kMagic.size() - 2; ++i) out += static_cast<char>(header_len >> (8 * i) & 0xff);
    out += dict;
    out.append(header_len - unpadded, ' ');
    out += '\n';
    return out;
  }
  return {};  // not reached: version 2.0 takes any header up to 4 GiB
}

}  // namespace

void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::uint64_t> shape,
               std::span<const std::byte> data) {
  const std::optional<std::string_view> descr = npy_descr(dtype);
  if (!descr) {
    throw IoError(IoErrc::npy_unsupported_dtype, path,
                  detail::cat("dtype ", dtype_name(dtype), " has no plain .npy type"));
  }
  const TensorSize size = tensor_size(dtype, shape);
  if (size.error) throw IoError(IoErrc::size_overflow, path, "shape x element size overflows 64 bits");
  if (size.bytes != data.size()) {
    throw IoError(IoErrc::size_mismatch, path,
                  detail::cat(data.size(), " bytes of data, but the shape needs ", size.bytes));
  }
  const std::string header = npy_header(*descr, shape);
  const std::array<std::span<const std::byte>, 2> pieces{std::as_bytes(std::span(header)), data};
  detail::write_atomically(path, pieces);
}

}  // namespace mf::io
