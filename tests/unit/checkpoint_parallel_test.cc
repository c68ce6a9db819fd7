// The checkpoint commands on a pool of workers: SafetensorsWriter's placed writes from several threads, the pool's
// failure rule (the error a sequential loop would have met), and convert / dequantize / verify / inspect --stats giving
// the same bytes, rows and errors with 1 worker as with many (more workers than cores, so the interleaving varies).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../src/checkpoint/parallel.h"  // private: the pool itself is under test here
#include "io_test_util.h"
#include "minifloat/checkpoint.h"
#include "minifloat/checkpoint_commands.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

// ---- SafetensorsWriter: placed writes ----

TEST(SafetensorsWriter, PlacedTensorsFromManyThreadsEqualWriteSafetensors) {
  TempDir dir;
  std::vector<Shape> shapes;
  std::vector<Bytes> data;
  std::vector<TensorView> views;
  std::vector<SafetensorsWriter::Spec> specs;
  for (std::size_t i = 0; i < 24; ++i) {
    shapes.push_back({i % 5, 3 + i});  // some empty tensors among them
    data.push_back(pattern_bytes(shapes[i][0] * shapes[i][1] * 2, static_cast<std::uint32_t>(i)));
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = str("t", i);
    specs.push_back({name, DType::BF16, shapes[i]});
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) views.push_back({specs[i].name, DType::BF16, shapes[i], data[i]});
  write_safetensors(dir / "whole.safetensors", views, {{"format", "pt"}});
  {
    SafetensorsWriter w(dir / "placed.safetensors", specs, {{"format", "pt"}});
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        // Last tensor first: the order in the file owes nothing to the order of the calls.
        for (std::size_t k; (k = next.fetch_add(1)) < specs.size();) {
          const std::size_t i = specs.size() - 1 - k;
          w.write_tensor(i, data[i]);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    w.commit();
  }
  EXPECT_EQ(read_file(dir / "placed.safetensors"), read_file(dir / "whole.safetensors"));
}

TEST(SafetensorsWriter, PlacedTensorsAreCheckedAgainstTheirSpecs) {
  TempDir dir;
  const Shape shape{2};
  const std::vector<SafetensorsWriter::Spec> specs{{"a", DType::F32, shape}, {"b", DType::F32, shape}};
  {
    SafetensorsWriter w(dir / "x.safetensors", specs);
    expect_io_error([&] { w.write_tensor(1, pattern_bytes(7, 1)); }, IoErrc::size_mismatch,
                    "tensor 'b': 7 bytes of data do not match shape [2] x F32 = 8 bytes");
    w.write_tensor(1, pattern_bytes(8, 1));
    EXPECT_THROW(w.write_tensor(1, pattern_bytes(8, 1)), std::invalid_argument) << "written twice";
    EXPECT_THROW(w.write_tensor(2, pattern_bytes(8, 1)), std::invalid_argument) << "no tensor 2";
    EXPECT_THROW(w.write(pattern_bytes(8, 1)), std::invalid_argument) << "streamed after placed";
    expect_io_error([&] { w.commit(); }, IoErrc::size_mismatch, "bytes were written");  // tensor 0 is missing
  }
  {
    SafetensorsWriter w(dir / "x.safetensors", specs);
    w.write(pattern_bytes(8, 1));
    EXPECT_THROW(w.write_tensor(1, pattern_bytes(8, 1)), std::invalid_argument) << "placed after streamed";
  }
  EXPECT_TRUE(dir.entries().empty()) << "no temporary file and no partial target";
}

// ---- the pool ----

// Job 300 fails late (after sleeping), job 500 fails at once: the error raised is job 300's every time, as in a
// sequential loop; every job before 300 ran; handing out stops once a failure is known (the jobs after 500 take a
// millisecond each, so they cannot all be handed out before job 500's failure is recorded, even on a busy machine).
TEST(CheckpointPool, RethrowsTheFirstFailureInOrderWhateverTheTiming) {
  for (int round = 0; round < 5; ++round) {
    std::vector<std::atomic<int>> ran(1000);
    std::size_t cursor = 0;
    try {
      detail::run_in_order(8, [&]() -> detail::Job {
        if (cursor == ran.size()) return {};
        const std::size_t i = cursor++;
        return [&ran, i] {
          ran[i] = 1;
          if (i == 300) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            throw std::runtime_error("job 300");
          }
          if (i == 500) throw std::runtime_error("job 500");
          if (i > 500) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        };
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "job 300");
    }
    for (std::size_t i = 0; i < 300; ++i) ASSERT_EQ(ran[i], 1) << i;
    EXPECT_LT(cursor, ran.size()) << "handing out stopped at the first failure";
  }
}

TEST(CheckpointPool, OneWorkerIsAPlainLoopOnTheCallersThread) {
  std::vector<std::thread::id> ids;
  int cursor = 0;
  detail::run_in_order(1, [&]() -> detail::Job {
    if (cursor == 5) return {};
    ++cursor;
    return [&] { ids.push_back(std::this_thread::get_id()); };
  });
  EXPECT_EQ(ids, std::vector<std::thread::id>(5, std::this_thread::get_id()));
  // Sequentially, nothing after the failed job is handed out.
  cursor = 0;
  EXPECT_THROW(detail::run_in_order(1,
                                    [&]() -> detail::Job {
                                      const int i = cursor++;
                                      return [i] {
                                        if (i == 3) throw std::runtime_error("job 3");
                                      };
                                    }),
               std::runtime_error);
  EXPECT_EQ(cursor, 4);
  // An error while planning (in `next`) is a failure at its own position too.
  EXPECT_THROW(detail::run_in_order(3, []() -> detail::Job { throw std::invalid_argument("plan"); }),
               std::invalid_argument);
}

// ---- convert and dequantize: the same bytes for any number of workers ----

std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename().string()] = read_file(e.path());
  return out;
}

struct Outcome {
  ConvertReport report;
  std::map<std::string, std::string> files;
  std::vector<std::uint64_t> progress;
  bool overlapped = false;  // two progress calls at once
};

template <class F>
Outcome run_with(int threads, const fs::path& out, F convert) {
  Outcome r;
  std::atomic<bool> inside{false};
  ConvertOptions o;
  o.threads = threads;
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    if (inside.exchange(true)) r.overlapped = true;
    r.progress.push_back(done);
    EXPECT_LE(done, total);
    std::this_thread::yield();  // widen the window a second caller would have to come in
    inside = false;
  };
  r.report = convert(out, o);
  r.files = files_of(out);
  return r;
}

void expect_same(const Outcome& a, const Outcome& b, const std::string& what) {
  ASSERT_EQ(a.files.size(), b.files.size()) << what;
  for (const auto& [name, bytes] : a.files) {
    ASSERT_TRUE(b.files.contains(name)) << what << ": " << name;
    EXPECT_TRUE(bytes == b.files.at(name)) << what << ": " << name << " differs";
  }
  ASSERT_EQ(a.report.tensors.size(), b.report.tensors.size()) << what;
  for (std::size_t i = 0; i < a.report.tensors.size(); ++i) {
    const TensorReport &x = a.report.tensors[i], &y = b.report.tensors[i];
    EXPECT_EQ(x.name, y.name) << what << " row " << i;
    EXPECT_EQ(x.target, y.target) << what << " row " << i;
    EXPECT_EQ(x.rmse, y.rmse) << what << " " << x.name;
    EXPECT_EQ(x.max_abs, y.max_abs) << what << " " << x.name;
  }
  EXPECT_EQ(a.report.input_bytes, b.report.input_bytes) << what;
  EXPECT_EQ(a.report.output_bytes, b.report.output_bytes) << what;
  EXPECT_EQ(a.report.shards_written, b.report.shards_written) << what;
  EXPECT_EQ(a.progress.size(), b.progress.size()) << what << ": one progress call per tensor and per shard";
  EXPECT_FALSE(b.overlapped) << what << ": progress calls overlapped";
  EXPECT_TRUE(std::is_sorted(b.progress.begin(), b.progress.end())) << what << ": progress went backwards";
  EXPECT_EQ(a.progress.back(), b.progress.back()) << what;
}

TEST(ConvertParallel, SameBytesRowsAndProgressForAnyThreadCount) {
  TempDir dir;
  ExampleSize size;
  size.hidden = 128;  // some tensors a few blocks of 128 wide
  write_example_checkpoint(dir / "in", 4, size);
  for (const char* recipe : {"deepseek-v4", "nvfp4"}) {
    const Recipe r = recipe_named(recipe);
    const auto convert = [&](const fs::path& out, const ConvertOptions& o) {
      return convert_checkpoint(dir / "in", out, r, o);
    };
    const Outcome one = run_with(1, dir / str(recipe, "-1"), convert);
    EXPECT_EQ(one.report.shards_written, 4u);
    EXPECT_FALSE(one.report.tensors.empty());
    for (const int threads : {2, 4, 7}) {
      expect_same(one, run_with(threads, dir / str(recipe, "-", threads), convert), str(recipe, " threads ", threads));
    }
    const auto dequantize = [&](const fs::path& out, const ConvertOptions& o) {
      return dequantize_checkpoint(dir / str(recipe, "-1"), out, true, o);
    };
    const Outcome back = run_with(1, dir / str(recipe, "-back-1"), dequantize);
    expect_same(back, run_with(5, dir / str(recipe, "-back-5"), dequantize), str(recipe, " dequantize"));
  }
}

// The rows still come in shard order then data order: the sequential order, which names every quantized tensor
// of shard 1 before any of shard 2.
TEST(ConvertParallel, RowsComeInShardThenDataOrder) {
  TempDir dir;
  write_example_checkpoint(dir / "in", 3);
  ConvertOptions o;
  o.threads = 6;
  const ConvertReport r = convert_checkpoint(dir / "in", dir / "out", recipe_named("deepseek-v4"), o);
  const Checkpoint c = open_checkpoint(dir / "in");
  std::vector<std::string> expected;
  const Recipe recipe = recipe_named("deepseek-v4");
  for (std::size_t s = 0; s < c.shards.size(); ++s) {
    const SafetensorsFile f = read_safetensors(c.shard_path(s));
    for (const SafetensorsTensor& t : f.tensors()) {
      if (t.shape.size() == 2 && target_scheme(recipe, recipe.target_for(t.name, 2, true))) expected.push_back(t.name);
    }
  }
  std::vector<std::string> got;
  for (const TensorReport& e : r.tensors) got.push_back(e.name);
  EXPECT_EQ(got, expected);
}

// ---- errors under parallel conversion ----

// Shard 3 of 4 holds a bf16 `w` beside a bf16 `w_scale_inv` that is no scale of it: quantizing `w` would write a
// second `w_scale_inv`, and copying it would pass a scale-named tensor off as a weight. The quantization rule
// (src/checkpoint/quantization_rule.h) refuses it before any shard is written, naming the tensor and the file, for 1
// worker as for 4. (A failure in a worker mid-run: AFailedCommitLeavesNoTemporaryFile below.)
class ConvertParallelError : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "in");
    CheckpointIndex index;
    index.total_size = 0;
    for (std::size_t s = 0; s < 4; ++s) {
      std::vector<TensorView> views;
      const std::string a = str("layers.", s, ".attn.wq.weight"), b = str("layers.", s, ".attn.wq.weight_scale_inv");
      views.push_back({a, DType::BF16, shape_, data_});
      if (s == 2) views.push_back({b, DType::BF16, tiny_, tiny_data_});
      write_safetensors(dir_ / "in" / shard_file_name(s, 4), views);
      for (const TensorView& v : views) {
        index.weight_map[std::string(v.name)] = shard_file_name(s, 4);
        *index.total_size += v.data.size();
      }
    }
    write_index(dir_ / "in" / kIndexFileName, index);
  }
  TempDir dir_;
  Shape shape_{256, 256}, tiny_{1, 2};
  Bytes data_ = bf16_bytes(256 * 256), tiny_data_ = bf16_bytes(2);

  static Bytes bf16_bytes(std::size_t n) {  // small normal values: 0x3c00 + a pattern in the low mantissa bits
    Bytes out(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      out[2 * i] = static_cast<std::byte>(i * 37 & 0x7f);
      out[2 * i + 1] = std::byte{0x3c};
    }
    return out;
  }
};

TEST_F(ConvertParallelError, RefusesAScaleNamedTensorBeforeWritingAnything) {
  for (const int threads : {1, 4}) {
    const fs::path out = dir_ / str("out", threads);
    ConvertOptions o;
    o.threads = threads;
    expect_io_error([&] { convert_checkpoint(dir_ / "in", out, recipe_named("deepseek-v4"), o); },
                    IoErrc::not_dequantizable,
                    str(shard_file_name(2, 4),
                        ": tensor 'layers.2.attn.wq.weight_scale_inv': BF16 [1, 2] looks "
                        "quantized (by its name)"));
    EXPECT_FALSE(fs::exists(out)) << threads << " threads";
  }
}

// A failure inside a worker (the rename of shard 2 fails: its name is taken by a directory) is rethrown as raised;
// that shard's temporary file is gone, and --resume afterwards finishes the job.
TEST_F(ConvertParallelError, AFailedCommitLeavesNoTemporaryFile) {
  fs::remove(dir_ / "in" / shard_file_name(2, 4));  // drop the bad shard: a checkpoint that converts
  {
    const std::array<TensorView, 1> v{{{"layers.2.attn.wq.weight", DType::BF16, shape_, data_}}};
    write_safetensors(dir_ / "in" / shard_file_name(2, 4), v);
    CheckpointIndex index = read_index(dir_ / "in" / kIndexFileName);
    index.weight_map.erase("layers.2.attn.wq.weight_scale_inv");
    *index.total_size -= tiny_data_.size();
    write_index(dir_ / "in" / kIndexFileName, index);
  }
  const fs::path out = dir_ / "out";
  fs::create_directories(out / shard_file_name(1, 4) / "occupied");
  ConvertOptions o;
  o.threads = 4;
  expect_io_error([&] { convert_checkpoint(dir_ / "in", out, recipe_named("deepseek-v4"), o); }, IoErrc::write_failed,
                  str(shard_file_name(1, 4), ": rename failed"));
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << "temporary file left: " << e.path();
  }
  fs::remove_all(out / shard_file_name(1, 4));
  o.resume = true;
  const ConvertReport r = convert_checkpoint(dir_ / "in", out, recipe_named("deepseek-v4"), o);
  EXPECT_EQ(r.shards_written + r.shards_skipped, 4u);
  EXPECT_GE(r.shards_written, 1u);
  EXPECT_NO_THROW(check_checkpoint(open_checkpoint(out)));
}

// ---- verify and inspect --stats ----

// NaN scales in shard 2 and shard 4: whatever the workers' timing, the error names shard 2's tensor, the first a
// sequential pass meets.
TEST(VerifyParallel, NamesTheFirstBadTensorInCheckpointOrder) {
  TempDir dir;
  const Shape w{4, 32}, s{1, 1};
  const Bytes codes(4 * 32, std::byte{0x38}), good{std::byte{127}}, nan{std::byte{0xFF}};
  CheckpointIndex index;
  index.total_size = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    std::vector<TensorView> views;
    const std::string a = str("layers.", k, ".w"), b = str("layers.", k, ".w_scale_inv");
    views.push_back({a, DType::F8_E4M3, w, codes});
    views.push_back({b, DType::F8_E8M0, s, (k == 1 || k == 3) ? nan : good});
    write_safetensors(dir / shard_file_name(k, 4), views);
    for (const TensorView& v : views) {
      index.weight_map[std::string(v.name)] = shard_file_name(k, 4);
      *index.total_size += v.data.size();
    }
  }
  write_index(dir / kIndexFileName, index);
  for (int round = 0; round < 10; ++round) {
    VerifyOptions o;
    o.threads = 1 + round % 5;
    try {
      verify_checkpoint(dir.path(), o);
      ADD_FAILURE() << "verify passed";
    } catch (const VerifyError& e) {
      EXPECT_EQ(e.tensor, "layers.1.w") << o.threads << " threads";
      EXPECT_STREQ(e.what(), "tensor 'layers.1.w_scale_inv': scale 0 is NaN (ue8m0 code 255)");
    }
  }
}

TEST(InspectParallel, StatsAreTheSameForAnyThreadCount) {
  TempDir dir;
  write_example_checkpoint(dir / "in", 3);
  convert_checkpoint(dir / "in", dir / "q", recipe_named("deepseek-v4"));
  for (const char* which : {"in", "q"}) {
    const InspectReport one = inspect_checkpoint(dir / which, true, ConfigRules::detect, 1);
    const InspectReport many = inspect_checkpoint(dir / which, true, ConfigRules::detect, 5);
    ASSERT_EQ(one.tensors.size(), many.tensors.size());
    std::size_t with_stats = 0;
    for (std::size_t i = 0; i < one.tensors.size(); ++i) {
      const TensorInfo &a = one.tensors[i], &b = many.tensors[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.shard, b.shard);
      EXPECT_EQ(a.role, b.role);
      EXPECT_EQ(a.min, b.min) << a.name;
      EXPECT_EQ(a.max, b.max) << a.name;
      EXPECT_EQ(a.mean, b.mean) << a.name;
      EXPECT_EQ(a.rms, b.rms) << a.name;
      with_stats += a.rms.has_value();
    }
    EXPECT_GT(with_stats, 40u) << which;
    EXPECT_EQ(one.params, many.params);
    EXPECT_EQ(one.scheme_summary, many.scheme_summary);
  }
}

}  // namespace
}  // namespace mf::io
