// The package manifest loader on arbitrary manifest.json contents.
#include <florence/package.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static QTemporaryDir dir;
    {
        QFile f(dir.filePath("manifest.json"));
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return 0;
        f.write(reinterpret_cast<const char*>(data), qint64(size));
    }
    try {
        const florence::Manifest m = florence::readManifest(dir.path().toStdString());
        // What the loader accepted holds its promises.
        if (m.vocabSize < 1 || m.decoderStartId < 0 || m.decoderStartId >= m.vocabSize ||
            m.forcedBosId >= m.vocabSize || m.forcedEosId >= m.vocabSize || m.numBeams < 1 ||
            m.imageTokens >= m.maxPositions)
            __builtin_trap();
        for (const auto& [role, file] : m.files)
            if (file.name.find('/') != std::string::npos || file.sha256.size() != 64)
                __builtin_trap();
    } catch (const florence::PackageError&) {
    }
    return 0;
}
