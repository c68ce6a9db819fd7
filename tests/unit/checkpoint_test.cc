// Sharded checkpoints: the index file (golden bytes, one test per error), opening a file / an index / a directory,
// the index checked against its shards, and the memory mapping behind SafetensorsFile.
#include "minifloat/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io_test_util.h"
#include "minifloat/checkpoint_commands.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;
using Shape = std::vector<std::uint64_t>;

// ---- the memory mapping ----

TEST(SafetensorsMapping, ViewsOutliveTheFirstCopyAndMatchParsedBytes) {
  TempDir dir;
  const Shape shape{2, 2};
  const Bytes data = pattern_bytes(8, 3);
  const std::array<TensorView, 1> t{{{"w", DType::BF16, shape, data}}};
  write_safetensors(dir / "a.safetensors", t);
  std::span<const std::byte> bytes;
  SafetensorsFile copy;
  {
    const SafetensorsFile f = read_safetensors(dir / "a.safetensors");
    EXPECT_EQ(f.header_size() + f.data_size(), fs::file_size(dir / "a.safetensors"));
    EXPECT_EQ(f.data_size(), 8u);
    copy = f;
    bytes = f.bytes(f.tensors()[0]);
  }
  EXPECT_EQ(Bytes(bytes.begin(), bytes.end()), data) << "the copy keeps the mapping alive";
  EXPECT_EQ(copy.bytes(copy.tensors()[0]).data(), bytes.data()) << "copies share one mapping, no bytes copied";

  const std::string raw = read_file(dir / "a.safetensors");
  const SafetensorsFile parsed = parse_safetensors(std::as_bytes(std::span(raw)), "mem");
  EXPECT_EQ(to_string(parsed.bytes(parsed.tensors()[0])), to_string(data));
  expect_io_error([&] { parse_safetensors(std::as_bytes(std::span(raw).first(raw.size() - 1)), "mem"); },
                  IoErrc::offsets_out_of_range, "mem: tensor 'w': data_offsets [0, 8] run past the 7-byte data");
}

// release() drops resident pages of a mapped tensor; reading it again reads the file again, the same bytes.
TEST(SafetensorsMapping, ReleasedTensorsReadTheSameAgain) {
  TempDir dir;
  const Shape shape{3, 4096};
  const Bytes data = pattern_bytes(3 * 4096 * 4, 9);
  const std::array<TensorView, 1> t{{{"w", DType::F32, shape, data}}};
  write_safetensors(dir / "big.safetensors", t);
  const SafetensorsFile f = read_safetensors(dir / "big.safetensors");
  EXPECT_EQ(to_string(f.bytes(f.tensors()[0])), to_string(data));
  f.release(f.tensors()[0]);
  EXPECT_EQ(to_string(f.bytes(f.tensors()[0])), to_string(data));
  const std::string raw = read_file(dir / "big.safetensors");
  const SafetensorsFile copy = parse_safetensors(std::as_bytes(std::span(raw)), "mem");
  copy.release(copy.tensors()[0]);  // heap bytes: untouched
  EXPECT_EQ(to_string(copy.bytes(copy.tensors()[0])), to_string(data));
}

TEST(SafetensorsMapping, EmptyFileIsTruncatedNotAMappingError) {
  TempDir dir;
  write_file(dir / "e.safetensors", "");
  expect_io_error([&] { read_safetensors(dir / "e.safetensors"); }, IoErrc::truncated, "file is 0 bytes");
}

// ---- the index ----

// Typed by hand: two-space indent, sorted keys, total_size after other metadata keys (sorted), a final newline.
TEST(Index, WritesGoldenText) {
  TempDir dir;
  CheckpointIndex index;
  index.total_size = 96;
  index.other_metadata["format"] = "\"pt\"";
  index.weight_map = {{"b", "model-00002-of-00002.safetensors"}, {"a", "model-00001-of-00002.safetensors"}};
  write_index(dir / "i.json", index);
  EXPECT_EQ(
      read_file(dir / "i.json"),
      "{\n  \"metadata\": {\n    \"format\": \"pt\",\n    \"total_size\": 96\n  },\n  \"weight_map\": {\n"
      "    \"a\": \"model-00001-of-00002.safetensors\",\n    \"b\": \"model-00002-of-00002.safetensors\"\n  }\n}\n");
  const CheckpointIndex back = read_index(dir / "i.json");
  EXPECT_EQ(back.total_size, 96u);
  EXPECT_EQ(back.weight_map, index.weight_map);
  EXPECT_EQ(back.other_metadata, index.other_metadata);
  EXPECT_EQ(back.shards(),
            (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(shard_file_name(0, 64), "model-00001-of-00064.safetensors");
  EXPECT_EQ(shard_file_name(163, 163), "model-00164-of-00163.safetensors");
}

TEST(Index, ReadsHuggingFaceStyle) {
  // As written by transformers (float total_size from some exporters), no metadata at all is fine too.
  const CheckpointIndex a = parse_index(R"({"metadata":{"total_size":1.5e9},"weight_map":{"x":"m.safetensors"}})", "i");
  EXPECT_EQ(a.total_size, 1'500'000'000u);
  const CheckpointIndex b = parse_index(R"({"weight_map":{}})", "i");
  EXPECT_FALSE(b.total_size.has_value());
  EXPECT_TRUE(b.weight_map.empty());
}

struct BadIndex {
  std::string name, json;
  IoErrc code;
  std::string message;
};
void PrintTo(const BadIndex& b, std::ostream* os) { *os << b.name; }

class IndexError : public ::testing::TestWithParam<BadIndex> {};

TEST_P(IndexError, IsRejectedWithItsNamedError) {
  TempDir dir;
  write_file(dir / "model.safetensors.index.json", GetParam().json);
  expect_io_error([&] { read_index(dir / "model.safetensors.index.json"); }, GetParam().code,
                  str("model.safetensors.index.json: ", GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Read, IndexError,
    ::testing::Values(
        BadIndex{"BadJson", R"({"weight_map":)", IoErrc::invalid_json, "index is not valid JSON"},
        BadIndex{"DuplicateTensor", R"({"weight_map":{"a":"x.safetensors","a":"y.safetensors"}})",
                 IoErrc::duplicate_key, "key 'a' appears twice"},
        BadIndex{"NestedTooDeep", std::string(1000, '[') + std::string(1000, ']'), IoErrc::invalid_json,
                 "index nests deeper than 64"},
        BadIndex{"NotObject", R"(["weight_map"])", IoErrc::index_not_object, "index is not a JSON object"},
        BadIndex{"MetadataNotObject", R"({"metadata":1,"weight_map":{}})", IoErrc::index_not_object,
                 "index \"metadata\" is not an object"},
        BadIndex{"NoWeightMap", R"({"metadata":{}})", IoErrc::index_no_weight_map,
                 "index has no \"weight_map\" object"},
        BadIndex{"WeightMapNotObject", R"({"weight_map":["a"]})", IoErrc::index_no_weight_map,
                 "index has no \"weight_map\" object"},
        BadIndex{"EntryNotString", R"({"weight_map":{"a":1}})", IoErrc::index_bad_entry,
                 "tensor 'a': weight_map value is not a file name string"},
        BadIndex{"TotalSizeString", R"({"metadata":{"total_size":"12"},"weight_map":{}})", IoErrc::index_bad_total_size,
                 "metadata.total_size \"12\" is not a non-negative integer"},
        BadIndex{"TotalSizeNegative", R"({"metadata":{"total_size":-1},"weight_map":{}})", IoErrc::index_bad_total_size,
                 "metadata.total_size -1 is not"},
        BadIndex{"TotalSizeFraction", R"({"metadata":{"total_size":1.5},"weight_map":{}})",
                 IoErrc::index_bad_total_size, "metadata.total_size 1.5 is not"},
        BadIndex{"ShardInParent", R"({"weight_map":{"a":"../x.safetensors"}})", IoErrc::index_bad_shard_name,
                 "tensor 'a': shard name '../x.safetensors' is not a plain file name"},
        BadIndex{"ShardAbsolute", R"({"weight_map":{"a":"/etc/passwd"}})", IoErrc::index_bad_shard_name,
                 "tensor 'a': shard name '/etc/passwd' is not a plain file name"},
        BadIndex{"ShardEmpty", R"({"weight_map":{"a":""}})", IoErrc::index_bad_shard_name,
                 "tensor 'a': shard name '' is not a plain file name"}),
    [](const ::testing::TestParamInfo<BadIndex>& info) { return info.param.name; });

TEST(Index, WriteRefusesAShardOutsideTheDirectory) {
  TempDir dir;
  CheckpointIndex index;
  index.weight_map["a"] = "../a.safetensors";
  expect_io_error([&] { write_index(dir / "i.json", index); }, IoErrc::index_bad_shard_name, "not a plain file name");
  EXPECT_TRUE(dir.entries().empty());
}

// ---- checkpoints ----

class CheckpointTest : public ::testing::Test {
 protected:
  // Shard 1: a (F32 [2]), b (BF16 [3]); shard 2: c (F4 [4]). total_size = 8 + 6 + 2.
  void SetUp() override {
    const std::array<TensorView, 2> one{{{"a", DType::F32, two_, eight_}, {"b", DType::BF16, three_, six_}}};
    const std::array<TensorView, 1> two{{{"c", DType::F4, four_, two_bytes_}}};
    write_safetensors(dir_ / shard_file_name(0, 2), one);
    write_safetensors(dir_ / shard_file_name(1, 2), two);
    index_.total_size = 16;
    index_.weight_map = {{"a", shard_file_name(0, 2)}, {"b", shard_file_name(0, 2)}, {"c", shard_file_name(1, 2)}};
    write_index(dir_ / kIndexFileName, index_);
  }
  TempDir dir_;
  Shape two_{2}, three_{3}, four_{4};
  Bytes eight_ = pattern_bytes(8, 1), six_ = pattern_bytes(6, 2), two_bytes_ = pattern_bytes(2, 3);
  CheckpointIndex index_;
};

TEST_F(CheckpointTest, OpensADirectoryAnIndexOrAFile) {
  const Checkpoint by_dir = open_checkpoint(dir_.path());
  EXPECT_EQ(by_dir.shards, (std::vector<std::string>{shard_file_name(0, 2), shard_file_name(1, 2)}));
  EXPECT_EQ(by_dir.index_path, dir_ / kIndexFileName);
  EXPECT_FALSE(by_dir.config_path().has_value());
  const CheckpointSummary s = check_checkpoint(by_dir);
  EXPECT_EQ(s.tensors, 3u);
  EXPECT_EQ(s.tensor_bytes, 16u);
  EXPECT_EQ(s.file_bytes, fs::file_size(by_dir.shard_path(0)) + fs::file_size(by_dir.shard_path(1)));

  const Checkpoint by_index = open_checkpoint(dir_ / kIndexFileName);
  EXPECT_EQ(by_index.shards, by_dir.shards);
  const Checkpoint by_file = open_checkpoint(dir_ / shard_file_name(0, 2));
  EXPECT_EQ(by_file.shards, std::vector<std::string>{shard_file_name(0, 2)});
  EXPECT_FALSE(by_file.index_path.has_value());
  EXPECT_EQ(by_file.index.total_size, 14u);
  EXPECT_EQ(check_checkpoint(by_file).tensors, 2u);
  write_file(dir_ / "config.json", "{}");
  EXPECT_EQ(open_checkpoint(dir_.path()).config_path(), dir_ / "config.json");
}

TEST_F(CheckpointTest, SingleFileDirectory) {
  TempDir one;
  const std::array<TensorView, 1> t{{{"a", DType::F32, two_, eight_}}};
  write_safetensors(one / "model.safetensors", t);
  const Checkpoint c = open_checkpoint(one.path());
  EXPECT_EQ(c.shards, std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(check_checkpoint(c).tensor_bytes, 8u);
}

TEST_F(CheckpointTest, NoCheckpointInADirectory) {
  TempDir empty;
  expect_io_error([&] { open_checkpoint(empty.path()); }, IoErrc::no_checkpoint,
                  "no .safetensors file and no model.safetensors.index.json");
  fs::remove(dir_ / kIndexFileName);
  expect_io_error([&] { open_checkpoint(dir_.path()); }, IoErrc::no_checkpoint,
                  "2 .safetensors files and no model.safetensors.index.json to tie them");
  expect_io_error([&] { open_checkpoint(dir_ / "missing"); }, IoErrc::open_failed, "no such file or directory");
}

TEST_F(CheckpointTest, IndexNamesATensorItsShardLacks) {
  index_.weight_map["d"] = shard_file_name(1, 2);
  write_index(dir_ / kIndexFileName, index_);
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::index_tensor_missing,
                  "model-00002-of-00002.safetensors: tensor 'd': the index puts it in model-00002-of-00002");
}

TEST_F(CheckpointTest, ShardHoldsATensorTheIndexDoesNotList) {
  index_.weight_map.erase("b");
  write_index(dir_ / kIndexFileName, index_);
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::index_tensor_unlisted,
                  "tensor 'b': is in this shard but not in the index");
}

TEST_F(CheckpointTest, IndexPutsATensorInTheWrongShard) {
  index_.weight_map["b"] = shard_file_name(1, 2);
  write_index(dir_ / kIndexFileName, index_);
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::index_tensor_unlisted,
                  "tensor 'b': is in this shard but the index puts it in model-00002-of-00002.safetensors");
}

TEST_F(CheckpointTest, TotalSizeDisagrees) {
  index_.total_size = 17;
  write_index(dir_ / kIndexFileName, index_);
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::index_total_size,
                  "metadata.total_size 17 differs from the 16 bytes of the shards' tensors");
}

TEST_F(CheckpointTest, MissingShardFile) {
  fs::remove(dir_ / shard_file_name(1, 2));
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::open_failed, "cannot open");
}

TEST_F(CheckpointTest, BadShardIsReportedWithItsOwnError) {
  write_file(dir_ / shard_file_name(1, 2), str(le(2, 8), "{}x"));
  expect_io_error([&] { check_checkpoint(open_checkpoint(dir_.path())); }, IoErrc::trailing_bytes,
                  "model-00002-of-00002.safetensors: 1 bytes after the last tensor");
}

// ---- the streaming writer ----

TEST(SafetensorsWriter, StreamedBytesEqualWriteSafetensors) {
  TempDir dir;
  const Shape a_shape{2, 3}, b_shape{4};
  const Bytes a = pattern_bytes(24, 1), b = pattern_bytes(2, 2);
  const std::array<TensorView, 2> views{{{"a", DType::F32, a_shape, a}, {"b", DType::F4, b_shape, b}}};
  write_safetensors(dir / "whole.safetensors", views, {{"format", "pt"}});
  {
    SafetensorsWriter w(dir / "streamed.safetensors", {{"a", DType::F32, a_shape}, {"b", DType::F4, b_shape}},
                        {{"format", "pt"}});
    w.write(std::span(a).first(10));
    w.write(std::span(a).subspan(10));
    w.write(b);
    EXPECT_EQ(w.bytes_total(), fs::file_size(dir / "whole.safetensors"));
    w.commit();
  }
  EXPECT_EQ(read_file(dir / "streamed.safetensors"), read_file(dir / "whole.safetensors"));
}

TEST(SafetensorsWriter, NothingIsLeftUnlessEveryByteArrives) {
  TempDir dir;
  const Shape shape{2};
  {
    SafetensorsWriter w(dir / "x.safetensors", {{"a", DType::F32, shape}});
    w.write(pattern_bytes(4, 1));
    expect_io_error([&] { w.commit(); }, IoErrc::size_mismatch, "only 68 of 72 bytes were written");
  }
  {
    SafetensorsWriter w(dir / "x.safetensors", {{"a", DType::F32, shape}});
    expect_io_error([&] { w.write(pattern_bytes(9, 1)); }, IoErrc::size_mismatch,
                    "tensor data runs 1 bytes past what the header announces");
  }
  { SafetensorsWriter abandoned(dir / "x.safetensors", {{"a", DType::F32, shape}}); }
  EXPECT_TRUE(dir.entries().empty()) << "no temporary file and no partial target";
  expect_io_error(
      [&] {
        SafetensorsWriter w(dir / "x.safetensors", {{"a", DType::F4, Shape{3}}});
      },
      IoErrc::not_whole_bytes, "shape [3] x F4 is not a whole number of bytes");
}

}  // namespace
}  // namespace mf::io
