// Replays inputs through a harness's LLVMFuzzerTestOneInput without libFuzzer, so every
// compiler (GCC too) runs the regression corpus in CTest. Arguments: files or directories
// (every regular file below, in sorted order). An argument prefixed with "?" is optional: when
// it does not exist the replay says so and goes on (../shared may be absent). Exit status 77
// (a CTest skip) when nothing at all was found.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const bool optional = !a.empty() && a[0] == '?';
    if (optional) a.erase(0, 1);
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(a))
        if (e.is_regular_file()) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(a, ec)) {
      files.emplace_back(a);
    } else if (optional) {
      std::printf("skipped: %s is absent\n", a.c_str());
    } else {
      std::fprintf(stderr, "replay: %s does not exist\n", a.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::printf("skipped: no inputs\n");
    return 77;
  }
  for (const auto& f : files) {
    std::ifstream s(f, std::ios::binary);
    const std::vector<char> b((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    std::printf("%s (%zu bytes)\n", f.c_str(), b.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
