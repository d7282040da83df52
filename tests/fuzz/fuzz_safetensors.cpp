// The safetensors reader on arbitrary files, and the conversions of what it accepts.
#include "FuzzFile.h"

#include <florence/safetensors.h>

#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    florence::fuzz::MemoryFile file(data, size);
    try {
        const florence::SafetensorsFile f = florence::SafetensorsFile::open(file.path());
        for (const std::string& name : f.names()) {
            try {
                f.toFloat(name);
            } catch (const std::runtime_error&) {
            }
            try {
                f.toInt64(name);
            } catch (const std::runtime_error&) {
            }
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
