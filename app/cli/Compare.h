// `florence-studio-cli compare`: the same request with and without the key/value cache, side by
// side (<florence/compare_job.h>, as the app's Compare), the medians and the verdict printed
// as one line or as JSON.
#pragma once

namespace florence::cli {

// Exit code: 0 compared, 130 interrupted, 1 an error that stopped it (2 for wrong arguments,
// thrown as UsageError).
int runCompare(int argc, char** argv);

} // namespace florence::cli
