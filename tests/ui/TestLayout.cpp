// The window's layout whatever the machine writes into it: the least size fits a 1280x720
// screen and holds at 1024x700, and texts that differ from machine to machine (model names,
// runtime lines, precision notes, status messages) elide or wrap instead of widening the window.
#include "MainWindow.h"
#include "Theme.h"
#include "widgets/ClampedLabel.h"
#include "widgets/ControlPanel.h"
#include "widgets/ElidedComboBox.h"
#include "widgets/ElidedLabel.h"
#include "widgets/ElidingStatusBar.h"

#include <florence/paths.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleOption>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <memory>

using florence::ui::ClampedLabel;
using florence::ui::ElidedComboBox;
using florence::ui::ElidedLabel;
using florence::ui::MainWindow;

namespace {

QtMessageHandler g_defaultHandler = nullptr;
void filterMessages(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (msg.contains(QLatin1String("propagateSizeHints")))
        return; // the offscreen platform says so on every top-level resize
    g_defaultHandler(type, ctx, msg);
}

int leastWidth(const QWidget* w) {
    return w->minimumSizeHint().expandedTo(w->minimumSize()).width();
}

QString describe(const QWidget* w) {
    return QString("%1 %2 (%3)")
        .arg(QString::fromLatin1(w->metaObject()->className()), w->objectName())
        .arg(leastWidth(w));
}

// What sets the window's least width: every widget over 150 px wide, as a tree; what to look
// at when a layout test fails on another machine.
QString widthTree(const QWidget* w, int depth = 0) {
    QString out = QString(depth * 2, QLatin1Char(' ')) + describe(w) + QLatin1Char('\n');
    for (const QWidget* c : w->findChildren<QWidget*>(Qt::FindDirectChildrenOnly))
        if (!c->isWindow() && !c->isHidden() && leastWidth(c) > 150)
            out += widthTree(c, depth + 1);
    return out;
}

QString sizeText(const QSize& s) {
    return QString("%1x%2").arg(s.width()).arg(s.height());
}

} // namespace

class TestLayout : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();

    void windowFitsSmallScreens();
    void machineTextsDoNotWidenTheWindow();
    void settingsFitTheirPanelOnSmallScreens();
    void taskShowsWithoutScrollingOnSmallScreens();
    void elidedLabelElidesAndKeepsItsText();
    void statusLabelsAreWholeWhereThereIsRoom();
    void checkBoxesShowInTheDarkTheme();
    void comboBoxesElideTheirItem();
    void panelMessageEndsInAnEllipsisWhenCut();
    void wheelOverSettingsScrollsInsteadOfChanging();

private:
    QTemporaryDir m_tmp;
    std::unique_ptr<MainWindow> m_w;
};

void TestLayout::initTestCase() {
    QVERIFY(m_tmp.isValid());
    g_defaultHandler = qInstallMessageHandler(filterMessages);
    qputenv("HOME", m_tmp.filePath("home").toUtf8());
    QDir().mkpath(m_tmp.filePath("home"));
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_tmp.filePath("settings"));
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName("florence-studio-layout-test");
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
}

void TestLayout::init() {
    QSettings().clear();
    m_w = std::make_unique<MainWindow>();
    m_w->resize(1280, 860);
    m_w->show();
    m_w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_w.get()));
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    m_w->loadDefaultModel();
    QVERIFY(ready.wait(120'000));
}

void TestLayout::cleanup() {
    m_w.reset();
}

void TestLayout::windowFitsSmallScreens() {
    // 1080p at 150% is 1280x720 logical; a title bar and a panel take some of it, and the
    // window must still be usable at 1024 wide.
    const QSize least = m_w->minimumSizeHint().expandedTo(m_w->minimumSize());
    qInfo("minimum window size %s", qPrintable(sizeText(least)));
    QVERIFY2(least.width() <= 1024 && least.height() <= 720 - 60,
             qPrintable(sizeText(least) + QLatin1String(":\n") + widthTree(m_w.get())));
    m_w->resize(1024, 700);
    QTRY_COMPARE(m_w->size(), QSize(1024, 700));
    auto* chartView = m_w->findChild<QWidget*>(QStringLiteral("latencyChartView"));
    QVERIFY(chartView);
    QTRY_VERIFY(chartView->isVisible());
    QVERIFY2(chartView->height() >= 120 && chartView->width() >= 200,
             qPrintable(sizeText(chartView->size())));
    for (const char* name : {"ttftLabel", "medianLabel", "totalLabel"}) {
        auto* label = m_w->findChild<QLabel*>(QString::fromLatin1(name));
        QVERIFY2(label && label->isVisible(), name);
        QVERIFY(label->height() >= label->fontMetrics().height());
    }
    // A window larger than its screen (a saved size, or a scale factor of 2) shrinks and moves
    // into the available area.
    const QRect avail = m_w->screen()->availableGeometry();
    m_w->resize(avail.width() * 2, avail.height() * 2);
    m_w->move(avail.topLeft() + QPoint(300, 300));
    m_w->fitToScreen();
    QTRY_VERIFY2(
        m_w->width() <= std::max(avail.width(), least.width()) &&
            m_w->height() <= std::max(avail.height(), least.height()),
        qPrintable(sizeText(m_w->size()) + QLatin1String(" on ") + sizeText(avail.size())));
    // The History dock starts hidden; shown, the window still fits 1280x720.
    auto* dock = m_w->findChild<QDockWidget*>(QStringLiteral("historyDock"));
    QVERIFY(dock && !dock->isVisible());
    dock->show();
    const QSize withHistory = m_w->minimumSizeHint().expandedTo(m_w->minimumSize());
    dock->hide();
    QVERIFY2(withHistory.width() <= 1280 && withHistory.height() <= 720 - 60,
             qPrintable(sizeText(withHistory) + QLatin1String(":\n") + widthTree(m_w.get())));
    // Every check box of the settings shows its whole text at the default size.
    m_w->resize(1360, 900);
    QTRY_COMPARE(m_w->size(), QSize(1360, 900));
    for (QCheckBox* box : m_w->findChildren<QCheckBox*>()) {
        if (!box->isVisible())
            continue;
        QVERIFY2(box->width() >= box->sizeHint().width(),
                 qPrintable(box->text() + QLatin1String(" is cut: ") + sizeText(box->size())));
    }
}

void TestLayout::machineTextsDoNotWidenTheWindow() {
    // What one machine writes and another does not: a long model name, a precision note, the
    // runtime line, a long status message. None of it may change the window's least width.
    const int before = leastWidth(m_w.get());
    // A message naming a long path, which has no space to wrap at (an outside tester's FIFO):
    // the panel keeps its least width, the message is cut and whole in its tooltip.
    auto* panel = m_w->findChild<QWidget*>(QStringLiteral("controlPanel"));
    QVERIFY(panel);
    const int panelBefore = panel->minimumSizeHint().width();
    const QString path = QStringLiteral("/tmp/") + QString(240, QLatin1Char('x')) + ".png";
    m_w->showMessage(QStringLiteral("Cannot open %1: it is a FIFO").arg(path), true);
    QCoreApplication::processEvents();
    QCOMPARE(panel->minimumSizeHint().width(), panelBefore);
    QVERIFY(m_w->findChild<QLabel*>(QStringLiteral("messageLabel"))->toolTip().contains(path));
    const QString longText = QStringLiteral(
        "Florence-2-large-ft-PromptGen-v2.0 imported from ~/Downloads/a/very/long/"
        "folder/name · 776.7 M parameters · bfloat16 (encoders float32) · row "
        "kernels LibTorch, bfloat16 products sum in bfloat16, OMP_WAIT_POLICY=PASSIVE");
    for (QLabel* label : m_w->findChildren<QLabel*>())
        if (label->wordWrap())
            label->setText(longText + QLatin1Char(' ') + longText);
    // The one-line labels that show what the machine wrote.
    for (const char* name : {"statusModel", "statusRun"}) {
        auto* label = m_w->findChild<QLabel*>(QString::fromLatin1(name));
        QVERIFY2(label, name);
        label->setText(longText);
    }
    m_w->statusBar()->showMessage(longText);
    QCoreApplication::processEvents();
    const int after = leastWidth(m_w.get());
    QVERIFY2(
        after <= std::max(before, 1024),
        qPrintable(
            QString("least width %1 -> %2:\n%3").arg(before).arg(after).arg(widthTree(m_w.get()))));
}

void TestLayout::settingsFitTheirPanelOnSmallScreens() {
    // The settings scroll up and down, never sideways: nothing in them may reach past the
    // panel's edge, whatever the lists hold (the longest task name, precisions with their
    // measured costs, the longest "bfloat16 (as fast as float32 here)", a long imported
    // model's name), on a 1280x720 screen or at the panel's least width.
    using florence::Precision;
    const std::vector<florence::PrecisionOption> costs{
        {Precision::Float32, 1.0, true, "the reference"},
        {Precision::BFloat16, 1.0, true, "as fast as float32 on this CPU"},
        {Precision::Int8, 0, false, "cannot run here: LibTorch cannot run int8 products here"}};
    const auto fits = [](QScrollArea* scroll, const QString& where) {
        QCoreApplication::processEvents();
        const QWidget* viewport = scroll->viewport();
        QString out;
        if (scroll->widget()->width() > viewport->width())
            out = QString("%1: the settings are %2 wide in a panel of %3:\n%4")
                      .arg(where)
                      .arg(scroll->widget()->width())
                      .arg(viewport->width())
                      .arg(widthTree(scroll->widget()));
        for (QComboBox* combo : scroll->widget()->findChildren<QComboBox*>()) {
            const QRect r(combo->mapTo(viewport, QPoint(0, 0)), combo->size());
            if (combo->isVisible() && r.right() >= viewport->width())
                out += QString("\n%1: %2 reaches past the panel").arg(where, combo->objectName());
        }
        return out;
    };

    // A panel whose precisions learn their costs, then the theme changes (the combo boxes size
    // themselves again then), shown at its least width.
    QStandardItemModel models;
    models.appendRow(new QStandardItem(QStringLiteral(
        "Imported: Florence-2-large-ft-PromptGen-v2.0-finetuned-on-invoices (776.7 M)")));
    QAction run, cancel, compare;
    florence::ui::ControlPanel alone(&models, &run, &cancel, &compare);
    alone.setPrecisionCosts(Precision::BFloat16, costs);
    florence::ui::applyTheme(florence::ui::Theme::Dark);
    florence::ui::applyTheme(florence::ui::Theme::System);
    alone.resize(alone.minimumSizeHint().width(), 700);
    alone.show();
    QVERIFY(QTest::qWaitForWindowExposed(&alone));
    auto* scroll = alone.findChild<QScrollArea*>(QStringLiteral("controlScroll"));
    QVERIFY(scroll && scroll->widget());
    QString problem = fits(scroll, "alone at its least width");
    QVERIFY2(problem.isEmpty(), qPrintable(problem));

    // The window's, resized from a large screen to small ones and back.
    auto* panel = m_w->findChild<florence::ui::ControlPanel*>();
    QVERIFY(panel);
    panel->setPrecisionCosts(Precision::BFloat16, costs);
    florence::ui::applyTheme(florence::ui::Theme::Dark);
    scroll = panel->findChild<QScrollArea*>(QStringLiteral("controlScroll"));
    QVERIFY(scroll && scroll->widget());
    for (const QSize size :
         {QSize(1440, 900), QSize(1280, 680), QSize(1024, 660), QSize(1440, 900)}) {
        m_w->resize(size);
        QTRY_COMPARE(m_w->size(), size);
        problem = fits(scroll, sizeText(size));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }
    florence::ui::applyTheme(florence::ui::Theme::System);
}

void TestLayout::taskShowsWithoutScrollingOnSmallScreens() {
    // On a 1280x720 screen (or 2560x1440 at 2x) the settings panel is the image's height: the
    // model's purpose and the line under it must leave room for the task, not push it under
    // the fold (the bundled model's purpose alone took five lines, the line under it three).
    // Fonts differ from one system to the next (DejaVu here, another Sans elsewhere), so the
    // labels' heights are asked for in their own font's lines, and only the task list, well
    // above the fold with these heights, in pixels.
    auto* panel = m_w->findChild<florence::ui::ControlPanel*>();
    QVERIFY(panel);
    auto* scroll = panel->findChild<QScrollArea*>(QStringLiteral("controlScroll"));
    QVERIFY(scroll && scroll->widget());
    panel->showMessage(QStringLiteral("A message of one line."), false);
    m_w->resize(1280, 680);
    QTRY_COMPARE(m_w->size(), QSize(1280, 680));
    QCoreApplication::processEvents();
    scroll->verticalScrollBar()->setValue(0);
    auto* purpose = m_w->findChild<QLabel*>(QStringLiteral("modelPurposeLabel"));
    QVERIFY(purpose && purpose->isVisible());
    QVERIFY2(purpose->toolTip().contains("import a checkpoint"), qPrintable(purpose->toolTip()));
    // A package's purpose of several sentences (the bundled one's is short enough to fit on
    // most systems): three lines at most, cut with "…", whole in its tooltip.
    const QString longPurpose = QStringLiteral(
        "Fine-tuned on ten thousand scanned invoices of one supplier: it reads their totals, "
        "dates and line items, and little else. On other documents it answers nonsense. For "
        "real answers on other pictures, import a Florence-2 checkpoint (File › Import).");
    panel->setModelPurpose(longPurpose);
    QCoreApplication::processEvents();
    const int line = purpose->fontMetrics().lineSpacing();
    QVERIFY2(purpose->height() <= 3 * line + 4,
             qPrintable(QString("the purpose is %1 pixels high, lines of %2")
                            .arg(purpose->height())
                            .arg(line)));
    QVERIFY2(purpose->text().endsWith(QChar(0x2026)), qPrintable(purpose->text()));
    QVERIFY2(purpose->toolTip().contains("import a Florence-2 checkpoint (File"),
             qPrintable(purpose->toolTip()));
    // The line under it does not repeat the name the model list shows.
    auto* model = m_w->findChild<QLabel*>(QStringLiteral("modelLabel"));
    QVERIFY(model);
    QVERIFY2(!model->text().contains("florence2-demo-shapes"), qPrintable(model->text()));
    QVERIFY2(model->height() <= 2 * model->fontMetrics().lineSpacing() + 4,
             qPrintable(model->text()));
    auto* tasks = m_w->findChild<QWidget*>(QStringLiteral("taskCombo"));
    QVERIFY(tasks);
    const QWidget* viewport = scroll->viewport();
    const QRect r(tasks->mapTo(viewport, QPoint(0, 0)), tasks->size());
    QVERIFY2(viewport->rect().contains(r),
             qPrintable(QString("the task list at %1,%2 %3x%4 is not whole in the panel's %5 "
                                "pixels")
                            .arg(r.x())
                            .arg(r.y())
                            .arg(r.width())
                            .arg(r.height())
                            .arg(viewport->height())));
}

void TestLayout::elidedLabelElidesAndKeepsItsText() {
    QWidget host;
    auto* label = new ElidedLabel(&host);
    const QString text = QStringLiteral("Florence-2-base-ft · 232.9 M parameters · float32");
    label->setText(text);
    label->resize(label->minimumSizeHint());
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));
    QVERIFY(label->minimumSizeHint().width() < label->sizeHint().width() / 2);
    QVERIFY(label->shownText().endsWith(QChar(0x2026)));
    QCOMPARE(label->text(), text);
    label->resize(label->sizeHint());
    QCOMPARE(label->shownText(), text);
}

void TestLayout::checkBoxesShowInTheDarkTheme() {
    // Fusion outlines a check box in the window's colour darkened: on the dark theme's window
    // that is its fill's colour, and "Scores on image" was a dark square on a dark panel. Its
    // edge must stand out from both the panel around it and its own fill.
    florence::ui::applyTheme(florence::ui::Theme::Dark);
    QWidget host;
    host.setAutoFillBackground(true);
    auto* box = new QCheckBox(QStringLiteral("Scores on image"), &host);
    box->move(10, 10);
    box->adjustSize();
    host.resize(200, 60);
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));
    QStyleOptionButton option;
    option.initFrom(box);
    const QRect indicator =
        box->style()->subElementRect(QStyle::SE_CheckBoxIndicator, &option, box);
    const QImage shot = box->grab().toImage();
    const QRgb panelColour = host.palette().color(QPalette::Window).rgb(); // the dark one
    florence::ui::applyTheme(florence::ui::Theme::System);
    const auto gray = [](QRgb c) { return qGray(c); };
    const int edge = gray(shot.pixel(indicator.left(), indicator.center().y()));
    const int fill = gray(shot.pixel(indicator.center()));
    const int panel = gray(panelColour);
    QVERIFY2(std::abs(edge - fill) >= 30 && std::abs(edge - panel) >= 30,
             qPrintable(QString("edge %1, fill %2, panel %3").arg(edge).arg(fill).arg(panel)));
}

void TestLayout::statusLabelsAreWholeWhereThereIsRoom() {
    // The run's line read "Done: 4 answer tokens in 392.9 …" beside half a bar of empty space.
    m_w->resize(1360, 900);
    m_w->statusBar()->showMessage(
        QStringLiteral("Image and task ready (vision encoder: 206.2 ms, text encoder: 51.4 ms)"));
    auto* run = m_w->findChild<ElidedLabel*>(QStringLiteral("statusRun"));
    QVERIFY(run);
    for (const QString& text : {QStringLiteral("Done: 4 answer tokens in 392.9 ms"),
                                QStringLiteral("Compared: outputs identical; see Cached vs "
                                               "uncached")}) {
        run->setText(text);
        QCoreApplication::processEvents();
        QVERIFY2(run->shownText() == text, qPrintable(QString("%1 in %2 px (hint %3, contents %4)")
                                                          .arg(run->shownText())
                                                          .arg(run->width())
                                                          .arg(run->sizeHint().width())
                                                          .arg(run->contentsRect().width())));
    }
    // A speed demo's long name leaves the message and the run's line their room (all three were
    // cut): it takes at most 30% of the bar, ending in "…".
    auto* model = m_w->findChild<ElidedLabel*>(QStringLiteral("statusModel"));
    model->setText(QStringLiteral("Florence-2-base · random weights (speed demo: answers are "
                                  "noise) · 231.4 M parameters · int8"));
    QCoreApplication::processEvents();
    QVERIFY2(model->width() <= m_w->statusBar()->width() * 0.3 + 1, qPrintable(model->shownText()));
    QVERIFY(model->shownText().endsWith(QChar(0x2026)));
    QCOMPARE(run->shownText(), run->text());
    auto* bar = qobject_cast<florence::ui::ElidingStatusBar*>(m_w->statusBar());
    QVERIFY(bar);
    QCOMPARE(bar->shownMessage(), bar->currentMessage());
}

void TestLayout::comboBoxesElideTheirItem() {
    // The model and precision boxes end a long item in "…" where the panel is narrow (the model
    // box read "Florence-2-base · random weights (sp"), and show it whole when there is room.
    for (const char* name : {"modelCombo", "precisionCombo"})
        QVERIFY2(m_w->findChild<ElidedComboBox*>(QString::fromLatin1(name)), name);
    QWidget host;
    auto* box = new ElidedComboBox(&host);
    const QString item =
        QStringLiteral("Florence-2-base · random weights (speed demo: answers are noise)");
    box->addItem(item);
    box->resize(160, box->sizeHint().height());
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));
    QVERIFY2(box->shownText().endsWith(QChar(0x2026)), qPrintable(box->shownText()));
    QVERIFY(!box->grab().isNull());
    box->resize(box->fontMetrics().horizontalAdvance(item) + 80, box->height());
    QCOMPARE(box->shownText(), item);
}

void TestLayout::panelMessageEndsInAnEllipsisWhenCut() {
    // The panel's message shows five lines at most: a longer one (Automatic precision's reasons,
    // a deep path) ends in "…" on the fifth, never a line cut in half, and shows whole in the
    // tooltip; a path wraps anywhere instead of running past the edge.
    m_w->resize(1280, 680);
    auto* label = m_w->findChild<ClampedLabel*>(QStringLiteral("messageLabel"));
    QVERIFY(label);
    QString reasons = QStringLiteral("Automatic precision: bfloat16, an answer of 32 tokens takes "
                                     "0.79x float32's time on this CPU, logits cosine 1.0000");
    for (int i = 0; i < 6; ++i)
        reasons += QStringLiteral("; other programs' load changed while the precisions were "
                                  "measured (0.1 to 1.0 cores busy), so the pick may be off");
    m_w->showMessage(reasons);
    QCoreApplication::processEvents();
    const QFontMetrics metrics(label->font());
    const int width = label->contentsRect().width();
    const QStringList shown = label->text().split(QLatin1Char('\n'));
    QCOMPARE(shown.size(), 5);
    QVERIFY2(shown.last().endsWith(QChar(0x2026)), qPrintable(label->text()));
    for (const QString& line : shown)
        QVERIFY2(metrics.horizontalAdvance(line) <= width, qPrintable(line));
    QVERIFY(label->height() >= 5 * metrics.lineSpacing()); // room for all five
    QCOMPARE(label->toolTip(), reasons);
    QCOMPARE(m_w->messageText(), reasons);
    // A path with no space to wrap at: on several lines, all of it there when it fits in five.
    const QString path = QStringLiteral("/tmp/") + QString(120, QLatin1Char('x')) + ".png";
    m_w->showMessage(QStringLiteral("Cannot open %1: it is a FIFO").arg(path), true);
    QCoreApplication::processEvents();
    QVERIFY2(label->text().count(QLatin1Char('\n')) >= 1 && !label->text().contains(QChar(0x2026)),
             qPrintable(label->text()));
    QCOMPARE(QString(label->text()).remove(QLatin1Char('\n')).remove(QLatin1Char(' ')),
             QStringLiteral("Cannot open %1: it is a FIFO").arg(path).remove(QLatin1Char(' ')));
    // Short paragraphs past the fifth: the fifth says more follows.
    m_w->showMessage(QStringLiteral("one\ntwo\nthree\nfour\nfive\nsix\nseven"));
    QCOMPARE(label->text(), QStringLiteral("one\ntwo\nthree\nfour\nfive") + QChar(0x2026));
    // A short one as it is.
    m_w->showMessage(QStringLiteral("Ready"));
    QCOMPARE(label->text(), QStringLiteral("Ready"));
}

void TestLayout::wheelOverSettingsScrollsInsteadOfChanging() {
    auto* beams = m_w->findChild<QSpinBox*>(QStringLiteral("beamsSpin"));
    auto* precision = m_w->findChild<QComboBox*>(QStringLiteral("precisionCombo"));
    QVERIFY(beams && precision);
    const auto wheel = [](QWidget* w, int delta) {
        const QPointF at(w->width() / 2.0, w->height() / 2.0);
        QWheelEvent e(at, w->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(w, &e);
    };
    m_w->findChild<QWidget*>(QStringLiteral("imageView"))->setFocus();
    beams->setValue(3);
    const int precisionIndex = precision->currentIndex();
    wheel(beams, -120);
    wheel(precision, -120);
    wheel(precision, 120);
    QCOMPARE(beams->value(), 3);
    QCOMPARE(precision->currentIndex(), precisionIndex);
    // Clicked or tabbed into, the box takes the wheel as usual.
    beams->setFocus();
    QTRY_VERIFY(beams->hasFocus());
    wheel(beams, -120);
    QCOMPARE(beams->value(), 2);
}

QTEST_MAIN(TestLayout)
#include "TestLayout.moc"
