#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_STOP_MESSAGE_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_STOP_MESSAGE_H_

// When one rank of an mpirun dies (a crash, SIGKILL, the OOM killer), mpirun
// ends the others with SIGTERM. Without a word they would vanish mid-step;
// this handler prints why and what to do, then exits with 143 (128 +
// SIGTERM) at once: no file is being finished, and none needs to be, since
// every file of a run is written atomically (a checkpoint half written stays
// a hidden .partial directory that the next save removes).

#include <string>

namespace tvlab {

// Installs the SIGTERM handler; `message` (one line) replaces any earlier one.
void PrintOnSigterm(const std::string& message);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_STOP_MESSAGE_H_
