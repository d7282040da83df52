// The TorchScript archive reader of the code allow-list (zip directory, zip64 fields, deflated
// code entries) on arbitrary files.
#include "FuzzFile.h"
#include "package/CodeCheck.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    florence::fuzz::MemoryFile file(data, size);
    try {
        const std::string digest = florence::detail::torchScriptCodeDigest(file.path());
        florence::detail::codeFamilies("decoder", digest);
    } catch (const florence::detail::ArchiveError&) {
    }
    return 0;
}
