// llama.cpp's name for a BPE tokenizer's pre-tokenizer (tokenizer.ggml.pre), chosen as convert_hf_to_gguf chooses it
// (get_vocab_base_pre): the tokenizer's encoding of a fixed text, hashed, looked up in the converter's table. The
// encoding is transformers' (tokenizers' pipeline: added tokens, normalizer, pre-tokenizer, BPE, post-processor),
// reproduced here for that one text; a component it does not reproduce is refused by name, never guessed.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "../../io/file.h"
#include "gguf_tokenizer.h"

namespace mf::io::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// ---- the converter's data (llama-cpp-python 0.3.36's vendor/llama.cpp/conversion/base.py) ----

// chktxt, as UTF-8.
constexpr std::string_view kChkTxt =
    "\x0a \x0a\x0a \x0a\x0a\x0a \x09 \x09\x09 \x09\x0a  \x0a   \x0a    \x0a     \x0a\xf0\x9f\x9a\x80 (norm"
    "al) \xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f (multiple emojis concatenated) \xe2\x9c\x85"
    " \xf0\x9f\xa6\x99\xf0\x9f\xa6\x99 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 \xe1\x9e"
    "\x80\xe1\x9e\xb6\xe1\x9e\x93\xe1\x9f\x8b\xe1\x9e\x8f\xe1\x9f\x82\xe1\x9e\x96\xe1\x9e\xb7\xe1\x9e\x9f\xe1"
    "\x9f\x81\xe1\x9e\x9f\xe1\x9e\xa2\xe1\x9e\xb6\xe1\x9e\x85\xf0\x9f\x98\x81 ?\xe6\x88\x91\xe6\x83\xb3\xe5"
    "\x9c\xa8"
    "apple\xe5\xb7\xa5\xe4\xbd\x9c"
    "1314151\xe5\xa4\xa9\xef\xbd\x9e ------======= \xd0\xbd\xd0\xb5"
    "\xd1\x89\xd0\xbe \xd0\xbd\xd0\xb0 \xd0\x91\xd1\x8a\xd0\xbb\xd0\xb3\xd0\xb0\xd1\x80\xd1\x81\xd0\xba\xd0"
    "\xb8 ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'"
    "ll make it, 'D you like some tea? We'Ve a'lL";

// The general category of every code point of chktxt, of ASCII and of the byte-level alphabet (the only characters
// the fingerprint's regexes ever see), from Python's unicodedata.
struct Category {
  char32_t cp;
  const char* gc;
};
constexpr Category kCategories[] = {
    {0x0000, "Cc"},  {0x0001, "Cc"}, {0x0002, "Cc"}, {0x0003, "Cc"},  {0x0004, "Cc"},  {0x0005, "Cc"},  {0x0006, "Cc"},
    {0x0007, "Cc"},  {0x0008, "Cc"}, {0x0009, "Cc"}, {0x000a, "Cc"},  {0x000b, "Cc"},  {0x000c, "Cc"},  {0x000d, "Cc"},
    {0x000e, "Cc"},  {0x000f, "Cc"}, {0x0010, "Cc"}, {0x0011, "Cc"},  {0x0012, "Cc"},  {0x0013, "Cc"},  {0x0014, "Cc"},
    {0x0015, "Cc"},  {0x0016, "Cc"}, {0x0017, "Cc"}, {0x0018, "Cc"},  {0x0019, "Cc"},  {0x001a, "Cc"},  {0x001b, "Cc"},
    {0x001c, "Cc"},  {0x001d, "Cc"}, {0x001e, "Cc"}, {0x001f, "Cc"},  {0x0020, "Zs"},  {0x0021, "Po"},  {0x0022, "Po"},
    {0x0023, "Po"},  {0x0024, "Sc"}, {0x0025, "Po"}, {0x0026, "Po"},  {0x0027, "Po"},  {0x0028, "Ps"},  {0x0029, "Pe"},
    {0x002a, "Po"},  {0x002b, "Sm"}, {0x002c, "Po"}, {0x002d, "Pd"},  {0x002e, "Po"},  {0x002f, "Po"},  {0x0030, "Nd"},
    {0x0031, "Nd"},  {0x0032, "Nd"}, {0x0033, "Nd"}, {0x0034, "Nd"},  {0x0035, "Nd"},  {0x0036, "Nd"},  {0x0037, "Nd"},
    {0x0038, "Nd"},  {0x0039, "Nd"}, {0x003a, "Po"}, {0x003b, "Po"},  {0x003c, "Sm"},  {0x003d, "Sm"},  {0x003e, "Sm"},
    {0x003f, "Po"},  {0x0040, "Po"}, {0x0041, "Lu"}, {0x0042, "Lu"},  {0x0043, "Lu"},  {0x0044, "Lu"},  {0x0045, "Lu"},
    {0x0046, "Lu"},  {0x0047, "Lu"}, {0x0048, "Lu"}, {0x0049, "Lu"},  {0x004a, "Lu"},  {0x004b, "Lu"},  {0x004c, "Lu"},
    {0x004d, "Lu"},  {0x004e, "Lu"}, {0x004f, "Lu"}, {0x0050, "Lu"},  {0x0051, "Lu"},  {0x0052, "Lu"},  {0x0053, "Lu"},
    {0x0054, "Lu"},  {0x0055, "Lu"}, {0x0056, "Lu"}, {0x0057, "Lu"},  {0x0058, "Lu"},  {0x0059, "Lu"},  {0x005a, "Lu"},
    {0x005b, "Ps"},  {0x005c, "Po"}, {0x005d, "Pe"}, {0x005e, "Sk"},  {0x005f, "Pc"},  {0x0060, "Sk"},  {0x0061, "Ll"},
    {0x0062, "Ll"},  {0x0063, "Ll"}, {0x0064, "Ll"}, {0x0065, "Ll"},  {0x0066, "Ll"},  {0x0067, "Ll"},  {0x0068, "Ll"},
    {0x0069, "Ll"},  {0x006a, "Ll"}, {0x006b, "Ll"}, {0x006c, "Ll"},  {0x006d, "Ll"},  {0x006e, "Ll"},  {0x006f, "Ll"},
    {0x0070, "Ll"},  {0x0071, "Ll"}, {0x0072, "Ll"}, {0x0073, "Ll"},  {0x0074, "Ll"},  {0x0075, "Ll"},  {0x0076, "Ll"},
    {0x0077, "Ll"},  {0x0078, "Ll"}, {0x0079, "Ll"}, {0x007a, "Ll"},  {0x007b, "Ps"},  {0x007c, "Sm"},  {0x007d, "Pe"},
    {0x007e, "Sm"},  {0x007f, "Cc"}, {0x00a1, "Po"}, {0x00a2, "Sc"},  {0x00a3, "Sc"},  {0x00a4, "Sc"},  {0x00a5, "Sc"},
    {0x00a6, "So"},  {0x00a7, "Po"}, {0x00a8, "Sk"}, {0x00a9, "So"},  {0x00aa, "Lo"},  {0x00ab, "Pi"},  {0x00ac, "Sm"},
    {0x00ae, "So"},  {0x00af, "Sk"}, {0x00b0, "So"}, {0x00b1, "Sm"},  {0x00b2, "No"},  {0x00b3, "No"},  {0x00b4, "Sk"},
    {0x00b5, "Ll"},  {0x00b6, "Po"}, {0x00b7, "Po"}, {0x00b8, "Sk"},  {0x00b9, "No"},  {0x00ba, "Lo"},  {0x00bb, "Pf"},
    {0x00bc, "No"},  {0x00bd, "No"}, {0x00be, "No"}, {0x00bf, "Po"},  {0x00c0, "Lu"},  {0x00c1, "Lu"},  {0x00c2, "Lu"},
    {0x00c3, "Lu"},  {0x00c4, "Lu"}, {0x00c5, "Lu"}, {0x00c6, "Lu"},  {0x00c7, "Lu"},  {0x00c8, "Lu"},  {0x00c9, "Lu"},
    {0x00ca, "Lu"},  {0x00cb, "Lu"}, {0x00cc, "Lu"}, {0x00cd, "Lu"},  {0x00ce, "Lu"},  {0x00cf, "Lu"},  {0x00d0, "Lu"},
    {0x00d1, "Lu"},  {0x00d2, "Lu"}, {0x00d3, "Lu"}, {0x00d4, "Lu"},  {0x00d5, "Lu"},  {0x00d6, "Lu"},  {0x00d7, "Sm"},
    {0x00d8, "Lu"},  {0x00d9, "Lu"}, {0x00da, "Lu"}, {0x00db, "Lu"},  {0x00dc, "Lu"},  {0x00dd, "Lu"},  {0x00de, "Lu"},
    {0x00df, "Ll"},  {0x00e0, "Ll"}, {0x00e1, "Ll"}, {0x00e2, "Ll"},  {0x00e3, "Ll"},  {0x00e4, "Ll"},  {0x00e5, "Ll"},
    {0x00e6, "Ll"},  {0x00e7, "Ll"}, {0x00e8, "Ll"}, {0x00e9, "Ll"},  {0x00ea, "Ll"},  {0x00eb, "Ll"},  {0x00ec, "Ll"},
    {0x00ed, "Ll"},  {0x00ee, "Ll"}, {0x00ef, "Ll"}, {0x00f0, "Ll"},  {0x00f1, "Ll"},  {0x00f2, "Ll"},  {0x00f3, "Ll"},
    {0x00f4, "Ll"},  {0x00f5, "Ll"}, {0x00f6, "Ll"}, {0x00f7, "Sm"},  {0x00f8, "Ll"},  {0x00f9, "Ll"},  {0x00fa, "Ll"},
    {0x00fb, "Ll"},  {0x00fc, "Ll"}, {0x00fd, "Ll"}, {0x00fe, "Ll"},  {0x00ff, "Ll"},  {0x0100, "Lu"},  {0x0101, "Ll"},
    {0x0102, "Lu"},  {0x0103, "Ll"}, {0x0104, "Lu"}, {0x0105, "Ll"},  {0x0106, "Lu"},  {0x0107, "Ll"},  {0x0108, "Lu"},
    {0x0109, "Ll"},  {0x010a, "Lu"}, {0x010b, "Ll"}, {0x010c, "Lu"},  {0x010d, "Ll"},  {0x010e, "Lu"},  {0x010f, "Ll"},
    {0x0110, "Lu"},  {0x0111, "Ll"}, {0x0112, "Lu"}, {0x0113, "Ll"},  {0x0114, "Lu"},  {0x0115, "Ll"},  {0x0116, "Lu"},
    {0x0117, "Ll"},  {0x0118, "Lu"}, {0x0119, "Ll"}, {0x011a, "Lu"},  {0x011b, "Ll"},  {0x011c, "Lu"},  {0x011d, "Ll"},
    {0x011e, "Lu"},  {0x011f, "Ll"}, {0x0120, "Lu"}, {0x0121, "Ll"},  {0x0122, "Lu"},  {0x0123, "Ll"},  {0x0124, "Lu"},
    {0x0125, "Ll"},  {0x0126, "Lu"}, {0x0127, "Ll"}, {0x0128, "Lu"},  {0x0129, "Ll"},  {0x012a, "Lu"},  {0x012b, "Ll"},
    {0x012c, "Lu"},  {0x012d, "Ll"}, {0x012e, "Lu"}, {0x012f, "Ll"},  {0x0130, "Lu"},  {0x0131, "Ll"},  {0x0132, "Lu"},
    {0x0133, "Ll"},  {0x0134, "Lu"}, {0x0135, "Ll"}, {0x0136, "Lu"},  {0x0137, "Ll"},  {0x0138, "Ll"},  {0x0139, "Lu"},
    {0x013a, "Ll"},  {0x013b, "Lu"}, {0x013c, "Ll"}, {0x013d, "Lu"},  {0x013e, "Ll"},  {0x013f, "Lu"},  {0x0140, "Ll"},
    {0x0141, "Lu"},  {0x0142, "Ll"}, {0x0143, "Lu"}, {0x0411, "Lu"},  {0x0430, "Ll"},  {0x0433, "Ll"},  {0x0435, "Ll"},
    {0x0438, "Ll"},  {0x043a, "Ll"}, {0x043b, "Ll"}, {0x043d, "Ll"},  {0x043e, "Ll"},  {0x0440, "Ll"},  {0x0441, "Ll"},
    {0x0449, "Ll"},  {0x044a, "Ll"}, {0x1780, "Lo"}, {0x1785, "Lo"},  {0x178f, "Lo"},  {0x1793, "Lo"},  {0x1796, "Lo"},
    {0x179f, "Lo"},  {0x17a2, "Lo"}, {0x17b6, "Mc"}, {0x17b7, "Mn"},  {0x17c1, "Mc"},  {0x17c2, "Mc"},  {0x17cb, "Mn"},
    {0x200d, "Cf"},  {0x2705, "So"}, {0x4f5c, "Lo"}, {0x5728, "Lo"},  {0x5929, "Lo"},  {0x5de5, "Lo"},  {0x60f3, "Lo"},
    {0x6211, "Lo"},  {0xfe0f, "Mn"}, {0xff5e, "Sm"}, {0x1f32b, "So"}, {0x1f601, "So"}, {0x1f636, "So"}, {0x1f680, "So"},
    {0x1f999, "So"},
};

// get_vocab_base_pre's table: chkhsh -> tokenizer.ggml.pre, in its order.
constexpr std::pair<std::string_view, std::string_view> kPreTable[] = {
    {"b6e8e1518dc4305be2fe39c313ed643381c4da5db34a98f6a04c093f8afbe99b", "chatglm-bpe"},
    {"81d72c7348a9f0ebe86f23298d37debe0a5e71149e29bd283904c02262b27516", "chatglm-bpe"},
    {"a1336059768a55c99a734006ffb02203cd450fed003e9a71886c88acf24fdbc2", "glm4"},
    {"9ca2dd618e8afaf09731a7cf6e2105b373ba6a1821559f258b272fe83e6eb902", "glm4"},
    {"cdf5f35325780597efd76153d4d1c16778f766173908894c04afc20108536267", "glm4"},
    {"1431a23e583c97432bc230bff598d103ddb5a1f89960c8f1d1051aaa944d0b35", "minerva-7b"},
    {"7e57df22b1fe23a7b1e1c7f3dc4e3f96d43a4eb0836d0c6bdc3436d7b2f1c664", "hunyuan"},
    {"bba3b3366b646dbdded5dbc42d59598b849371afc42f7beafa914afaa5b70aa6", "hunyuan-dense"},
    {"e6ddf9c6686791c12d698d34c31ab9be1fea9af5a3d9a6909783ab382198ae1c", "hy_v4"},
    {"a6b57017d60e6edb4d88ecc2845188e0eb333a70357e45dcc9b53964a73bbae6", "falcon-h1"},
    {"60476e1243776c4fb1b993dbd7a5f15ac22f83c80afdf425fa5ae01c8d44ef86", "falcon-h1"},
    {"3eda48b4c4dc7de733d1a8b3e3b4a85243dbbf704da2ee9d42c6beced8897896", "falcon-h1"},
    {"48f8e02c0359c0bbdd82f26909171fac1c18a457bb47573ed1fe3bbb2c1cfd4b", "falcon-h1"},
    {"81212dc7cdb7e0c1074ca62c5aeab0d43c9f52b8a737be7b12a777c953027890", "kimi-k2"},
    {"d4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c", "qwen2"},
    {"1444df51289cfa8063b96f0e62b1125440111bc79a52003ea14b6eac7016fd5f", "qwen35"},
    {"66b8d4e19ab16c3bfd89bce5d785fb7e0155e8648708a1f42077cb9fe002c273", "grok-2"},
    {"b3d1dd861f1d4c5c0d2569ce36baf3f90fe8a102db3de50dd71ff860d91be3df", "jina-v2-de"},
    {"0fe1cf6eda062318a1af7270f3331a85c539a01778ff948e24388e949c5282f4", "gpt-2"},
    {"9e454714343b69b99b71795c1d27a68c2a1d15dab111f4d353109f966af29da7", "lfm2"},
    {"846deafc5b0fa786186fa4ae6c7b49903cf2f1d1895bdb80b9120d60be135252", "gemma4"},
    {"0a766d034107bc736a3f2dc4968fd62e54a3570f1454443e0c5a4cc6bd7941ed", "spark2_5"},
    {"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5", "llama-bpe"},
    {"049ecf7629871e3041641907f3de7c733e4dbfdc736f57d882ba0b0845599754", "deepseek-llm"},
    {"347715f544604f9118bb75ed199f68779f423cabb20db6de6f31b908d04d7821", "deepseek-coder"},
    {"8aeee3860c56296a157a1fe2fad249ec40aa59b1bb5709f4ade11c4e6fe652ed", "falcon"},
    {"0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f", "jina-v2-en"},
    {"9d032fcbd5501f4a38150912590928bfb36091efb5df11b8e2124b0390e3fb1e", "falcon3"},
    {"8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7", "bert-bge-large"},
    {"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "olmo"},
    {"35d91631860c815f952d711435f48d356ebac988362536bed955d43bfa436e34", "starcoder"},
    {"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},
    {"32d85c31273f8019248f2559fed492d929ea28b17e51d81d3bb36fff23ca72b3", "stablelm2"},
    {"6221ad2852e85ce96f791f476e0b390cf9b474c9e3d1362f53a24a06dc8220ff", "refact"},
    {"9c2227e4dd922002fb81bde4fc02b0483ca4f12911410dee2255e4987644e3f8", "command-r"},
    {"d772b220ace2baec124bed8cfafce0ead7d6c38a4b65ef11261cf9d5d62246d1", "tiny_aya"},
    {"52df12b4c8d4176e7481aab4b6e8454d1fd0a210a04a574f6d4e067d10e23c3e", "cohere2moe"},
    {"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea", "qwen2"},
    {"a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e", "dbrx"},
    {"c7699093ba4255a91e702aa38a596aa81669f3525dae06c2953267dde580f448", "jina-v1-en"},
    {"171aeeedd6fb548d418a7461d053f11b6f1f1fc9b387bd66640d28a4b9f5c643", "jina-v2-es"},
    {"27949a2493fc4a9f53f5b9b029c82689cfbe5d3a1929bb25e043089e28466de6", "jina-v2-de"},
    {"a023e9fdc5a11f034d3ef515b92350e56fb2af1f66c6b6811a4444ea9bf8763d", "jina-v5-nano"},
    {"c136ed14d01c2745d4f60a9596ae66800e2b61fa45643e72436041855ad4089d", "smaug-bpe"},
    {"c7ea5862a53e4272c035c8238367063e2b270d51faa48c0f09e9d5b54746c360", "poro-chat"},
    {"7967bfa498ade6b757b064f31e964dddbb80f8f9a4d68d4ba7998fcf281c531a", "jina-v2-code"},
    {"7fc505bd3104ca1083b150b17d088b59534ede9bde81f0dd2090967d7fe52cee", "viking"},
    {"b53802fb28e26d645c3a310b34bfe07da813026ec7c7716883404d5e0f8b1901", "jais"},
    {"bc5108ee1eb6a3d600cadd065f63190fbd0554dbc9e4bbd6a0d977970afc8d2a", "jais-2"},
    {"7b3e7548e4308f52a76e8229e4e6cc831195d0d1df43aed21ac6c93da05fec5f", "codeshell"},
    {"63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e", "tekken"},
    {"855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249", "smollm"},
    {"3c30d3ad1d6b64202cd222813e7736c2db6e1bd6d67197090fc1211fbc612ae7", "bloom"},
    {"bc01ce58980e1db43859146dc51b1758b3b88729b217a74792e9f8d43e479d21", "gpt3-finnish"},
    {"4e2b24cc4770243d65a2c9ec19770a72f08cffc161adbb73fcbb6b7dd45a0aae", "exaone"},
    {"fcace8b9cac38ce847670c970cd5892031a753a1ef381abd1d9af00f713da085", "phi-2"},
    {"60824e3c0d9401f89943cbb2fff727f0e2d4c545ba4df2d6e4f09a6db0f5b450", "chameleon"},
    {"8b5a93ed704057481f240da0be7e7dca721d7f8f4755263b6807227a2cbeae65", "roberta-bpe"},
    {"ad851be1dba641f2e3711822f816db2c265f788b37c63b4e1aeacb9ee92de8eb", "gigachat"},
    {"d4c8f286ea6b520b3d495c4455483cfa2302c0cfcd4be05d781b6a8a0a7cdaf1", "megrez"},
    {"877081d19cf6996e2c4ff0e1236341e9b7bde288f5311a56a937f0afbbb3aeb5", "deepseek-v3"},
    {"b3f499bb4255f8ca19fccd664443283318f2fd2414d5e0b040fbdd0cc195d6c5", "deepseek-r1-qwen"},
    {"ccc2ef013c104be7bae2965776d611e1d7a8a2a9c547dd93a682c9a9fc80352e", "gpt-4o"},
    {"7dec86086fcc38b66b7bc1575a160ae21cf705be7718b9d5598190d7c12db76f", "superbpe"},
    {"1994ffd01900cfb37395608534236ecd63f2bd5995d6cb1004dda1af50240f15", "trillion"},
    {"96a5f08be6259352137b512d4157e333e21df7edd3fcd152990608735a65b224", "bailingmoe"},
    {"d353350c764d8c3b39c763113960e4fb4919bea5fbf208a0e3b22e8469dc7406", "llama4"},
    {"0e9433cbbb161f89e264eb32e8e64bfe69e834973ffca5d41d3948a604a3e2a3", "pixtral"},
    {"d5f1dd6f980fec569fb218a81a7658ac45fc56b38c5a0adeb1c232fbe04ef5ec", "seed-coder"},
    {"b0a6b1c0bd5998ebd9df08611efde34a4ff03faed45ae09c43e6b31ebd4b94cf", "a.x-4.0"},
    {"f6791d196f87ce6b56a7d234be618e0d58f8cda3549416635b2bebcd22cd95c4", "midm-2.0"},
    {"169bf0296a13c4d9b7672313f749eb36501d931022de052aad6e36f2bf34dd51", "lfm2"},
    {"2085e1638f6c377a0aa4ead21b27bb4cb941bf800df86ed391011769c1758dfb", "exaone4"},
    {"a1e163ecab2e718a4c829d1148b6e86824ec36163bb71941c3dca9cd5ac25756", "mellum"},
    {"a0b64b4385f123663873756336c085744376d015ff328bb1d901598f63c44152", "modern-bert"},
    {"49fc0303c9e0d2c2c565c510f64b2d9b271276acdcdadff733249eda9f7d59df", "afmoe"},
    {"9b1be57e70d20d9501b2b3186e792d81181ae36ada3903c26f9fea418cf87206", "bailingmoe2"},
    {"53e325976a6e142379c19b09afcae354f2f496f147afa8f9e189a33fe4e3024e", "granite-docling"},
    {"f4f37b6c8eb9ea29b3eac6bb8c8487c5ab7885f8d8022e67edc1c68ce8403e95", "minimax-m2"},
    {"4a2e2abae11ca2b86d570fc5b44be4d5eb5e72cc8f22dd136a94b37da83ab665", "kormo"},
    {"9d70134b369a70e5735009b6de918f7581b5211f7c074d1f89f753aea8248af1", "youtu"},
    {"16389f0a1f51ee53e562ffd51c371dc508639ab0e4261502071836e50e223e91", "solar-open"},
    {"6c81ce329e0802883b22eabab0d3fa48357337ef1ecb45443828bf1f6254833f", "exaone-moe"},
    {"d30d75d9059f1aa2c19359de71047b3ae408c70875e8a3ccf8c5fba56c9d8af4", "qwen35"},
    {"b4b8ca1f9769494fbd956ebc4c249de6131fb277a4a3345a7a92c7dd7a55808d", "joyai-llm"},
    {"e4d54df1ebc1f2b91acd986c5b51aa50837d5faf7c7398e73c1f9e9ee5d19869", "kanana2"},
    {"862f827721df956049dff5ca81a57f29e575280bc622e290d3bf4e35eca29015", "f2llmv2"},
    {"62f6fb0a6fd5098caeabb19b07a5c1099cafc8b9c40eab6ea89ece4ec02fbc57", "sarvam-moe"},
    {"f728162c1315c26e40249849799b4ba3fe584c32084b4795b03eb295e63cb5af", "talkie"},
    {"36f3066e97b7f3994b379aaacde306c1444c6ae84e81a5ae3cd2b7ed3b8c42d4", "minicpm5"},
    {"f241072145675bf8322086f115aebad05e9f869557a238bf2150a2a417d1bf60", "granite-embed-multi-97m"},
    {"789696f5946cc0fc59371f39f6097cafed196b3acded6140432f26bbb1ae1669", "granite-embed-multi-311m"},
    {"9dcf830ee9990cdbf78cc523a5f7bd9ad8f3f9890c2d3581d2785ad10f07049d", "mellum2"},
    {"972da7b59cec44d1f0a490a86c96df53859e486e481563e5dddac155013d87ac", "laguna"},
    {"653660222fb704f61cbf2b618a8ae6502b7f8b20c980f9a5de07ed78e13319cd", "ufakzeka"},
};

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- text ----

std::u32string utf32(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

std::string utf8(std::u32string_view s) {
  std::string out;
  for (const char32_t c : s) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::string_view category(char32_t cp) {
  const auto it = std::lower_bound(std::begin(kCategories), std::end(kCategories), cp,
                                   [](const Category& c, char32_t x) { return c.cp < x; });
  if (it == std::end(kCategories) || it->cp != cp) {
    throw Unsupported(cat("U+", static_cast<std::uint32_t>(cp),
                          " is outside the fingerprint text (an added token or normalizer changed it)"));
  }
  return it->gc;
}

// Unicode's White_Space property (Oniguruma's \s).
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// GPT-2's byte-level alphabet (bytes_to_unicode): printable bytes stand for themselves, the rest for 256 + n.
const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    }
    return t;
  }();
  return table;
}

// ---- a backtracking regex over code points: the constructs tokenizers' pre-tokenizer patterns use ----

struct Node;
using NodePtr = std::unique_ptr<Node>;
struct ClassItem {
  enum Kind { range, property, space, digit, word } kind = range;
  char32_t lo = 0, hi = 0;
  std::string prop;
  bool negated = false;
};
struct Node {
  enum Kind { alt, seq, chr, cls, any, repeat, look, begin, end } kind = alt;
  std::vector<NodePtr> kids;
  char32_t c = 0;
  bool icase = false;
  std::vector<ClassItem> items;
  bool negated = false;  // a class's [^...], a lookahead's (?!...)
  int min = 0, max = -1;
  bool greedy = true, possessive = false;
};

NodePtr node(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

ClassItem class_item(ClassItem::Kind k, bool negated = false, char32_t lo = 0, char32_t hi = 0) {
  ClassItem c;
  c.kind = k;
  c.negated = negated;
  c.lo = lo;
  c.hi = hi;
  return c;
}

char32_t lower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

bool prop_matches(const std::string& prop, char32_t c) {
  const std::string_view gc = category(c);
  if (prop.size() == 1) return gc[0] == prop[0];
  if (prop.size() == 2) return gc == prop;
  throw Unsupported(cat("\\p{", prop, "}"));
}

bool item_matches(const ClassItem& it, char32_t c, bool icase) {
  bool m = false;
  switch (it.kind) {
    case ClassItem::range:
      m = (c >= it.lo && c <= it.hi) ||
          (icase && c < 128 &&
           ((lower(c) >= it.lo && lower(c) <= it.hi) || (c >= 'a' && c <= 'z' && c - 32 >= it.lo && c - 32 <= it.hi)));
      break;
    case ClassItem::property: m = prop_matches(it.prop, c); break;
    case ClassItem::space: m = is_space(c); break;
    case ClassItem::digit: m = category(c) == "Nd"; break;
    case ClassItem::word: {
      const std::string_view gc = category(c);
      m = gc[0] == 'L' || gc[0] == 'M' || gc == "Nd" || gc == "Pc";
      break;
    }
  }
  return m != it.negated;
}

class RegexParser {
 public:
  explicit RegexParser(std::u32string p) : p_(std::move(p)) {}
  NodePtr parse() {
    NodePtr n = alternation(false);
    if (i_ != p_.size()) throw Unsupported("an unbalanced ')'");
    return n;
  }

 private:
  std::u32string p_;
  std::size_t i_ = 0;

  bool more() const { return i_ < p_.size(); }
  char32_t peek() const { return p_[i_]; }
  bool eat(char32_t c) {
    if (more() && peek() == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool eat(std::u32string_view s) {
    if (p_.compare(i_, s.size(), s) == 0) {
      i_ += s.size();
      return true;
    }
    return false;
  }

  NodePtr alternation(bool icase) {
    auto n = node(Node::alt);
    n->kids.push_back(sequence(icase));
    while (eat(U'|')) n->kids.push_back(sequence(icase));
    return n;
  }
  NodePtr sequence(bool icase) {
    auto n = node(Node::seq);
    while (more() && peek() != U'|' && peek() != U')') n->kids.push_back(quantified(icase));
    return n;
  }
  int number() {
    int v = 0;
    bool any = false;
    while (more() && peek() >= U'0' && peek() <= U'9') {
      v = v * 10 + static_cast<int>(peek() - U'0');
      ++i_;
      any = true;
    }
    if (!any) throw Unsupported("a {m,n} quantifier without a number");
    return v;
  }
  NodePtr quantified(bool icase) {
    NodePtr atom = this->atom(icase);
    while (more()) {
      int lo = 0, hi = -1;
      if (eat(U'*')) {
      } else if (eat(U'+')) {
        lo = 1;
      } else if (eat(U'?')) {
        hi = 1;
      } else if (peek() == U'{') {
        ++i_;
        lo = number();
        hi = lo;
        if (eat(U',')) hi = more() && peek() == U'}' ? -1 : number();
        if (!eat(U'}')) throw Unsupported("a {m,n} quantifier");
      } else {
        break;
      }
      auto r = node(Node::repeat);
      r->min = lo;
      r->max = hi;
      if (eat(U'?'))
        r->greedy = false;
      else if (eat(U'+'))
        r->possessive = true;
      r->kids.push_back(std::move(atom));
      atom = std::move(r);
    }
    return atom;
  }
  char32_t hex(std::size_t digits) {
    char32_t v = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      if (!more()) throw Unsupported("a short \\x or \\u escape");
      const char32_t d = peek();
      ++i_;
      v = v * 16 + (d >= U'0' && d <= U'9' ? d - U'0' : (lower(d) - U'a' + 10));
    }
    return v;
  }
  // An escape after '\': a class item (\s, \p{L}, ...) or one character.
  std::optional<ClassItem> escape_item(char32_t& ch) {
    const char32_t e = peek();
    ++i_;
    switch (e) {
      case U's': return class_item(ClassItem::space);
      case U'S': return class_item(ClassItem::space, true);
      case U'd': return class_item(ClassItem::digit);
      case U'D': return class_item(ClassItem::digit, true);
      case U'w': return class_item(ClassItem::word);
      case U'W': return class_item(ClassItem::word, true);
      case U'p':
      case U'P': {
        ClassItem it = class_item(ClassItem::property);
        it.negated = e == U'P';
        if (eat(U'{')) {
          while (more() && peek() != U'}') it.prop.push_back(static_cast<char>(p_[i_++]));
          if (!eat(U'}')) throw Unsupported("an unclosed \\p{");
        } else {
          it.prop.push_back(static_cast<char>(p_[i_++]));
        }
        if (it.prop.empty() || it.prop.size() > 2) throw Unsupported(cat("\\p{", it.prop, "}"));
        return it;
      }
      case U'r': ch = U'\r'; return std::nullopt;
      case U'n': ch = U'\n'; return std::nullopt;
      case U't': ch = U'\t'; return std::nullopt;
      case U'f': ch = U'\f'; return std::nullopt;
      case U'v': ch = U'\v'; return std::nullopt;
      case U'x':
        if (eat(U'{')) {
          ch = 0;
          while (more() && peek() != U'}') ch = ch * 16 + hex(1);
          if (!eat(U'}')) throw Unsupported("an unclosed \\x{");
        } else {
          ch = hex(2);
        }
        return std::nullopt;
      case U'u': ch = hex(4); return std::nullopt;
      default:
        if ((e >= U'a' && e <= U'z') || (e >= U'A' && e <= U'Z') || (e >= U'0' && e <= U'9')) {
          throw Unsupported(cat("the escape \\", utf8(std::u32string(1, e))));
        }
        ch = e;  // an escaped punctuation character stands for itself
        return std::nullopt;
    }
  }
  NodePtr char_class(bool icase) {
    auto n = node(Node::cls);
    n->icase = icase;
    n->negated = eat(U'^');
    bool first = true;
    while (more() && (peek() != U']' || first)) {
      first = false;
      if (peek() == U'[') throw Unsupported("a nested character class");
      char32_t lo = 0;
      if (eat(U'\\')) {
        if (std::optional<ClassItem> it = escape_item(lo)) {
          n->items.push_back(*it);
          continue;
        }
      } else {
        lo = p_[i_++];
      }
      char32_t hi = lo;
      if (more() && peek() == U'-' && i_ + 1 < p_.size() && p_[i_ + 1] != U']') {
        ++i_;
        if (eat(U'\\')) {
          if (escape_item(hi)) throw Unsupported("a class item as a range's end");
        } else {
          hi = p_[i_++];
        }
      }
      n->items.push_back(class_item(ClassItem::range, false, lo, hi));
    }
    if (!eat(U']')) throw Unsupported("an unclosed '['");
    return n;
  }
  NodePtr group(bool icase) {
    Node::Kind kind = Node::alt;
    bool negated = false;
    if (eat(U"?:")) {
    } else if (eat(U"?i:")) {
      icase = true;
    } else if (eat(U"?=")) {
      kind = Node::look;
    } else if (eat(U"?!")) {
      kind = Node::look;
      negated = true;
    } else if (more() && peek() == U'?') {
      throw Unsupported("a group kind other than (?:, (?i:, (?= and (?!");
    }
    NodePtr inner = alternation(icase);
    if (!eat(U')')) throw Unsupported("an unclosed '('");
    if (kind == Node::alt) return inner;
    auto n = node(Node::look);
    n->negated = negated;
    n->kids.push_back(std::move(inner));
    return n;
  }
  NodePtr atom(bool icase) {
    const char32_t c = peek();
    ++i_;
    if (c == U'(') return group(icase);
    if (c == U'[') return char_class(icase);
    if (c == U'.') return node(Node::any);
    if (c == U'^') return node(Node::begin);
    if (c == U'$') return node(Node::end);
    if (c == U'*' || c == U'+' || c == U'?' || c == U'{') throw Unsupported("a quantifier with nothing before it");
    char32_t ch = c;
    if (c == U'\\') {
      if (std::optional<ClassItem> it = escape_item(ch)) {
        auto n = node(Node::cls);
        n->items.push_back(*it);
        return n;
      }
    }
    auto n = node(Node::chr);
    n->c = ch;
    n->icase = icase;
    return n;
  }
};

class Matcher {
 public:
  Matcher(const Node& root, const std::u32string& s) : root_(root), s_(s) {}
  // The end of the match starting at `at`, or nullopt.
  std::optional<std::size_t> match_at(std::size_t at) {
    std::optional<std::size_t> end;
    match(root_, at, [&](std::size_t j) {
      end = j;
      return true;
    });
    return end;
  }

 private:
  using Cont = std::function<bool(std::size_t)>;
  const Node& root_;
  const std::u32string& s_;

  bool one(const Node& n, std::size_t i) const {
    if (i >= s_.size()) return false;
    const char32_t c = s_[i];
    switch (n.kind) {
      case Node::chr: return c == n.c || (n.icase && lower(c) == lower(n.c));
      case Node::any: return c != U'\n';
      case Node::cls: {
        bool m = false;
        for (const ClassItem& it : n.items) m = m || item_matches(it, c, n.icase);
        return m != n.negated;
      }
      default: return false;
    }
  }

  bool match(const Node& n, std::size_t i, const Cont& k) {
    switch (n.kind) {
      case Node::chr:
      case Node::any:
      case Node::cls: return one(n, i) && k(i + 1);
      case Node::begin: return i == 0 && k(i);
      case Node::end: return i == s_.size() && k(i);
      case Node::alt:
        for (const NodePtr& kid : n.kids) {
          if (match(*kid, i, k)) return true;
        }
        return false;
      case Node::seq: return seq(n, 0, i, k);
      case Node::look: {
        const bool found = match(*n.kids[0], i, [](std::size_t) { return true; });
        return found != n.negated && k(i);
      }
      case Node::repeat:
        if (n.possessive) {
          std::size_t j = i;
          int count = 0;
          while (n.max < 0 || count < n.max) {
            std::optional<std::size_t> next;
            match(*n.kids[0], j, [&](std::size_t e) {
              next = e;
              return true;
            });
            if (!next || *next == j) break;
            j = *next;
            ++count;
          }
          return count >= n.min && k(j);
        }
        return rep(n, 0, i, k);
    }
    return false;
  }
  bool seq(const Node& n, std::size_t idx, std::size_t i, const Cont& k) {
    if (idx == n.kids.size()) return k(i);
    return match(*n.kids[idx], i, [&](std::size_t j) { return seq(n, idx + 1, j, k); });
  }
  bool rep(const Node& n, int count, std::size_t i, const Cont& k) {
    const bool can_more = n.max < 0 || count < n.max;
    const auto more = [&] {
      return can_more && match(*n.kids[0], i, [&](std::size_t j) { return j != i && rep(n, count + 1, j, k); });
    };
    if (n.greedy) return more() || (count >= n.min && k(i));
    return (count >= n.min && k(i)) || more();
  }
};

// Every match of `re` in s, left to right (Oniguruma's find_iter: an empty match moves on by one character).
std::vector<std::pair<std::size_t, std::size_t>> find_all(const Node& re, const std::u32string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  Matcher m(re, s);
  for (std::size_t i = 0; i < s.size();) {
    const std::optional<std::size_t> end = m.match_at(i);
    if (end && *end > i) {
      out.emplace_back(i, *end);
      i = *end;
    } else {
      ++i;
    }
  }
  return out;
}

// ---- the pipeline ----

// A piece of the text: its characters (byte-level ones once a ByteLevel step has mapped it), or an added token.
struct Piece {
  std::u32string text;
  std::optional<std::uint32_t> id;
};

std::vector<Piece> split_added(const HfTokenizer& t, const std::u32string& text) {
  std::vector<std::pair<std::u32string, const AddedToken*>> tokens;
  for (const AddedToken& a : t.added) {
    if (!a.content.empty()) tokens.emplace_back(utf32(a.content), &a);
  }
  std::vector<Piece> out;
  std::u32string run;
  for (std::size_t i = 0; i < text.size();) {
    const AddedToken* best = nullptr;
    std::size_t best_len = 0;
    for (const auto& [content, a] : tokens) {
      if (content.size() > best_len && text.compare(i, content.size(), content) == 0) {
        best = a;
        best_len = content.size();
      }
    }
    if (!best) {
      run.push_back(text[i++]);
      continue;
    }
    if (best->lstrip || best->rstrip || best->single_word) {
      throw Unsupported(
          cat("added token ", Json(best->content).dump(), " occurs in the text and has lstrip, rstrip or single_word"));
    }
    if (!run.empty()) out.push_back({std::move(run), std::nullopt});
    run.clear();
    out.push_back({{}, best->id});
    i += best_len;
  }
  if (!run.empty()) out.push_back({std::move(run), std::nullopt});
  return out;
}

// Normalizers that leave chktxt as it is (it is in NFC); others are refused.
void check_normalizer(const Json& n) {
  if (n.is_null()) return;
  const std::string type = n.value("type", "");
  if (type == "NFC") return;
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const Json& x : n["normalizers"]) check_normalizer(x);
    return;
  }
  throw Unsupported(cat("normalizer ", Json(type).dump()));
}

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// Each unmatched piece split around the matches of `re` (Split's behaviours).
void split_by(std::vector<Piece>& pieces,
              const std::function<std::vector<std::pair<std::size_t, std::size_t>>(const std::u32string&)>& matches,
              Behavior b) {
  std::vector<Piece> out;
  for (Piece& p : pieces) {
    if (p.id) {
      out.push_back(std::move(p));
      continue;
    }
    std::vector<std::pair<std::u32string, bool>> parts;  // text, is a match
    std::size_t prev = 0;
    for (const auto& [s, e] : matches(p.text)) {
      if (prev != s) parts.emplace_back(p.text.substr(prev, s - prev), false);
      parts.emplace_back(p.text.substr(s, e - s), true);
      prev = e;
    }
    if (prev != p.text.size()) parts.emplace_back(p.text.substr(prev), false);
    std::vector<std::u32string> pieces_out;
    bool pending_next = false;
    for (auto& [text, matched] : parts) {
      if (!matched || b == Behavior::isolated) {
        if (pending_next) {
          pieces_out.back() += text;
          pending_next = false;
        } else {
          pieces_out.push_back(text);
        }
        continue;
      }
      switch (b) {
        case Behavior::removed: break;
        case Behavior::merged_with_previous:
          if (pieces_out.empty())
            pieces_out.push_back(text);
          else
            pieces_out.back() += text;
          break;
        case Behavior::merged_with_next:
          if (pending_next)
            pieces_out.back() += text;
          else
            pieces_out.push_back(text);
          pending_next = true;
          break;
        case Behavior::contiguous:
          pieces_out.push_back(text);  // merged with a match just before it below
          break;
        case Behavior::isolated: break;
      }
    }
    if (b == Behavior::contiguous) {
      // consecutive matches form one piece
      pieces_out.clear();
      bool last_matched = false;
      for (auto& [text, matched] : parts) {
        if (matched && last_matched)
          pieces_out.back() += text;
        else
          pieces_out.push_back(text);
        last_matched = matched;
      }
    }
    for (std::u32string& s : pieces_out) {
      if (!s.empty()) out.push_back({std::move(s), std::nullopt});
    }
  }
  pieces.swap(out);
}

// GPT-2's pattern, which ByteLevel's use_regex applies.
constexpr std::u32string_view kGpt2Pattern =
    U"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const Node& gpt2_regex() {
  static const NodePtr re = RegexParser(std::u32string(kGpt2Pattern)).parse();
  return *re;
}

void pre_tokenize(const Json& pre, std::vector<Piece>& pieces) {
  if (pre.is_null()) return;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array())
      throw Unsupported("a Sequence without pretokenizers");
    for (const Json& p : pre["pretokenizers"]) pre_tokenize(p, pieces);
    return;
  }
  if (type == "ByteLevel") {
    const bool prefix = pre.value("add_prefix_space", true), regex = pre.value("use_regex", true);
    for (Piece& p : pieces) {
      if (!p.id && prefix && (p.text.empty() || p.text[0] != U' ')) p.text.insert(p.text.begin(), U' ');
    }
    if (regex)
      split_by(
          pieces, [](const std::u32string& s) { return find_all(gpt2_regex(), s); }, Behavior::isolated);
    for (Piece& p : pieces) {
      if (p.id) continue;
      const std::string bytes = utf8(p.text);
      p.text.clear();
      for (const char b : bytes) p.text.push_back(byte_chars()[static_cast<unsigned char>(b)]);
    }
    return;
  }
  if (type == "Digits") {
    const bool each = pre.value("individual_digits", false);
    split_by(
        pieces,
        [each](const std::u32string& s) {
          std::vector<std::pair<std::size_t, std::size_t>> m;
          for (std::size_t i = 0; i < s.size(); ++i) {
            if (category(s[i])[0] != 'N') continue;
            if (!each && !m.empty() && m.back().second == i)
              m.back().second = i + 1;
            else
              m.emplace_back(i, i + 1);
          }
          return m;
        },
        Behavior::isolated);
    return;
  }
  if (type == "Split") {
    if (pre.value("invert", false)) throw Unsupported("Split with invert");
    static const std::map<std::string, Behavior, std::less<>> kBehaviors{
        {"Removed", Behavior::removed},
        {"Isolated", Behavior::isolated},
        {"MergedWithPrevious", Behavior::merged_with_previous},
        {"MergedWithNext", Behavior::merged_with_next},
        {"Contiguous", Behavior::contiguous}};
    const auto b = kBehaviors.find(pre.value("behavior", ""));
    if (b == kBehaviors.end()) throw Unsupported(cat("Split behavior ", pre.value("behavior", Json()).dump()));
    const Json& pattern = pre.contains("pattern") ? pre["pattern"] : Json();
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      const NodePtr re = RegexParser(utf32(pattern["Regex"].get<std::string>())).parse();
      split_by(
          pieces, [&re](const std::u32string& s) { return find_all(*re, s); }, b->second);
    } else if (pattern.contains("String") && pattern["String"].is_string()) {
      const std::u32string lit = utf32(pattern["String"].get<std::string>());
      if (lit.empty()) throw Unsupported("Split on an empty string");
      split_by(
          pieces,
          [&lit](const std::u32string& s) {
            std::vector<std::pair<std::size_t, std::size_t>> m;
            for (std::size_t i = s.find(lit); i != std::u32string::npos; i = s.find(lit, i + lit.size())) {
              m.emplace_back(i, i + lit.size());
            }
            return m;
          },
          b->second);
    } else {
      throw Unsupported("a Split pattern that is neither Regex nor String");
    }
    return;
  }
  throw Unsupported(cat("pre-tokenizer ", Json(type).dump()));
}

// The BPE model of tokenizer.json: merges by rank, as tokenizers' BPE applies them to one word.
class Bpe {
 public:
  explicit Bpe(const HfTokenizer& t) : t_(t) {
    const Json& m = t.json["model"];
    if (m.value("type", "") != "BPE") throw Unsupported(cat("model ", m.value("type", Json()).dump(), " (not BPE)"));
    if (!m.contains("vocab") || !m["vocab"].is_object()) throw Unsupported("a BPE model without a vocab object");
    if (!m.value("continuing_subword_prefix", Json()).is_null() && m["continuing_subword_prefix"] != "") {
      throw Unsupported("BPE with a continuing_subword_prefix");
    }
    if (!m.value("end_of_word_suffix", Json()).is_null() && m["end_of_word_suffix"] != "") {
      throw Unsupported("BPE with an end_of_word_suffix");
    }
    if (!m.value("dropout", Json()).is_null()) throw Unsupported("BPE with dropout");
    ignore_merges_ = m.value("ignore_merges", false);
    byte_fallback_ = m.value("byte_fallback", false);
    if (m.contains("unk_token") && m["unk_token"].is_string()) unk_ = m["unk_token"].get<std::string>();
    const Json& merges = m.contains("merges") ? m["merges"] : Json::array();
    std::uint32_t rank = 0;
    for (const Json& x : merges) {
      std::string a, b;
      if (x.is_string()) {
        const std::string s = x.get<std::string>();
        const std::size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw Unsupported("a merge that is not 'a b'");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (x.is_array() && x.size() == 2 && x[0].is_string() && x[1].is_string()) {
        a = x[0].get<std::string>();
        b = x[1].get<std::string>();
      } else {
        throw Unsupported("a merge that is neither 'a b' nor [a, b]");
      }
      ranks_.try_emplace(a + '\0' + b, rank++);
    }
  }

  void encode(const std::u32string& word, std::vector<std::uint32_t>& out) const {
    const std::string whole = utf8(word);
    const Json& vocab = t_.json["model"]["vocab"];
    if (ignore_merges_) {
      if (const auto it = vocab.find(whole); it != vocab.end()) {
        out.push_back(it->get<std::uint32_t>());
        return;
      }
    }
    std::vector<std::string> sym;
    for (const char32_t c : word) {
      std::string s = utf8(std::u32string(1, c));
      if (vocab.contains(s)) {
        sym.push_back(std::move(s));
      } else if (byte_fallback_) {
        throw Unsupported("BPE byte fallback");
      } else if (unk_) {
        throw Unsupported("BPE's unknown token");
      }  // else the character is dropped, as tokenizers drops it
    }
    while (sym.size() > 1) {
      std::size_t best = sym.size();
      std::uint32_t best_rank = 0;
      for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
        const auto r = ranks_.find(sym[i] + '\0' + sym[i + 1]);
        if (r != ranks_.end() && (best == sym.size() || r->second < best_rank)) {
          best = i;
          best_rank = r->second;
        }
      }
      if (best == sym.size()) break;
      sym[best] += sym[best + 1];
      sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    for (const std::string& s : sym) {
      const auto it = vocab.find(s);
      if (it == vocab.end())
        throw Unsupported(cat("a merge gives ", Json(s).dump(), ", which is not in the vocabulary"));
      out.push_back(it->get<std::uint32_t>());
    }
  }

 private:
  const HfTokenizer& t_;
  std::unordered_map<std::string, std::uint32_t> ranks_;
  bool ignore_merges_ = false, byte_fallback_ = false;
  std::optional<std::string> unk_;
};

std::uint32_t special_id(const HfTokenizer& t, const std::string& content) {
  const std::optional<std::uint32_t> id = t.id_of(content);
  if (!id) throw Unsupported(cat("the post-processor's token ", Json(content).dump(), " is not in the vocabulary"));
  return *id;
}

// A template's items, its special tokens' ids given by `specials`.
void apply_template(const Json& items, const Json& specials, std::vector<std::uint32_t>& ids) {
  std::vector<std::uint32_t> out;
  for (const Json& item : items) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", "") != "A") throw Unsupported("a template's sequence other than $A");
      out.insert(out.end(), ids.begin(), ids.end());
    } else if (item.contains("SpecialToken")) {
      const std::string name = item["SpecialToken"].value("id", "");
      if (!specials.contains(name) || !specials[name].contains("ids")) throw Unsupported(cat("template token ", name));
      for (const Json& id : specials[name]["ids"]) out.push_back(id.get<std::uint32_t>());
    } else {
      throw Unsupported("a template item");
    }
  }
  ids.swap(out);
}

void post_process(const HfTokenizer& t, const Json& p, std::vector<std::uint32_t>& ids) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    for (const Json& x : p.value("processors", Json::array())) post_process(t, x, ids);
    return;
  }
  if (type == "TemplateProcessing") {
    apply_template(p.value("single", Json::array()), p.value("special_tokens", Json::object()), ids);
    return;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    ids.insert(ids.begin(), p["cls"][1].get<std::uint32_t>());
    ids.push_back(p["sep"][1].get<std::uint32_t>());
    return;
  }
  (void)t;
  throw Unsupported(cat("post-processor ", Json(type).dump()));
}

// tokenizer_config.json's `name` (a string, or an AddedToken's dict), or nullopt.
std::optional<std::string> config_token(const Json& config, const char* name) {
  const auto it = config.find(name);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// transformers (5.x) replaces the post-processor by [bos] $A [eos] when tokenizer_config.json names add_bos_token or
// add_eos_token, or tokenizer.json has none.
void transformers_post_process(const HfTokenizer& t, std::vector<std::uint32_t>& ids) {
  const Json& p = t.json.contains("post_processor") ? t.json["post_processor"] : Json();
  const bool explicit_flags = t.config.contains("add_bos_token") || t.config.contains("add_eos_token");
  if (!explicit_flags && !p.is_null()) return post_process(t, p, ids);
  const auto flag = [&](const char* key) {
    const auto it = t.config.find(key);
    return it != t.config.end() && it->is_boolean() && it->get<bool>();
  };
  if (flag("add_bos_token")) {
    if (const std::optional<std::string> bos = config_token(t.config, "bos_token"))
      ids.insert(ids.begin(), special_id(t, *bos));
  }
  if (flag("add_eos_token")) {
    if (const std::optional<std::string> eos = config_token(t.config, "eos_token")) ids.push_back(special_id(t, *eos));
  }
}

// ---- SHA-256 (FIPS 180-4) ----

constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string m(bytes);
  const std::uint64_t bits = static_cast<std::uint64_t>(bytes.size()) * 8;
  m.push_back(static_cast<char>(0x80));
  while (m.size() % 64 != 56) m.push_back('\0');
  for (int i = 7; i >= 0; --i) m.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  for (std::size_t off = 0; off < m.size(); off += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = 0;
      for (int k = 0; k < 4; ++k)
        w[i] = (w[i] << 8) |
               static_cast<unsigned char>(m[off + 4 * static_cast<std::size_t>(i) + static_cast<std::size_t>(k)]);
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint32_t x : h) {
    for (int i = 28; i >= 0; i -= 4) out.push_back(kHex[(x >> i) & 0xF]);
  }
  return out;
}

const std::vector<std::pair<std::string_view, std::string_view>>& bpe_pre_table() {
  static const std::vector<std::pair<std::string_view, std::string_view>> table(std::begin(kPreTable),
                                                                                std::end(kPreTable));
  return table;
}

BpePre bpe_pre(const HfTokenizer& t) {
  BpePre out;
  try {
    const Bpe bpe(t);
    std::vector<Piece> pieces = split_added(t, utf32(kChkTxt));
    check_normalizer(t.json.contains("normalizer") ? t.json["normalizer"] : Json());
    pre_tokenize(t.json.contains("pre_tokenizer") ? t.json["pre_tokenizer"] : Json(), pieces);
    for (const Piece& p : pieces) {
      if (p.id)
        out.ids.push_back(*p.id);
      else
        bpe.encode(p.text, out.ids);
    }
    transformers_post_process(t, out.ids);
  } catch (const Json::exception& e) {
    throw IoError(IoErrc::gguf_tokenizer, t.file, cat("a value of an unexpected type or shape (", e.what(), ")"));
  } catch (const Unsupported& e) {
    throw IoError(IoErrc::gguf_tokenizer, t.file,
                  cat("cannot reproduce llama.cpp's pre-tokenizer fingerprint (convert_hf_to_gguf's "
                      "get_vocab_base_pre): ",
                      e.what(), "; minifloat refuses rather than guess tokenizer.ggml.pre"));
  }
  std::string text = "[";
  for (std::size_t i = 0; i < out.ids.size(); ++i) text += cat(i ? ", " : "", out.ids[i]);
  text += "]";
  out.hash = sha256_hex(text);
  for (const auto& [hash, name] : kPreTable) {
    if (hash == out.hash) out.name = std::string(name);  // the last one wins, as in the converter
  }
  return out;
}

std::optional<std::uint32_t> HfTokenizer::id_of(const std::string& content) const {
  for (const AddedToken& a : added) {
    if (a.content == content) return a.id;
  }
  const auto model = json.find("model");
  if (model == json.end() || !model->is_object() || !model->contains("vocab")) return std::nullopt;
  const Json& vocab = (*model)["vocab"];
  if (const auto it = vocab.find(content); it != vocab.end() && it->is_number_unsigned())
    return it->get<std::uint32_t>();
  return std::nullopt;
}

}  // namespace mf::io::detail
