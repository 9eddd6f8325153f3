#include "framework/distributed/stop_message.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tvlab {
namespace {

char message_text[2048];
size_t message_length = 0;

void OnSigterm(int) {
  // Async-signal-safe only: write(2) and _exit(2).
  ssize_t ignored = write(STDERR_FILENO, message_text, message_length);
  (void)ignored;
  _exit(128 + SIGTERM);
}

}  // namespace

void PrintOnSigterm(const std::string& message) {
  // Blocked while the text changes, so the handler never reads half of it.
  sigset_t term, previous;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &previous);
  message_length = std::min(message.size() + 1, sizeof(message_text));
  std::memcpy(message_text, message.data(), message_length - 1);  // host: a string
  message_text[message_length - 1] = '\n';
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSigterm;
  sigaction(SIGTERM, &action, nullptr);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace tvlab
