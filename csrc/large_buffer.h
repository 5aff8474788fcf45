// Large, lazily committed memory blocks for replay storage and trees.
//
// A replay buffer of a million rows is hundreds of megabytes read at random
// places: with 4 KiB pages nearly every sampled row costs a TLB miss, and the
// first fill costs one page fault per 4 KiB. On Linux the block is mapped
// anonymously (zero-filled on first touch, so unused capacity costs nothing)
// and marked for transparent huge pages, which removes most of both costs.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace league {

class LargeBuffer {
 public:
  LargeBuffer() = default;
  explicit LargeBuffer(size_t bytes) : bytes_(bytes < 1 ? 1 : bytes) {
#if defined(__linux__)
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (bytes_ >= (size_t{2} << 20)) madvise(p, bytes_, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
    data_ = static_cast<char*>(p);
#else
    data_ = static_cast<char*>(std::calloc(bytes_, 1));
    if (data_ == nullptr) throw std::bad_alloc();
#endif
  }
  ~LargeBuffer() { release(); }

  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;
  LargeBuffer(LargeBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  LargeBuffer& operator=(LargeBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = other.data_;
      bytes_ = other.bytes_;
      other.data_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void release() {
    if (data_ == nullptr) return;
#if defined(__linux__)
    munmap(data_, bytes_);
#else
    std::free(data_);
#endif
    data_ = nullptr;
  }

  char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace league
