#include <florence/paths.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <dlfcn.h>
#include <unistd.h>

namespace florence {

namespace {

QString executableDir() {
    if (QCoreApplication::instance())
        return QCoreApplication::applicationDirPath();
    // Without a QCoreApplication (tests, library use) ask the kernel.
    return QFileInfo(QFile::symLinkTarget("/proc/self/exe")).absolutePath();
}

std::string existing(const QString& path) {
    return QFileInfo::exists(path) ? QDir::cleanPath(path).toStdString() : std::string();
}

} // namespace

std::string dataDir() {
    const QByteArray env = qgetenv("FLORENCE_STUDIO_DATA");
    if (!env.isEmpty())
        return QDir::cleanPath(QString::fromLocal8Bit(env)).toStdString();
    return QDir::cleanPath(executableDir() + "/../share/florence-studio").toStdString();
}

std::string bundledModelDir() {
    const QByteArray env = qgetenv("FLORENCE_STUDIO_MODEL");
    if (!env.isEmpty())
        return QString::fromLocal8Bit(env).toStdString();
    return existing(QString::fromStdString(dataDir()) + "/models/default");
}

std::string exporterScript() {
    return existing(QString::fromStdString(dataDir()) + "/tools/florence2_export.py");
}

std::string pythonInterpreter() {
    const QByteArray env = qgetenv("FLORENCE_PYTHON");
    if (!env.isEmpty())
        return QString::fromLocal8Bit(env).toStdString();
    return "/usr/bin/python3";
}

std::string opsLibrary() {
    // Looked up at run time: this library links no LibTorch, the programs that run models do.
    using PathFn = const char* (*)();
    auto fn = reinterpret_cast<PathFn>(dlsym(RTLD_DEFAULT, "florence_ops_library_path"));
    const char* path = fn ? fn() : nullptr;
    return path ? path : "";
}

std::vector<std::string> speedDemoModelDirs() {
    std::vector<std::string> dirs;
    for (const char* size : {"base", "large"}) {
        const std::string dir =
            existing(QString::fromStdString(dataDir()) + "/models/speed-demo-" + size);
        if (!dir.empty())
            dirs.push_back(dir);
    }
    return dirs;
}

std::string samplesDir() {
    return existing(QString::fromStdString(dataDir()) + "/samples");
}

std::string userModelsDir() {
    QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    if (base.isEmpty())
        base = QDir::homePath() + "/.local/share";
    return (base + "/florence-studio/models").toStdString();
}

} // namespace florence
