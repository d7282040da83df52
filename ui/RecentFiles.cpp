#include "RecentFiles.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>

namespace florence::ui {

namespace {
constexpr int kMaxRecent = 10;
}

RecentFiles::RecentFiles(QMenu* menu, QObject* parent) : QObject(parent), m_menu(menu) {
    updateMenu();
}

void RecentFiles::add(const QString& path) {
    m_paths.removeAll(path);
    m_paths.prepend(path);
    while (m_paths.size() > kMaxRecent)
        m_paths.removeLast();
    updateMenu();
}

void RecentFiles::setPaths(const QStringList& paths) {
    m_paths = paths.mid(0, kMaxRecent);
    updateMenu();
}

void RecentFiles::updateMenu() {
    m_menu->clear();
    for (const QString& path : m_paths) {
        QAction* a = m_menu->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        a->setStatusTip(QDir::toNativeSeparators(path));
        connect(a, &QAction::triggered, this, [this, path] { emit chosen(path); });
    }
    if (!m_paths.isEmpty()) {
        m_menu->addSeparator();
        m_menu->addAction(tr("Clear Recent Files"), this, [this] {
            m_paths.clear();
            updateMenu();
        });
    }
    m_menu->setEnabled(!m_paths.isEmpty());
}

} // namespace florence::ui
