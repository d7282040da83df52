#include "Args.h"

#include <stdexcept>

namespace florence::cli {

std::string Args::get(const std::string& k, const std::string& def) const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second.back();
}

int Args::getInt(const std::string& k, int def) const {
    if (!values.count(k))
        return def;
    const std::string v = get(k);
    try {
        size_t pos = 0;
        int n = std::stoi(v, &pos);
        if (pos != v.size())
            throw std::invalid_argument(v);
        return n;
    } catch (const std::out_of_range&) {
        throw UsageError("--" + k + " " + v + " is out of range");
    } catch (const std::exception&) {
        throw UsageError("--" + k + " needs a whole number, not '" + v + "'");
    }
}

namespace {

// Whether `s` names one of the command's options (`--name` or `--name=value`).
bool isOption(const std::string& s, const std::set<std::string>& valued,
              const std::set<std::string>& flags) {
    if (s.rfind("--", 0) != 0 || s.size() <= 2)
        return false;
    const size_t eq = s.find('=');
    const std::string name = s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    return valued.count(name) || flags.count(name);
}

} // namespace

Args parseArgs(int argc, char** argv, int first, const std::set<std::string>& valued,
               const std::set<std::string>& flags, const std::map<std::string, int>& multi) {
    Args a;
    for (int i = first; i < argc; ++i) {
        std::string s = argv[i];
        if (s.rfind("--", 0) == 0 && s.size() > 2) {
            std::string name = s.substr(2);
            std::string inlineValue;
            bool hasInline = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                inlineValue = name.substr(eq + 1);
                name = name.substr(0, eq);
                hasInline = true;
            }
            if (flags.count(name)) {
                a.flags.insert(name);
            } else if (valued.count(name)) {
                int count = multi.count(name) ? multi.at(name) : 1;
                if (hasInline) {
                    a.values[name].push_back(inlineValue);
                    continue;
                }
                for (int k = 0; k < count; ++k) {
                    const std::string needs =
                        "--" + name + " needs " +
                        (count > 1 ? std::to_string(count) + " values" : "a value");
                    if (i + 1 >= argc)
                        throw UsageError(needs);
                    // `--image --quiet` forgot the file, and taking the option as a file name
                    // would end in a puzzling "cannot open --quiet" after the model loaded.
                    const std::string next = argv[i + 1];
                    if (isOption(next, valued, flags))
                        throw UsageError(needs + ", and " + next +
                                         " is an option (for a value of that name write --" + name +
                                         "=" + next + ")");
                    a.values[name].push_back(argv[++i]);
                }
            } else {
                throw UsageError("unknown option --" + name);
            }
        } else {
            a.positional.push_back(s);
        }
    }
    return a;
}

} // namespace florence::cli
