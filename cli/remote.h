// After a command given a URL or hf:// location: the bytes read of the bytes the files hold, on stderr.
#pragma once

#include <string>

namespace mf::cli {

void report_remote(const std::string& location);

}  // namespace mf::cli
