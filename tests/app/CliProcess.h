// Runs florence-studio-cli of this build as a user would, for the CLI suites.
//
//   const Output o = runCli({"run", "--image", "x.png"});
//   QCOMPARE(o.exitCode, 0);
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace {

const QString kCli = QStringLiteral(FLORENCE_BINARY_DIR "/bin/florence-studio-cli");
const QString kSamples = QStringLiteral(FLORENCE_SOURCE_DIR "/resources/samples");

struct Output {
    int exitCode = -1; // -1: timed out, -2: crashed
    QByteArray out;
    QByteArray err;
};

// The environment the CLI needs to find the bundled model of this build.
inline QProcessEnvironment cliEnvironment() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!env.contains("FLORENCE_STUDIO_DATA"))
        env.insert("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    return env;
}

// Waits for a started process and collects what it printed; exit code -1 when it timed out
// (then killed), -2 when it crashed.
inline Output finishProcess(QProcess& p, int timeoutMs) {
    Output o;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return o;
    }
    o.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    o.out = p.readAllStandardOutput();
    o.err = p.readAllStandardError();
    return o;
}

inline Output runCli(const QStringList& args, int timeoutMs = 120000) {
    QProcess p;
    p.setProcessEnvironment(cliEnvironment());
    p.start(kCli, args);
    return finishProcess(p, timeoutMs);
}

} // namespace
