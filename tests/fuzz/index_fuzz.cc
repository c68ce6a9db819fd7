// libFuzzer target for the model.safetensors.index.json parser (scripts/fuzz.sh builds and runs it): IoError or an
// index whose shard names are plain file names; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "minifloat/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const mf::io::CheckpointIndex index =
        mf::io::parse_index(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.index.json");
    for (const std::string& shard : index.shards()) {
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "..") std::abort();
    }
  } catch (const mf::io::IoError&) {
  }
  return 0;
}
