// minifloat/scale_layout.h: block-scale codes in the layouts GEMM kernels read (docs/spec.md#scale-layouts).
//
// quantize() writes one scale code per byte, row-major: [rows, cols] for a tensor of `rows` rows whose blocks run
// along the last dimension (cols = ceil(K / B)). GEMM libraries want the same codes rearranged; packing is lossless,
// unpacking gives the codes back, and the padding that a layout adds is always zero bytes.
//
//   row_major       [rows, cols] bytes, as quantize() writes them.
//   nvidia_int32    [rows, ceil(cols/4)] int32: code c of a row in bits 8*(c%4) of word c/4 (little-endian), the
//                   count padded to a multiple of 4 with 0x00 codes. DeepInfer's PLATFORM.fp8_sf_type on NVIDIA
//                   (torch.int32; docs/spec.md#scale-packing: [1536, 128] codes -> [1536, 32] int32).
//   ascend_int16    [rows, ceil(cols/2)] int16: code c in bits 8*(c%2) of halfword c/2 (DeepInfer on Ascend:
//                   [1536, 128] codes -> [1536, 64] int16).
//   deepgemm        DeepGEMM's MN-major, TMA-aligned, packed UE8M0 scales for SM100 (deep_gemm
//                   get_mn_major_tma_aligned_packed_ue8m0_tensor, csrc/jit_kernels/impls/smxx_layout.hpp): the
//                   nvidia_int32 words transposed so that MN is contiguous, MN padded to a multiple of 4 words (the
//                   16-byte TMA alignment, csrc/utils/math.hpp get_tma_aligned_size). Stored as
//                   [ceil(cols/4), align(rows, 4)] int32; torch sees it as [rows, ceil(cols/4)] with strides
//                   (1, align(rows, 4)).
//   cublas_128x4    cuBLAS's block-scaling factor layout (cuBLAS docs, "1D Block Scaling Factors Layout"; the same
//                   as torch's SWIZZLE_32_4_4 / to_blocked): the codes padded to [align(rows,128), align(cols,4)] and
//                   cut into 128x4 tiles, stored tile after tile with the column tiles of one row band consecutive
//                   (tile (i, j) at byte 512 * (i * ceil(cols/4) + j)); inside a tile, code (r, c) sits at byte
//                   (r % 32) * 16 + (r / 32) * 4 + c, i.e. 32 rows of 16 bytes. Stored as bytes of shape
//                   [align(rows, 128), align(cols, 4)] (the same count; the order is the tiled one).
//                   Any 1-byte scale (ue8m0 for MXFP8/MXFP4, ue4m3 for NVFP4) packs the same way.
//
// Leading dimensions beyond the last two are a batch: each batch member is packed on its own, one after another
// (DeepGEMM's and cuBLAS's grouped layouts); for nvidia_int32 and ascend_int16 that is the same as more rows.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mf {

enum class ScaleLayout : std::uint8_t { row_major, nvidia_int32, ascend_int16, deepgemm, cublas_128x4 };

// "row-major", "nvidia-int32", "ascend-int16", "deepgemm", "cublas-128x4"; the platform names "nvidia" and
// "ascend" also name their int layouts. scale_layout_named throws std::invalid_argument listing the known names.
ScaleLayout scale_layout_named(std::string_view name);
std::string_view to_string(ScaleLayout layout);
std::vector<std::string> scale_layout_names();

// Bytes per stored element: 1 (row_major, cublas_128x4), 2 (ascend_int16) or 4 (nvidia_int32, deepgemm).
int scale_layout_element_bytes(ScaleLayout layout);

// Scale codes that do not fit a layout: a packed tensor of the wrong shape or element size (scales packed for
// another platform: docs/spec.md#wrong-scale-dtype), or an unusable code shape. The message names both shapes.
struct ScaleLayoutError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The stored shape that `layout` gives to codes of shape `code_shape` (rank >= 1; rank 1 is one row).
std::vector<std::int64_t> packed_scale_shape(ScaleLayout layout, std::span<const std::int64_t> code_shape);

// Codes in a layout: `data` is little-endian, product(shape) * element_bytes long.
struct PackedScales {
  ScaleLayout layout = ScaleLayout::row_major;
  std::vector<std::int64_t> shape;  // as stored (packed_scale_shape)
  int element_bytes = 1;
  std::vector<std::uint8_t> data;
};

// Packs one-byte codes (count = product of code_shape, row-major). Throws ScaleLayoutError for a bad shape or size.
PackedScales pack_scales(std::span<const std::uint8_t> codes, std::span<const std::int64_t> code_shape,
                         ScaleLayout layout);

// Throws ScaleLayoutError unless a tensor of `packed_shape` with `element_bytes`-byte elements is what `layout`
// makes of codes of `code_shape`; the message names both shapes, and the layout the tensor fits if it fits another.
void check_packed_scales(ScaleLayout layout, std::span<const std::int64_t> code_shape,
                         std::span<const std::int64_t> packed_shape, int element_bytes);

// The codes of shape `code_shape` back out of `packed` (checked first with check_packed_scales); padding is ignored.
std::vector<std::uint8_t> unpack_scales(const PackedScales& packed, std::span<const std::int64_t> code_shape);

}  // namespace mf
