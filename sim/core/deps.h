// An op's dependencies: a vector of op ids that holds up to four in place. Nearly every op depends
// on none to three others, so lowering a step allocates nothing per op, and freeing a program frees
// nothing per op (the allocator was a quarter of a plan's instructions, most of it these vectors).
// Moves copy the 16-byte buffer whole, as cheap as a std::vector's. (Boost.Container's small_vector
// would do, but GCC 12's -Wstringop-overread fires inside it under LTO.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace parasim {

using OpId = std::int32_t;

class Deps {
 public:
  Deps() = default;
  Deps(std::initializer_list<OpId> ids) { append(ids.begin(), ids.end()); }
  Deps(const std::vector<OpId>& ids) { append(ids.data(), ids.data() + ids.size()); }  // NOLINT: implicit by design
  Deps(const Deps& o) { append(o.begin(), o.end()); }
  Deps(Deps&& o) noexcept { take(o); }
  Deps& operator=(const Deps& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  Deps& operator=(Deps&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~Deps() { release(); }

  void push_back(OpId id) {
    if (size_ == cap_) grow();
    data()[size_++] = id;
  }
  void append(const OpId* first, const OpId* last) {
    for (; first != last; ++first) push_back(*first);
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const OpId* begin() const { return data(); }
  const OpId* end() const { return data() + size_; }
  OpId operator[](size_t i) const { return data()[i]; }

 private:
  static constexpr std::uint32_t kInPlace = 4;
  bool on_heap() const { return cap_ > kInPlace; }
  OpId* data() { return on_heap() ? u_.heap : u_.in_place; }
  const OpId* data() const { return on_heap() ? u_.heap : u_.in_place; }
  void grow() {
    const std::uint32_t cap = 2 * cap_;
    auto* bigger = new OpId[cap];
    std::copy(begin(), end(), bigger);
    release();
    u_.heap = bigger;
    cap_ = cap;
  }
  // Frees a heap buffer; the size is kept (the caller refills or resets it).
  void release() {
    if (on_heap()) delete[] u_.heap;
    cap_ = kInPlace;
  }
  void take(Deps& o) {
    size_ = o.size_;
    cap_ = o.cap_;
    std::memcpy(&u_, &o.u_, sizeof u_);  // the ids in place, or the heap pointer
    o.size_ = 0;
    o.cap_ = kInPlace;
  }

  std::uint32_t size_ = 0;
  std::uint32_t cap_ = kInPlace;
  union Storage {
    OpId in_place[kInPlace];
    OpId* heap;
  } u_{};
};

}  // namespace parasim
