// Checkpoints people have, in the window's pieces. File › Import's dialog lists the Florence-2
// checkpoints already on the disk: one placed in a temporary HF_HOME laid out as the hub cache
// lays it out (refs/main, snapshots/REV of symlinks into blobs/) shows with its name, size,
// layout and revision, and choosing it fills the form. The task box offers a fine-tune's own
// tasks and a custom prompt.
#include "dialogs/ImportDialog.h"
#include "widgets/ControlPanel.h"

#include <florence/tasks.h>

#include <QAction>
#include <QComboBox>
#include <QSignalSpy>
#include <QStandardItemModel>

#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

using florence::ui::ControlPanel;
using florence::ui::ImportDialog;

namespace {

const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");

bool linkBlob(const QString& entry, const QString& blob, const QString& file, const QString& from) {
    QDir().mkpath(entry + "/blobs");
    QDir().mkpath(entry + "/snapshots/5f2a9c1e77d0");
    return QFile::copy(from, entry + "/blobs/" + blob) &&
           QFile::link("../../blobs/" + blob, entry + "/snapshots/5f2a9c1e77d0/" + file);
}

} // namespace

class TestCheckpointsUi : public QObject {
    Q_OBJECT

private slots:
    void listsTheHuggingFaceCache();
    void taskBoxOffersPackageTasks();
};

void TestCheckpointsUi::listsTheHuggingFaceCache() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    qputenv("HOME", home.path().toUtf8());
    qputenv("HF_HOME", (home.path() + "/hf").toUtf8());
    qunsetenv("HF_HUB_CACHE");
    qunsetenv("XDG_CACHE_HOME");
    qunsetenv("XDG_CONFIG_HOME");
    const QString entry = home.path() + "/hf/hub/models--microsoft--Florence-2-base";
    QVERIFY(linkBlob(entry, "a1", "config.json", kFixture + "/config.json"));
    QVERIFY(linkBlob(entry, "b2", "pytorch_model.bin", kFixture + "/pytorch_model.bin"));
    QDir().mkpath(entry + "/refs");
    QFile ref(entry + "/refs/main");
    QVERIFY(ref.open(QIODevice::WriteOnly));
    ref.write("5f2a9c1e77d0");
    ref.close();

    ImportDialog dlg;
    auto* found = dlg.findChild<QTreeWidget*>(QStringLiteral("foundCheckpoints"));
    QVERIFY(found);
    QCOMPARE(found->topLevelItemCount(), 1);
    QTreeWidgetItem* item = found->topLevelItem(0);
    QCOMPARE(item->text(0), QStringLiteral("microsoft/Florence-2-base"));
    QCOMPARE(item->text(1),
             dlg.locale().formattedDataSize(QFileInfo(kFixture + "/pytorch_model.bin").size()));
    QCOMPARE(item->text(2), QStringLiteral("original"));
    QCOMPARE(item->text(3), QStringLiteral("5f2a9c1e77d0"));
    QCOMPARE(item->text(4), QStringLiteral("Hugging Face cache"));

    found->setCurrentItem(item);
    auto* hfDir = dlg.findChild<QLineEdit*>(QStringLiteral("hfDirEdit"));
    QCOMPARE(hfDir->text(), entry + "/snapshots/5f2a9c1e77d0");
    QCOMPARE(dlg.findChild<QLineEdit*>(QStringLiteral("packageNameEdit"))->text(),
             QStringLiteral("Florence-2-base"));
    QVERIFY(dlg.findChild<QRadioButton*>(QStringLiteral("hfRadio"))->isChecked());
    QVERIFY(dlg.findChild<QPushButton*>(QStringLiteral("importStartButton"))->isEnabled());
}

void TestCheckpointsUi::taskBoxOffersPackageTasks() {
    using namespace florence;
    QStandardItemModel models;
    QAction run, cancel, compare;
    ControlPanel panel(&models, &run, &cancel, &compare);
    auto* box = panel.findChild<QComboBox*>(QStringLiteral("taskCombo"));
    auto* input = panel.findChild<QLineEdit*>(QStringLiteral("inputEdit"));
    QCOMPARE(box->count(), 15);

    // As Model::load makes them known, then as the window hands them over.
    const std::vector<TaskInfo> tasks = {
        {"<GENERATE_TAGS>", "Generate tags", "<GENERATE_TAGS>", TaskInput::None, "",
         AnswerType::PureText},
        {"<DocVQA>", "DocVQA", "<DocVQA>{input}", TaskInput::Text, "text", AnswerType::PureText}};
    addPackageTasks(tasks);
    panel.setPackageTasks(tasks);
    QCOMPARE(box->count(), 18);
    QCOMPARE(box->itemText(15), QStringLiteral("Generate tags"));
    QCOMPARE(box->itemText(17), QStringLiteral("Custom prompt…"));
    QVERIFY(panel.setTask(QStringLiteral("<DocVQA>")));
    QVERIFY(input->isEnabled());
    QVERIFY(panel.setTask(QStringLiteral("<GENERATE_TAGS>")));
    QVERIFY(!input->isEnabled());
    QVERIFY(panel.setTask(QString::fromLatin1(kCustomPromptTask)));
    QVERIFY(input->isEnabled());
    QCOMPARE(input->placeholderText(), QStringLiteral("the prompt, sent as typed"));

    // Another package: its tasks replace these; a task it lacks falls back to the first.
    QVERIFY(panel.setTask(QStringLiteral("<DocVQA>")));
    QSignalSpy changed(&panel, &ControlPanel::taskChanged);
    panel.setPackageTasks({});
    QCOMPARE(box->count(), 16);
    QCOMPARE(box->findData(QStringLiteral("<DocVQA>")), -1);
    QCOMPARE(panel.task(), QStringLiteral("<CAPTION>"));
    QCOMPARE(changed.count(), 1);
}

QTEST_MAIN(TestCheckpointsUi)
#include "TestCheckpointsUi.moc"
