#include "FileDialogs.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QObject>

namespace florence::ui {

namespace {

// "pier-OD": the image's base name and the task token as a file name part.
QString exportBaseName(const QString& imageName, const QString& task) {
    QString t = task;
    t.remove(QLatin1Char('<')).remove(QLatin1Char('>'));
    return QFileInfo(imageName.isEmpty() ? QStringLiteral("result") : imageName)
               .completeBaseName() +
           QLatin1Char('-') + t;
}

} // namespace

QString FileDialogs::openImage() {
    return choose(Choice::OpenImage, QObject::tr("Open Image"), m_lastFolder,
                  QObject::tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp);;"
                              "All files (*)"));
}

QString FileDialogs::openModel() {
    return choose(Choice::OpenModel, QObject::tr("Open Model Package Folder"), m_lastFolder,
                  QString());
}

QString FileDialogs::saveJson(const QString& imageName, const QString& task) {
    return chooseExport(Choice::SaveJson, QObject::tr("Export JSON"), QObject::tr("JSON (*.json)"),
                        exportBaseName(imageName, task) + QStringLiteral(".json"));
}

QString FileDialogs::savePng(const QString& imageName, const QString& task) {
    return chooseExport(Choice::SavePng, QObject::tr("Save Annotated Image"),
                        QObject::tr("PNG image (*.png)"),
                        exportBaseName(imageName, task) + QStringLiteral("-annotated.png"));
}

QString FileDialogs::chooseExport(Choice choice, const QString& caption, const QString& filter,
                                  const QString& fileName) {
    const QString folder = !m_exportFolder.isEmpty() ? m_exportFolder : QDir::homePath();
    const QString chosen = choose(choice, caption, QDir(folder).filePath(fileName), filter);
    if (!chosen.isEmpty())
        m_exportFolder = QFileInfo(chosen).absolutePath();
    return chosen;
}

QString FileDialogs::choose(Choice choice, const QString& caption, const QString& dir,
                            const QString& filter) {
    if (m_chooser)
        return m_chooser(choice, caption, dir, filter);
    if (choice == Choice::OpenImage)
        return QFileDialog::getOpenFileName(m_parent, caption, dir, filter);
    if (choice == Choice::OpenModel)
        return QFileDialog::getExistingDirectory(m_parent, caption, dir);
    return QFileDialog::getSaveFileName(m_parent, caption, dir, filter);
}

} // namespace florence::ui
