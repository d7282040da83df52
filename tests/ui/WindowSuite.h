// What the suites that drive the real window share: the user's home, settings and data folders
// in a temporary folder (never the real ones) with the bundled model of this build, Qt's
// offscreen chatter filtered, images opened and waited for, JSON files read.
//
//   QVERIFY(m_tmp.isValid());
//   isolateUserState(m_tmp, "florence-studio-default-answers-test");
//   QVERIFY(openAndWait(window, samplePath));
#pragma once

#include "MainWindow.h"

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

namespace window_suite {

inline QtMessageHandler g_defaultHandler = nullptr;

inline void filterMessages(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    // The offscreen platform's, about what it cannot do; nothing of ours.
    if (msg.contains(QLatin1String("propagateSizeHints")))
        return;
    g_defaultHandler(type, ctx, msg);
}

} // namespace window_suite

inline void isolateUserState(const QTemporaryDir& tmp, const char* applicationName) {
    window_suite::g_defaultHandler = qInstallMessageHandler(window_suite::filterMessages);
    // Imported packages and the History go to the user's data folder: keep them in the
    // temporary home.
    qputenv("HOME", tmp.filePath("home").toUtf8());
    QDir().mkpath(tmp.filePath("home"));
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp.filePath("settings"));
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName(QString::fromLatin1(applicationName));
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
}

// Images open off the GUI thread: waits until `path` is the one shown (or it failed).
inline bool openAndWait(florence::ui::MainWindow* w, const QString& path) {
    if (!w->openImageFile(path))
        return false;
    if (!QTest::qWaitFor([w] { return !w->isOpeningImage(); }, 60'000))
        return false;
    return w->hasImage() && w->imagePath() == QFileInfo(path).absoluteFilePath();
}

inline QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}
