#pragma once
// What the fuzz targets share: the input as text, and a reader of small
// numbers from the input's bytes (zeros once they run out), so that every
// byte string is some graph.

#include <cstddef>
#include <cstdint>
#include <string>

namespace memopt::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  /// A number in [0, bound), bound > 0.
  std::size_t below(std::size_t bound) { return next() % bound; }
  bool flag() { return (next() & 1) != 0; }

 private:
  std::uint8_t next() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  const std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace memopt::fuzz
