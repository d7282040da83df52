// What the whole-window suites share: a temporary home, settings and data folder for the test
// case, and the real main window made for every test (the bundled model loaded, shown, active),
// with the helpers the tests drive it by.
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
#include <florence/paths.h>

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

inline QString samplePath(const char* name) {
    return QString::fromStdString(florence::samplesDir()) + QLatin1Char('/') + QLatin1String(name);
}

// True when `text` holds a model token a person should not see.
bool hasModelToken(const QString& text);

class WindowFixture {
protected:
    // The test case's folders and settings; fails the case when the bundled model is missing.
    void setUpTestCase();
    // A window for the test: settings cleared, then makeWindow().
    void setUpWindow();
    std::unique_ptr<florence::ui::MainWindow> makeWindow();
    // Opens `path` and waits until it is shown or has failed; true when it is shown.
    bool openImage(const QString& path);
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
