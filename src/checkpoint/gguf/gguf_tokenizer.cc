// The tokenizer of convert --format gguf, written as llama.cpp's convert_hf_to_gguf writes it (LlamaModel.set_vocab,
// TextModel._set_vocab_gpt2 / _set_vocab_sentencepiece / _set_vocab_llama_hf, gguf-py's SpecialVocab), read from
// tokenizer.json, tokenizer_config.json, tokenizer.model, added_tokens.json, chat_template.jinja / .json and
// config.json (gguf_tokenizer.h).
#include "gguf_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <unordered_map>

#include "../../io/file.h"
#include "../../io/json_checked.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using Meta = std::vector<std::pair<std::string, GgufValue>>;

// gguf-py's GGUFWriter.add_key_value: a key given again keeps its place and takes the new value.
void put(Meta& m, const std::string& key, GgufValue v) {
  for (auto& [k, old] : m) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  m.emplace_back(key, std::move(v));
}

[[noreturn]] void refuse(const fs::path& file, std::string_view what) {
  throw IoError(IoErrc::gguf_tokenizer, file, what);
}

bool valid_utf8(const std::string& s) {
  try {
    (void)Json(s).dump(-1, ' ', false, Json::error_handler_t::strict);
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A text file as Python's open(encoding="utf-8").read() gives it: universal newlines (\r\n and \r become \n).
std::string read_text(const fs::path& p) {
  const InputFile f(p);
  const std::vector<std::byte> bytes = f.read(0, f.size(), "text");
  std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  if (!valid_utf8(out)) refuse(p, "not UTF-8");
  return out;
}

std::optional<Json> read_json(const fs::path& p) {
  if (!is_file(p)) return std::nullopt;
  const InputFile f(p);
  const std::vector<std::byte> bytes = f.read(0, f.size(), "JSON");
  return parse_json_checked(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), p, "JSON", 64);
}

// Python's truthiness of a JSON value.
bool truthy(const Json& j) {
  if (j.is_null()) return false;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_string() || j.is_object() || j.is_array())
    return !j.empty() && !(j.is_string() && j.get<std::string>().empty());
  if (j.is_number()) return j.get<double>() != 0;
  return true;
}

Json get(const Json& j, const char* key) {
  if (!j.is_object()) return Json();
  const auto it = j.find(key);
  return it == j.end() ? Json() : *it;
}

// gguf.TokenType / SentencePieceTokenTypes.
enum TokenType : std::int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

GgufValue int32s(const std::vector<std::int32_t>& v) {
  std::vector<GgufValue> values;
  values.reserve(v.size());
  for (const std::int32_t x : v) values.push_back(GgufValue::of_i32(x));
  return GgufValue::of_array(GgufValueType::INT32, values);
}

GgufValue float32s(const std::vector<float>& v) {
  std::vector<GgufValue> values;
  values.reserve(v.size());
  for (const float x : v) values.push_back(GgufValue::of_f32(x));
  return GgufValue::of_array(GgufValueType::FLOAT32, values);
}

// ModelBase.does_token_look_special.
bool looks_special(const std::string& t) {
  const auto wrapped = [&t](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

// "▁" (U+2581) as a space: the converter pre-normalizes user-defined tokens so.
std::string spaces(std::string_view t) {
  constexpr std::string_view kBar = "\xe2\x96\x81";
  std::string out;
  for (std::size_t i = 0; i < t.size();) {
    if (t.substr(i, kBar.size()) == kBar) {
      out.push_back(' ');
      i += kBar.size();
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

constexpr const char* kNamedSpecials[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};

std::optional<std::string> token_content(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// tokenizer.json as transformers holds it: its added tokens, and tokenizer_config.json's named and extra special
// tokens marked special (transformers adds them again as special tokens).
HfTokenizer load_hf(const fs::path& file, Json json, const Json& config, const fs::path& config_file) {
  HfTokenizer t;
  t.file = file;
  t.json = std::move(json);
  t.config = config.is_object() ? config : Json::object();
  if (!t.json.is_object() || !t.json.contains("model") || !t.json["model"].is_object())
    refuse(file, "no 'model' object");
  const Json& model = t.json["model"];
  if (model.contains("vocab") && !model["vocab"].is_object()) {
    refuse(file, cat("'model.vocab' of a ", model.value("type", std::string("?")),
                     " model is not an object of "
                     "token: id (minifloat reads BPE vocabularies from tokenizer.json; Unigram ones from "
                     "tokenizer.model)"));
  }
  if (model.contains("vocab")) {
    for (const auto& [tok, id] : model["vocab"].items()) {
      if (!id.is_number_unsigned() || id.get<std::uint64_t>() > 0xFFFFFFFFu)
        refuse(file, cat("'model.vocab' gives ", Json(tok).dump(), " the id ", id.dump()));
    }
  }
  for (const Json& a : get(t.json, "added_tokens").is_array() ? t.json["added_tokens"] : Json::array()) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id") ||
        !a["id"].is_number_unsigned() || a["id"].get<std::uint64_t>() > 0xFFFFFFFFu) {
      refuse(file, cat("an 'added_tokens' entry is not {id, content, ...}: ", a.dump()));
    }
    t.added.push_back({a["content"].get<std::string>(), a["id"].get<std::uint32_t>(), a.value("special", false),
                       a.value("normalized", true), a.value("lstrip", false), a.value("rstrip", false),
                       a.value("single_word", false)});
  }
  // tokenizer_config.json's added_tokens_decoder: transformers adds each again, its flags replacing tokenizer.json's.
  Json decoder = get(t.config, "added_tokens_decoder");
  if (!decoder.is_object()) decoder = Json::object();
  for (const auto& [key, data] : decoder.items()) {
    if (!data.is_object() || !get(data, "content").is_string()) {
      throw IoError(IoErrc::gguf_tokenizer, config_file,
                    cat("'added_tokens_decoder' entry ", Json(key).dump(), " is not {content, ...}"));
    }
    AddedToken a{data["content"].get<std::string>(), 0,
                 truthy(get(data, "special")),       data.value("normalized", true),
                 truthy(get(data, "lstrip")),        truthy(get(data, "rstrip")),
                 truthy(get(data, "single_word"))};
    const auto it =
        std::find_if(t.added.begin(), t.added.end(), [&](const AddedToken& x) { return x.content == a.content; });
    const std::optional<std::uint32_t> id = t.id_of(a.content);
    if (!id || std::to_string(*id) != key) {
      throw IoError(IoErrc::gguf_tokenizer, config_file,
                    cat("'added_tokens_decoder' gives ", Json(a.content).dump(), " the id ", key, ", but ",
                        file.filename().string(), id ? cat(" gives it ", *id) : std::string(" does not hold it"),
                        " (transformers would give it another id)"));
    }
    a.id = *id;
    if (it != t.added.end())
      *it = a;
    else
      t.added.push_back(a);
  }
  std::vector<std::pair<std::string, std::string>> specials;  // key, content
  for (const char* key : kNamedSpecials) {
    if (const std::optional<std::string> c = token_content(get(t.config, key))) specials.emplace_back(key, *c);
  }
  for (const char* key : {"extra_special_tokens", "additional_special_tokens"}) {
    const Json list = get(t.config, key);
    if (!list.is_array()) continue;
    for (const Json& x : list) {
      if (const std::optional<std::string> c = token_content(x)) specials.emplace_back(key, *c);
    }
  }
  for (const auto& special : specials) {
    const std::string& key = special.first;
    const std::string& content = special.second;
    const auto it =
        std::find_if(t.added.begin(), t.added.end(), [&](const AddedToken& a) { return a.content == content; });
    if (it != t.added.end()) {
      it->special = true;
      it->normalized = false;
      it->lstrip = it->rstrip = it->single_word = false;
      continue;
    }
    const std::optional<std::uint32_t> id = t.id_of(content);
    if (!id) {
      throw IoError(IoErrc::gguf_tokenizer, config_file,
                    cat("'", key, "' is ", Json(content).dump(),
                        ", which is in neither the vocabulary nor the "
                        "added tokens of ",
                        file.filename().string(), " (transformers would add it as a new token)"));
    }
    t.added.push_back({content, *id, true, false});
  }
  std::stable_sort(t.added.begin(), t.added.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return t;
}

// ---- gguf-py's SpecialVocab ----

struct SpecialVocab {
  bool load_merges = false;
  std::optional<std::uint64_t> n_vocab;
  std::vector<std::string> types{"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
  std::vector<std::string> merges;
  std::vector<std::pair<std::string, bool>> add_special;
  std::vector<std::pair<std::string, std::uint64_t>> ids;
  Json chat_template;  // null, a string or a list of {name, template}
  std::optional<bool> lowercase, strip_accents;
  fs::path dir;

  bool has_add(const std::string& typ) const {
    return std::any_of(add_special.begin(), add_special.end(), [&](const auto& p) { return p.first == typ; });
  }
  void set_add(const std::string& typ, bool v, bool only_if_unset) {
    for (auto& [k, old] : add_special) {
      if (k == typ) {
        if (!only_if_unset) old = v;
        return;
      }
    }
    add_special.emplace_back(typ, v);
  }
  bool has_type(const std::string& typ) const { return std::find(types.begin(), types.end(), typ) != types.end(); }

  void set_special(const std::string& typ, const Json& tid, const fs::path& file) {
    if (!tid.is_number_integer()) return;
    if (!tid.is_number_unsigned() && tid.get<std::int64_t>() < 0) {
      refuse(file, cat("invalid value for special token type ", typ, ": ", tid.dump()));
    }
    const std::uint64_t id = tid.get<std::uint64_t>();
    if (n_vocab && id >= *n_vocab) return;  // the converter warns and skips it
    for (const auto& [k, v] : ids) {
      if (k == typ) return;
    }
    ids.emplace_back(typ, id);
  }

  void parse_normalizer(const Json& n) {
    const std::string type = n.is_object() ? n.value("type", std::string()) : std::string();
    if (type == "Lowercase") {
      lowercase = true;
    } else if (type == "StripAccents") {
      strip_accents = true;
    } else if (type == "BertNormalizer") {
      if (n.contains("lowercase") && n["lowercase"].is_boolean()) lowercase = n["lowercase"].get<bool>();
      if (n.contains("strip_accents") && n["strip_accents"].is_boolean())
        strip_accents = n["strip_accents"].get<bool>();
    } else if (type == "Sequence") {
      for (const Json& x : get(n, "normalizers").is_array() ? n["normalizers"] : Json::array()) parse_normalizer(x);
    }
  }

  void load_merges_from(const Json& m, const fs::path& file) {
    if (!m.is_array() || m.empty()) return;
    if (m[0].is_string()) {
      for (const Json& x : m) {
        if (!x.is_string()) refuse(file, "'model.merges' mixes strings and pairs");
        merges.push_back(x.get<std::string>());
      }
    } else if (m[0].is_array() && m[0].size() == 2 && m[0][0].is_string()) {
      for (const Json& x : m) {
        if (!x.is_array() || x.size() != 2 || !x[0].is_string() || !x[1].is_string()) {
          refuse(file, "'model.merges' has an entry that is not a pair of strings");
        }
        std::string line;
        for (int k = 0; k < 2; ++k) {
          if (k) line.push_back(' ');
          for (const char c : x[k].get<std::string>()) line += c == ' ' ? std::string("\xc4\xa0") : std::string(1, c);
        }
        merges.push_back(std::move(line));
      }
    } else {
      refuse(file, "'model.merges' is in an unknown format");
    }
  }

  // _try_load_from_tokenizer_json, including its crude reading of the post-processor.
  void load_tokenizer_json(const std::optional<Json>& tokenizer, std::optional<Json>& tc, const fs::path& file) {
    Json added_tokens = Json::array();
    if (tokenizer) {
      if (load_merges) load_merges_from(get(get(*tokenizer, "model"), "merges"), file);
      if (const Json n = get(*tokenizer, "normalizer"); truthy(n)) parse_normalizer(n);
      added_tokens = get(*tokenizer, "added_tokens").is_array() ? (*tokenizer)["added_tokens"] : Json::array();
    }
    const auto tc_truthy = [&tc] { return tc && truthy(*tc); };
    if (tokenizer) {
      const Json empty = Json::object();
      const Json& c = tc ? *tc : empty;
      Json special_bos = get(c, "bos_token"), special_cls = get(c, "cls_token"), special_eos = get(c, "eos_token"),
           special_sep = get(c, "sep_token");
      if (!truthy(special_bos) && truthy(special_cls) && tc_truthy()) (*tc)["bos_token"] = special_bos = special_cls;
      if (!truthy(special_eos) && truthy(special_sep) && tc_truthy()) (*tc)["eos_token"] = special_eos = special_sep;
      const Json post = get(*tokenizer, "post_processor");
      if (truthy(post)) {
        const Json processors = post.contains("processors") ? post["processors"] : Json::array({post});
        for (const Json& processor : processors) {
          const std::string type = processor.is_object() ? processor.value("type", std::string()) : std::string();
          if (type == "ByteLevel") {
            set_add("bos", false, true);
            set_add("eos", false, true);
          } else if (type == "RobertaProcessing") {
            set_add("bos", true, false);
            set_add("eos", true, false);
            set_add("sep", true, false);
            if (!truthy(special_cls) && tc_truthy()) {
              special_cls = processor.contains("cls") ? processor["cls"][0] : special_bos;
              (*tc)["cls_token"] = special_cls;
            }
            if (!truthy(special_sep) && tc_truthy()) {
              special_sep = processor.contains("sep") ? processor["sep"][0] : special_eos;
              (*tc)["sep_token"] = special_sep;
            }
          } else if (type == "TemplateProcessing") {
            template_processing(processor, tc, special_bos, special_cls, special_eos, special_sep);
          }
        }
      }
    }
    if (!tc_truthy()) return;
    Json alt;
    const fs::path jinja = dir / "chat_template.jinja", json = dir / "chat_template.json";
    if (is_file(jinja)) {
      alt = read_text(jinja);
      std::vector<fs::path> extra;
      std::error_code ec;
      if (fs::is_directory(dir / "additional_chat_templates", ec)) {
        for (const auto& e : fs::directory_iterator(dir / "additional_chat_templates", ec)) {
          if (e.is_regular_file() && e.path().extension() == ".jinja") extra.push_back(e.path());
        }
      }
      std::sort(extra.begin(), extra.end());
      if (!extra.empty()) {
        alt = Json::array({Json{{"name", "default"}, {"template", alt}}});
        for (const fs::path& p : extra) alt.push_back(Json{{"name", p.stem().string()}, {"template", read_text(p)}});
      }
    } else if (is_file(json)) {
      alt = get(*read_json(json), "chat_template");
    }
    const Json ct = tc->contains("chat_template") ? (*tc)["chat_template"] : alt;
    if (ct.is_null() || ct.is_string() || ct.is_array()) chat_template = ct;
    for (const std::string& typ : std::vector<std::string>(types)) {
      const Json add = get(*tc, ("add_" + typ + "_token").c_str());
      if (add.is_boolean()) set_add(typ, add.get<bool>(), true);
      const std::optional<std::string> content = token_content(get(*tc, (typ + "_token").c_str()));
      if (!content) continue;
      Json id;
      for (const Json& a : added_tokens) {
        if (a.is_object() && a.contains("content") && a["content"] == *content) {
          id = get(a, "id");
          break;
        }
      }
      set_special(typ, id, file);
    }
  }

  void template_processing(const Json& processor, std::optional<Json>& tc, Json& special_bos, Json& special_cls,
                           Json& special_eos, const Json& special_sep) {
    const auto tc_truthy = [&tc] { return tc && truthy(*tc); };
    const Json single = processor.value("single", Json::array()), pair = processor.value("pair", Json::array());
    const auto special_of = [](const Json& item) { return get(get(item, "SpecialToken"), "id"); };
    Json first, last;
    if (single.size() > 1) {
      first = special_of(single.front());
      if (truthy(first)) {
        if (!tc_truthy()) {
          special_bos = first;
        } else if (first != special_bos && first != special_cls) {
          if (!truthy(special_bos)) (*tc)["bos_token"] = special_bos = first;
          if (!truthy(special_cls)) (*tc)["cls_token"] = special_cls = first;
        }
        set_add("bos", first == special_bos || first == special_cls, false);
      }
      last = special_of(single.back());
      if (truthy(last)) {
        if (!tc_truthy()) {
          special_eos = last;
        } else if (last != special_eos) {
          if (!has_type("eot")) {
            types.push_back("eot");
            (*tc)["eot_token"] = special_eos;
          } else if (!has_type("eom")) {
            types.push_back("eom");
            (*tc)["eom_token"] = special_eos;
          }
          (*tc)["eos_token"] = special_eos = last;
        }
        set_add("eos", last == special_eos, false);
      }
    }
    if (pair.is_array() && !pair.empty()) {
      std::size_t start = truthy(first) && special_of(pair.front()) == first ? 1 : 0;
      std::size_t stop = truthy(last) && special_of(pair.back()) == last ? pair.size() - 1 : pair.size();
      if (start >= stop) return;
      std::vector<Json> p(pair.begin() + static_cast<std::ptrdiff_t>(start),
                          pair.begin() + static_cast<std::ptrdiff_t>(stop));
      const Json a = get(get(p.front(), "Sequence"), "id"), b = get(get(p.back(), "Sequence"), "id");
      if (a == "A" && b == "B" && p.size() > 2) {
        std::vector<Json> mid(p.begin() + 1, p.end() - 1);
        bool add_sep = false;
        if (const Json e = special_of(mid[0]); truthy(e)) {
          if ((e == special_sep || e == special_eos) && !truthy(last)) add_sep = true;
        }
        if (mid.size() == 2) {
          if (const Json e = special_of(mid[1]); truthy(e) && (e == special_sep || e == special_eos)) add_sep = true;
        }
        set_add("sep", add_sep, false);
        if (add_sep && !truthy(special_sep) && tc_truthy()) (*tc)["sep_token"] = special_eos;
      }
    }
  }

  void load_config_json(const Json& config, const fs::path& file) {
    for (const std::string& typ : types) {
      Json id = get(config, (typ + "_token_id").c_str());
      if (id.is_null() && config.contains("text_config")) id = get(config["text_config"], (typ + "_token_id").c_str());
      set_special(typ, id, file);
    }
  }

  void add_to(Meta& meta, const fs::path& file) const {
    if (!merges.empty()) put(meta, "tokenizer.ggml.merges", GgufValue::of_strings(merges));
    static const std::pair<std::string_view, std::string_view> kIdKeys[] = {
        {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"unk", "unknown_token_id"},
        {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"},
        {"eot", "eot_token_id"},       {"eom", "eom_token_id"}};
    for (const auto& [typ, id] : ids) {
      for (const auto& [t, key] : kIdKeys) {
        if (t == typ) put(meta, cat("tokenizer.ggml.", key), GgufValue::of_u32(static_cast<std::uint32_t>(id)));
      }  // others (cls, ...): gguf-py has no key for them and skips them
    }
    for (const auto& [typ, v] : add_special) {
      if (typ == "bos" || typ == "eos" || typ == "sep")
        put(meta, cat("tokenizer.ggml.add_", typ, "_token"), GgufValue::of_bool(v));
    }
    if (chat_template.is_string()) {
      put(meta, "tokenizer.chat_template", GgufValue::of_string(chat_template.get<std::string>()));
    } else if (chat_template.is_array()) {
      std::optional<std::string> def;
      std::vector<std::string> names;
      for (const Json& choice : chat_template) {
        std::string name = get(choice, "name").is_string() ? choice["name"].get<std::string>() : std::string();
        for (char& c : name) {
          if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
        }
        const Json tmpl = get(choice, "template");
        if (name.empty() || tmpl.is_null()) continue;
        if (!tmpl.is_string()) refuse(file, "a chat template that is not a string");
        if (name == "default") {
          def = tmpl.get<std::string>();
        } else {
          if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
          put(meta, "tokenizer.chat_template." + name, GgufValue::of_string(tmpl.get<std::string>()));
        }
      }
      if (!names.empty()) put(meta, "tokenizer.chat_templates", GgufValue::of_strings(names));
      if (def) put(meta, "tokenizer.chat_template", GgufValue::of_string(*def));
    }
    if (lowercase) put(meta, "tokenizer.ggml.normalizer.lowercase", GgufValue::of_bool(*lowercase));
    if (strip_accents) put(meta, "tokenizer.ggml.normalizer.strip_accents", GgufValue::of_bool(*strip_accents));
  }
};

// The checkpoint's tokenizer files, read once.
struct Files {
  fs::path dir;
  std::optional<Json> tokenizer, config;  // tokenizer.json, tokenizer_config.json
  const Json* model_config = nullptr;     // config.json
  fs::path config_json;
};

void special_vocab(const Files& f, bool load_merges, std::optional<std::uint64_t> n_vocab, Meta& meta) {
  SpecialVocab sv;
  sv.dir = f.dir;
  sv.load_merges = load_merges;
  sv.n_vocab = n_vocab;
  std::optional<Json> tc = f.config;
  sv.load_tokenizer_json(f.tokenizer, tc, f.dir / "tokenizer.json");
  sv.load_config_json(*f.model_config, f.config_json);
  if (load_merges && sv.merges.empty() && is_file(f.dir / "merges.txt")) {
    refuse(f.dir / "merges.txt", "merges only in merges.txt: minifloat reads them from tokenizer.json");
  }
  sv.add_to(meta, f.dir / "tokenizer_config.json");
}

// ---- TextModel._set_vocab_gpt2 (get_vocab_base) ----

std::uint64_t vocab_gpt2(const Files& f, std::uint64_t vocab_size, Meta& meta) {
  const fs::path file = f.dir / "tokenizer.json";
  const HfTokenizer t = load_hf(file, *f.tokenizer, f.config.value_or(Json::object()), f.dir / "tokenizer_config.json");
  std::vector<std::optional<std::string>> reverse(vocab_size);
  const auto place = [&](const std::string& tok, std::uint32_t id) {
    if (id >= vocab_size) {
      refuse(file, cat("token ", Json(tok).dump(), " has id ", id, ", past config.json's vocab_size ", vocab_size,
                       " (the rows of the embedding): the vocabulary does not fit the model"));
    }
    reverse[id] = tok;
  };
  const Json& model = t.json["model"];
  if (model.contains("vocab")) {
    for (const auto& [tok, id] : model["vocab"].items()) place(tok, id.get<std::uint32_t>());
  }
  for (const AddedToken& a : t.added) place(a.content, a.id);
  const BpePre pre = bpe_pre(t);
  if (!pre.name) {
    refuse(file, cat("BPE pre-tokenizer not recognized: its fingerprint (chkhsh) ", pre.hash,
                     " is not in llama.cpp's "
                     "convert_hf_to_gguf table (get_vocab_base_pre), so tokenizer.ggml.pre cannot be chosen as "
                     "llama.cpp chooses it"));
  }
  std::unordered_map<std::string_view, const AddedToken*> added;
  for (const AddedToken& a : t.added) added.emplace(a.content, &a);
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  for (std::uint64_t i = 0; i < vocab_size; ++i) {
    if (!reverse[i]) {
      tokens.push_back(cat("[PAD", i, "]"));
      types.push_back(kUnused);
      continue;
    }
    std::string tok = *reverse[i];
    const auto a = added.find(tok);
    if (a == added.end()) {
      types.push_back(kNormal);
    } else if (a->second->special || looks_special(tok)) {
      types.push_back(kControl);  // a token that is not normalized is decoded back as itself
    } else {
      tok = spaces(tok);
      types.push_back(kUserDefined);
    }
    tokens.push_back(std::move(tok));
  }
  put(meta, "tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  put(meta, "tokenizer.ggml.pre", GgufValue::of_string(*pre.name));
  put(meta, "tokenizer.ggml.tokens", GgufValue::of_strings(tokens));
  put(meta, "tokenizer.ggml.token_type", int32s(types));
  special_vocab(f, true, std::nullopt, meta);
  return tokens.size();
}

// ---- SentencePiece's tokenizer.model (protobuf ModelProto) ----

struct Piece {
  std::string text;
  float score = 0;
  std::int32_t type = 1;  // NORMAL
};

struct ProtoReader {
  const std::string& s;
  std::size_t i, end;
  const fs::path& file;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (i >= end) refuse(file, "a SentencePiece model (protobuf) that ends inside a number");
      const auto b = static_cast<unsigned char>(s[i++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    refuse(file, "a SentencePiece model (protobuf) with an over-long number");
  }
  std::size_t skip_len(std::uint64_t n) {
    if (n > end - i) refuse(file, "a SentencePiece model (protobuf) whose field runs past its end");
    const std::size_t at = i;
    i += static_cast<std::size_t>(n);
    return at;
  }
  // Skips one field's value of `wire` type.
  void skip(std::uint64_t wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1: skip_len(8); break;
      case 2: skip_len(varint()); break;
      case 5: skip_len(4); break;
      default: refuse(file, cat("not a SentencePiece model (protobuf wire type ", wire, ")"));
    }
  }
};

std::vector<Piece> read_spm(const fs::path& file) {
  const InputFile in(file);
  const std::vector<std::byte> bytes = in.read(0, in.size(), "SentencePiece model");
  const std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ProtoReader r{s, 0, s.size(), file};
  std::vector<Piece> pieces;
  while (r.i < r.end) {
    const std::uint64_t key = r.varint();
    if (key >> 3 != 1 || (key & 7) != 2) {
      r.skip(key & 7);
      continue;
    }
    const std::uint64_t len = r.varint();
    const std::size_t at = r.skip_len(len);
    ProtoReader p{s, at, at + static_cast<std::size_t>(len), file};
    Piece piece;
    while (p.i < p.end) {
      const std::uint64_t k = p.varint();
      if (k == ((1 << 3) | 2)) {
        const std::uint64_t n = p.varint();
        piece.text = s.substr(p.skip_len(n), static_cast<std::size_t>(n));
      } else if (k == ((2 << 3) | 5)) {
        std::memcpy(&piece.score, s.data() + p.skip_len(4), 4);
      } else if (k == ((3 << 3) | 0)) {
        piece.type = static_cast<std::int32_t>(p.varint());
      } else {
        p.skip(k & 7);
      }
    }
    if (!valid_utf8(piece.text)) refuse(file, cat("piece ", pieces.size(), " is not UTF-8"));
    pieces.push_back(std::move(piece));
  }
  if (pieces.empty()) refuse(file, "not a SentencePiece model: no pieces");
  return pieces;
}

// The `llama` vocabulary's keys, as both SentencePiece paths write them; returns the token count.
std::uint64_t llama_vocab(const Files& f, const std::vector<std::string>& tokens, const std::vector<float>& scores,
                          const std::vector<std::int32_t>& types, Meta& meta) {
  put(meta, "tokenizer.ggml.model", GgufValue::of_string("llama"));
  put(meta, "tokenizer.ggml.pre", GgufValue::of_string("default"));
  put(meta, "tokenizer.ggml.tokens", GgufValue::of_strings(tokens));
  put(meta, "tokenizer.ggml.scores", float32s(scores));
  put(meta, "tokenizer.ggml.token_type", int32s(types));
  special_vocab(f, false, tokens.size(), meta);
  return tokens.size();
}

// _set_vocab_sentencepiece (_create_vocab_sentencepiece).
std::uint64_t vocab_sentencepiece(const Files& f, std::uint64_t vocab_size, Meta& meta) {
  const fs::path file = f.dir / "tokenizer.model";
  const std::vector<Piece> pieces = read_spm(file);
  if (pieces.size() > vocab_size) {
    refuse(file, cat(pieces.size(), " pieces, more than config.json's vocab_size ", vocab_size,
                     " (the rows of the embedding): the vocabulary does not fit the model"));
  }
  std::vector<std::string> tokens(vocab_size);
  for (std::uint64_t i = 0; i < vocab_size; ++i) tokens[i] = cat("[PAD", i, "]");
  std::vector<float> scores(vocab_size, -10000.0f);
  std::vector<std::int32_t> types(vocab_size, kUnused);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const std::int32_t t = pieces[i].type;
    tokens[i] = pieces[i].text;
    scores[i] = pieces[i].score;
    types[i] = t == 2 ? kUnknown : t == 3 ? kControl : t == 5 ? kUnused : t == 6 ? kByte : kNormal;
  }
  if (const std::optional<Json> added = read_json(f.dir / "added_tokens.json")) {
    if (!added->is_object()) refuse(f.dir / "added_tokens.json", "not an object of token: id");
    for (const auto& [tok, id] : added->items()) {
      if (!id.is_number_unsigned())
        refuse(f.dir / "added_tokens.json", cat("token ", Json(tok).dump(), " has id ", id.dump()));
      if (id.get<std::uint64_t>() >= vocab_size) continue;  // the converter warns and skips it
      tokens[id.get<std::size_t>()] = tok;
      scores[id.get<std::size_t>()] = -1000.0f;
      types[id.get<std::size_t>()] = kUserDefined;
    }
  }
  if (f.config) {
    Json decoder = get(*f.config, "added_tokens_decoder");
    if (!decoder.is_object()) decoder = Json::object();
    for (const auto& [key, data] : decoder.items()) {
      std::size_t used = 0;
      std::uint64_t id = 0;
      try {
        id = std::stoull(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != key.size() || !data.is_object() || !get(data, "content").is_string()) {
        refuse(f.dir / "tokenizer_config.json",
               cat("'added_tokens_decoder' entry ", Json(key).dump(), " is not id: {content, ...}"));
      }
      if (id >= vocab_size) continue;
      std::string tok = data["content"].get<std::string>();
      if (truthy(get(data, "special")) || looks_special(tok)) {
        types[id] = kControl;
      } else {
        tok = spaces(tok);
        types[id] = kUserDefined;
      }
      scores[id] = -1000.0f;
      tokens[id] = std::move(tok);
    }
  }
  return llama_vocab(f, tokens, scores, types, meta);
}

// _set_vocab_llama_hf (gguf-py's LlamaHfVocab): a SentencePiece-style BPE (byte fallback) in tokenizer.json.
std::uint64_t vocab_llama_hf(const Files& f, Meta& meta) {
  const fs::path file = f.dir / "tokenizer.json";
  const HfTokenizer t = load_hf(file, *f.tokenizer, f.config.value_or(Json::object()), f.dir / "tokenizer_config.json");
  const Json& vocab = t.json["model"]["vocab"];
  const std::uint64_t base = vocab.size();
  std::vector<std::optional<std::string>> reverse(base);
  for (const auto& [tok, id] : vocab.items()) {
    if (id.get<std::uint64_t>() >= base)
      refuse(file, cat("'model.vocab' ids are not 0 to ", base - 1, ": ", Json(tok).dump(), " has ", id.dump()));
    reverse[id.get<std::size_t>()] = tok;
  }
  std::set<std::uint32_t> special_ids;
  const auto special = [&](const char* key, const std::string& content) {
    const std::optional<std::uint32_t> id = t.id_of(content);
    if (!id) {
      refuse(f.dir / "tokenizer_config.json",
             cat("'", key, "' names ", Json(content).dump(), ", which ", file.filename().string(), " does not hold"));
    }
    special_ids.insert(*id);
  };
  for (const char* key : kNamedSpecials) {
    if (const std::optional<std::string> c = token_content(get(t.config, key))) special(key, *c);
  }
  for (const char* key : {"extra_special_tokens", "additional_special_tokens"}) {
    const Json list = get(t.config, key);
    for (const Json& x : list.is_array() ? list : Json::array()) {
      if (const std::optional<std::string> c = token_content(x)) special(key, *c);
    }
  }
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  for (std::uint64_t i = 0; i < base; ++i) {
    if (!reverse[i]) refuse(file, cat("'model.vocab' has no token with id ", i));
    const std::string& tok = *reverse[i];
    const bool byte = tok.size() == 6 && tok.starts_with("<0x") && tok.ends_with(">") &&
                      std::isxdigit(static_cast<unsigned char>(tok[3])) &&
                      std::isxdigit(static_cast<unsigned char>(tok[4]));
    tokens.push_back(tok);
    scores.push_back(-1000.0f);
    types.push_back(byte ? kByte : special_ids.contains(static_cast<std::uint32_t>(i)) ? kControl : kNormal);
  }
  std::uint64_t next = base;
  for (const AddedToken& a : t.added) {
    if (a.id < base) continue;
    if (a.id != next)
      refuse(file, cat("added token ", Json(a.content).dump(), " has id ", a.id, ", not the next id ", next));
    ++next;
    tokens.push_back(a.content);
    scores.push_back(-1000.0f);
    types.push_back(special_ids.contains(a.id) ? kControl : kUserDefined);
  }
  return llama_vocab(f, tokens, scores, types, meta);
}

}  // namespace

namespace {

std::optional<GgufTokenizer> read_tokenizer(const fs::path& dir, const Json& config, const GgufModel& m) {
  Files f;
  f.dir = dir;
  f.model_config = &config;
  f.config_json = dir / "config.json";
  const bool has_model = is_file(dir / "tokenizer.model");
  f.tokenizer = read_json(dir / "tokenizer.json");
  if (!f.tokenizer && !has_model) {
    for (const char* other : {"tekken.json", "vocab.json", "merges.txt", "tokenizer.tiktoken"}) {
      if (is_file(dir / other)) {
        refuse(dir / other,
               "minifloat converts tokenizer.json (BPE) and tokenizer.model (SentencePiece); this "
               "tokenizer is in neither: convert it with llama.cpp's own tools, or pass --no-tokenizer");
      }
    }
    return std::nullopt;
  }
  f.config = read_json(dir / "tokenizer_config.json");
  if (f.tokenizer && !f.tokenizer->is_object()) refuse(dir / "tokenizer.json", "not a JSON object");
  if (f.config && !f.config->is_object()) refuse(dir / "tokenizer_config.json", "not a JSON object");
  GgufTokenizer out;
  const std::uint64_t vocab_size = m.n_vocab;
  if ((m.arch == GgufArch::qwen2 || m.arch == GgufArch::qwen3) && has_model) {  // Qwen2Model.set_vocab
    out.file = dir / "tokenizer.model";
    out.tokens = vocab_sentencepiece(f, vocab_size, out.metadata);
    return out;
  }
  if (m.arch != GgufArch::llama) {  // TextModel.set_vocab (and Qwen2Model's without tokenizer.model): gpt2
    if (!f.tokenizer) {
      refuse(dir / "tokenizer.model",
             cat(gguf_arch_name(m.arch), "'s tokenizer is read from tokenizer.json, which is missing"));
    }
    out.file = dir / "tokenizer.json";
    out.tokens = vocab_gpt2(f, vocab_size, out.metadata);
    return out;
  }
  // LlamaModel.set_vocab.
  if (f.config) {
    const Json prefix = get(*f.config, "add_prefix_space");
    if (!prefix.is_null()) {
      if (!prefix.is_boolean()) refuse(dir / "tokenizer_config.json", "'add_prefix_space' is not true or false");
      put(out.metadata, "tokenizer.ggml.add_space_prefix", GgufValue::of_bool(prefix.get<bool>()));
    }
    if (get(*f.config, "tokenizer_class") == "HybridDNATokenizer") {
      refuse(dir / "tokenizer_config.json", "tokenizer_class HybridDNATokenizer is not converted");
    }
  }
  if (has_model) {
    out.file = dir / "tokenizer.model";
    out.tokens = vocab_sentencepiece(f, vocab_size, out.metadata);
  } else {
    const Json model = get(*f.tokenizer, "model");
    const bool bpe = get(model, "type") == "BPE";
    const Json fallback = get(model, "byte_fallback");
    const bool llama3 = bpe && truthy(get(model, "ignore_merges")) && !(fallback.is_null() || truthy(fallback));
    const Json decoder = get(*f.tokenizer, "decoder");
    out.file = dir / "tokenizer.json";
    if (!llama3 && bpe && truthy(fallback) && get(decoder, "type") == "Sequence") {
      out.tokens = vocab_llama_hf(f, out.metadata);
    } else {
      out.tokens = vocab_gpt2(f, vocab_size, out.metadata);
    }
  }
  if (vocab_size == 32016) {  // CodeLlama: its infill tokens (of which gguf-py writes only eot)
    SpecialVocab sv;
    sv.dir = dir;
    sv.types = {"prefix", "suffix", "middle", "eot"};
    std::optional<Json> tc = f.config;
    sv.load_tokenizer_json(f.tokenizer, tc, dir / "tokenizer.json");
    sv.load_config_json(config, f.config_json);
    sv.set_special("prefix", 32007, out.file);
    sv.set_special("suffix", 32008, out.file);
    sv.set_special("middle", 32009, out.file);
    sv.set_special("eot", 32010, out.file);
    sv.add_to(out.metadata, dir / "tokenizer_config.json");
  }
  if (vocab_size == 49152)
    put(out.metadata, "tokenizer.ggml.add_bos_token", GgufValue::of_bool(false));  // "granite small models"
  return out;
}

}  // namespace

std::optional<GgufTokenizer> gguf_tokenizer(const fs::path& dir, const Json& config, const GgufModel& m) {
  try {
    return read_tokenizer(dir, config, m);
  } catch (const Json::exception& e) {  // a value of another type than the converter reads there
    refuse(dir, cat("a tokenizer file holds a value of an unexpected type or shape (", e.what(), ")"));
  }
}

}  // namespace mf::io::detail
