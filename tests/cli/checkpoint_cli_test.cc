// The checkpoint commands run as a user would: make-example-checkpoint, convert (recipes, resume, job arrays and the
// merge step), dequantize, inspect, verify (one failure each) and memory; the results are checked by an independent
// Python reader (safetensors + numpy + ml_dtypes) that dequantizes the pairs itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../unit/io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_tensors.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using mf::io::testing::python_has;
using mf::io::testing::run_python;
using mf::io::testing::RunResult;
using mf::io::testing::str;
using mf::io::testing::TempDir;
using mf::io::testing::write_file;
using mf::test::run;

std::string slurp(const fs::path& p) { return mf::test::read_file(p.string()); }

// Reads OUT (converted by deepseek-v4), DEQ (OUT dequantized to f32) and IN (the bf16 example) with the safetensors
// package, decodes every pair by hand, and prints one line per problem.
constexpr const char* kCheck = R"PY(
import json, sys
import numpy as np, ml_dtypes
from safetensors import deserialize

src, out, deq, deq16 = sys.argv[1:5]
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)

def load(d):
    idx = json.load(open(f"{d}/model.safetensors.index.json"))
    tensors, size = {}, 0
    for shard in sorted(set(idx["weight_map"].values())):
        for name, t in deserialize(open(f"{d}/{shard}", "rb").read()):
            tensors[name] = t
            size += len(bytes(t["data"]))
            if idx["weight_map"][name] != shard:
                print(f"{name}: index says {idx['weight_map'][name]}, found in {shard}")
    if idx["metadata"]["total_size"] != size:
        print(f"{d}: total_size {idx['metadata']['total_size']} != {size}")
    return tensors

def decode(t):
    raw = np.frombuffer(bytes(t["data"]), dtype=np.uint8)
    dt, shape = t["dtype"], t["shape"]
    if dt == "F8_E4M3": v = raw.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    elif dt == "F8_E8M0": v = np.ldexp(np.float32(1), raw.astype(np.int32) - 127).astype(np.float32)
    elif dt == "F32": v = raw.view(np.float32)
    elif dt == "BF16": v = raw.view(ml_dtypes.bfloat16).astype(np.float32)
    elif dt == "F4": v = E2M1[np.stack([raw & 15, raw >> 4], axis=-1).reshape(-1)]
    else: raise ValueError(dt)
    return v.reshape(shape)

S, O, D, D16 = load(src), load(out), load(deq), load(deq16)
want = {"embed.weight": "BF16", "head.weight": "BF16", "layers.0.attn.wq_a.weight": "F8_E4M3",
        "layers.0.attn.wq_a.weight_scale_inv": "F8_E8M0", "layers.1.ffn.experts.3.w2.weight": "F4",
        "layers.1.ffn.shared_experts.w1.weight": "F8_E4M3", "layers.0.attn.compressor.wkv.weight": "F32",
        "layers.0.hc_attn_fn": "F32", "layers.0.attn_norm.weight": "BF16", "layers.0.ffn.gate.weight": "BF16",
        "layers.0.attn.indexer.weights_proj.weight": "BF16", "layers.0.attn.indexer.wq_b.weight": "F8_E4M3"}
for name, dt in want.items():
    if O.get(name, {}).get("dtype") != dt: print(f"{name}: dtype {O.get(name, {}).get('dtype')}, want {dt}")
pairs = 0
for name, t in O.items():
    if name.endswith("_scale_inv"): continue
    x = decode(S[name])
    if name + "_scale_inv" in O:
        w, s = decode(t), decode(O[name + "_scale_inv"])
        br, bc = (1, 32) if t["dtype"] == "F4" else (128, 128)
        ref = w * np.repeat(np.repeat(s, br, 0), bc, 1)[: w.shape[0], : w.shape[1]]
        pairs += 1
        got = decode(D[name])
        if D[name]["dtype"] != "F32" or not np.array_equal(got, ref):
            print(f"{name}: minifloat dequantize differs from w * scale")
        if not np.array_equal(decode(D16[name]), ref.astype(ml_dtypes.bfloat16).astype(np.float32)):
            print(f"{name}: minifloat dequantize --dtype bf16 differs from ml_dtypes' bfloat16 of w * scale")
        rel = np.sqrt(((ref - x) ** 2).sum() / (x ** 2).sum())
        if rel > (0.13 if t["dtype"] == "F4" else 0.05): print(f"{name}: relative error {rel}")
    elif not np.array_equal(decode(t), x) or not np.array_equal(decode(D[name]), decode(t)):
        print(f"{name}: not carried over exactly")
q = json.load(open(f"{out}/config.json"))["quantization_config"]
if q != {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
         "scale_fmt": "ue8m0", "expert_dtype": "fp4"}: print(f"quantization_config {q}")
if "quantization_config" in json.load(open(f"{deq}/config.json")): print("dequantized config keeps quantization_config")
print(f"pairs {pairs}")
)PY";

class CheckpointCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto r = run({"make-example-checkpoint", (dir_ / "src").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, str("wrote ", (dir_ / "src").string(),
                         ": 63 tensors in 2 shards, config.json (deepseek_v4, bfloat16)\n"));
  }
  mf::test::Result convert(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"convert", (dir_ / "src").string(), (dir_ / "out").string(), "--recipe",
                                  "deepseek-v4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  TempDir dir_;
};

TEST_F(CheckpointCli, ConvertDequantizeAgainstAnIndependentReader) {
  ASSERT_TRUE(python_has(dir_, "ml_dtypes", "ml_dtypes"));
  ASSERT_TRUE(python_has(dir_, "safetensors", "safetensors"));
  const auto c = convert();
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("layers.1.ffn.experts.3.w2.weight"), std::string::npos);
  EXPECT_NE(c.out.find("recipe deepseek-v4: 2 shards written, 0 kept from an earlier run"), std::string::npos);
  const auto d = run({"dequantize", (dir_ / "out").string(), (dir_ / "deq").string()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto d16 = run({"dequantize", (dir_ / "out").string(), (dir_ / "deq16").string(), "--dtype", "bf16"});
  ASSERT_EQ(d16.exit_code, 0) << d16.err;
  write_file(dir_ / "check.py", kCheck);
  const RunResult r =
      run_python(dir_ / "check.py", str("'", (dir_ / "src").string(), "' '", (dir_ / "out").string(), "' '",
                                        (dir_ / "deq").string(), "' '", (dir_ / "deq16").string(), "'"));
  ASSERT_EQ(r.status, 0) << r.output;
  // 2 layers x (wq_a, wq_b, wkv, wo_a, wo_b, indexer wq_b, 4 experts x 3, shared x 3) = 2 x 21 pairs.
  EXPECT_EQ(r.output, "pairs 42\n");
}

TEST_F(CheckpointCli, InspectAndVerifyTheConvertedCheckpoint) {
  ASSERT_EQ(convert().exit_code, 0);
  const auto i = run({"inspect", (dir_ / "out").string()});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("schemes (from tensor pairs): e2m1-1x32-ue8m0-rceil x 24, e4m3-128x128-ue8m0-rceil x 18"),
            std::string::npos)
      << i.out;
  EXPECT_NE(i.out.find("config.json: valid under deepseek rules; dtype bfloat16; fp8_attn=true fp8_mlp=true "
                       "mxfp8=false mxfp4=true"),
            std::string::npos)
      << i.out;
  const auto j = run({"inspect", "--json", "--stats", (dir_ / "out" / mf::io::shard_file_name(0, 2)).string()});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"role\": \"scale of layers.0.attn.wq_a.weight\""), std::string::npos);
  EXPECT_NE(j.out.find("\"rms\""), std::string::npos);
  // memory's prediction from config.json alone is the converted checkpoint's size to the byte.
  const auto m = run({"memory", "--config", (dir_ / "src" / "config.json").string(), "--recipe", "deepseek-v4"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("total: 153856 parameters"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("217.11 kB"), std::string::npos) << m.out;
  EXPECT_NE(i.out.find("153856 parameters, 217.11 kB"), std::string::npos) << i.out;
  const auto v = run({"verify", (dir_ / "out").string()});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out,
            "ok: 105 tensors, 42 quantized pairs, 0 FP4-QAT tensors checked; config.json valid under "
            "deepseek rules\n");
  // The same config under DeepInfer's rules fails with its own words.
  const auto di = run({"inspect", "--config-rules", "deepinfer", (dir_ / "out").string()});
  EXPECT_EQ(di.exit_code, 2);
  EXPECT_NE(di.err.find("Unsupported HF weight_block_size: [128, 128]; expected [32, 32]"), std::string::npos)
      << di.err;
}

// A directory in: OUT may not be IN, lie inside it or hold it, by real path; every message names OUT.
TEST_F(CheckpointCli, OutMayNotBeInNorInsideItNorHoldIt) {
  const std::string src = (dir_ / "src").string();
  fs::create_directory_symlink(dir_ / "src", dir_ / "link");
  const struct {
    std::string out, says;
  } cases[] = {{src, "OUT is the input checkpoint's directory"},
               {(dir_ / "link").string(), "OUT is the input checkpoint's directory"},
               {(dir_ / "src" / "sub").string(), "OUT lies inside the input checkpoint's directory"},
               {dir_.path().string(), "OUT holds the input checkpoint's directory"}};
  for (const auto& c : cases) {
    const auto r = run({"convert", src, c.out, "--recipe", "mxfp4"});
    EXPECT_EQ(r.exit_code, 2) << c.out;
    EXPECT_NE(r.err.find(str("minifloat: error: ", c.out, ": ", c.says)), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("error: :"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "src" / "sub"));
}

// One file in, one file out: fine in the same directory (and the input's config.json is left alone); refused only
// when OUT is the input file itself, by name, through a symbolic link or as a hard link.
TEST_F(CheckpointCli, OneFileInOneFileOutBesideIt) {
  ASSERT_EQ(convert().exit_code, 0);
  const fs::path out = dir_ / "out";
  fs::path shard;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() == ".safetensors") shard = e.path();
  }
  ASSERT_FALSE(shard.empty());
  const std::string config_before = slurp(out / "config.json");
  const auto d = run({"dequantize", shard.string(), (out / "dq.safetensors").string()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(fs::exists(out / "dq.safetensors"));
  EXPECT_EQ(slurp(out / "config.json"), config_before);
  // Relative names in the input's own directory, as a user types them.
  const fs::path cwd = fs::current_path();
  fs::current_path(out);
  const auto rel = run({"dequantize", shard.filename().string(), "dq2.safetensors"});
  fs::current_path(cwd);
  EXPECT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_TRUE(fs::exists(out / "dq2.safetensors"));

  fs::create_symlink(shard, dir_ / "alias.safetensors");
  fs::create_hard_link(shard, dir_ / "hard.safetensors");
  const std::string before = slurp(shard);
  for (const fs::path& target : {shard, dir_ / "alias.safetensors", dir_ / "hard.safetensors"}) {
    const auto r = run({"dequantize", shard.string(), target.string()});
    EXPECT_EQ(r.exit_code, 2) << target;
    EXPECT_NE(r.err.find(str("minifloat: error: ", target.string(), ": OUT is the input file ")), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(slurp(shard), before);
}

TEST_F(CheckpointCli, ResumeKeepsFinishedShardsAndRedoesTheRest) {
  ASSERT_EQ(convert().exit_code, 0);
  const fs::path one = dir_ / "out" / mf::io::shard_file_name(0, 2), two = dir_ / "out" / mf::io::shard_file_name(1, 2);
  const std::string first = slurp(one), second = slurp(two);
  fs::remove(two);
  write_file(dir_ / "out" / ".model-00002-of-00002.safetensors.tmp-99-0", "half a shard");  // a killed run's
  const auto r = convert({"--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 shard written, 1 kept from an earlier run"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(one), first);
  EXPECT_EQ(slurp(two), second);
  EXPECT_FALSE(fs::exists(dir_ / "out" / ".model-00002-of-00002.safetensors.tmp-99-0"));
}

TEST_F(CheckpointCli, JobArrayThenMergeEqualsOneRun) {
  ASSERT_EQ(convert().exit_code, 0);
  const std::string index = slurp(dir_ / "out" / mf::io::kIndexFileName);
  const std::string config = slurp(dir_ / "out" / "config.json");
  fs::rename(dir_ / "out", dir_ / "one");
  for (const char* job : {"1", "0"}) {
    const auto r = convert({"--shard-index", job, "--shard-count", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("1 shard written"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(str("job ", job, " of 2 done")), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir_ / "out" / mf::io::kIndexFileName));
  }
  const auto m = convert({"--merge"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(slurp(dir_ / "out" / mf::io::kIndexFileName), index);
  EXPECT_EQ(slurp(dir_ / "out" / "config.json"), config);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(slurp(dir_ / "out" / mf::io::shard_file_name(s, 2)), slurp(dir_ / "one" / mf::io::shard_file_name(s, 2)));
  }
  const auto bad = convert({"--shard-index", "2", "--shard-count", "2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "minifloat: error: --shard-index must be less than --shard-count\n");
}

// Jobs of an array run at the same time in one output directory: a job clears leftovers of its own shards only,
// never the temporary file another job is writing (found by minifloat.dask's test with 4 concurrent tasks).
TEST_F(CheckpointCli, AJobLeavesOtherJobsTemporaryFilesAlone) {
  fs::create_directories(dir_ / "out");
  const fs::path theirs = dir_ / "out" / ".model-00002-of-00002.safetensors.tmp-99-0";
  const fs::path mine = dir_ / "out" / ".model-00001-of-00002.safetensors.tmp-98-0";
  write_file(theirs, "job 1 is writing this");
  write_file(mine, "job 0 was killed while writing this");
  const auto r = convert({"--shard-index", "0", "--shard-count", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(theirs));
  EXPECT_FALSE(fs::exists(mine));
}

TEST_F(CheckpointCli, MergeBeforeEveryJobFinished) {
  ASSERT_EQ(convert({"--shard-index", "0", "--shard-count", "2"}).exit_code, 0);
  const auto m = convert({"--merge"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("model-00002-of-00002.safetensors: shard not written yet: run the remaining jobs"),
            std::string::npos)
      << m.err;
}

TEST_F(CheckpointCli, VerifyNamesTheTensorOfAnIndexMismatch) {
  const fs::path index = dir_ / "src" / mf::io::kIndexFileName;
  mf::io::CheckpointIndex i = mf::io::read_index(index);
  i.weight_map.erase("layers.1.attn.wkv.weight");
  mf::io::write_index(index, i);
  const auto v = run({"verify", (dir_ / "src").string()});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("tensor 'layers.1.attn.wkv.weight': is in this shard but not in the index"), std::string::npos)
      << v.err;
}

// A hand-made FP8 checkpoint whose experts are (or are not) FP4-QAT: e4m3 codes of e2m1 values times 2^k per block.
class VerifyQat : public ::testing::Test {
 protected:
  void write(std::uint8_t bad_code) {
    using namespace mf::io;
    std::vector<std::byte> w(2 * 64), s(1);
    // Row 0: 0.5, 1, 1.5, ... (e2m1 grid) times 2^-3; e4m3 codes of 0.0625 (0x18), 0.125 (0x20), 0.1875 (0x24)...
    const std::uint8_t grid[] = {0x00, 0x18, 0x20, 0x24,
                                 0x28, 0x2C, 0x30, 0x34};  // 0, .0625, .125, .1875, .25, .375, .5, .75
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::byte>(grid[i % 8] | (i % 3 == 0 ? 0x80 : 0));
    w[77] = static_cast<std::byte>(bad_code);
    s[0] = static_cast<std::byte>(127);
    const std::vector<std::uint64_t> ws{2, 64}, ss{1, 1};
    const std::vector<TensorView> t{{"layers.0.ffn.experts.0.w1.weight", DType::F8_E4M3, ws, w},
                                    {"layers.0.ffn.experts.0.w1.weight_scale_inv", DType::F8_E8M0, ss, s}};
    fs::create_directories(dir_ / "m");
    write_safetensors(dir_ / "m" / "model.safetensors", t);
  }
  TempDir dir_;
};

TEST_F(VerifyQat, Fp4ValuesTimesPowersOfTwoPass) {
  write(0x34);  // 0.75 = 6 x 2^-3: on the grid
  const auto v = run({"verify", "--fp4-qat", (dir_ / "m").string()});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out, "ok: 2 tensors, 1 quantized pairs, 1 FP4-QAT tensors checked; no config.json\n");
}

TEST_F(VerifyQat, OtherFp8ValuesFailWithDeepInfersMessage) {
  write(0x2A);  // 0.3125 = 2.5 x 2^-3: not an e2m1 value at this block's power of two
  const auto v = run({"verify", "--fp4-qat", (dir_ / "m").string()});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_EQ(v.err,
            "minifloat: error: verify failed at tensor 'layers.0.ffn.experts.0.w1.weight': Only support "
            "FP4-QAT checkpoint: tensor 'layers.0.ffn.experts.0.w1.weight' block at element 64 is not e2m1 "
            "values times one power of two\n");
  EXPECT_EQ(run({"verify", (dir_ / "m").string()}).exit_code, 0) << "without --fp4-qat or an FP4 config, no check";
}

TEST_F(VerifyQat, NanScaleIsNamed) {
  write(0x34);
  std::string bytes = slurp(dir_ / "m" / "model.safetensors");
  bytes.back() = static_cast<char>(0xFF);  // the ue8m0 scale: NaN
  write_file(dir_ / "m" / "model.safetensors", bytes);
  const auto v = run({"verify", (dir_ / "m").string()});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("tensor 'layers.0.ffn.experts.0.w1.weight_scale_inv': scale 0 is NaN"), std::string::npos)
      << v.err;
}

TEST_F(CheckpointCli, DequantizeAsAJobArrayThenMerge) {
  ASSERT_EQ(convert().exit_code, 0);
  const std::string q = (dir_ / "out").string();
  ASSERT_EQ(run({"dequantize", q, (dir_ / "one").string(), "--dtype", "bf16"}).exit_code, 0);
  for (const char* job : {"0", "1"}) {
    const auto r =
        run({"dequantize", q, (dir_ / "arr").string(), "--dtype", "bf16", "--shard-index", job, "--shard-count", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "arr" / mf::io::kIndexFileName));
  const auto m = run({"dequantize", q, (dir_ / "arr").string(), "--merge"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                        "model.safetensors.index.json", "config.json"}) {
    EXPECT_EQ(slurp(dir_ / "arr" / f), slurp(dir_ / "one" / f)) << f;
  }
  const auto again = run({"dequantize", q, (dir_ / "arr").string(), "--dtype", "bf16", "--resume"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(": 0 shards,"), std::string::npos) << again.out;
}

// DeepSeek-V3's published architecture: 671B parameters without the MTP module.
TEST(MemoryCli, DeepSeekV3Is671B) {
  TempDir dir;
  write_file(dir / "config.json", R"({"model_type": "deepseek_v3", "torch_dtype": "bfloat16", "vocab_size": 129280,
    "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1,
    "first_k_dense_replace": 3, "tie_word_embeddings": false})");
  const auto r = run({"memory", "--config", (dir / "config.json").string(), "--recipe", "fp8-block"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" parameters (671 B)"), std::string::npos) << r.out;
  const auto missing = run({"memory", "--config", (dir / "nope.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
}

}  // namespace

namespace {

// MXFP8 rows of 32 columns or fewer also fit DeepSeek's 1x128 grid; inspect labels them as the file's other pairs.
TEST_F(CheckpointCli, InspectLabelsShortMxfp8RowsAsMxfp8) {
  const auto c = run({"convert", (dir_ / "src").string(), (dir_ / "mx").string(), "--recipe", "mxfp8"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto i = run({"inspect", (dir_ / "mx").string()});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("schemes (from tensor pairs): e4m3-1x32-ue8m0-rceil x 50\n"), std::string::npos) << i.out;
  EXPECT_EQ(i.out.find("1x128"), std::string::npos) << i.out;
}

}  // namespace
