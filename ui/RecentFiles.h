// File › Open Recent: the last ten images opened, newest first, as a menu.
//
//   RecentFiles recent(menu);                    // fills `menu`, which it does not own
//   recent.setPaths(prefs.recentFiles);
//   connect(&recent, &RecentFiles::chosen, window, &MainWindow::openImageFile);
//   recent.add("/home/me/pier.png");
#pragma once

#include <QObject>
#include <QStringList>

class QMenu;

namespace florence::ui {

class RecentFiles : public QObject {
    Q_OBJECT

public:
    explicit RecentFiles(QMenu* menu, QObject* parent = nullptr);

    void add(const QString& path);
    void setPaths(const QStringList& paths);
    QStringList paths() const { return m_paths; }

signals:
    void chosen(const QString& path);

private:
    void updateMenu();

    QMenu* m_menu;
    QStringList m_paths;
};

} // namespace florence::ui
