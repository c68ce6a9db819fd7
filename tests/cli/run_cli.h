// Runs the built `minifloat` (MF_CLI) as a user would: arguments and stdin in, exit code, stdout and stderr out.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace mf::test {

// A test fixture with a fresh directory per test (named after the suite prefix, the process and the test),
// removed afterwards.
class CliDirTest : public ::testing::Test {
 protected:
  explicit CliDirTest(const char* prefix) : prefix_(prefix) {}
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        (prefix_ + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

struct Result {
  int exit_code = -1;  // 128 + signal when killed
  std::string out, err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Temp files instead of pipes: no deadlock on big inputs or outputs. With stdout_path, stdout goes there instead
// (and Result::out stays empty).
inline Result run(const std::vector<std::string>& args, const std::string& input = "",
                  const char* stdout_path = nullptr) {
  static std::atomic<int> counter{0};
  const std::string base =
      ::testing::TempDir() + "mf_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
  std::ofstream(in_path, std::ios::binary) << input;
  std::vector<std::string> argv_s{MF_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, stdout_path ? stdout_path : out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  Result r;
  if (posix_spawn(&pid, MF_CLI, &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  for (const auto& p : {in_path, out_path, err_path}) std::remove(p.c_str());
  return r;
}

}  // namespace mf::test
