// The checkpoint subcommands (inspect, convert, verify, memory, make-example-checkpoint) and what they share: a
// progress bar on a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace mf::cli {

void register_inspect(CLI::App& app);
void register_convert(CLI::App& app);  // convert (and its --merge step)
void register_verify(CLI::App& app);
void register_memory(CLI::App& app);
void register_example_checkpoint(CLI::App& app);

// GGUF files (cli/gguf.cc): by extension; what inspect, verify and dequantize print for one.
bool is_gguf(const std::string& path);
std::string inspect_gguf(const std::string& path, bool json);
std::string verify_gguf(const std::string& path);
std::string dequantize_gguf(const std::string& in, const std::string& out, bool bf16);

// The names --config-rules takes: "auto" and every dialect's rules (io::config_rules_named reads them).
inline std::vector<std::string> config_rule_names() {
  return {"auto",      "deepseek", "deepinfer", "transformers-fp8", "compressed-tensors", "modelopt", "gpt-oss",
          "minifloat", "awq",      "gptq"};
}

// "[#########.......]  1.2 / 3.4 GB  512 MB/s  0:04 left" redrawn on stderr when stderr is a terminal; silent
// otherwise (logs of cluster jobs stay clean).
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // ends the line
  void update(std::uint64_t done, std::uint64_t total);

 private:
  std::string label_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
  bool drawn_ = false;
};

// Bytes as "1.23 GB" (powers of 1000, as disks and the "865 GB" of docs/spec.md#v4-memory count).
std::string human_bytes(double bytes);

}  // namespace mf::cli
