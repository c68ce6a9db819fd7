// Internal: JSON from untrusted bytes (safetensors headers, index files), parsed in one checked step.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mf::io::detail {

// Parses `text` with every object's keys unique (nlohmann would keep the last of a repeated key silently) and
// nesting bounded by max_depth before anything recurses over it. Throws IoError invalid_json (naming `what`, e.g.
// "header") or duplicate_key. top_keys, when given, receives the top-level object's keys in order.
nlohmann::json parse_json_checked(std::string_view text, const std::filesystem::path& file, std::string_view what,
                                  int max_depth, std::vector<std::string>* top_keys = nullptr);

}  // namespace mf::io::detail
