// `florence-studio-cli bench`: speed at the real Florence-2 sizes with random weights, against
// the same weights run eagerly in Python, and against the machine's memory bandwidth.
#pragma once

namespace florence::cli {

int runBench(int argc, char** argv);

} // namespace florence::cli
