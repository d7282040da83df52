#include "dialogs/AboutDialog.h"

#include "ModelCatalog.h"

#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/version.h>

#include <QDir>
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
               "<p>A desktop studio for Microsoft's Florence-2 vision-language model: captions, "
               "detection, grounding, segmentation and OCR, with live token streaming and "
               "latency measurements.</p>"
               "<p><b>Runtime:</b> %2</p>"
               "%3"
               "<p><b>For real answers on photographs</b>, import a real checkpoint: download "
               "<code>microsoft/Florence-2-base</code> or <code>Florence-2-large</code> from "
               "Hugging Face (for example <code>git clone "
               "https://huggingface.co/microsoft/Florence-2-base</code>), then choose "
               "<i>File › Import Hugging Face Model…</i> and pick that folder. The converted "
               "package is stored in <code>%4</code> and appears in the model list. From a "
               "terminal: <code>florence-studio-cli import --hf DIR --out PKG</code>. Importing "
               "needs PyTorch for the system Python (the <code>python3-torch</code> package).</p>")
        .arg(QStringLiteral(FLORENCE_VERSION),
             QString::fromStdString(runtimeSummary()).toHtmlEscaped(), modelParagraph,
             QDir::toNativeSeparators(QString::fromStdString(userModelsDir())).toHtmlEscaped());
}

void AboutDialog::show(QWidget* parent, const std::optional<ModelInfo>& loaded) {
    QMessageBox::about(parent, QObject::tr("About Florence Studio"), text(loaded));
}

} // namespace florence::ui
