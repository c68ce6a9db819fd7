// libFuzzer target for the config.json rules (scripts/fuzz.sh builds and runs it): every rule set either accepts the
// text or throws HfConfigError; flags only follow from an accepted quantization_config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "minifloat/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto rules :
       {mf::io::ConfigRules::detect, mf::io::ConfigRules::deepseek, mf::io::ConfigRules::deepinfer}) {
    try {
      const mf::io::HfConfig c = mf::io::parse_hf_config(text, rules);
      if (!c.quantization && (c.flags.fp8_attn || c.flags.mxfp4)) std::abort();
      if (c.rules == mf::io::ConfigRules::deepinfer && !c.flags.mxfp8) std::abort();
      (void)mf::io::hf_config_with_quantization(text, c.quantization);
    } catch (const mf::io::HfConfigError&) {
    }
  }
  return 0;
}
