#include "runtime/TorchError.h"

namespace florence::detail {

std::string oneLine(const char* what) {
    std::string text(what ? what : "");
    std::string last;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(start, end - start);
        const size_t first = line.find_first_not_of(" \t\r");
        if (first != std::string::npos && line.rfind("Exception raised from", first) != first)
            last = line.substr(first);
        start = end + 1;
    }
    if (last.size() > 200)
        last = last.substr(0, 200) + "…";
    return last.empty() ? std::string("unknown error") : last;
}

std::string oneLine(const c10::Error& e) {
    return oneLine(e.what_without_backtrace());
}

} // namespace florence::detail
