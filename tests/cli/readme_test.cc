// The README tells the truth about the tree: every path its Layout block names exists, every folder of the library,
// public header, doc and subcommand source is listed there, every link points at a file, and every subcommand it
// runs (`./run X`, `minifloat X`) is one the built command offers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = MF_SOURCE_DIR;

std::string readme() { return mf::test::read_file((kRoot / "README.md").string()); }

// The lines of the fenced block that follows "## Layout".
std::vector<std::string> layout_lines() {
  const std::string text = readme();
  const std::size_t section = text.find("## Layout\n");
  if (section == std::string::npos) return {};
  const std::size_t open = text.find("```\n", section);
  const std::size_t close = text.find("```", open + 4);
  std::istringstream in(text.substr(open + 4, close - open - 4));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Each entry of the block: its folder (a line's first word) and the words of its description, continuation lines
// included.
struct Entry {
  std::string folder;
  std::string text;
};

std::vector<Entry> layout() {
  std::vector<Entry> entries;
  for (const std::string& line : layout_lines()) {
    if (!line.empty() && line[0] != ' ') {
      const std::size_t space = line.find(' ');
      entries.push_back({line.substr(0, space), space == std::string::npos ? "" : line.substr(space)});
    } else if (!entries.empty()) {
      entries.back().text += " " + line;
    }
  }
  return entries;
}

// std::regex is left out: with -O1 and the sanitizers, GCC 12 warns (-Wmaybe-uninitialized) inside its headers.

bool has_doc_or_source_extension(const std::string& w) {
  const std::string ext = fs::path(w).extension().string();
  for (const char* e : {".h", ".cc", ".md", ".py", ".toml", ".sh", ".html", ".js", ".css", ".txt"}) {
    if (ext == e) return true;
  }
  return false;
}

// Every `open ... close` span's inside.
std::vector<std::string> between(const std::string& text, std::string_view open, char close) {
  std::vector<std::string> out;
  for (std::size_t i = text.find(open); i != std::string::npos; i = text.find(open, i + 1)) {
    const std::size_t start = i + open.size(), end = text.find(close, start);
    if (end == std::string::npos) break;
    out.push_back(text.substr(start, end - start));
  }
  return out;
}

// The paths a description mentions: words (stripped of the punctuation around them) that hold a '/' or end in a
// source or doc extension; globs (*-inl.h) are left out.
std::vector<std::string> named_paths(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    while (!w.empty() && std::string_view("(),;:").find(w.back()) != std::string_view::npos) w.pop_back();
    while (!w.empty() && std::string_view("(),;:").find(w.front()) != std::string_view::npos) w.erase(0, 1);
    if (w.empty() || w.find('*') != std::string::npos) continue;
    if (w.find('/') != std::string::npos || has_doc_or_source_extension(w)) out.push_back(w);
  }
  return out;
}

TEST(ReadmeLayout, EveryPathItNamesExists) {
  const std::vector<Entry> entries = layout();
  ASSERT_GE(entries.size(), 10u) << "README.md has no Layout block";
  for (const Entry& e : entries) {
    EXPECT_TRUE(fs::is_directory(kRoot / e.folder)) << "README layout names a folder that is not there: " << e.folder;
    for (const std::string& p : named_paths(e.text)) {
      // From the entry's folder (unit/, gemm_ref.cc), else from the root (BENCHMARKS.md, src/ref/).
      EXPECT_TRUE(fs::exists(kRoot / e.folder / p) || fs::exists(kRoot / p))
          << "README layout, " << e.folder << ": " << p << " is neither in " << e.folder << " nor at the root";
    }
  }
}

TEST(ReadmeLayout, ListsEveryFolderHeaderDocAndSubcommandFile) {
  std::set<std::string> folders, names;
  for (const Entry& e : layout()) {
    folders.insert(e.folder);
    for (const std::string& p : named_paths(e.text)) names.insert(fs::path(p).filename().string());
    std::istringstream words(e.text);
    for (std::string w; words >> w;) names.insert(w);
  }
  const auto named = [&](const std::string& file) {
    const std::string stem = fs::path(file).stem().string();
    for (const std::string& n : names) {
      if (n.find(file) != std::string::npos || n == stem + "," || n == stem || n == stem + ")" || n == "(" + stem + ",")
        return true;
    }
    return false;
  };
  for (const char* top : {"include/minifloat/", "cli/", "python/", "web/", "tests/", "bench/", "scripts/", "docs/"}) {
    EXPECT_TRUE(folders.contains(top)) << "README layout does not list " << top;
  }
  for (const auto& d : fs::directory_iterator(kRoot / "src")) {
    EXPECT_TRUE(folders.contains("src/" + d.path().filename().string() + "/"))
        << "README layout does not list src/" << d.path().filename().string() << "/";
  }
  for (const auto& [folder, ext] : {std::pair{"include/minifloat", ".h"}, {"docs", ".md"}, {"cli", ".cc"}}) {
    for (const auto& f : fs::directory_iterator(kRoot / folder)) {
      if (f.path().extension() != ext) continue;
      EXPECT_TRUE(named(f.path().filename().string()))
          << "README layout does not name " << folder << "/" << f.path().filename().string();
    }
  }
}

TEST(ReadmeLinks, EveryLinkPointsAtAFile) {
  int links = 0;
  for (std::string target : between(readme(), "](", ')')) {
    target = target.substr(0, target.find('#'));
    if (target.starts_with("http") || target.empty()) continue;
    ++links;
    EXPECT_TRUE(fs::exists(kRoot / target)) << "README links to " << target << ", which does not exist";
  }
  EXPECT_GE(links, 5);
}

TEST(ReadmeCommands, EverySubcommandItRunsExists) {
  const mf::test::Result help = mf::test::run({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  std::set<std::string> subcommands;
  std::istringstream in(help.out.substr(help.out.find("Subcommands:")));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string first;
    if (line.starts_with("  ") && words >> first) subcommands.insert(first);
  }
  ASSERT_GE(subcommands.size(), 20u) << help.out;
  const std::string text = readme();
  int uses = 0;
  for (const std::string_view prefix : {"./run ", "$ minifloat ", "`minifloat "}) {
    for (std::size_t i = text.find(prefix); i != std::string::npos; i = text.find(prefix, i + 1)) {
      std::size_t end = i + prefix.size();
      if (end >= text.size() || !std::islower(static_cast<unsigned char>(text[end]))) continue;  // ARGS, --help
      while (end < text.size() && (std::islower(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
      const std::string sub = text.substr(i + prefix.size(), end - i - prefix.size());
      ++uses;
      EXPECT_TRUE(subcommands.contains(sub))
          << "README runs `minifloat " << sub << "`, which `minifloat --help` does not list";
    }
  }
  EXPECT_GE(uses, 10);
}

// ---- citations of the specification: docs/spec.md and the other pages, by anchor ----

// The specification the tree once cited ("SPEC section N", "seed 00N") is not in the repository; docs/spec.md states
// it.

// Every text file of the tree that may cite: source, docs, tests, bindings, benchmarks, the README. Build trees,
// virtual environments and hidden folders are left out; so is this file, which names the old forms.
std::vector<fs::path> citing_files() {
  std::vector<fs::path> files{kRoot / "README.md"};
  for (const char* top : {"include", "src", "cli", "python", "web", "tests", "docs", "bench"}) {
    if (!fs::is_directory(kRoot / top)) continue;
    for (auto it = fs::recursive_directory_iterator(kRoot / top); it != fs::recursive_directory_iterator(); ++it) {
      const std::string name = it->path().filename().string();
      if (it->is_directory()) {
        if (name.starts_with("build") || name.starts_with(".") || name == "__pycache__" || name == "node_modules")
          it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file() || !has_doc_or_source_extension(name)) continue;
      if (it->path().lexically_relative(kRoot).generic_string() == "tests/cli/readme_test.cc") continue;
      files.push_back(it->path());
    }
  }
  return files;
}

std::string relative_to_root(const fs::path& p) { return p.lexically_relative(kRoot).generic_string(); }

// The old forms: "SPEC section(s) N", "SPEC N", "SPEC.md", "seed 00N" (any case).
bool cites_old_spec(const std::string& line) {
  if (line.find("SPEC section") != std::string::npos || line.find("SPEC.md") != std::string::npos) return true;
  for (std::size_t i = line.find("SPEC "); i != std::string::npos; i = line.find("SPEC ", i + 1)) {
    if (i + 5 < line.size() && std::isdigit(static_cast<unsigned char>(line[i + 5]))) return true;
  }
  std::string lower = line;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("seed 00") != std::string::npos;
}

bool anchor_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// GitHub's heading slug: lower case, punctuation dropped (letters, digits, '-', '_' and non-ASCII bytes kept), each
// space a '-'.
std::string slug(std::string_view heading) {
  std::string s;
  for (const char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u) || c == '-' || c == '_') {
      s += static_cast<char>(std::tolower(u));
    } else if (c == ' ') {
      s += '-';
    }
  }
  return s;
}

// The anchors a page offers: explicit <a id="..."> and its headings' slugs (outside fenced code; a repeated slug
// gets -1, -2, ... as on GitHub).
std::set<std::string> anchors_of(const fs::path& page) {
  std::set<std::string> anchors;
  const std::string text = mf::test::read_file(page.string());
  for (const std::string& id : between(text, "<a id=\"", '"')) anchors.insert(id);
  std::set<std::string> seen;
  bool fenced = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced || !line.starts_with("#")) continue;
    const std::size_t text_start = line.find_first_not_of('#');
    if (text_start == std::string::npos || line[text_start] != ' ') continue;
    std::string_view heading(line);
    heading.remove_prefix(text_start + 1);
    while (!heading.empty() && (heading.back() == ' ' || heading.back() == '\r')) heading.remove_suffix(1);
    std::string s = slug(heading);
    for (int n = 1; seen.contains(s); ++n) s = slug(heading) + "-" + std::to_string(n);
    seen.insert(s);
    anchors.insert(s);
  }
  return anchors;
}

TEST(SpecCitations, EveryCitedAnchorExists) {
  std::map<std::string, std::set<std::string>> pages;  // page path -> its anchors, read once
  int references = 0, files = 0;
  for (const fs::path& file : citing_files()) {
    const std::string rel = relative_to_root(file);
    const std::string text = mf::test::read_file(file.string());
    ++files;

    // (a) No citation of the specification outside the repository.
    std::istringstream in(text);
    int line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      if (!cites_old_spec(line)) continue;
      ADD_FAILURE() << rel << ":" << line_number << " cites the specification outside the repository (cite "
                    << "docs/spec.md#ANCHOR instead): " << line;
    }

    // (b) Every docs/NAME.md#ANCHOR and (NAME.md#ANCHOR) names a page that has that anchor.
    for (std::size_t hash = text.find(".md#"); hash != std::string::npos; hash = text.find(".md#", hash + 1)) {
      std::size_t start = hash;
      while (start > 0 && anchor_char(text[start - 1])) --start;
      const std::string name = text.substr(start, hash - start);
      fs::path page;
      if (start >= 5 && text.compare(start - 5, 5, "docs/") == 0) {
        page = kRoot / "docs" / (name + ".md");
      } else if (start >= 1 && text[start - 1] == '(') {
        page = file.parent_path() / (name + ".md");
      } else {
        continue;
      }
      std::size_t end = hash + 4;
      while (end < text.size() && anchor_char(text[end])) ++end;
      const std::string anchor = text.substr(hash + 4, end - hash - 4);
      const auto ref_line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(hash), '\n');
      ++references;
      if (name.empty() || anchor.empty()) {
        ADD_FAILURE() << rel << ":" << ref_line << ": a page reference without a page or an anchor";
        continue;
      }
      if (!fs::is_regular_file(page)) {
        ADD_FAILURE() << rel << ":" << ref_line << " cites " << relative_to_root(page) << "#" << anchor
                      << ", but there is no " << relative_to_root(page);
        continue;
      }
      const std::string key = page.lexically_normal().generic_string();
      if (!pages.contains(key)) pages[key] = anchors_of(page);
      EXPECT_TRUE(pages[key].contains(anchor))
          << rel << ":" << ref_line << " cites " << relative_to_root(page) << "#" << anchor << ", but "
          << relative_to_root(page) << " has no <a id=\"" << anchor << "\"> and no heading with that slug";
    }
  }
  EXPECT_GE(files, 100) << "the walk found too few files under " << kRoot;
  EXPECT_GE(references, 100) << "too few docs/NAME.md#ANCHOR citations found: is the walk reading the tree?";
}

// minifloat.h promises every public header in one include.
TEST(UmbrellaHeader, IncludesEveryPublicHeader) {
  const std::string umbrella = mf::test::read_file((kRoot / "include/minifloat/minifloat.h").string());
  for (const auto& f : fs::directory_iterator(kRoot / "include/minifloat")) {
    const std::string name = f.path().filename().string();
    if (name == "minifloat.h" || f.path().extension() != ".h") continue;
    EXPECT_NE(umbrella.find("#include \"minifloat/" + name + "\""), std::string::npos)
        << "include/minifloat/minifloat.h does not include " << name;
  }
}

}  // namespace
