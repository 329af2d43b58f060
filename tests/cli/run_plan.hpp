#pragma once
// Runs memopt-plan as a user does (MEMOPT_PLAN names the binary): stdout,
// stderr and the exit status, with per-process temporary files (ctest runs
// test cases side by side).

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace memopt::testing {

struct run_result {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::filesystem::path temp_path(const std::string& name) {
  // Per process: ctest runs test cases of this file side by side.
  return std::filesystem::temp_directory_path() /
         ("memopt_cli_test_" + std::to_string(getpid()) + "_" + name);
}

inline run_result plan(const std::string& args) {
  const auto err_path = temp_path("stderr.txt");
  const std::string command = std::string(MEMOPT_PLAN) + " " + args + " 2>" + err_path.string();
  run_result r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> chunk{};
  while (const auto got = fread(chunk.data(), 1, chunk.size(), pipe)) r.out.append(chunk.data(), got);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  r.err = err.str();
  return r;
}

inline std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// Exit 1 with exactly one line on stderr that contains `needle`.
inline void check_refused(const run_result& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace memopt::testing
