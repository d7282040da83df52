#include "MainActions.h"

#include "Theme.h"

#include <QAction>
#include <QActionGroup>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QStyle>
#include <QToolBar>
#include <QWidget>

namespace florence::ui {

MainActions::MainActions(QWidget* owner) {
    QStyle* s = owner->style();
    auto make = [&](const QString& text, const char* name, const QString& tip,
                    QList<QKeySequence> keys = {}, const QIcon& icon = QIcon()) {
        auto* a = new QAction(icon, text, owner);
        a->setObjectName(QString::fromLatin1(name));
        a->setShortcuts(keys);
        a->setToolTip(tip);
        a->setStatusTip(tip);
        m_all << a;
        // Window-wide shortcuts must work whichever child has focus.
        if (!keys.isEmpty())
            owner->addAction(a);
        return a;
    };
    open = make(QObject::tr("&Open Image…"), "openAction",
                QObject::tr("Open an image (Ctrl+O); you can also drop or paste one"),
                {QKeySequence::Open}, s->standardIcon(QStyle::SP_DialogOpenButton));
    paste = make(QObject::tr("&Paste Image"), "pasteAction",
                 QObject::tr("Open the image on the clipboard (Ctrl+V)"), {QKeySequence::Paste});
    openModel = make(QObject::tr("Open &Model Package…"), "openModelAction",
                     QObject::tr("Load a model package folder written by the exporter"));
    import = make(QObject::tr("&Import Hugging Face Model…"), "importAction",
                  QObject::tr("Convert a Florence-2 checkpoint folder from Hugging Face into a "
                              "model package and load it"));
    processFolder = make(QObject::tr("Process &Folder…"), "processFolderAction",
                         QObject::tr("Run a task on every image of a folder and write each "
                                     "answer next to it (captions for training data, JSON, COCO)"));
    exportJson =
        make(QObject::tr("Export &JSON…"), "exportJsonAction",
             QObject::tr("Save the answer as JSON: the Hugging Face form, the app's "
                         "form and COCO annotations (Ctrl+E)"),
             {QKeySequence(QObject::tr("Ctrl+E"))}, s->standardIcon(QStyle::SP_DialogSaveButton));
    savePng = make(QObject::tr("Save &Annotated Image…"), "savePngAction",
                   QObject::tr("Save the image with the answer drawn on it, as on screen, as a "
                               "PNG (Ctrl+Shift+S)"),
                   {QKeySequence(QObject::tr("Ctrl+Shift+S"))});
    copyText = make(QObject::tr("&Copy Answer Text"), "copyTextAction",
                    QObject::tr("Copy the answer as plain text, without the model's special "
                                "tokens (Ctrl+Shift+C)"),
                    {QKeySequence(QObject::tr("Ctrl+Shift+C"))});
    // Short names where the actions are buttons (the results panel's row, the tool bar).
    copyText->setIconText(QObject::tr("Copy text"));
    exportJson->setIconText(QObject::tr("Export…"));
    savePng->setIconText(QObject::tr("Save image…"));
    quit = make(QObject::tr("&Quit"), "quitAction", QObject::tr("Close Florence Studio"),
                {QKeySequence::Quit});
    run = make(QObject::tr("&Run"), "runAction",
               QObject::tr("Run the task on the image (Ctrl+R, Ctrl+Return)"),
               {QKeySequence(QObject::tr("Ctrl+R")), QKeySequence(Qt::CTRL | Qt::Key_Return),
                QKeySequence(Qt::CTRL | Qt::Key_Enter)},
               runIcon());
    cancel = make(QObject::tr("&Cancel"), "cancelAction", QObject::tr("Stop generating (Esc)"),
                  {QKeySequence(Qt::Key_Escape)}, s->standardIcon(QStyle::SP_MediaStop));
    compare = make(QObject::tr("C&ompare Cached vs Uncached"), "compareAction",
                   QObject::tr("Run the same request with and without the KV cache, several "
                               "times each, and compare (Ctrl+Shift+R)"),
                   {QKeySequence(QObject::tr("Ctrl+Shift+R"))},
                   s->standardIcon(QStyle::SP_BrowserReload));
    clearRegion = make(QObject::tr("Clear &Region"), "clearRegionAction",
                       QObject::tr("Remove the rectangle dragged on the image (Esc)"));
    // Esc moves between Cancel and Clear Region (MainWindow::updateActions): both window-wide.
    owner->addAction(clearRegion);
    zoomIn = make(QObject::tr("Zoom &In"), "zoomInAction", QObject::tr("Zoom in (Ctrl++)"),
                  {QKeySequence::ZoomIn, QKeySequence(QObject::tr("Ctrl+="))});
    zoomOut = make(QObject::tr("Zoom &Out"), "zoomOutAction", QObject::tr("Zoom out (Ctrl+-)"),
                   {QKeySequence::ZoomOut});
    fit = make(QObject::tr("&Fit to Window"), "fitAction",
               QObject::tr("Show the whole image (Ctrl+0)"), {QKeySequence(QObject::tr("Ctrl+0"))});
    exifRotate = make(QObject::tr("Turn Photos &Upright"), "exifRotateAction",
                      QObject::tr("Turn a photo by its EXIF orientation, as image viewers show "
                                  "it. Off: the pixels as stored, the frame Florence-2's own "
                                  "processor sees, so boxes match the Python reference"));
    exifRotate->setCheckable(true);
    exifRotate->setChecked(true);
    theme = new QActionGroup(owner);
    themeSystem = make(QObject::tr("Follow the &System"), "themeSystemAction",
                       QObject::tr("Use the desktop's colours"));
    themeLight = make(QObject::tr("&Light"), "themeLightAction", QObject::tr("Light colours"));
    themeDark = make(QObject::tr("&Dark"), "themeDarkAction", QObject::tr("Dark colours"));
    for (QAction* a : {themeSystem, themeLight, themeDark}) {
        a->setCheckable(true);
        theme->addAction(a);
    }
    themeSystem->setChecked(true);
    shortcuts = make(QObject::tr("&Keyboard Shortcuts"), "shortcutsAction",
                     QObject::tr("List the keyboard shortcuts and the Tab order"));
    about = make(QObject::tr("&About Florence Studio"), "aboutAction",
                 QObject::tr("Version, runtime and what the loaded model can do"));
}

void MainActions::addMenus(QMenuBar* bar) {
    QMenu* file = bar->addMenu(QObject::tr("&File"));
    file->addAction(open);
    recent = file->addMenu(QObject::tr("Open &Recent"));
    recent->setObjectName(QStringLiteral("recentMenu"));
    file->addAction(paste);
    file->addAction(processFolder);
    file->addSeparator();
    file->addAction(openModel);
    file->addAction(import);
    file->addSeparator();
    file->addAction(exportJson);
    file->addAction(savePng);
    file->addSeparator();
    file->addAction(quit);

    QMenu* edit = bar->addMenu(QObject::tr("&Edit"));
    edit->addAction(copyText);
    edit->addAction(paste);

    view = bar->addMenu(QObject::tr("&View"));
    view->addAction(zoomIn);
    view->addAction(zoomOut);
    view->addAction(fit);
    view->addSeparator();
    view->addAction(clearRegion);
    view->addAction(exifRotate);
    view->addSeparator();
    QMenu* themes = view->addMenu(QObject::tr("&Theme"));
    themes->setObjectName(QStringLiteral("themeMenu"));
    themes->addActions(theme->actions());

    QMenu* runMenu = bar->addMenu(QObject::tr("&Run"));
    runMenu->addAction(run);
    runMenu->addAction(cancel);
    runMenu->addAction(compare);

    QMenu* help = bar->addMenu(QObject::tr("&Help"));
    help->addAction(shortcuts);
    help->addAction(about);
}

Theme MainActions::checkedTheme() const {
    const QAction* chosen = theme->checkedAction();
    return chosen == themeDark ? Theme::Dark : chosen == themeLight ? Theme::Light : Theme::System;
}

void MainActions::checkTheme(Theme t) {
    (t == Theme::Dark ? themeDark : t == Theme::Light ? themeLight : themeSystem)->setChecked(true);
}

void MainActions::addToolBar(QMainWindow* window) {
    QToolBar* bar = window->addToolBar(QObject::tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addAction(open);
    bar->addSeparator();
    bar->addAction(run);
    bar->addAction(cancel);
    bar->addAction(compare);
    bar->addSeparator();
    bar->addAction(exportJson);
}

QString MainActions::shortcutsText() const {
    QStringList lines;
    const QKeySequence esc(Qt::Key_Escape);
    for (const QAction* a : m_all) {
        // Esc is Cancel's while something runs and Clear Region's otherwise: listed for both,
        // whichever holds it now.
        QList<QKeySequence> shortcuts = a->shortcuts();
        QString name = QString(a->text()).remove(QLatin1Char('&'));
        if (a == cancel || a == clearRegion) {
            if (!shortcuts.contains(esc))
                shortcuts.prepend(esc);
            name = a == cancel ? QObject::tr("Cancel the run or comparison")
                               : QObject::tr("Clear Region (when nothing runs)");
        }
        if (shortcuts.isEmpty())
            continue;
        QStringList keys;
        for (const QKeySequence& k : shortcuts)
            keys << k.toString(QKeySequence::NativeText);
        lines << QStringLiteral("%1\t%2").arg(keys.join(QStringLiteral(", ")), name);
    }
    lines << QString()
          << QObject::tr("Tab moves through the image, the model, the task, its text, the "
                         "generation settings, Run, Cancel, Compare, the answer and the charts; "
                         "Shift+Tab goes back. In the answer table the arrow keys move between "
                         "cells.");
    return lines.join(QLatin1Char('\n'));
}

QString MainActions::shortcutsHtml() const {
    QString rows;
    for (const QString& line : shortcutsText().split(QLatin1Char('\n'))) {
        const qsizetype tab = line.indexOf(QLatin1Char('\t'));
        if (tab < 0)
            continue;
        rows +=
            QStringLiteral("<tr><td style=\"padding-right:16px\"><b>%1</b></td><td>%2</td></tr>")
                .arg(line.left(tab).toHtmlEscaped(), line.mid(tab + 1).toHtmlEscaped());
    }
    const QString text = shortcutsText();
    const QString after = text.mid(text.indexOf(QStringLiteral("\n\n")) + 2);
    return QStringLiteral("<table cellspacing=\"2\">%1</table><p>%2</p>")
        .arg(rows, after.toHtmlEscaped());
}

} // namespace florence::ui
