// Runs a fuzz target's LLVMFuzzerTestOneInput on every file named on the
// command line (directories: every file in them), as libFuzzer does when
// given files: the seed corpora and the regression inputs replayed by ctest
// in the ordinary (g++, ASan and UBSan) build.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::size_t replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path path(argv[i]);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
        if (entry.is_regular_file()) inputs += replay(entry.path());
      }
    } else {
      inputs += replay(path);
    }
  }
  std::cout << "replayed " << inputs << " inputs\n";
  return inputs == 0 ? 1 : 0;
}
