#include "run/WorkerTypes.h"

#include <QObject>

namespace florence::ui {

void registerWorkerTypes() {
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<TokenUpdate>();
    qRegisterMetaType<RunOutcome>();
    qRegisterMetaType<CompareOutcome>();
    qRegisterMetaType<ModelInfo>();
}

QString describeModel(const ModelInfo& info) {
    const double p = static_cast<double>(info.parameterCount);
    QString size;
    if (p >= 1e9)
        size = QString::number(p / 1e9, 'f', 2) + QStringLiteral(" B");
    else if (p >= 1e6)
        size = QString::number(p / 1e6, 'f', 1) + QStringLiteral(" M");
    else
        size = QString::number(info.parameterCount);
    return QStringLiteral("%1 · %2 parameters · %3").arg(info.name, size, info.precision);
}

QString explainModelWeights(const ModelInfo& info) {
    // The manifest names the weights: the demo trainer's package has "demo" in its name, the
    // exporter's random packages say "random" in name and source, imports name their folder.
    if (info.name.contains(QLatin1String("demo"), Qt::CaseInsensitive))
        return QObject::
            tr("%1 is a small Florence-2 trained only on synthetic scenes of simple shapes, "
               "colors and printed words: circles, squares, triangles and stars in eight colors, "
               "and words from a fixed list. It was trained to caption, detect and read such "
               "images (like the sample scenes in the samples folder), some tasks better than "
               "others; it knows nothing else, and its answers on photographs or documents are "
               "meaningless.")
                .arg(info.name);
    if (info.name.contains(QLatin1String("random"), Qt::CaseInsensitive) ||
        info.source.contains(QLatin1String("random"), Qt::CaseInsensitive))
        return QObject::
            tr("%1 is Florence-2's architecture at a reduced size with random weights. It runs the "
               "whole pipeline (preprocessing, vision encoder, text encoder, cached beam search, "
               "parsing, overlays), but the text it generates is nonsense.")
                .arg(info.name);
    return QObject::tr("%1: weights from %2.")
        .arg(info.name, info.source.isEmpty() ? QObject::tr("an unknown source") : info.source);
}

QString importCheckpointHint() {
    return QObject::tr(
        "For real answers on photographs, import a Florence-2 checkpoint downloaded from Hugging "
        "Face (e.g. microsoft/Florence-2-base): File › Import Hugging Face Model…, or from a "
        "terminal: florence-studio-cli import --hf DIR --out PKG. Importing needs python3-torch.");
}

} // namespace florence::ui
