#include "WindowFixture.h"

#include <florence/paths.h>

#include <QCheckBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QLabel>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTest>

using florence::ui::MainWindow;

namespace {

// The offscreen platform warns on every top-level resize; that noise would hide real warnings.
QtMessageHandler g_defaultHandler = nullptr;
void filterMessages(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (msg.contains(QLatin1String("propagateSizeHints")))
        return;
    g_defaultHandler(type, ctx, msg);
}

} // namespace

QString samplePath(const char* name) {
    return QString::fromStdString(florence::samplesDir()) + QLatin1Char('/') + QLatin1String(name);
}

QString scenePath(const char* name) {
    return QString::fromStdString(florence::samplesDir()) + QStringLiteral("/scenes/") +
           QLatin1String(name);
}

bool hasModelToken(const QString& text) {
    static const QRegularExpression token("<(/?s|pad|unk|loc_\\d+|poly|sep|[A-Z_]+)>");
    return token.match(text).hasMatch();
}

void isolateUserState(const QTemporaryDir& tmp, const char* applicationName) {
    if (!g_defaultHandler) // installed once: a second install would filter into itself
        g_defaultHandler = qInstallMessageHandler(filterMessages);
    // Imported packages and the History go to the user's data folder: keep them in the
    // temporary home.
    qputenv("HOME", tmp.filePath("home").toUtf8());
    QDir().mkpath(tmp.filePath("home"));
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp.filePath("settings"));
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, tmp.filePath("settings"));
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName(QString::fromLatin1(applicationName));
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
}

bool openAndWait(MainWindow* w, const QString& path) {
    if (!w->openImageFile(path))
        return false;
    if (!QTest::qWaitFor([w] { return !w->isOpeningImage(); }, 60'000))
        return false;
    return w->hasImage() && w->imagePath() == QFileInfo(path).absoluteFilePath();
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

void WindowFixture::setUpTestCase() {
    QVERIFY(m_tmp.isValid());
    isolateUserState(m_tmp, "florence-studio-test");
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
    QVERIFY(QFile::exists(samplePath("pier.png")));
}

void WindowFixture::setUpWindow() {
    QSettings().clear();
    m_w = makeWindow();
}

std::unique_ptr<MainWindow> WindowFixture::makeWindow() {
    auto w = std::make_unique<MainWindow>();
    // No modal dialog in tests: the file chooser answers with whatever the test set.
    w->setFileChooser([this](MainWindow::FileChoice, const QString&, const QString&,
                             const QString&) { return m_nextChosenFile; });
    w->resize(1280, 860);
    w->show();
    w->activateWindow();
    if (!QTest::qWaitForWindowActive(w.get()))
        qWarning("window not active; shortcuts may not fire");
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    w->loadDefaultModel();
    if (!ready.wait(60'000))
        qWarning("model did not load");
    // The last session's image, decoded off the GUI thread.
    if (!QTest::qWaitFor([&] { return !w->isOpeningImage(); }, 60'000))
        qWarning("the last image did not open");
    return w;
}

void WindowFixture::setSpin(const char* name, int value) {
    auto* spin = child<QSpinBox>(m_w.get(), name);
    QVERIFY(spin);
    spin->setValue(value);
    QCOMPARE(spin->value(), value);
}

void WindowFixture::setIgnoreEos(bool on) {
    auto* check = child<QCheckBox>(m_w.get(), "ignoreEosCheck");
    QVERIFY(check);
    if (check->isChecked() != on)
        check->click();
    QCOMPARE(check->isChecked(), on);
}

bool WindowFixture::isDuration(const char* labelName) {
    // "12.3 ms" or, on a busy machine, "12.34 s": a measured duration, not the placeholder.
    static const QRegularExpression duration("^\\d+(\\.\\d+)? m?s$");
    auto* label = child<QLabel>(m_w.get(), labelName);
    return label && duration.match(label->text()).hasMatch();
}

void WindowFixture::pressKey(Qt::Key key, Qt::KeyboardModifiers mods) {
    m_w->activateWindow();
    QTest::keyClick(m_w.get(), key, mods);
}

bool WindowFixture::prepareLongRun(const char* task) {
    if (!openImage(samplePath("pier.png")))
        return false;
    m_w->setTask(QString::fromLatin1(task));
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 1024);
    return true;
}
