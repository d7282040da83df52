// The real main window's models: loading and its progress, switching, refusing a bad package, the
// About box, the speed demos, settings that persist, File › Import.
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "ModelCatalog.h"
#include "WindowFixture.h"
#include "controllers/EngineWorker.h"
#include "dialogs/AboutDialog.h"
#include "dialogs/ImportDialog.h"
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include <functional>

using florence::ui::EngineWorker;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

class TestWindowModels : public QObject, protected WindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { setUpTestCase(); }
    void init() { setUpWindow(); }
    void cleanup() { m_w.reset(); }

    void badModelFolderKeepsCurrentModel();
    void aStartModelThatFailsGivesTheBundledOneAndSaysSo();
    void settingsPersist();
    void runDisabledWhileModelLoads();
    void loadProgressShown();
    void oldModelReleasedOnlyForAPackageThatPassedItsChecks();
    void closeDuringASlowModelLoadStopsIt();
    void cancelWhileAModelLoadsEndsTheRunAtOnce();
    void aboutExplainsBundledModel();
    void speedDemoModelsListed();
    void ignoreEosFollowsTheModel();
    void randomModelIsDescribedFromItsManifest();
    void importDialogCancelsAndImports();
};

// A copy of the bundled package in the test's folder, with `edit` applied to its manifest.
static QString copyBundledPackage(const QString& to,
                                  const std::function<void(QJsonObject& files)>& edit) {
    QDir(to).removeRecursively();
    QDir().mkpath(to);
    const QString bundled = QString::fromStdString(florence::bundledModelDir());
    for (const QFileInfo& fi : QDir(bundled).entryInfoList(QDir::Files))
        QFile::copy(fi.filePath(), to + "/" + fi.fileName());
    QFile file(to + "/manifest.json");
    file.open(QIODevice::ReadOnly);
    QJsonObject manifest = QJsonDocument::fromJson(file.readAll()).object();
    file.close();
    QJsonObject files = manifest["files"].toObject();
    edit(files);
    manifest["files"] = files;
    file.open(QIODevice::WriteOnly | QIODevice::Truncate);
    file.write(QJsonDocument(manifest).toJson());
    return to;
}

// A copy of the bundled package with one byte of its decoder changed: it passes the manifest's
// checks and fails its checksum as it loads. "" on failure.
static QString damagedPackage(const QString& to) {
    const QString damaged = copyBundledPackage(to, [](auto&) {});
    QFile decoder(damaged + "/decoder.pt");
    if (!decoder.open(QIODevice::ReadWrite) || !decoder.seek(decoder.size() / 2))
        return {};
    const char byte = decoder.peek(1).at(0);
    return decoder.write(QByteArray(1, char(byte ^ 0x5a))) == 1 ? damaged : QString();
}

// A copy of the bundled package whose vision.pt is 256 GB (sparse: nothing is written); hashing
// it takes minutes, so its load stays at verifying the files until stopped. "" on failure.
static QString slowPackage(const QString& to) {
    const qint64 huge = qint64(256) << 30;
    const QString slow = copyBundledPackage(to, [huge](QJsonObject& files) {
        QJsonObject vision = files["vision"].toObject();
        vision["size"] = huge;
        vision["sha256"] = QString(64, QLatin1Char('0'));
        files["vision"] = vision;
    });
    QFile vision(slow + "/vision.pt");
    if (!vision.open(QIODevice::ReadWrite) || !vision.resize(huge))
        return {};
    return slow;
}

void TestWindowModels::badModelFolderKeepsCurrentModel() {
    const QString name = m_w->modelInfo().name();
    QSignalSpy failed(m_w.get(), &MainWindow::modelFailed);
    QVERIFY(!m_w->openModelPackage(m_tmp.path())); // no manifest.json: refused at once
    QCOMPARE(failed.count(), 1);
    QVERIFY(m_w->messageText().contains("manifest"));
    QVERIFY(m_w->isModelReady());
    QCOMPARE(m_w->modelInfo().name(), name);
    // The model still runs.
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
}

void TestWindowModels::aStartModelThatFailsGivesTheBundledOneAndSaysSo() {
    // `florence-studio --model DIR`: a folder refused at once (no manifest) and a package that
    // fails as it loads (a damaged decoder). The bundled model loads instead, and once it has,
    // the panel names the folder and why: the image's and the model's messages had replaced the
    // error, and the user took the demo's answers for their model's.
    const QString damaged = damagedPackage(m_tmp.filePath("damaged-start"));
    QVERIFY(!damaged.isEmpty());
    for (const QString& dir : {m_tmp.filePath("not-a-package"), damaged}) {
        QDir().mkpath(m_tmp.filePath("not-a-package"));
        m_w.reset();
        auto w = std::make_unique<MainWindow>();
        w->show();
        QSignalSpy ready(w.get(), &MainWindow::modelReady);
        w->openStartModel(dir);
        QVERIFY(openAndWait(w.get(), samplePath("pier.png")));
        QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60'000);
        QTRY_VERIFY(w->messageText().contains("is in use instead"));
        const QString message = w->messageText();
        QVERIFY2(message.startsWith("Could not open the model package " + dir + ": ") &&
                     message.contains(dir.endsWith("start") ? "checksum" : "manifest") &&
                     message.endsWith("The bundled model (" + w->modelInfo().name() +
                                      ") is in use instead."),
                 qPrintable(message));
        QCOMPARE(QDir(w->modelInfo().dir).canonicalPath(),
                 QDir(QString::fromStdString(florence::bundledModelDir())).canonicalPath());
    }
}

void TestWindowModels::settingsPersist() {
    QVERIFY(openImage(samplePath("coffee.png")));
    m_w->setTask("<OD>");
    setSpin("beamsSpin", 2);
    setSpin("maxTokensSpin", 77);
    child<QAbstractButton>(m_w.get(), "cacheCheck")->setChecked(false);
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QCOMPARE(m_w->currentTask(), QString("<OD>"));
    QCOMPARE(child<QSpinBox>(m_w.get(), "beamsSpin")->value(), 2);
    QCOMPARE(child<QSpinBox>(m_w.get(), "maxTokensSpin")->value(), 77);
    QVERIFY(!child<QAbstractButton>(m_w.get(), "cacheCheck")->isChecked());
    // The model is loaded in the saved precision from the start.
    QCOMPARE(child<QComboBox>(m_w.get(), "precisionCombo")->currentText(), QString("bfloat16"));
    QCOMPARE(m_w->modelInfo().precision(), QString("bfloat16"));
    QVERIFY(m_w->imagePath().endsWith("coffee.png"));
    QVERIFY(m_w->recentFiles().value(0).endsWith("coffee.png"));
}

void TestWindowModels::oldModelReleasedOnlyForAPackageThatPassedItsChecks() {
    // Loading a model keeps one model in memory, not two; a package its checks refuse
    // leaves the model in use working.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QObject context; // the connections end with this test
    QStringList events;
    connect(worker, &EngineWorker::modelReleased, &context, [&] { events << "released"; });
    connect(worker, &EngineWorker::modelLoaded, &context, [&] { events << "loaded"; });
    connect(worker, &EngineWorker::modelFailed, &context, [&] { events << "failed"; });
    // While another package loads, what the panel says the model in use is for is not shown
    // (it would pass for the new one's); it is back when that load fails.
    auto* purpose = child<QLabel>(m_w.get(), "modelPurposeLabel");
    const QString purposeText = purpose->text();
    QVERIFY(!purposeText.isEmpty() && !purpose->isHidden());
    QStringList purposeWhileLoading;
    connect(
        worker, &EngineWorker::modelLoading, &context,
        [&] { purposeWhileLoading << (purpose->isHidden() ? "hidden" : purpose->text()); },
        Qt::QueuedConnection);
    const QString damaged = damagedPackage(m_tmp.filePath("damaged-package"));
    QVERIFY(!damaged.isEmpty());
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    const int listed = combo->count();
    m_w->openModelPackage(damaged);
    QTRY_COMPARE_WITH_TIMEOUT(events, QStringList{"failed"}, 60'000);
    QVERIFY2(m_w->messageText().contains("checksum"), qPrintable(m_w->messageText()));
    QVERIFY(m_w->isModelReady());
    // The package that failed is not left in the list (nor remembered for the next start).
    QCOMPARE(combo->count(), listed);
    QCOMPARE(combo->currentData().toString(), m_w->modelInfo().dir);
    QCOMPARE(purposeWhileLoading, QStringList{"hidden"});
    QVERIFY(!purpose->isHidden());
    QCOMPARE(purpose->text(), purposeText);

    events.clear();
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(events, (QStringList{"released", "loaded"}), 60'000);
    QTRY_VERIFY(m_w->isModelReady());
    QCOMPARE(m_w->modelInfo().precision(), QString("bfloat16"));
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(done.at(0).at(0).toBool(), false);
}

void TestWindowModels::closeDuringASlowModelLoadStopsIt() {
    // A package whose files take minutes to verify. Closing the window stops the load, which
    // ends at once with "cancelled": the wait below fails if it does not stop.
    const QString slow = slowPackage(m_tmp.filePath("slow-package"));
    QVERIFY(!slow.isEmpty());
    QSignalSpy failed(m_w.get(), &MainWindow::modelFailed);
    m_w->openModelPackage(slow);
    // The engine thread has started on it, and says so.
    QTRY_VERIFY_WITH_TIMEOUT(
        child<QLabel>(m_w.get(), "statusModel")->text().contains(": verifying the files ("),
        60'000);
    m_w->close();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60'000);
    QVERIFY2(failed.at(0).at(0).toString().contains("cancelled"),
             qPrintable(failed.at(0).at(0).toString()));
    m_w.reset();
    // Closed during its first load, the package is listed at the next start (it had not failed
    // its checks, only not finished them)...
    QFile::remove(slow + "/vision.pt");
    QVERIFY(QFile::copy(QString::fromStdString(florence::bundledModelDir()) + "/vision.pt",
                        slow + "/vision.pt"));
    m_w = makeWindow();
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    const int row = combo->findData(florence::ui::ModelCatalog::cleanDir(slow));
    QVERIFY2(row >= 0, qPrintable(slow));
    // ...and when it then fails (its manifest's size is wrong now), it is not listed again.
    QTRY_VERIFY_WITH_TIMEOUT(m_w->isModelReady(), 60'000);
    QSignalSpy failedAgain(m_w.get(), &MainWindow::modelFailed);
    m_w->openModelPackage(combo->itemData(row).toString()); // as picking it in the box
    QTRY_COMPARE_WITH_TIMEOUT(failedAgain.count(), 1, 60'000);
    QCOMPARE(combo->findData(florence::ui::ModelCatalog::cleanDir(slow)), -1);
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QCOMPARE(child<QComboBox>(m_w.get(), "modelCombo")
                 ->findData(florence::ui::ModelCatalog::cleanDir(slow)),
             -1);
}

void TestWindowModels::cancelWhileAModelLoadsEndsTheRunAtOnce() {
    // The first start's caption waits for the model; with Automatic precision measuring a large
    // model that is a minute or more. Cancel ends such a queued run at once ("Cancelling…"
    // stayed until the load ended). A package whose files take minutes to verify stands in.
    QVERIFY(openImage(samplePath("pier.png")));
    const QString slow = slowPackage(m_tmp.filePath("slow-cancel"));
    QVERIFY(!slow.isEmpty());
    m_w->openModelPackage(slow);
    QTRY_VERIFY_WITH_TIMEOUT(
        child<QLabel>(m_w.get(), "statusModel")->text().contains(": verifying the files ("),
        60'000);
    QSignalSpy completed(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun()); // as the first start's caption: queued behind the load
    m_w->cancelRun();
    QCOMPARE(completed.count(), 1);
    QCOMPARE(completed.at(0).at(0).toBool(), true);
    QVERIFY(!m_w->isRunning());
    // Ended; the load it waited for goes on, and the run's line says so.
    QCOMPARE(child<QLabel>(m_w.get(), "statusRun")->text(),
             QStringLiteral("Waiting for the model"));
    // A comparison likewise.
    QSignalSpy compared(m_w.get(), &MainWindow::comparisonCompleted);
    QVERIFY(m_w->startComparison());
    m_w->cancelRun();
    QCOMPARE(compared.count(), 1);
    QVERIFY(!m_w->isRunning());
    m_w->close(); // stops the load
}

void TestWindowModels::runDisabledWhileModelLoads() {
    // A run started during a load would use the old model and its defaults.
    QVERIFY(openImage(samplePath("pier.png")));
    auto* run = child<QAbstractButton>(m_w.get(), "runButton");
    QVERIFY(run->isEnabled());
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(!m_w->isRunning(), 60'000);
    auto* line = child<QLabel>(m_w.get(), "statusRun");
    const QString ended = line->text();
    QVERIFY2(ended.startsWith("Done"), qPrintable(ended));
    m_w->setPrecision(florence::Precision::BFloat16);
    QVERIFY(!run->isEnabled());
    // The run's line says what the window waits for, not the last run's end (it read "Done:
    // ... tokens" or "Idle" for as long as the load took), an image opened meanwhile too...
    QCOMPARE(line->text(), QStringLiteral("Waiting for the model"));
    QVERIFY(openImage(samplePath("coffee.png")));
    if (reloaded.isEmpty())
        QCOMPARE(line->text(), QStringLiteral("Waiting for the model"));
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    QVERIFY(run->isEnabled());
    // ...and once loaded, what it said before (the new image cleared the old answer).
    QCOMPARE(line->text(), QStringLiteral("Idle"));
}

void TestWindowModels::loadProgressShown() {
    // While a model loads, the status bar says what the load is doing and how far it is:
    // "Loading <name>: reading the vision encoder (45%)", in order, up to 100%.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    auto* status = child<QLabel>(m_w.get(), "statusModel");
    QObject context; // the connection ends with this test
    QStringList shown;
    // Delivered after the window's own handler of the same report (connected before), so the
    // label holds what the window made of it.
    connect(
        worker, &EngineWorker::modelLoadProgress, &context, [&] { shown << status->text(); },
        Qt::QueuedConnection);
    const QString name = m_w->modelInfo().name();
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    m_w->setPrecision(florence::Precision::BFloat16); // the bundled model again
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    QVERIFY(!shown.isEmpty());
    const QRegularExpression line(QStringLiteral("^Loading (.+): (.+) \\((\\d+)%\\)$"));
    int last = -1;
    QStringList doing;
    for (const QString& text : shown) {
        const QRegularExpressionMatch m = line.match(text);
        QVERIFY2(m.hasMatch(), qPrintable(text));
        QCOMPARE(m.captured(1), name);
        const int percent = m.captured(3).toInt();
        QVERIFY2(percent >= last && percent <= 100, qPrintable(shown.join(" | ")));
        last = percent;
        if (doing.isEmpty() || doing.back() != m.captured(2))
            doing << m.captured(2);
    }
    QCOMPARE(last, 100);
    QCOMPARE(doing, (QStringList{"verifying the files", "reading the vision encoder",
                                 "reading the text encoder", "reading the decoder",
                                 "preparing the weights"}));
    // Loaded: the status bar names the model instead.
    QVERIFY2(!status->text().startsWith("Loading"), qPrintable(status->text()));
}

void TestWindowModels::speedDemoModelsListed() {
    // The build installs Florence-2-base and -large as speed demos (weights generated at load):
    // the model list offers them next to the bundled model, named and explained as such.
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    QStringList speedDemos;
    for (int i = 0; i < combo->count(); ++i)
        if (combo->itemText(i).contains("speed demo"))
            speedDemos << combo->itemText(i);
    QCOMPARE(speedDemos.size(), 2);
    QVERIFY2(speedDemos[0].startsWith("Florence-2-base"), qPrintable(speedDemos.join(", ")));
    QVERIFY2(speedDemos[1].startsWith("Florence-2-large"), qPrintable(speedDemos.join(", ")));
    const QString why = florence::ui::ModelCatalog::explainModelWeights(speedDemos[0], QString());
    QVERIFY2(why.contains("published size") && why.contains("noise") && why.contains("Compare"),
             qPrintable(why));
    QVERIFY(!why.contains("synthetic scenes"));
}

void TestWindowModels::ignoreEosFollowsTheModel() {
    auto* check = child<QCheckBox>(m_w.get(), "ignoreEosCheck");
    QVERIFY(!check->isChecked()); // off by default, with the bundled model
    // A package whose manifest asks for it, as the speed demos' do: a copy of the bundled model
    // (it loads in a moment) with "ignore_eos" set.
    const QDir bundled(QString::fromStdString(florence::bundledModelDir()));
    const QString speedLike = m_tmp.filePath("speed-like");
    QVERIFY(QDir().mkpath(speedLike));
    for (const QString& f : bundled.entryList(QDir::Files | QDir::Hidden)) {
        QFile::remove(speedLike + "/" + f);
        QVERIFY(QFile::copy(bundled.filePath(f), speedLike + "/" + f));
    }
    QFile manifest(speedLike + "/manifest.json");
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    QJsonObject root = QJsonDocument::fromJson(manifest.readAll()).object();
    manifest.close();
    QJsonObject generation = root["generation"].toObject();
    generation["ignore_eos"] = true;
    root["generation"] = generation;
    QVERIFY(manifest.open(QIODevice::WriteOnly | QIODevice::Truncate));
    manifest.write(QJsonDocument(root).toJson());
    manifest.close();

    const auto load = [this](const QString& dir) {
        QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
        m_w->openModelPackage(dir);
        return ready.wait(60'000);
    };
    QVERIFY(load(speedLike));
    QVERIFY(check->isChecked());
    // The run lasts exactly Max new tokens.
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 6);
    setSpin("beamsSpin", 1);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(tokens.count(), 6);
    QVERIFY(m_w->lastOptions().ignoreEos);

    // Another model: the user's choice (off) again.
    QVERIFY(load(bundled.path()));
    QVERIFY(!check->isChecked());
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QVERIFY(!m_w->lastOptions().ignoreEos);
    // The user's choice for real models outlives a speed demo, whatever was done with it there.
    setIgnoreEos(true);
    QVERIFY(load(speedLike));
    setIgnoreEos(false);
    QVERIFY(load(bundled.path()));
    QVERIFY(check->isChecked());
}

void TestWindowModels::aboutExplainsBundledModel() {
    // The bundled model is the demo model: the About box and the model panel say what it was
    // trained on, what not to expect, and how to get a real checkpoint.
    const QString about = m_w->aboutText();
    QVERIFY(about.contains(QStringLiteral(FLORENCE_VERSION_FOR_TEST)));
    QVERIFY(about.contains("The bundled model"));
    QVERIFY2(about.contains("florence2-demo-shapes"), qPrintable(about));
    QVERIFY(about.contains("trained only on synthetic scenes of simple shapes"));
    QVERIFY(about.contains("meaningless"));
    QVERIFY(!about.contains("random weights"));
    QVERIFY(about.contains("Import Hugging Face Model"));
    QVERIFY(about.contains("python3-torch"));
    // The runtime and the command line are behind Show Details.
    QVERIFY(!about.contains("LibTorch"));
    QVERIFY(florence::ui::AboutDialog::details().contains(
        "florence-studio-cli import --hf DIR --out PKG"));
    QVERIFY(florence::ui::AboutDialog::details().contains("LibTorch"));
    // The model panel says the same where the model is shown.
    const QString tip = child<QLabel>(m_w.get(), "modelLabel")->toolTip();
    QVERIFY2(tip.contains("trained only on synthetic scenes"), qPrintable(tip));
    QVERIFY(tip.contains("photographs"));
    QVERIFY(tip.contains("florence-studio-cli import --hf DIR --out PKG"));
    QVERIFY(tip.contains("python3-torch"));
}

void TestWindowModels::randomModelIsDescribedFromItsManifest() {
    // The bundled package's files under a manifest that names random weights, as the exporter's
    // --random-init packages do.
    const QDir bundled(QString::fromStdString(florence::bundledModelDir()));
    const QString dir = m_tmp.filePath("random-package");
    QVERIFY(QDir().mkpath(dir));
    for (const QString& f : bundled.entryList(QDir::Files))
        if (f != "manifest.json")
            QVERIFY(QFile::link(bundled.filePath(f), QDir(dir).filePath(f)));
    QFile in(bundled.filePath("manifest.json"));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject manifest = QJsonDocument::fromJson(in.readAll()).object();
    manifest["name"] = "florence2-tiny (random weights, seed 1234)";
    manifest["source"] = "random init, seed 1234";
    QFile out(QDir(dir).filePath("manifest.json"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(manifest).toJson());
    out.close();

    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    m_w->openModelPackage(dir);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60'000);
    QCOMPARE(m_w->modelInfo().name(), QString("florence2-tiny (random weights, seed 1234)"));
    const QString tip = child<QLabel>(m_w.get(), "modelLabel")->toolTip();
    QVERIFY2(tip.contains("random weights"), qPrintable(tip));
    QVERIFY(tip.contains("nonsense"));
    QVERIFY(!tip.contains("synthetic scenes"));
    QVERIFY(tip.contains("florence-studio-cli import --hf DIR --out PKG"));
    const QString about = m_w->aboutText();
    QVERIFY(about.contains("The loaded model"));
    QVERIFY(about.contains("nonsense"));
    QVERIFY(!about.contains("synthetic scenes"));
    QVERIFY(about.contains("Import Hugging Face Model"));
}

void TestWindowModels::importDialogCancelsAndImports() {
    QVERIFY(QString::fromStdString(florence::userModelsDir()).startsWith(m_tmp.path()));
    florence::ui::ImportDialog* dlg = m_w->showImportDialog();
    QVERIFY(dlg);
    QTRY_VERIFY(dlg->isVisible());
    child<QRadioButton>(dlg, "randomRadio")->setChecked(true);
    auto* name = child<QLineEdit>(dlg, "packageNameEdit");
    auto* start = child<QAbstractButton>(dlg, "importStartButton");

    // Cancel: the exporter stops, nothing is left behind, the dialog says so.
    name->setText("cancelled-import");
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(dlg->isRunning());
    QTest::mouseClick(child<QAbstractButton>(dlg, "importCancelButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!dlg->isRunning(), 60'000);
    QVERIFY2(dlg->lastMessage().contains("cancelled"), qPrintable(dlg->lastMessage()));
    QVERIFY(!QFileInfo::exists(QString::fromStdString(florence::userModelsDir()) +
                               "/cancelled-import"));
    QVERIFY(dlg->isVisible()); // cancelling the job does not close the dialog

    // Import: the new package is loaded and selectable.
    name->setText("imported-tiny");
    QSignalSpy imported(dlg, &florence::ui::ImportDialog::imported);
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 600'000);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 120'000);
    const QString dir = imported.at(0).at(0).toString();
    QVERIFY(dir.endsWith("imported-tiny"));
    QCOMPARE(QDir::cleanPath(m_w->modelInfo().dir), QDir::cleanPath(dir));
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    QVERIFY(combo->count() >= 2);
    QCOMPARE(QDir::cleanPath(combo->currentData().toString()), QDir::cleanPath(dir));
}

QTEST_MAIN(TestWindowModels)
#include "TestWindowModels.moc"
