// The README tells the truth about the tree: every path its Layout block names exists, every folder of the library,
// public header, doc and subcommand source is listed there, every link points at a file, and every subcommand it
// runs (`./run X`, `minifloat X`) is one the built command offers.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
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
      EXPECT_TRUE(subcommands.contains(sub)) << "README runs `minifloat " << sub
                                             << "`, which `minifloat --help` does not list";
    }
  }
  EXPECT_GE(uses, 10);
}

}  // namespace
