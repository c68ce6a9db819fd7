// minifloat/npy.h: NumPy .npy files (format versions 1.0, 2.0 and 3.0), C order, little-endian.
//
// The element types are the plain NumPy ones:
//   BOOL |b1  U8 |u1  I8 |i1  U16 <u2  I16 <i2  U32 <u4  I32 <i4  U64 <u8  I64 <i8  F16 <f2  F32 <f4  F64 <f8
// Anything else (big-endian, Fortran order, structured or ml_dtypes types) is an IoError that says which.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "minifloat/dtype.h"

namespace mf::io {

struct NpyArray {
  DType dtype;
  std::vector<std::uint64_t> shape;  // () for a scalar
  std::vector<std::byte> data;       // C order, little-endian, exactly shape x dtype bytes
};

// The .npy descr of a dtype ("<f4"), or nullopt where .npy has no plain type for it (F4, F6, F8, BF16).
std::optional<std::string_view> npy_descr(DType dtype);

// Reads a whole .npy file. Throws IoError (npy_bad_magic, npy_bad_version, npy_bad_header, npy_unsupported_dtype,
// npy_big_endian, npy_fortran_order, size_overflow, truncated, trailing_bytes, open_failed, read_failed).
NpyArray read_npy(const std::filesystem::path& path);

// Writes `data` (C order, little-endian, exactly shape x dtype bytes) as a .npy file with the header np.save writes
// (version 1.0, or 2.0 when the header needs it). All or nothing: a temporary file in the same directory is synced
// and renamed over `path`. Throws IoError (npy_unsupported_dtype, size_overflow, size_mismatch, write_failed).
void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::uint64_t> shape,
               std::span<const std::byte> data);

}  // namespace mf::io
