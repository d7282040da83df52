// Command-line option parsing shared by the CLI's commands: --name value, --name=value, --flag,
// and positional arguments; wrong arguments throw UsageError with a one-line message. A value
// that names one of the command's options (`--image --quiet`) is refused as a forgotten value;
// `--name=value` passes such a value on purpose.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace florence::cli {

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Ctrl+C before there was anything to print (while the model loaded or the precisions were
// measured): the program says what it was doing and exits with 130.
class Interrupted : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Args {
    std::map<std::string, std::vector<std::string>> values;
    std::set<std::string> flags;
    std::vector<std::string> positional;

    bool has(const std::string& k) const { return values.count(k) || flags.count(k); }
    std::string get(const std::string& k, const std::string& def = "") const;
    int getInt(const std::string& k, int def) const;
};

// `valued` options take a value (`multi` gives options taking several), `flags` take none.
Args parseArgs(int argc, char** argv, int first, const std::set<std::string>& valued,
               const std::set<std::string>& flags, const std::map<std::string, int>& multi = {});

} // namespace florence::cli
