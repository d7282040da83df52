// A photo's EXIF orientation in the app, as in the CLI: View › Turn Photos Upright (on by
// default, kept in the settings) turns a photo stored sideways upright; off, the pixels are
// answered as stored, the frame of Florence-2's own processor. The export and the History
// record which frame the answer is in (`image.orientation_applied`), and a History entry is
// shown again in its own frame. The real MainWindow offscreen, no model needed: the answer is
// shown through the window's run path (MainWindowTester).
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "WindowFixture.h"
#include "history/History.h"

#include <QAction>
#include <QBuffer>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include <zlib.h>

#include <memory>

using florence::ui::History;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

namespace {

void appendBe32(QByteArray& b, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        b.append(char((v >> shift) & 0xff));
}

// A PNG stored 40 x 20 whose eXIf chunk says "turn 90° clockwise to view" (orientation 6), as
// a phone writes a photo taken upright: shown upright it is 20 x 40.
QByteArray sidewaysPng() {
    QImage img(40, 20, QImage::Format_RGB888);
    img.fill(Qt::darkGreen);
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    img.save(&buffer, "PNG");
    const QByteArray tiff("MM\x00\x2a\x00\x00\x00\x08"       // big-endian, IFD0 at 8
                          "\x00\x01"                         // one entry
                          "\x01\x12\x00\x03\x00\x00\x00\x01" // Orientation, SHORT, 1
                          "\x00\x06\x00\x00"                 // 6
                          "\x00\x00\x00\x00",                // no next IFD
                          26);
    QByteArray chunk;
    appendBe32(chunk, uint32_t(tiff.size()));
    const QByteArray body = QByteArray("eXIf") + tiff;
    chunk += body;
    appendBe32(chunk, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.constData()),
                                     uInt(body.size()))));
    png.insert(33, chunk); // after the signature and IHDR
    return png;
}

QAction* rotateAction(MainWindow* w) {
    return w->findChild<QAction*>(QStringLiteral("exifRotateAction"));
}

// Shows an answer as a finished run would (recorded in the History too) and exports it.
QJsonObject answerAndExport(MainWindow* w, const QString& jsonPath) {
    MainWindowTester(w).showAnswerText("<OD>", "</s><s>tree<loc_100><loc_100><loc_900>"
                                               "<loc_900></s>");
    if (!w->exportJson(jsonPath))
        qWarning("export failed: %s", qPrintable(w->messageText()));
    return readJson(jsonPath);
}

} // namespace

class TestExifOrientation : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void photoIsTurnedUprightAndSaysSo();
    void asStoredWhenAskedAndRemembered();
    void historyEntryReturnsInItsFrame();

private:
    QTemporaryDir m_tmp;
    QString m_photo;
};

void TestExifOrientation::initTestCase() {
    QVERIFY(m_tmp.isValid());
    isolateUserState(m_tmp, "florence-studio-exif-test");
    QVERIFY2(History::defaultPath().startsWith(m_tmp.path()), qPrintable(History::defaultPath()));
    m_photo = m_tmp.filePath("phone.png");
    QFile f(m_photo);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(sidewaysPng());
}

void TestExifOrientation::init() {
    QSettings().clear();
    QFile::remove(History::defaultPath());
}

void TestExifOrientation::photoIsTurnedUprightAndSaysSo() {
    auto w = std::make_unique<MainWindow>();
    QVERIFY(rotateAction(w.get()) && rotateAction(w.get())->isChecked()); // the default
    QVERIFY(openAndWait(w.get(), m_photo));
    QCOMPARE(w->imageSize(), QSize(20, 40));
    const QJsonObject image =
        answerAndExport(w.get(), m_tmp.filePath("upright.json"))["image"].toObject();
    QCOMPARE(image["width"].toInt(), 20);
    QCOMPARE(image["height"].toInt(), 40);
    QVERIFY2(image["orientation_applied"].isBool() && image["orientation_applied"].toBool(),
             QJsonDocument(image).toJson().constData());
    QCOMPARE(w->history()->count(), 1);
    QCOMPARE(w->history()->entry(0).orientationApplied, std::optional<bool>(true));
}

void TestExifOrientation::asStoredWhenAskedAndRemembered() {
    {
        auto w = std::make_unique<MainWindow>();
        QVERIFY(openAndWait(w.get(), m_photo));
        QCOMPARE(w->imageSize(), QSize(20, 40));
        // Turning it off opens the image on screen again, as stored.
        rotateAction(w.get())->trigger();
        QVERIFY(!rotateAction(w.get())->isChecked());
        QTRY_COMPARE_WITH_TIMEOUT(w->imageSize(), QSize(40, 20), 60'000);
        QVERIFY(!w->isOpeningImage());
        const QJsonObject image =
            answerAndExport(w.get(), m_tmp.filePath("stored.json"))["image"].toObject();
        QCOMPARE(image["width"].toInt(), 40);
        QVERIFY2(image["orientation_applied"].isBool() && !image["orientation_applied"].toBool(),
                 QJsonDocument(image).toJson().constData());
        QCOMPARE(w->history()->entry(0).orientationApplied, std::optional<bool>(false));
        w->close(); // saves the settings
    }
    QCOMPARE(QSettings().value("images/exifRotate").toBool(), false);
    auto again = std::make_unique<MainWindow>();
    QVERIFY(!rotateAction(again.get())->isChecked());
    QVERIFY(openAndWait(again.get(), m_photo));
    QCOMPARE(again->imageSize(), QSize(40, 20));
}

void TestExifOrientation::historyEntryReturnsInItsFrame() {
    auto w = std::make_unique<MainWindow>();
    QVERIFY(openAndWait(w.get(), m_photo));
    rotateAction(w.get())->trigger(); // as stored
    QTRY_COMPARE_WITH_TIMEOUT(w->imageSize(), QSize(40, 20), 60'000);
    answerAndExport(w.get(), m_tmp.filePath("entry.json"));
    rotateAction(w.get())->trigger(); // upright again
    QTRY_COMPARE_WITH_TIMEOUT(w->imageSize(), QSize(20, 40), 60'000);
    // The entry's answer points at pixels of the stored frame: it comes back in that frame,
    // from the file, not as a thumbnail at a size that does not match.
    w->showHistoryEntry(0);
    QCOMPARE(w->imageSize(), QSize(40, 20));
    QVERIFY(w->hasImage());
}

QTEST_MAIN(TestExifOrientation)
#include "TestExifOrientation.moc"
