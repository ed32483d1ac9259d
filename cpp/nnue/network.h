// NNUE layer 2: the quantised network (docs/nnue.md sections 2, 3 and 5) and
// its file format. A Network is immutable once built, so any number of
// threads may evaluate with one. make_network checks the sizes and the
// integer ranges the overflow argument rests on; load() reads a `*.nnue`
// file (magic, version, sizes, scales, length, FNV-1a checksum) and then
// builds through make_network. Errors are returned as text naming the
// defect (and the file), never thrown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "nnue/features.h"

namespace cz::nnue {

constexpr int kMaxHidden = 256;
constexpr int kHiddenMultiple = 16;
constexpr int kQA = 255;     // W1, b1 scale
constexpr int kQB = 64;      // W2 scale
constexpr int kScale = 400;  // centipawns per unit of y
constexpr int kMaxW1 = 505;  // round(1.98 * QA): W1 and b1
constexpr int kMaxW2 = 127;  // round(1.98 * QB)
constexpr int32_t kMaxB2 = 16 * kQA * kQB;  // 261,120
constexpr uint32_t kFileVersion = 1;
constexpr size_t kHeaderBytes = 28;  // magic + version, inputs, hidden, qa, qb, scale

// int16 storage aligned to 64 bytes (a cache line, an AVX-512 register).
class AlignedI16 {
 public:
  AlignedI16() = default;
  explicit AlignedI16(size_t n);
  int16_t* data() { return p_.get(); }
  const int16_t* data() const { return p_.get(); }
  size_t size() const { return n_; }

 private:
  struct Free {
    void operator()(int16_t* p) const { std::free(p); }
  };
  std::unique_ptr<int16_t[], Free> p_;
  size_t n_ = 0;
};

struct Network {
  int hidden = 0;  // N
  AlignedI16 w1;   // [768][N], row-major by feature
  AlignedI16 b1;   // [N]
  AlignedI16 w2;   // [2N]: the side to move's N first
  int32_t b2 = 0;

  const int16_t* row(int feature) const { return w1.data() + size_t(feature) * size_t(hidden); }
};

// A network from integer arrays (w1: 768 * hidden, b1: hidden, w2: 2 * hidden),
// or nullptr and `error` when a size or value is outside the contract.
std::unique_ptr<Network> make_network(int hidden, const int16_t* w1, const int16_t* b1,
                                      const int16_t* w2, int64_t b2, std::string& error);

// Reads a version-1 `*.nnue` file, or nullptr and `error` naming the file and the defect.
std::unique_ptr<Network> load(const std::string& path, std::string& error);

// The exact length of a version-1 file with `hidden` neurons.
size_t file_bytes(int hidden);
// FNV-1a, 32 bits (offset basis 2166136261, prime 16777619).
uint32_t fnv1a32(const uint8_t* data, size_t n);

}  // namespace cz::nnue
