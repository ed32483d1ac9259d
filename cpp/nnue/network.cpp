// Building, checking and loading a quantised network (see network.h).
#include "nnue/network.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <vector>

namespace cz::nnue {

AlignedI16::AlignedI16(size_t n) : n_(n) {
  const size_t bytes = ((n * sizeof(int16_t) + 63) / 64) * 64;
  p_.reset(static_cast<int16_t*>(std::aligned_alloc(64, bytes ? bytes : 64)));
  if (!p_) throw std::bad_alloc();
  std::memset(p_.get(), 0, bytes ? bytes : 64);
}

size_t file_bytes(int hidden) {
  const size_t n = size_t(hidden);
  return kHeaderBytes + 2 * (size_t(kInputs) * n + n + 2 * n) + 4 + 4;
}

uint32_t fnv1a32(const uint8_t* data, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= 16777619u;
  }
  return h;
}

namespace {

bool valid_hidden(int64_t hidden) { return hidden >= 1 && hidden <= kMaxHidden && hidden % kHiddenMultiple == 0; }

// Copies n values into dst, or names the first one outside [-limit, limit].
bool copy_checked(const int16_t* src, size_t n, int limit, const char* name, int16_t* dst,
                  std::string& error) {
  for (size_t i = 0; i < n; ++i) {
    if (src[i] < -limit || src[i] > limit) {
      error = std::string(name) + " value " + std::to_string(src[i]) + " at flat index " +
              std::to_string(i) + " is outside [-" + std::to_string(limit) + ", " + std::to_string(limit) + "]";
      return false;
    }
    dst[i] = src[i];
  }
  return true;
}

uint32_t u32_at(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Little-endian int16 values from the file's bytes (independent of the host's order).
std::vector<int16_t> i16_array(const uint8_t* p, size_t n) {
  std::vector<int16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = int16_t(uint16_t(p[2 * i]) | uint16_t(p[2 * i + 1]) << 8);
  return out;
}

}  // namespace

std::unique_ptr<Network> make_network(int hidden, const int16_t* w1, const int16_t* b1,
                                      const int16_t* w2, int64_t b2, std::string& error) {
  if (!valid_hidden(hidden)) {
    error = "hidden size " + std::to_string(hidden) + " is not in 1.." + std::to_string(kMaxHidden) +
            " and a multiple of " + std::to_string(kHiddenMultiple);
    return nullptr;
  }
  if (b2 < -kMaxB2 || b2 > kMaxB2) {
    error = "b2 value " + std::to_string(b2) + " is outside [-" + std::to_string(kMaxB2) + ", " +
            std::to_string(kMaxB2) + "]";
    return nullptr;
  }
  auto net = std::make_unique<Network>();
  const size_t n = size_t(hidden);
  net->hidden = hidden;
  net->w1 = AlignedI16(size_t(kInputs) * n);
  net->b1 = AlignedI16(n);
  net->w2 = AlignedI16(2 * n);
  net->b2 = int32_t(b2);
  if (!copy_checked(w1, size_t(kInputs) * n, kMaxW1, "W1", net->w1.data(), error) ||
      !copy_checked(b1, n, kMaxW1, "b1", net->b1.data(), error) ||
      !copy_checked(w2, 2 * n, kMaxW2, "W2", net->w2.data(), error))
    return nullptr;
  return net;
}

std::unique_ptr<Network> load(const std::string& path, std::string& error) {
  const std::string where = "NNUE file '" + path + "': ";
  auto fail = [&](const std::string& what) {
    error = where + what;
    return nullptr;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(std::string("cannot open (") + std::strerror(errno) + ")");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail("read error");

  if (bytes.size() < kHeaderBytes)
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                std::to_string(kHeaderBytes) + "-byte header");
  if (std::memcmp(bytes.data(), "CZNN", 4) != 0) return fail("bad magic (expected 'CZNN')");
  const uint8_t* h = bytes.data() + 4;
  const uint32_t version = u32_at(h), inputs = u32_at(h + 4), hidden = u32_at(h + 8);
  const uint32_t qa = u32_at(h + 12), qb = u32_at(h + 16), scale = u32_at(h + 20);
  if (version != kFileVersion)
    return fail("unsupported version " + std::to_string(version) + " (expected " + std::to_string(kFileVersion) + ")");
  if (inputs != uint32_t(kInputs))
    return fail("inputs " + std::to_string(inputs) + " (expected " + std::to_string(kInputs) + ")");
  if (!valid_hidden(hidden))
    return fail("hidden size " + std::to_string(hidden) + " is not in 1.." + std::to_string(kMaxHidden) +
                " and a multiple of " + std::to_string(kHiddenMultiple));
  if (qa != uint32_t(kQA) || qb != uint32_t(kQB) || scale != uint32_t(kScale))
    return fail("scales qa=" + std::to_string(qa) + " qb=" + std::to_string(qb) + " scale=" + std::to_string(scale) +
                " (expected 255, 64, 400)");
  const size_t expected = file_bytes(int(hidden));
  if (bytes.size() != expected)
    return fail(std::string(bytes.size() < expected ? "truncated" : "trailing bytes") + ": " +
                std::to_string(bytes.size()) + " bytes, expected " + std::to_string(expected) +
                " for hidden size " + std::to_string(hidden));
  const uint32_t stored = u32_at(bytes.data() + expected - 4);
  const uint32_t computed = fnv1a32(bytes.data(), expected - 4);
  if (stored != computed)
    return fail("checksum mismatch (stored " + std::to_string(stored) + ", computed " + std::to_string(computed) +
                "): the file is corrupt");

  const size_t n = hidden;
  const uint8_t* p = bytes.data() + kHeaderBytes;
  const std::vector<int16_t> w1 = i16_array(p, size_t(kInputs) * n);
  p += 2 * w1.size();
  const std::vector<int16_t> b1 = i16_array(p, n);
  p += 2 * n;
  const std::vector<int16_t> w2 = i16_array(p, 2 * n);
  p += 4 * n;
  const int32_t b2 = int32_t(u32_at(p));
  std::string why;
  auto net = make_network(int(hidden), w1.data(), b1.data(), w2.data(), b2, why);
  if (!net) return fail(why);
  return net;
}

}  // namespace cz::nnue
