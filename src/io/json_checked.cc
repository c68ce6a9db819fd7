#include "json_checked.h"

#include <set>

#include "file.h"
#include "minifloat/dtype.h"

namespace mf::io::detail {
namespace {

using Json = nlohmann::json;

// A first pass over the text that only checks: depth, unique keys per object, the top level's keys in order. Linear
// in the text (n log n in the keys); nlohmann's parse with a callback is not (each closed object rescans its parent's
// members), which made a 200,000-tensor header take minutes.
class Checker : public nlohmann::json_sax<Json> {
 public:
  Checker(int max_depth, std::vector<std::string>* top_keys) : max_depth_(max_depth), top_keys_(top_keys) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_objects_.emplace_back();
    return deeper();
  }
  bool key(string_t& k) override {
    if (!open_objects_.back().insert(k).second && duplicate.empty()) duplicate = k;
    if (depth_ == 1 && top_keys_) top_keys_->push_back(k);
    return true;
  }
  bool end_object() override {
    open_objects_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return deeper(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }

  std::string duplicate, error;
  bool too_deep = false;

 private:
  bool deeper() {
    too_deep = ++depth_ > max_depth_;
    return !too_deep;
  }
  int max_depth_, depth_ = 0;
  std::vector<std::string>* top_keys_;
  std::vector<std::set<std::string>> open_objects_;
};

}  // namespace

nlohmann::json parse_json_checked(std::string_view text, const std::filesystem::path& file, std::string_view what,
                                  int max_depth, std::vector<std::string>* top_keys) {
  Checker checker(max_depth, top_keys);
  const bool ok = Json::sax_parse(text, &checker);
  if (checker.too_deep) throw IoError(IoErrc::invalid_json, file, cat(what, " nests deeper than ", max_depth));
  if (!ok) throw IoError(IoErrc::invalid_json, file, cat(what, " is not valid JSON: ", checker.error));
  if (!checker.duplicate.empty()) {
    throw IoError(IoErrc::duplicate_key, file, cat("key '", checker.duplicate, "' appears twice"));
  }
  try {
    return Json::parse(text);  // checked: valid, bounded, keys unique
  } catch (const Json::exception& e) {
    throw IoError(IoErrc::invalid_json, file, cat(what, " is not valid JSON: ", e.what()));
  }
}

}  // namespace mf::io::detail
