// The history file shared by every window of the app (ui/history/History.*), without a window: two
// windows recording runs in turn keep each other's runs; a FIFO, a link to /dev/zero or an
// oversized file where the history or the settings should be is set aside at once, never waited
// on or read without end; damaged entries are skipped but kept in a ".bad" copy.
#include "Settings.h"
#include "history/History.h"
#include "widgets/HistoryPanel.h"

#include "engine/FileSizeLimit.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QListView>
#include <QLockFile>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

using florence::ui::History;

namespace {

// A run's document as the window records it, with `caption` as its answer.
QJsonObject runDocument(const QString& caption) {
    florence::ui::RunOutcome outcome;
    outcome.task = QStringLiteral("<CAPTION>");
    outcome.result.text = "</s><s>" + caption.toStdString() + "</s>";
    florence::ui::HistoryRecord record;
    record.outcome = &outcome;
    record.answer = florence::parseAnswer("<CAPTION>", outcome.result.text, 64, 48);
    record.imagePath = QStringLiteral("/photos/") + caption + ".png";
    record.imageName = caption + ".png";
    return florence::ui::makeHistoryDocument(record);
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QStringList captions(const History& h) {
    QStringList out;
    for (int i = 0; i < h.count(); ++i)
        out << QString::fromStdString(h.entry(i).rawText).remove("</s>").remove("<s>");
    return out;
}

bool isFifo(const QString& path) {
    struct stat st {};
    return ::lstat(path.toLocal8Bit().constData(), &st) == 0 && S_ISFIFO(st.st_mode);
}

} // namespace

class TestHistoryFile : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void twoWindowsKeepEachOthersRuns();
    void aFollowingWindowSeesTheOthersChanges();
    void encoderTimesBeforeRunAreKept();
    void notAFileIsSetAside_data();
    void notAFileIsSetAside();
    void damagedEntriesAreKeptInABadCopy();
    void settingsThatAreNotAFileAreSetAside();
    void aLockThatCannotBeMadeIsNotAnotherWindow();
    void firstStartIsClaimedOnce();
    void theListKeepsItsPlaceWhenRunsComeIn();

private:
    QTemporaryDir m_tmp;
    QString m_path;
};

void TestHistoryFile::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName("test_history_file");
    QVERIFY(m_tmp.isValid());
    QVERIFY(florence::ui::entryFromDocument(runDocument("probe"), nullptr).has_value());
}

void TestHistoryFile::init() {
    const QString dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()) + "-" +
                                       QString::fromLatin1(QTest::currentDataTag()));
    QVERIFY(QDir().mkpath(dir));
    m_path = dir + "/history.json";
}

void TestHistoryFile::twoWindowsKeepEachOthersRuns() {
    History a(m_path), b(m_path);
    QVERIFY(a.load());
    QVERIFY(b.load());
    // Each window finishes a run in turn; neither reloads in between by itself.
    for (int round = 0; round < 3; ++round) {
        QString error;
        QVERIFY2(a.add(runDocument(QStringLiteral("a%1").arg(round)), &error), qPrintable(error));
        QVERIFY2(b.add(runDocument(QStringLiteral("b%1").arg(round)), &error), qPrintable(error));
    }
    QCOMPARE(captions(b), (QStringList{"b2", "a2", "b1", "a1", "b0", "a0"}));
    History later(m_path);
    QVERIFY(later.load());
    QCOMPARE(captions(later), captions(b));
    // A window opened long ago still adds to the file as it is now.
    QVERIFY(later.add(runDocument("late")));
    QVERIFY(a.add(runDocument("a3")));
    QCOMPARE(captions(a).mid(0, 3), (QStringList{"a3", "late", "b2"}));
    QCOMPARE(a.count(), 8);
    QVERIFY(!QFile::exists(m_path + ".lock")); // released after each save
}

void TestHistoryFile::aFollowingWindowSeesTheOthersChanges() {
    History a(m_path), b(m_path);
    QVERIFY(a.load());
    QVERIFY(b.load());
    a.follow();
    QVERIFY(b.add(runDocument("b0")));
    QTRY_COMPARE(captions(a), QStringList{"b0"});
    // A run recorded elsewhere comes in as a row above, so what is selected stays selected.
    QItemSelectionModel selection(&a);
    selection.select(a.index(0, 0), QItemSelectionModel::ClearAndSelect);
    QVERIFY(b.add(runDocument("b1")));
    QTRY_COMPARE(captions(a), (QStringList{"b1", "b0"}));
    QCOMPARE(selection.selectedRows().size(), 1);
    QCOMPARE(selection.selectedRows().at(0).row(), 1);
    QVERIFY(b.clear());
    QTRY_COMPARE(a.count(), 0);
    QVERIFY(a.add(runDocument("a0")));
    QCOMPARE(captions(a), QStringList{"a0"});
    // A file this window cannot use is only read when following: left where it is, untouched,
    // for the next save to set aside under the lock.
    const QByteArray garbage = "{ not json";
    {
        QFile f(m_path + ".tmp");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(garbage);
    }
    QVERIFY(QFile::remove(m_path));
    QVERIFY(QFile::rename(m_path + ".tmp", m_path));
    QTest::qWait(600);
    QCOMPARE(captions(a), QStringList{"a0"});
    QCOMPARE(readAll(m_path), garbage);
    QVERIFY(!QFile::exists(m_path + ".bad"));
}

void TestHistoryFile::encoderTimesBeforeRunAreKept() {
    // A run that reused the image features and the prompt's encoding made before Run keeps how
    // long those took; one that ran its encoders itself keeps nothing of the kind.
    florence::ui::RunOutcome outcome;
    outcome.task = QStringLiteral("<CAPTION>");
    outcome.result.text = "</s><s>a pier</s>";
    florence::ui::HistoryRecord record;
    record.outcome = &outcome;
    record.answer = florence::parseAnswer("<CAPTION>", outcome.result.text, 64, 48);
    record.imageName = QStringLiteral("pier.png");
    record.visionBeforeRunMs = 812.5;
    record.textEncoderBeforeRunMs = 31.25;
    for (bool reused : {false, true}) {
        outcome.result.timings.featuresReused = outcome.result.timings.promptReused = reused;
        QString error;
        const auto e =
            florence::ui::entryFromDocument(florence::ui::makeHistoryDocument(record), &error);
        QVERIFY2(e, qPrintable(error));
        QCOMPARE(e->visionBeforeRunMs, reused ? 812.5 : -1.0);
        QCOMPARE(e->textEncoderBeforeRunMs, reused ? 31.25 : -1.0);
    }
    // A damaged figure is damage, as in the timings.
    QJsonObject doc = florence::ui::makeHistoryDocument(record);
    QJsonObject h = doc["history"].toObject();
    h["vision_before_run_ms"] = -5;
    doc["history"] = h;
    QString error;
    QVERIFY(!florence::ui::entryFromDocument(doc, &error));
    QVERIFY2(error.contains("vision_before_run_ms"), qPrintable(error));
}

void TestHistoryFile::notAFileIsSetAside_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("link to /dev/zero") << "zero"
                                       << "device";
    QTest::newRow("larger than 64 MB") << "large"
                                       << "more than";
    QTest::newRow("folder") << "folder"
                            << "folder";
}

void TestHistoryFile::notAFileIsSetAside() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(m_path.toLocal8Bit().constData(), 0600), 0);
    } else if (kind == "zero") {
        QVERIFY(QFile::link("/dev/zero", m_path));
    } else if (kind == "folder") {
        QVERIFY(QDir().mkpath(m_path));
    } else {
        QFile f(m_path); // sparse: 65 MB of nothing on disk
        QVERIFY(f.open(QIODevice::WriteOnly));
        QVERIFY(f.resize(65ll << 20));
    }
    History h(m_path);
    QVERIFY(!h.load()); // a FIFO would block here, /dev/zero fill the memory
    QVERIFY2(h.loadMessage().contains(expected) && h.loadMessage().contains(".bad"),
             qPrintable(h.loadMessage()));
    QCOMPARE(h.count(), 0);
    // Set aside as it was (the link, not /dev/zero), and the history works again.
    if (kind == "fifo")
        QVERIFY(isFifo(m_path + ".bad"));
    if (kind == "zero")
        QCOMPARE(QFileInfo(m_path + ".bad").symLinkTarget(), QString("/dev/zero"));
    QVERIFY(QFileInfo("/dev/zero").exists());
    QString error;
    QVERIFY2(h.add(runDocument("after"), &error), qPrintable(error));
    History again(m_path);
    QVERIFY(again.load());
    QCOMPARE(captions(again), QStringList{"after"});
}

void TestHistoryFile::damagedEntriesAreKeptInABadCopy() {
    {
        History h(m_path);
        QVERIFY(h.load());
        QVERIFY(h.add(runDocument("good")));
    }
    QJsonObject root = QJsonDocument::fromJson(readAll(m_path)).object();
    QJsonArray entries = root["entries"].toArray();
    QJsonObject bad = entries[0].toObject();
    bad["task"] = "<RM_RF>";
    entries.append(bad);
    root["entries"] = entries;
    const QByteArray original = QJsonDocument(root).toJson();
    QFile f(m_path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(original);
    f.close();
    History h(m_path);
    QVERIFY(!h.load());
    QCOMPARE(captions(h), QStringList{"good"});
    QVERIFY2(h.loadMessage().contains("damaged entry") && h.loadMessage().contains(".bad"),
             qPrintable(h.loadMessage()));
    QCOMPARE(readAll(m_path + ".bad"), original);
    // The next save leaves the damaged entry out of the history, and the copy keeps it.
    QVERIFY(h.add(runDocument("next")));
    QCOMPARE(QJsonDocument::fromJson(readAll(m_path))["entries"].toArray().size(), 2);
    QCOMPARE(readAll(m_path + ".bad"), original);
}

void TestHistoryFile::settingsThatAreNotAFileAreSetAside() {
    const QString path = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
                         "/FlorenceStudioTest/test_history_file.conf";
    QFile::remove(path); // what an earlier run may have left (a FIFO would block QSettings)
    QCOMPARE(QSettings().fileName(), path); // the file the check looks at is QSettings' own
    QVERIFY(QDir().mkpath(QFileInfo(path).path()));
    QFile::remove(path + ".bad");
    QVERIFY(florence::ui::Settings::setAsideIfUnusable().isEmpty()); // missing: fine
    QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
    const QString note = florence::ui::Settings::setAsideIfUnusable();
    QVERIFY2(note.contains("FIFO") && note.contains(".bad"), qPrintable(note));
    QVERIFY(isFifo(path + ".bad"));
    QVERIFY(!QFileInfo::exists(path));
    // The settings work again, with the defaults ($FLORENCE_PRECISION's precision, which the
    // suites set, or Automatic).
    const florence::ui::Preferences p = florence::ui::Settings::load();
    QVERIFY(p.generation == florence::ui::defaultGenerationSettings());
    QFile::remove(path + ".bad");
}

void TestHistoryFile::aLockThatCannotBeMadeIsNotAnotherWindow() {
    // On a full disk (a file size limit stands in for one) the lock file cannot be written: the
    // message says so, not that another window holds the history.
    History h(m_path);
    QVERIFY(h.load());
    QString error;
    {
        const florence::test::FileSizeLimit limit(1);
        QVERIFY(!h.add(runDocument("full"), &error));
    }
    QVERIFY2(error.contains("cannot make the lock file") && !error.contains("another window"),
             qPrintable(error));
    QVERIFY(!QFile::exists(m_path + ".lock"));
    // A lock another window holds is named as such.
    QLockFile other(m_path + ".lock");
    QVERIFY(other.tryLock(0));
    error.clear();
    QVERIFY(!h.add(runDocument("locked"), &error));
    QVERIFY2(error.contains("another window keeps it locked"), qPrintable(error));
    other.unlock();
    QVERIFY2(h.add(runDocument("after"), &error), qPrintable(error));
}

void TestHistoryFile::firstStartIsClaimedOnce() {
    // The welcome caption runs once: the first claim wins, every later one (a second window, a
    // later start) does not; something that is not a file there counts as claimed, unopened.
    const QString path = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
                         "/FlorenceStudioTest/first-start-done";
    QFile::remove(path);
    QVERIFY(florence::ui::Settings::claimFirstStart());
    QVERIFY(QFileInfo(path).isFile());
    QVERIFY(!florence::ui::Settings::claimFirstStart());
    QVERIFY(!florence::ui::Settings::claimFirstStart());
    QVERIFY(QFile::remove(path));
    QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
    QVERIFY(!florence::ui::Settings::claimFirstStart()); // returns: a FIFO is never opened
    QVERIFY(isFifo(path));
    QFile::remove(path);
}

void TestHistoryFile::theListKeepsItsPlaceWhenRunsComeIn() {
    // A full history (30 runs at most here): every run that comes in pushes the oldest out.
    History a(m_path, 30), b(m_path, 30);
    QVERIFY(a.load());
    QVERIFY(b.load());
    a.follow();
    florence::ui::HistoryPanel panel(&a);
    panel.resize(260, 320);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QListView* list = panel.list();
    const auto topRow = [list] { return list->indexAt(QPoint(1, 1)).row(); };
    for (int i = 0; i < 30; ++i)
        QVERIFY(a.add(runDocument(QStringLiteral("a%1").arg(i))));
    QTRY_VERIFY(list->verticalScrollBar()->maximum() > 0); // more rows than fit
    QCOMPARE(a.count(), 30);
    // Scrolled down to an older run, another window's two runs come in above it: the same run
    // stays at the top of the list, whole.
    list->scrollTo(a.index(10, 0), QAbstractItemView::PositionAtTop);
    QCOMPARE(topRow(), 10);
    QVERIFY(b.add(runDocument("b0")));
    QVERIFY(b.add(runDocument("b1")));
    QTRY_COMPARE(captions(a).first(), QStringLiteral("b1"));
    QCOMPARE(captions(a).at(topRow()), QStringLiteral("a19"));
    QCOMPARE(list->visualRect(a.index(topRow(), 0)).top(), 0);
    // This window's run shows at the top, whole.
    QVERIFY(a.add(runDocument("a30")));
    QCOMPARE(list->verticalScrollBar()->value(), list->verticalScrollBar()->minimum());
    QCOMPARE(topRow(), 0);
    // At the top, another window's run shows too.
    QVERIFY(b.add(runDocument("b2")));
    QTRY_COMPARE(captions(a).first(), QStringLiteral("b2"));
    QCOMPARE(topRow(), 0);
    QCOMPARE(list->verticalScrollBar()->value(), list->verticalScrollBar()->minimum());
}

QTEST_MAIN(TestHistoryFile)
#include "TestHistoryFile.moc"
