#include "dialogs/AboutDialog.h"

#include "ModelCatalog.h"

#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/version.h>

#include <QApplication>
#include <QDir>
#include <QIcon>
#include <QMessageBox>
#include <QObject>

namespace florence::ui {

QString AboutDialog::text(const std::optional<ModelInfo>& loaded) {
    // The model paragraph comes from the manifest of the model in use (before the first load:
    // of the bundled one), so a demo model, random weights and a real checkpoint each get the
    // right expectations.
    const QString bundledDir = ModelCatalog::cleanDir(QString::fromStdString(bundledModelDir()));
    const std::optional<ModelInfo> model = loaded ? loaded : ModelCatalog::bundledModelInfo();
    QString modelParagraph = QObject::tr("<p>No model is loaded.</p>");
    if (model)
        modelParagraph =
            QObject::tr("<p><b>%1</b> %2</p>")
                .arg(!bundledDir.isEmpty() && ModelCatalog::cleanDir(model->dir) == bundledDir
                         ? QObject::tr("The bundled model:")
                         : QObject::tr("The loaded model:"),
                     ModelCatalog::explainModelWeights(*model).toHtmlEscaped());
    return QObject::tr(
               "<h3>Florence Studio %1</h3>"
               "<p>A desktop studio for Microsoft's Florence-2 vision-language model: it "
               "describes images, finds and outlines things in them and reads their text, on "
               "this computer's processor, and shows how fast the answer comes.</p>"
               "%2"
               "<p><b>For real answers on photographs</b>, import a real checkpoint: download "
               "<code>microsoft/Florence-2-base</code> or <code>Florence-2-large</code> from "
               "Hugging Face (for example <code>git clone "
               "https://huggingface.co/microsoft/Florence-2-base</code>), then choose "
               "<i>File › Import Hugging Face Model…</i> and pick that folder. The converted "
               "model appears in the model list. Importing needs PyTorch for the system Python "
               "(the <code>python3-torch</code> package).</p>"
               "<p>Show Details lists what the app runs on and where it keeps models.</p>")
        .arg(QStringLiteral(FLORENCE_VERSION), modelParagraph);
}

QString AboutDialog::details() {
    return QObject::tr("Runtime: %1\n\nImported models are stored in %2\n\nImport from a "
                       "terminal: florence-studio-cli import --hf DIR --out PKG")
        .arg(QString::fromStdString(runtimeSummary()),
             QDir::toNativeSeparators(QString::fromStdString(userModelsDir())));
}

void AboutDialog::show(QWidget* parent, const std::optional<ModelInfo>& loaded) {
    // QMessageBox::about has no disclosure; the details go behind Show Details.
    QMessageBox box(parent);
    box.setObjectName(QStringLiteral("aboutBox"));
    box.setWindowTitle(QObject::tr("About Florence Studio"));
    box.setTextFormat(Qt::RichText);
    box.setText(text(loaded));
    box.setDetailedText(details());
    box.setIconPixmap(QApplication::windowIcon().pixmap(64, 64));
    box.setStandardButtons(QMessageBox::Close);
    box.exec();
}

} // namespace florence::ui
