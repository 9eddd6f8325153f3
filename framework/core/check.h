#ifndef TVLAB_FRAMEWORK_CORE_CHECK_H_
#define TVLAB_FRAMEWORK_CORE_CHECK_H_

// Programmer-invariant checks. Debian's Abseil 20220623 has no absl/log, so
// tvlab carries this small CHECK. Never use it on user input: user input gets
// an absl::Status with a message that says how to fix it.

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace tvlab::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": internal invariant violated: "
            << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << "\n(this is a tvlab bug; please report it)"
              << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Makes `cond ? (void)0 : Voidify() & stream` well-typed.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace tvlab::internal

#define TVLAB_CHECK(cond)                 \
  (cond) ? (void)0                        \
         : ::tvlab::internal::Voidify() & \
               ::tvlab::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define TVLAB_CHECK_EQ(a, b) TVLAB_CHECK((a) == (b)) << "(" << (a) << " vs " << (b) << ") "

#endif  // TVLAB_FRAMEWORK_CORE_CHECK_H_
