// A std::vector whose resize leaves the new elements of a trivial type uninitialised: scratch
// that is written in full after each resize, where zero-filling every growth cost memsets (and
// the first touch of fresh pages) on every call.
#pragma once
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace lowp {

// std::allocator whose value construction (construct(p) with no arguments) is default
// construction; every other construction is std::allocator's.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using UninitVector = std::vector<T, UninitAllocator<T>>;

}  // namespace lowp
