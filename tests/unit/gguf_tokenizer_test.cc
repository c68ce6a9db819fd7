// convert --format gguf's tokenizer: SHA-256 on the standard's vectors, the converter's fingerprint table, a
// SentencePiece model written byte by byte read back as llama.cpp's converter writes it, and the refusals (no
// tokenizer files, a tokenizer.json that does not parse, tokens that are not the embedding's rows), each before any
// file is made. The comparison with llama.cpp's own converter is python/tests/test_gguf_tokenizer.py.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/gguf/gguf_tokenizer.h"
#include "io_test_util.h"
#include "minifloat/gguf.h"
#include "minifloat/gguf_model.h"
#include "minifloat/safetensors.h"

namespace mf::io {
namespace {

using namespace mf::io::testing;

TEST(GgufTokenizer, Sha256OfTheStandardsVectors) {
  EXPECT_EQ(detail::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(detail::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(detail::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(detail::sha256_hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

// The converter's table (llama-cpp-python 0.3.36): 97 ifs, 95 hashes; a hash given twice keeps its later name.
TEST(GgufTokenizer, TheFingerprintTableIsTheConverters) {
  const auto& table = detail::bpe_pre_table();
  EXPECT_EQ(table.size(), 95u);
  const auto name = [&table](std::string_view hash) {
    std::string_view out;
    for (const auto& [h, n] : table) {
      if (h == hash) out = n;
    }
    return std::string(out);
  };
  EXPECT_EQ(name("855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249"), "smollm");
  EXPECT_EQ(name("0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5"), "llama-bpe");
  EXPECT_EQ(name("b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166"), "olmo");  // not "mpt"
}

const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128,
  "rms_norm_eps": 1e-5, "bos_token_id": 1, "eos_token_id": 2, "vocab_size": )";

// A tiny Llama whose embedding has `rows` rows and whose config.json says vocab_size `vocab`.
void tiny_llama(const fs::path& dir, std::uint64_t vocab, std::uint64_t rows) {
  fs::create_directories(dir);
  write_file(dir / "config.json", str(kConfig, vocab, "}"));
  const std::vector<SafetensorsWriter::Spec> specs{{"model.embed_tokens.weight", DType::BF16, {rows, 64}},
                                                   {"model.norm.weight", DType::BF16, {64}}};
  SafetensorsWriter w(dir / "model.safetensors", specs);
  w.write_tensor(0, std::vector<std::byte>(rows * 64 * 2));
  w.write_tensor(1, std::vector<std::byte>(64 * 2));
  w.commit();
}

// protobuf: a length-delimited field, and a SentencePiece {piece, score, type} as ModelProto's field 1.
std::string field(int number, const std::string& bytes) {
  return str(static_cast<char>(number << 3 | 2), static_cast<char>(bytes.size()), bytes);
}
std::string piece(const std::string& text, float score, int type) {
  std::string score_bytes(4, '\0');
  std::memcpy(score_bytes.data(), &score, 4);
  return field(1, str(field(1, text), '\x15', score_bytes, '\x18', static_cast<char>(type)));
}

TEST(GgufTokenizer, ASentencePieceModelByteByByte) {
  TempDir dir;
  tiny_llama(dir / "in", 6, 6);
  // <unk> UNKNOWN, <s> and </s> CONTROL, <0x41> BYTE, two NORMAL pieces (one USER_DEFINED: the converter writes it
  // NORMAL), and a trainer_spec field (2) the reader skips; config.json's vocab_size 6 pads one [PAD5].
  write_file(dir / "in" / "tokenizer.model", str(piece("<unk>", 0, 2), piece("<s>", 0, 3), piece("</s>", 0, 3),
                                                 field(2, "skipped"), piece("<0x41>", 0, 6),
                                                 piece("\xe2\x96\x81"
                                                       "a",
                                                       -1.5f, 4)));
  convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("f32"));
  const GgufFile f = read_gguf(dir / "out.gguf");
  EXPECT_EQ(f.find_metadata("tokenizer.ggml.model")->as_string(), "llama");
  EXPECT_EQ(f.find_metadata("tokenizer.ggml.pre")->as_string(), "default");
  const GgufValue& tokens = *f.find_metadata("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 6u);
  EXPECT_EQ(tokens.element(4).as_string(),
            "\xe2\x96\x81"
            "a");
  EXPECT_EQ(tokens.element(5).as_string(), "[PAD5]");
  const GgufValue& types = *f.find_metadata("tokenizer.ggml.token_type");
  const std::vector<std::int64_t> want_types{2, 3, 3, 6, 1, 5};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(types.element(i).as_int(), want_types[i]) << i;
  const GgufValue& scores = *f.find_metadata("tokenizer.ggml.scores");
  EXPECT_EQ(scores.element(4).as_float(), -1.5);
  EXPECT_EQ(scores.element(5).as_float(), -10000.0);
  EXPECT_EQ(f.find_metadata("tokenizer.ggml.bos_token_id")->as_uint(), 1u);  // config.json's
  EXPECT_EQ(f.find_metadata("tokenizer.ggml.eos_token_id")->as_uint(), 2u);
  EXPECT_EQ(f.find_metadata("tokenizer.ggml.merges"), nullptr);
}

template <class F>
std::string error_of(F&& f, IoErrc code) {
  try {
    f();
  } catch (const IoError& e) {
    EXPECT_EQ(static_cast<int>(e.code), static_cast<int>(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no IoError";
  return "";
}

TEST(GgufTokenizer, RefusalsComeBeforeAnyFile) {
  TempDir dir;
  tiny_llama(dir / "in", 6, 6);
  const auto convert = [&] { convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("f32")); };
  EXPECT_NE(error_of(convert, IoErrc::gguf_no_tokenizer).find("--no-tokenizer"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out.gguf"));
  write_file(dir / "in" / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0,}}})");
  EXPECT_NE(error_of(convert, IoErrc::invalid_json).find("tokenizer.json"), std::string::npos);
  fs::remove(dir / "in" / "tokenizer.json");
  write_file(dir / "in" / "tokenizer.model", "\x0a\x05<unk");
  EXPECT_NE(error_of(convert, IoErrc::gguf_tokenizer).find("tokenizer.model"), std::string::npos);
  write_file(dir / "in" / "tokenizer.model", str(piece("<unk>", 0, 2), piece("a", 0, 1)));
  fs::remove_all(dir / "in");
  tiny_llama(dir / "in", 8, 6);  // vocab_size 8, but 6 rows: the vocabulary padded to 8 tokens does not fit
  write_file(dir / "in" / "tokenizer.model", str(piece("<unk>", 0, 2), piece("a", 0, 1)));
  EXPECT_NE(
      error_of(convert, IoErrc::gguf_tokenizer).find("8 tokens, but token_embd (model.embed_tokens.weight) has 6 rows"),
      std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out.gguf"));
  convert_to_gguf(dir / "in", dir / "out.gguf", gguf_recipe("f32"), {}, GgufTokenizerMode::none);
  EXPECT_EQ(read_gguf(dir / "out.gguf").find_metadata("tokenizer.ggml.model")->as_string(), "none");
}

}  // namespace
}  // namespace mf::io
