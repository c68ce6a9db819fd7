// libFuzzer target for the config.json rules (scripts/fuzz.sh builds and runs it): every rule set either accepts the
// text or throws HfConfigError; flags only follow from an accepted quantization_config. The input is config.json,
// optionally followed by a NUL byte and ModelOpt's hf_quant_config.json, and each dialect's rules are also applied by
// name: compressed-tensors' config groups (targets, group_size, mixed formats) and ModelOpt's quantized_layers are
// parsed into groups whose fields the checks promise.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "minifloat/hf_config.h"

namespace {

using mf::io::ConfigRules;

void check(const mf::io::HfConfig& c) {
  if (!c.quantization && (c.flags.fp8_attn || c.flags.mxfp4)) std::abort();
  if (c.rules == ConfigRules::deepinfer && !c.flags.mxfp8) std::abort();
  for (const mf::io::QuantGroup& g : c.groups) {
    if (g.group_size < 0 || g.num_bits < 0) std::abort();
    // ModelOpt's layers are groups that target themselves.
    if (c.rules == ConfigRules::modelopt && (g.targets.size() != 1 || g.targets[0] != g.name)) std::abort();
  }
  if (c.quantization && c.rules != ConfigRules::deepseek && c.rules != ConfigRules::deepinfer &&
      c.rules != ConfigRules::transformers_fp8) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = all.find('\0');
  const std::string_view text = all.substr(0, nul);
  const std::string_view mo = nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);
  for (const auto rules : {ConfigRules::detect, ConfigRules::deepseek, ConfigRules::deepinfer,
                           ConfigRules::transformers_fp8, ConfigRules::compressed_tensors, ConfigRules::modelopt,
                           ConfigRules::gpt_oss, ConfigRules::minifloat, ConfigRules::awq, ConfigRules::gptq}) {
    try {
      const mf::io::HfConfig c = mf::io::parse_hf_config(text, rules, mo);
      check(c);
      if (rules == ConfigRules::detect) (void)mf::io::hf_config_with_quantization(text, c.quantization);
    } catch (const mf::io::HfConfigError&) {
    }
  }
  return 0;
}
