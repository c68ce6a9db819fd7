// Loads tests/golden/<format>.txt: every code of a format of 8 bits or fewer with its exact value, written from the
// standards' definitions by make_tables.py (independent of minifloat's code). Used by the decode and exhaustive tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mf::test {

struct GoldenCode {
  std::uint32_t code;
  double value;  // exact (strtod reads these short dyadic decimals exactly); NaN for NaN codes
};

inline std::vector<GoldenCode> load_golden(std::string_view format_name) {
  const std::string path = std::string(MF_GOLDEN_DIR) + "/" + std::string(format_name) + ".txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden table " + path);
  std::vector<GoldenCode> table;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    const std::string code = line.substr(0, space), value = line.substr(space + 1);
    GoldenCode g{static_cast<std::uint32_t>(std::stoul(code, nullptr, 16)), 0.0};
    if (value == "nan" || value == "-nan") {
      g.value = value[0] == '-' ? -NAN : NAN;
    } else if (value == "inf" || value == "-inf") {
      g.value = value[0] == '-' ? -INFINITY : INFINITY;
    } else {
      g.value = std::strtod(value.c_str(), nullptr);
    }
    if (g.code != table.size()) throw std::runtime_error("golden table " + path + " is out of order at " + code);
    table.push_back(g);
  }
  return table;
}

}  // namespace mf::test
