// Uses the installed headers (constexpr codec, the generated version.h) and the installed library (describe, text).
#include <cstdio>
#include <minifloat/minifloat.h>
#include <minifloat/version.h>

static_assert(mf::encode(mf::e4m3, 0.3f) == 0x2a, "0.3 in e4m3 is 0 | 0101 | 010");
static_assert(mf::kVersion == MF_VERSION_STRING && !mf::kVersion.empty());

int main() {
  const mf::Description d = mf::describe(mf::e2m1, 0.3, 0.0625);
  std::printf("%s %s %s\n", mf::hex_code(mf::e2m1, d.code).c_str(), mf::shortest(d.value).c_str(),
              mf::bit_fields(mf::bf16, mf::encode(mf::bf16, 0.3f)).c_str());
  return d.code == 0x6 && d.value == 0.25 ? 0 : 1;
}
