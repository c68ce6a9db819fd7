#include "json_checked.h"

#include <set>

#include "file.h"
#include "minifloat/dtype.h"

namespace mf::io::detail {

nlohmann::json parse_json_checked(std::string_view text, const std::filesystem::path& file, std::string_view what,
                                  int max_depth, std::vector<std::string>* top_keys) {
  using Json = nlohmann::json;
  using Event = Json::parse_event_t;
  std::vector<std::set<std::string>> open_objects;
  int depth = 0;
  std::string duplicate;
  const auto watch = [&](int, Event event, Json& parsed) {
    if (event == Event::object_start || event == Event::array_start) {
      if (++depth > max_depth) throw IoError(IoErrc::invalid_json, file, cat(what, " nests deeper than ", max_depth));
      if (event == Event::object_start) open_objects.emplace_back();
    } else if (event == Event::object_end || event == Event::array_end) {
      --depth;
      if (event == Event::object_end) open_objects.pop_back();
    } else if (event == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
      if (depth == 1 && top_keys) top_keys->push_back(key);
    }
    return true;
  };
  Json json;
  try {
    json = Json::parse(text, watch);
  } catch (const Json::exception& e) {
    throw IoError(IoErrc::invalid_json, file, cat(what, " is not valid JSON: ", e.what()));
  }
  if (!duplicate.empty()) throw IoError(IoErrc::duplicate_key, file, cat("key '", duplicate, "' appears twice"));
  return json;
}

}  // namespace mf::io::detail
