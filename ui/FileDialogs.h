// The window's file dialogs and the folders they start in: images open from the folder of the
// last image, exports are offered in the folder of the last export (never the install's
// samples) and named after the image and the task, so two tasks' exports do not overwrite each
// other. Tests replace the modal dialogs with a chooser.
//
//   FileDialogs files(window);
//   files.setChooser([](FileDialogs::Choice, const QString&, const QString& dir,
//                       const QString&) { return dir; });
//   QString json = files.saveJson("pier.png", "<OD>");   // offers ~/pier-OD.json
#pragma once

#include <QString>

#include <functional>

class QWidget;

namespace florence::ui {

class FileDialogs {
public:
    enum class Choice { OpenImage, OpenModel, SaveJson, SavePng };
    // Returns the chosen path, or "" when the user cancelled. Replaces the modal file dialogs.
    using Chooser = std::function<QString(Choice choice, const QString& caption, const QString& dir,
                                          const QString& filter)>;

    explicit FileDialogs(QWidget* parent) : m_parent(parent) {}

    void setChooser(Chooser chooser) { m_chooser = std::move(chooser); }

    // Each returns the chosen path, or "" when the user cancelled.
    QString openImage();
    QString openModel();
    // `imageName` and `task` of the answer exported name the file offered.
    QString saveJson(const QString& imageName, const QString& task);
    QString savePng(const QString& imageName, const QString& task);

    QString lastFolder() const { return m_lastFolder; }
    void setLastFolder(const QString& folder) { m_lastFolder = folder; }
    QString exportFolder() const { return m_exportFolder; }
    void setExportFolder(const QString& folder) { m_exportFolder = folder; }

private:
    QString choose(Choice choice, const QString& caption, const QString& dir,
                   const QString& filter);
    QString chooseExport(Choice choice, const QString& caption, const QString& filter,
                         const QString& fileName);

    QWidget* m_parent;
    Chooser m_chooser;
    QString m_lastFolder;   // images
    QString m_exportFolder; // exports
};

} // namespace florence::ui
