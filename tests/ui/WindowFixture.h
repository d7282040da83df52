// What the suites that drive the real window share: the user's home, settings and data folders
// in a temporary folder (never the real ones) with the bundled model of this build, Qt's
// offscreen chatter filtered, images opened and waited for, widgets found by name, JSON files
// read. Suites that make their own windows use the free functions:
//
//   QVERIFY(m_tmp.isValid());
//   isolateUserState(m_tmp, "florence-studio-default-answers-test");
//   QVERIFY(openAndWait(window, samplePath("pier.png")));
//
// The whole-window suites derive from WindowFixture, which makes the real main window for every
// test (the bundled model loaded, shown, active):
//
//   class TestWindowX : public QObject, protected WindowFixture {
//       Q_OBJECT
//   private slots:
//       void initTestCase() { setUpTestCase(); }
//       void init() { setUpWindow(); }
//       void cleanup() { m_w.reset(); }
//   };
#pragma once

#include "MainWindow.h"

#include <QJsonObject>
#include <QString>
#include <QTemporaryDir>
#include <QWidget>

#include <memory>

inline constexpr int kRunTimeoutMs = 180'000; // two shared cores, colleagues compiling

template <typename T> T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QString::fromLatin1(name));
    if (!c)
        qWarning("no child %s", name);
    return c;
}

// A sample image of resources/samples, and one of its scenes (the ones the demo model knows).
QString samplePath(const char* name);
QString scenePath(const char* name);

// True when `text` holds a model token a person should not see.
bool hasModelToken(const QString& text);

// The user's home, settings and data folders in `tmp`, the application named
// `applicationName`, the offscreen platform's chatter filtered out.
void isolateUserState(const QTemporaryDir& tmp, const char* applicationName);

// Images open off the GUI thread: waits until `path` is the one shown (or it failed); true when
// it is shown.
bool openAndWait(florence::ui::MainWindow* w, const QString& path);

// The JSON object in `path`; empty when it cannot be read.
QJsonObject readJson(const QString& path);

class WindowFixture {
protected:
    // The test case's folders and settings; fails the case when the bundled model is missing.
    void setUpTestCase();
    // A window for the test: settings cleared, then makeWindow().
    void setUpWindow();
    std::unique_ptr<florence::ui::MainWindow> makeWindow();
    // Opens `path` and waits until it is shown or has failed; true when it is shown.
    bool openImage(const QString& path) { return openAndWait(m_w.get(), path); }
    void setSpin(const char* name, int value);
    // Ticks or clears the Generation option "Ignore the end token" as a user would.
    void setIgnoreEos(bool on);
    // The pier sample, `task`, end token ignored, 1024 new tokens: a run that lasts until
    // cancelled or replaced.
    bool prepareLongRun(const char* task);
    void pressKey(Qt::Key key, Qt::KeyboardModifiers mods = Qt::NoModifier);
    bool isDuration(const char* labelName);

    QTemporaryDir m_tmp;
    std::unique_ptr<florence::ui::MainWindow> m_w;
    QString m_nextChosenFile;
};
