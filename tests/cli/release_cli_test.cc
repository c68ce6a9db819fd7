// Every checkpoint command on every published release in miniature (make-example-checkpoint --like): inspect names
// the family, verify passes, dequantize (f32 and bf16) equals an independent Python reader that applies each
// release's published formula itself (safetensors + numpy + ml_dtypes: code x scale per block of the scale grid, the
// partial edge tiles cropped, BF16 / F16 scales widened, DeepSeek's FP4 table for its I8 experts), and convert
// --recipe fp8-block / mxfp4 writes a checkpoint that verify passes and dequantize reads; memory reads its config.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>

#include "../unit/io_test_util.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using mf::io::testing::python_has;
using mf::io::testing::run_python;
using mf::io::testing::RunResult;
using mf::io::testing::str;
using mf::io::testing::write_file;
using mf::test::run;

// IN (the miniature) and DEQ / DEQ16 (minifloat dequantize --dtype f32 / bf16 of it): every pair of IN decoded here,
// by the formula its release publishes, and compared bit for bit; every other float tensor carried over. One line
// per problem; "pairs N" at the end.
constexpr const char* kReference = R"PY(
import json, sys
import numpy as np, ml_dtypes
from safetensors import deserialize

src, deq, deq16 = sys.argv[1:4]
# DeepSeek's inference/convert.py FP4_TABLE: code 8 is +0 there; minifloat (as OCP and transformers) gives -0.
FP4_TABLE = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                     dtype=np.float32)

def load(d):
    idx = json.load(open(f"{d}/model.safetensors.index.json"))
    out = {}
    for shard in sorted(set(idx["weight_map"].values())):
        for name, t in deserialize(open(f"{d}/{shard}", "rb").read()):
            out[name] = t
    return out

def raw(t):
    return np.frombuffer(bytes(t["data"]), dtype=np.uint8)

def floats(t):
    r, dt = raw(t), t["dtype"]
    if dt == "F32": v = r.view(np.float32)
    elif dt == "BF16": v = r.view(ml_dtypes.bfloat16).astype(np.float32)
    elif dt == "F16": v = r.view(np.float16).astype(np.float32)
    elif dt == "F8_E4M3": v = r.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    elif dt == "F8_E8M0": v = np.ldexp(np.float32(1), r.astype(np.int32) - 127).astype(np.float32)
    else: raise ValueError(dt)
    return v.reshape(t["shape"])

IN, DEQ, DEQ16 = load(src), load(deq), load(deq16)
config = json.load(open(f"{src}/config.json"))
q = config.get("quantization_config") or config.get("text_config", {}).get("quantization_config", {})
# The block is the one the release publishes (config.json's weight_block_size; 1 x 32 for FP4 experts and V4.1's
# engram tables), never read off the grid: ceil(160 / 128) = 2 scale rows over 160 rows is a block of 128, not 80.
blocks = [tuple(q["weight_block_size"])] if q.get("weight_block_size") else []
blocks.append((1, 32))
pairs, parts = 0, set()
for name, t in IN.items():
    if not name.endswith(".weight"):
        continue
    module = name[:-len(".weight")]
    scale = IN.get(name + "_scale_inv") or (IN.get(module + ".scale") if t["dtype"] in ("F8_E4M3", "I8") else None)
    if scale is None:
        continue
    pairs += 1
    parts |= {name + "_scale_inv", module + ".scale", module + ".activation_scale"}
    if t["dtype"] == "I8":  # two e2m1 codes a byte, the low nibble first
        r = raw(t).reshape(t["shape"])
        codes = np.stack([r & 15, r >> 4], axis=-1).reshape(r.shape[0], -1)
        w, minus_zero = FP4_TABLE[codes], codes == 8
    else:
        w, minus_zero = floats(t), None
    s = floats(scale)
    R, C = w.shape
    if s.size == 1:  # one scale for the tensor
        grid = np.broadcast_to(s.reshape(1, 1), (R, C))
    else:  # one scale per block of the grid, the partial edge tiles cropped
        fits = [(br, bc) for br, bc in blocks if (-(-R // br), -(-C // bc)) == s.shape]
        if not fits:
            print(f"{name}: scale grid {s.shape} is no grid of {blocks} over {(R, C)}")
            continue
        br, bc = fits[0]
        grid = np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[:R, :C]
    want = (w * grid).astype(np.float32)
    got = floats(DEQ[name])
    same = want.view(np.uint32) == got.view(np.uint32)
    if minus_zero is not None:
        same |= minus_zero & (got == 0) & np.signbit(got)  # -0 for code 8, where DeepSeek's table has +0
    if not same.all():
        i = np.argwhere(~same)[0]
        print(f"{name}: {int((~same).sum())} values differ; first at {tuple(i)}: want {want[tuple(i)]!r}, "
              f"got {got[tuple(i)]!r}")
    w16 = want.astype(ml_dtypes.bfloat16).view(np.uint16)
    g16 = raw(DEQ16[name]).view(np.uint16).reshape(want.shape)
    same16 = (w16 == g16) | ((minus_zero if minus_zero is not None else False) & (g16 == 0x8000))
    if not same16.all():
        print(f"{name}: bf16 differs at {int((~same16).sum())} values")
    for part in (name + "_scale_inv", module + ".scale", module + ".activation_scale"):
        if part in DEQ:
            print(f"{part}: a scale is left in the dequantized checkpoint")
for name, t in IN.items():
    if name in parts:
        continue
    if t["dtype"] in ("F32", "BF16") and name not in DEQ:
        print(f"{name}: missing from the dequantized checkpoint")
    elif t["dtype"] in ("F32", "BF16") and not (floats(DEQ[name]) == floats(t)).all():
        print(f"{name}: changed by dequantize")
print("pairs", pairs)
)PY";

struct Like {
  const char* name;
  const char* family;
  int pairs;
  // The numpy reader above knows the release's formula (code x block scale). The integer-word and compressed-tensors
  // releases are read by their libraries instead, in python/tests/test_int_releases.py.
  bool formula = true;
};

class ReleaseCli : public mf::test::CliDirTest, public ::testing::WithParamInterface<Like> {
 protected:
  ReleaseCli() : CliDirTest("mf_release_cli_") {}
};

TEST_P(ReleaseCli, EveryCommandOnTheMiniature) {
  const Like like = GetParam();
  const std::string in = path("in");
  ASSERT_EQ(run({"make-example-checkpoint", in, "--like", like.name}).exit_code, 0);

  const mf::test::Result inspect = run({"inspect", in});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find(str("family: ", like.family)), std::string::npos) << inspect.out;
  const mf::test::Result verify = run({"verify", in});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find(str(like.pairs, " quantized pairs")), std::string::npos) << verify.out;

  ASSERT_EQ(run({"dequantize", in, path("deq"), "--dtype", "f32"}).exit_code, 0);
  ASSERT_EQ(run({"dequantize", in, path("deq16"), "--dtype", "bf16"}).exit_code, 0);
  if (std::string(like.name) != "deepseek-v4.1") {  // memory does not read a model nested under text_config (yet)
    const mf::test::Result memory = run({"memory", "--config", in + "/config.json", "--recipe", "fp8-block"});
    EXPECT_EQ(memory.exit_code, 0) << memory.err;
  }
  if (like.formula) {
    mf::io::testing::TempDir scratch;
    ASSERT_TRUE(python_has(scratch, "ml_dtypes", "ml_dtypes"));
    write_file(scratch / "reference.py", kReference);
    const RunResult r = run_python(scratch / "reference.py", str(in, " ", path("deq"), " ", path("deq16")));
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, str("pairs ", like.pairs, "\n"));
  }
  const mf::test::Result deq_verify = run({"verify", path("deq")});
  EXPECT_EQ(deq_verify.exit_code, 0) << deq_verify.err;

  for (const char* recipe : {"fp8-block", "mxfp4"}) {
    const std::string out = path(str("out-", recipe));
    const mf::test::Result c = run({"convert", in, out, "--recipe", recipe});
    ASSERT_EQ(c.exit_code, 0) << recipe << ": " << c.err;
    const mf::test::Result v = run({"verify", out});
    EXPECT_EQ(v.exit_code, 0) << recipe << ": " << v.err;
    const mf::test::Result i = run({"inspect", out});
    EXPECT_EQ(i.exit_code, 0) << recipe << ": " << i.err;
    EXPECT_EQ(run({"dequantize", out, path(str("deq-", recipe))}).exit_code, 0) << recipe;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Releases, ReleaseCli,
    ::testing::Values(Like{"deepseek-v4-release", "DeepSeek-V4 as released (X.weight + X.scale)", 63},
                      Like{"deepseek-v4.1", "DeepSeek-V4.1 as released (X.weight + X.scale)", 64},
                      Like{"deepseek-v3", "DeepSeek-V3 / R1 / V3.1 FP8", 49},
                      Like{"qwen-fp8", "Qwen FP8 release (W + W_scale_inv with BF16 block scales) x 32", 32},
                      Like{"fp8-per-tensor", "transformers FineGrainedFP8 per tensor", 14},
                      Like{"autoawq", "AutoAWQ (qweight + qzeros + scales) x 14", 14, false},
                      Like{"gptq", "AutoGPTQ (qweight + qzeros + scales) x 14", 14, false},
                      Like{"gptq-v2", "AutoGPTQ (qweight + qzeros + scales) x 14", 14, false},
                      Like{"compressed-tensors-w4a16", "compressed-tensors pack-quantized x 14", 14, false},
                      Like{"compressed-tensors-w4a16-asym", "compressed-tensors pack-quantized x 14", 14, false},
                      Like{"kimi-k2-thinking", "compressed-tensors pack-quantized x 12", 12, false},
                      Like{"compressed-tensors-mixed-nvfp4",
                           "compressed-tensors mixed-precision, float-quantized, nvfp4-pack-quantized x 15", 15,
                           false}),
    [](const ::testing::TestParamInfo<Like>& info) {
      std::string n = info.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

}  // namespace
