#include "BenchArgs.h"

#include "Args.h"
#include "Common.h"

#include <sstream>

namespace florence::cli {

namespace {

const char* kBenchUsage = R"(usage: florence-studio-cli bench [OPTIONS]

Measures Florence-2 at a real size with random weights (the speed-demo package installed with
the app, whose weights are generated at load): load, preprocessing, vision and text encoder,
cached decoding (median/p95 step, tokens/s, first-32 vs last-32), uncached decoding, peak memory,
the memory-bandwidth floor of a cached step, the same weights run eagerly in Python (needs
python3 with torch and PIL: apt install python3-torch python3-pil), and the bfloat16 and int8
modes with their logit agreement. Every run generates exactly its length (the end token is ignored).

  --size base|large       model size (default base): models/speed-demo-SIZE
  --lengths 32,128,256    generated tokens per run (end token ignored)
  --threads N             intra-op threads (default: all cores)
  --image FILE            input image (default: the bundled pier.png)
  --model PKG             use this package instead of the speed demo
  --busy N                run N CPU-bound threads of its own during the measurement (the
                          load of other programs on a desktop; default 0)
  --no-python             skip the Python eager baseline (run twice when the CPU has AVX-512:
                          with the environment's OpenBLAS kernels and with SkylakeX's)
  --no-uncached           skip uncached decoding (slow at large sizes)
  --no-bf16               skip the bfloat16 mode
  --no-int8               skip the int8 mode
  --no-batch              skip batching (4 sample images together vs one by one)
  --json                  print one JSON object instead of the table
)";

std::vector<int> parseLengths(const std::string& s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        try {
            const int n = std::stoi(part);
            if (n < 1 || n > 1024)
                throw std::out_of_range(part);
            out.push_back(n);
        } catch (const std::exception&) {
            throw UsageError("--lengths takes numbers from 1 to 1024 separated by commas, not '" +
                             s + "'");
        }
    }
    if (out.empty())
        throw UsageError("--lengths needs at least one length");
    return out;
}

} // namespace

const char* benchUsage() {
    return kBenchUsage;
}

BenchArgs parseBenchArgs(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"size", "lengths", "threads", "busy", "image", "model"},
                       {"no-python", "no-uncached", "no-bf16", "no-int8", "no-batch", "json"});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    BenchArgs args;
    args.json = a.has("json");
    BenchParams& c = args.params;
    c.size = a.get("size", "base");
    if (c.size != "base" && c.size != "large")
        throw UsageError("--size takes base or large, not '" + c.size + "'");
    c.lengths = parseLengths(a.get("lengths", "32,128,256"));
    c.threads = threadsOption(a);
    c.busy = a.getInt("busy", 0);
    if (c.busy < 0 || c.busy > 64)
        throw UsageError("--busy takes a number of threads from 0 to 64");
    c.image = a.get("image");   // "": the bundled pier.png
    c.package = a.get("model"); // "": the speed demo of --size
    c.python = !a.has("no-python");
    c.uncached = !a.has("no-uncached");
    c.bf16 = !a.has("no-bf16");
    c.int8 = !a.has("no-int8");
    c.batching = !a.has("no-batch");
    return args;
}

} // namespace florence::cli
