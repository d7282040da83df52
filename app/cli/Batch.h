// `florence-studio-cli batch`: one task over a folder of images, each answer written as a
// sidecar file as it completes (<florence/batch.h>), a progress bar on a terminal, and the
// images that failed listed at the end.
#pragma once

namespace florence::cli {

// Exit code: 0 every image answered (or skipped), 3 some failed, 130 interrupted, 1 an error
// that stopped the run (2 for wrong arguments, thrown as UsageError).
int runBatch(int argc, char** argv);

} // namespace florence::cli
