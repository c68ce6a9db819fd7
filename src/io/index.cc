// model.safetensors.index.json: parsed in checked steps, one IoErrc per failure, and written all or nothing.
#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "byte_source.h"
#include "file.h"
#include "json_checked.h"
#include "minifloat/checkpoint.h"

namespace mf::io {
namespace {

using Json = nlohmann::json;
using detail::cat;
constexpr int kMaxDepth = 64;  // a valid index nests 2 deep; metadata values may nest a little more

Json parse_checked(std::string_view text, const std::filesystem::path& file) {
  return detail::parse_json_checked(text, file, "index", kMaxDepth);
}

// A shard must be a plain file name next to the index: nothing that could read or write elsewhere.
bool plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\\') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

}  // namespace

std::vector<std::string> CheckpointIndex::shards() const {
  std::set<std::string> names;
  for (const auto& [tensor, shard] : weight_map) names.insert(shard);
  return {names.begin(), names.end()};
}

namespace {

// HF writes an integer; some tools write a float with no fraction (1.5e9): accept only exact integers.
std::uint64_t total_size_of(const Json& v, const std::filesystem::path& file) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 0x1p63 &&
      v.get<double>() == static_cast<double>(static_cast<std::uint64_t>(v.get<double>()))) {
    return static_cast<std::uint64_t>(v.get<double>());
  }
  throw IoError(IoErrc::index_bad_total_size, file,
                cat("metadata.total_size ", v.dump().substr(0, 40), " is not a non-negative integer"));
}

void read_metadata(const Json& metadata, const std::filesystem::path& file, CheckpointIndex& index) {
  if (!metadata.is_object()) throw IoError(IoErrc::index_not_object, file, "index \"metadata\" is not an object");
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    if (it.key() == "total_size") {
      index.total_size = total_size_of(it.value(), file);
    } else {
      index.other_metadata.emplace(it.key(), it.value().dump());
    }
  }
}

void read_weight_map(const Json& map, const std::filesystem::path& file, CheckpointIndex& index) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it.value().is_string()) {
      throw IoError(IoErrc::index_bad_entry, file, it.key(), "weight_map value is not a file name string");
    }
    const std::string shard = it.value().get<std::string>();
    if (!plain_file_name(shard)) {
      throw IoError(IoErrc::index_bad_shard_name, file, it.key(),
                    cat("shard name '", shard, "' is not a plain file name in the index's directory"));
    }
    index.weight_map.emplace(it.key(), shard);
  }
}

}  // namespace

CheckpointIndex parse_index(std::string_view text, const std::filesystem::path& file) {
  const Json json = parse_checked(text, file);
  if (!json.is_object()) throw IoError(IoErrc::index_not_object, file, "index is not a JSON object");
  if (!json.contains("weight_map") || !json.at("weight_map").is_object()) {
    throw IoError(IoErrc::index_no_weight_map, file, "index has no \"weight_map\" object");
  }
  CheckpointIndex index;
  if (json.contains("metadata")) read_metadata(json.at("metadata"), file, index);
  read_weight_map(json.at("weight_map"), file, index);
  return index;
}

CheckpointIndex read_index(const std::filesystem::path& path) {
  // An index lists names only: a 100 MB bound (as for a safetensors header) is generous and stops a runaway read.
  const std::optional<std::vector<std::byte>> bytes = detail::read_small_file(path, kMaxSafetensorsHeader, "index");
  if (!bytes) {
    throw IoError(IoErrc::open_failed, path,
                  detail::is_url(path) ? "HTTP 404: no such file" : "no such file (or not a regular file)");
  }
  return parse_index(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
}

void write_index(const std::filesystem::path& path, const CheckpointIndex& index) {
  Json metadata = Json::object();
  for (const auto& [key, text] : index.other_metadata) metadata[key] = Json::parse(text);
  if (index.total_size) metadata["total_size"] = *index.total_size;
  Json weight_map = Json::object();
  for (const auto& [tensor, shard] : index.weight_map) {
    if (!plain_file_name(shard)) {
      throw IoError(IoErrc::index_bad_shard_name, path, tensor,
                    cat("shard name '", shard, "' is not a plain file name"));
    }
    weight_map[tensor] = shard;
  }
  Json json = Json::object();
  json["metadata"] = std::move(metadata);
  json["weight_map"] = std::move(weight_map);
  std::string text;
  try {
    text = json.dump(2) + "\n";
  } catch (const Json::exception& e) {
    throw IoError(IoErrc::invalid_name, path, cat("index holds text that is not UTF-8: ", e.what()));
  }
  const std::array<std::span<const std::byte>, 1> pieces{std::as_bytes(std::span(text))};
  detail::write_atomically(path, pieces);
}

std::string shard_file_name(std::size_t i, std::size_t n) {
  const auto five = [](std::size_t v) {
    std::string s = std::to_string(v);
    return std::string(s.size() < 5 ? 5 - s.size() : 0, '0') + s;
  };
  return cat("model-", five(i + 1), "-of-", five(n), ".safetensors");
}

}  // namespace mf::io
