// minifloat/remote.h: checkpoints where they lie, read over HTTP range requests (docs/checkpoints.md, "Remote
// checkpoints"). A location is a local path, an http(s):// URL of a file (model.safetensors.index.json, a
// .safetensors file, config.json), or hf://ORG/REPO[@REVISION][/PATH], which names the Hugging Face Hub's
// {endpoint}/ORG/REPO/resolve/REVISION[/PATH] (endpoint from HF_ENDPOINT, default https://huggingface.co).
//
// Only the headers are read remotely: the index, config.json, hf_quant_config.json and each shard's 8-byte length
// and JSON header. The readers are the local ones, over a byte source (src/io/byte_source.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mf::io {

// True for "http://", "https://" and "hf://" locations.
bool is_remote(std::string_view location);

// False when minifloat was built without libcurl: every remote location is then an IoError saying so.
bool http_available();

// An hf:// location as the Hub's https URL; any other text unchanged. hf://ORG/REPO[@REVISION] names the repository's
// root at REVISION (default "main"); a path after it names a file there.
std::string resolve_hf(std::string_view location);

// What this session read over HTTP: body bytes received, the sizes of the files they came from (Content-Range
// totals), and the requests made (redirects and retries included).
struct RemoteStats {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_total = 0;
  std::uint64_t files = 0;
  std::uint64_t requests = 0;
};
RemoteStats remote_stats();

// Starts a new session: counters to zero and the total time bound (MINIFLOAT_HTTP_TIMEOUT seconds, default 120)
// counted from now. open_checkpoint() calls it for a remote location; the first request of a process starts one too.
void begin_remote_session();

}  // namespace mf::io
