// One settings model for the app and the CLI: with nothing changed, both run a package with its
// own generation defaults and give the same answer; what the user changes in the panel is all
// that is kept; precision names parse and print in one place.
#include "MainWindow.h"
#include "WindowFixture.h"
#include "app/CliProcess.h"

#include <florence/generation_settings.h>
#include <florence/paths.h>

#include <QAbstractButton>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using florence::ui::MainWindow;

namespace {

// The app's run and the CLI's, each; longer than WindowFixture.h's kRunTimeoutMs: two shared
// cores, colleagues compiling.
constexpr int kAnswerTimeoutMs = 300'000;
// The package's own generation settings, none of them the app's former panel values.
constexpr int kPackageBeams = 1;
constexpr int kPackageMaxNewTokens = 9;

} // namespace

class TestDefaultAnswers : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void precisionNamesRoundTrip_data();
    void precisionNamesRoundTrip();
    void settingsApplyOnlyWhatChanged();
    void appAndCliAgreeOnDefaults();
    void panelKeepsOnlyWhatTheUserChanged();

private:
    // A copy of the bundled model whose manifest sets its own generation settings.
    QString makePackage();
    std::unique_ptr<MainWindow> windowWith(const QString& package);

    QTemporaryDir m_tmp;
};

void TestDefaultAnswers::initTestCase() {
    QVERIFY(m_tmp.isValid());
    isolateUserState(m_tmp, "florence-studio-default-answers-test");
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
}

void TestDefaultAnswers::init() {
    QSettings().clear();
}

void TestDefaultAnswers::precisionNamesRoundTrip_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("precision"); // -1: refused
    QTest::newRow("float32") << "float32" << int(florence::Precision::Float32);
    QTest::newRow("fp32") << "fp32" << int(florence::Precision::Float32);
    QTest::newRow("bfloat16") << "bfloat16" << int(florence::Precision::BFloat16);
    QTest::newRow("bf16") << "bf16" << int(florence::Precision::BFloat16);
    QTest::newRow("int8") << "int8" << int(florence::Precision::Int8);
    QTest::newRow("display text") << "Float32" << -1;
    QTest::newRow("empty") << "" << -1;
    QTest::newRow("float64") << "float64" << -1;
}

void TestDefaultAnswers::precisionNamesRoundTrip() {
    QFETCH(QString, name);
    QFETCH(int, precision);
    const std::optional<florence::Precision> p = florence::parsePrecision(name.toStdString());
    QCOMPARE(p.has_value(), precision >= 0);
    if (p) {
        QCOMPARE(int(*p), precision);
        QCOMPARE(florence::parsePrecision(florence::precisionName(*p)), p); // prints what it reads
    }
    for (const florence::Precision known : florence::knownPrecisions())
        QVERIFY(QString::fromStdString(florence::precisionNames())
                    .contains(QLatin1String(florence::precisionName(known))));
}

void TestDefaultAnswers::settingsApplyOnlyWhatChanged() {
    florence::GenerationOptions package;
    package.numBeams = 5;
    package.maxNewTokens = 40;
    package.noRepeatNgramSize = 0;
    package.ignoreEos = true;
    florence::GenerationSettings settings;
    QVERIFY(settings.isDefault());
    florence::GenerationOptions o = settings.applyTo(package);
    QCOMPARE(o.numBeams, 5);
    QCOMPARE(o.maxNewTokens, 40);
    QCOMPARE(o.ignoreEos, true);
    settings.beams = 2;
    settings.useCache = false;
    QVERIFY(!settings.isDefault());
    o = settings.applyTo(package);
    QCOMPARE(o.numBeams, 2);
    QCOMPARE(o.useCache, false);
    QCOMPARE(o.maxNewTokens, 40);     // not changed: the package's
    QCOMPARE(o.noRepeatNgramSize, 0); // never a setting: always the package's
    QVERIFY(!settings.precision.has_value()); // Automatic
}

QString TestDefaultAnswers::makePackage() {
    const QDir bundled(QString::fromStdString(florence::bundledModelDir()));
    const QString dir = m_tmp.filePath("own-defaults");
    QDir(dir).removeRecursively();
    if (!QDir().mkpath(dir))
        return {};
    for (const QString& f : bundled.entryList(QDir::Files | QDir::Hidden))
        if (!QFile::copy(bundled.filePath(f), dir + "/" + f))
            return {};
    QFile manifest(dir + "/manifest.json");
    if (!manifest.open(QIODevice::ReadOnly))
        return {};
    QJsonObject root = QJsonDocument::fromJson(manifest.readAll()).object();
    manifest.close();
    QJsonObject generation = root["generation"].toObject();
    generation["num_beams"] = kPackageBeams;
    generation["max_new_tokens"] = kPackageMaxNewTokens;
    root["generation"] = generation;
    if (!manifest.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return {};
    manifest.write(QJsonDocument(root).toJson());
    return dir;
}

std::unique_ptr<MainWindow> TestDefaultAnswers::windowWith(const QString& package) {
    auto w = std::make_unique<MainWindow>();
    w->resize(1280, 860);
    w->show();
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    w->openModelPackage(package);
    if (!ready.wait(60'000))
        qWarning("the package did not load");
    return w;
}

void TestDefaultAnswers::appAndCliAgreeOnDefaults() {
    const QString package = makePackage();
    QVERIFY(!package.isEmpty());
    const QString image = kSamples + "/pier.png";

    auto w = windowWith(package);
    QVERIFY(openAndWait(w.get(), image));
    w->setTask("<CAPTION>");
    QSignalSpy done(w.get(), &MainWindow::runCompleted);
    QVERIFY(w->startRun());
    QVERIFY(done.wait(kAnswerTimeoutMs));
    const QString exported = m_tmp.filePath("app.json");
    QVERIFY2(w->exportJson(exported), qPrintable(w->messageText()));
    const QJsonObject app = readJson(exported);

    const Output cli = runCli(
        {"run", "--model", package, "--image", image, "--task", "<CAPTION>", "--json", "--quiet"},
        kAnswerTimeoutMs);
    QVERIFY2(cli.exitCode == 0, cli.err.constData());
    const QJsonObject fromCli = QJsonDocument::fromJson(cli.out).object();

    // Both ran with the package's settings, not the app's former panel values (3 beams, 1024).
    QCOMPARE(app["generation"].toObject()["beams"].toInt(), kPackageBeams);
    QCOMPARE(app["generation"].toObject()["max_new_tokens"].toInt(), kPackageMaxNewTokens);
    QCOMPARE(app["generation"], fromCli["generation"]);
    QVERIFY(!app["raw_text"].toString().isEmpty());
    QCOMPARE(app["raw_text"], fromCli["raw_text"]);
    QCOMPARE(app["huggingface"], fromCli["huggingface"]);
}

void TestDefaultAnswers::panelKeepsOnlyWhatTheUserChanged() {
    const QString package = makePackage();
    QVERIFY(!package.isEmpty());
    {
        auto w = windowWith(package);
        auto* beams = w->findChild<QSpinBox*>("beamsSpin");
        auto* tokens = w->findChild<QSpinBox*>("maxTokensSpin");
        QVERIFY(beams && tokens);
        QCOMPARE(beams->value(), kPackageBeams); // the package's defaults on show
        QCOMPARE(tokens->value(), kPackageMaxNewTokens);
        beams->setValue(2);
        w->close(); // saves the preferences
    }
    const QSettings s;
    QCOMPARE(s.value("generationChanges/beams").toInt(), 2);
    QVERIFY(!s.contains("generationChanges/maxNewTokens"));
    QVERIFY(!s.contains("generationChanges/useCache"));
    QVERIFY(!s.contains("generationChanges/precision"));
    {
        // Another start: the change is back, the rest still follows the package.
        auto w = windowWith(package);
        QCOMPARE(w->findChild<QSpinBox*>("beamsSpin")->value(), 2);
        QCOMPARE(w->findChild<QSpinBox*>("maxTokensSpin")->value(), kPackageMaxNewTokens);
        // The model's defaults again: the change is forgotten, on screen and in the settings.
        auto* reset = w->findChild<QAbstractButton*>("generationDefaultsButton");
        QVERIFY(reset);
        QTest::mouseClick(reset, Qt::LeftButton);
        QCOMPARE(w->findChild<QSpinBox*>("beamsSpin")->value(), kPackageBeams);
        w->close();
    }
    QVERIFY(!QSettings().contains("generationChanges/beams"));
}

QTEST_MAIN(TestDefaultAnswers)
#include "TestDefaultAnswers.moc"
