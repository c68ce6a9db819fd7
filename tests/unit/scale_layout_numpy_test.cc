// Scale layouts against numpy renderings of the projects' own reference code: DeepGEMM's torch fallback
// (get_mn_major_tma_aligned_packed_ue8m0_tensor_torch: pad to [align(mn, 4), align(k, 4)], view as int32, transpose to
// MN-major) and the to_blocked helper of PyTorch's scaled-mm tests (pad to 128x4 multiples, view
// (rb, 128, cb, 4), permute (0, 2, 1, 3), reshape (-1, 4, 32, 4), transpose (1, 2)). Those are array reshapes, not
// index formulas, so they check the byte-offset map of src/ops/scale_layout.cc from another direction.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/scale_layout.h"

namespace mf {
namespace {

using io::testing::python_has;
using io::testing::run_python;
using io::testing::str;
using io::testing::TempDir;
using io::testing::write_file;

constexpr const char* kScript = R"(import sys
import numpy as np

def deepgemm(c):
    mn, k = c.shape
    amn, ak = -(-mn // 4) * 4, -(-k // 4) * 4
    pad = np.zeros((amn, ak), np.uint8)
    pad[:mn, :k] = c
    return np.ascontiguousarray(pad.view('<i4').reshape(amn, ak // 4).T).tobytes()

def to_blocked(c):
    rows, cols = c.shape
    rb, cb = -(-rows // 128), -(-cols // 4)
    pad = np.zeros((rb * 128, cb * 4), np.uint8)
    pad[:rows, :cols] = c
    blocks = pad.reshape(rb, 128, cb, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(-1).tobytes()

def words(c, g):
    rows, cols = c.shape
    pad = np.zeros((rows, -(-cols // g) * g), np.uint8)
    pad[:, :cols] = c
    return pad.tobytes()

make = {'deepgemm': deepgemm, 'cublas-128x4': to_blocked,
        'nvidia-int32': lambda c: words(c, 4), 'ascend-int16': lambda c: words(c, 2)}
bad = 0
for line in open(sys.argv[1]):
    name, layout, batch, rows, cols = line.split()
    batch, rows, cols = int(batch), int(rows), int(cols)
    codes = np.fromfile(sys.argv[2] + '/' + name + '.codes', np.uint8).reshape(batch, rows, cols)
    want = b''.join(make[layout](c) for c in codes)
    got = open(sys.argv[2] + '/' + name + '.packed', 'rb').read()
    if want != got:
        bad += 1
        print('mismatch', name, layout, batch, rows, cols, len(want), len(got))
print('checked')
sys.exit(1 if bad else 0)
)";

TEST(ScaleLayoutNumpy, MatchesDeepGemmAndToBlocked) {
  TempDir dir;
  ASSERT_TRUE(python_has(dir, "numpy", "numpy"));
  const std::vector<std::vector<std::int64_t>> shapes{{130, 5}, {3, 7}, {2, 130, 9}, {257, 1}, {1536, 128}, {4, 1}};
  const std::vector<ScaleLayout> layouts{ScaleLayout::deepgemm, ScaleLayout::cublas_128x4, ScaleLayout::nvidia_int32,
                                         ScaleLayout::ascend_int16};
  std::mt19937 rng(5);
  std::string manifest;
  int n = 0;
  for (const auto& shape : shapes) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::string codes(static_cast<std::size_t>(count), '\0');
    for (auto& c : codes) c = static_cast<char>(1 + rng() % 255);
    const std::int64_t batch = shape.size() == 3 ? shape[0] : 1;
    for (const ScaleLayout layout : layouts) {
      const std::string name = str("case", n++);
      const PackedScales p =
          pack_scales({reinterpret_cast<const std::uint8_t*>(codes.data()), codes.size()}, shape, layout);
      write_file(dir / (name + ".codes"), codes);
      write_file(dir / (name + ".packed"),
                 std::string_view(reinterpret_cast<const char*>(p.data.data()), p.data.size()));
      manifest += str(name, " ", to_string(layout), " ", batch, " ", shape[shape.size() - 2], " ", shape.back(), "\n");
    }
  }
  write_file(dir / "manifest.txt", manifest);
  write_file(dir / "check.py", kScript);
  const auto r =
      run_python(dir / "check.py", str("'", (dir / "manifest.txt").string(), "' '", dir.path().string(), "'"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("checked"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace mf
