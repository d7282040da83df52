// The window's programmatic side: what the command line (app/gui/main.cpp) and the tests ask
// of it and set on it, forwarded to the panels and controllers that own the state. The layout
// and the wiring are in MainWindow.cpp.
#include "MainWindow.h"

#include "HistoryDock.h"
#include "MainActions.h"
#include "RecentFiles.h"
#include "ScreenFit.h"
#include "controllers/ModelController.h"
#include "controllers/RunController.h"
#include "dialogs/AboutDialog.h"
#include "images/ImageFiles.h"
#include "images/ImageOpener.h"
#include "widgets/ControlPanel.h"

namespace florence::ui {

void MainWindow::fitToScreen() {
    ui::fitToScreen(this);
}

void MainWindow::loadDefaultModel() {
    m_modelCtl->openBundled();
}

void MainWindow::openModelPackage(const QString& dir) {
    m_modelCtl->open(dir);
}

bool MainWindow::isModelReady() const {
    return m_modelCtl->isReady();
}

const ModelInfo& MainWindow::modelInfo() const {
    return m_modelCtl->info();
}

std::optional<Precision> MainWindow::chosenPrecision() const {
    return m_panel->precision();
}

void MainWindow::setPrecision(Precision precision) {
    m_panel->setPrecision(precision); // reloads the model, as when the user picks it
}

bool MainWindow::isRunning() const {
    return m_run->isRunning();
}

QString MainWindow::lastPrompt() const {
    return QString::fromStdString(m_run->lastPrompt());
}

const GenerationOptions& MainWindow::lastOptions() const {
    return m_run->lastOptions();
}

const ParsedAnswer& MainWindow::answer() const {
    return m_run->answer();
}

int MainWindow::tokensReceived() const {
    return m_run->tokensReceived();
}

QStringList MainWindow::recentFiles() const {
    return m_recent->paths();
}

QSize MainWindow::imageSize() const {
    return m_image ? QSize(m_image->width, m_image->height) : QSize();
}

bool MainWindow::isOpeningImage() const {
    return m_opener->isPending();
}

void MainWindow::afterImageOpens(std::function<void()> f) {
    m_opener->whenSettled(std::move(f));
}

QString MainWindow::currentTask() const {
    return m_panel->task();
}

void MainWindow::setTask(const QString& token) {
    if (!m_panel->setTask(token))
        showMessage(tr("Unknown task %1").arg(token), true);
}

void MainWindow::setTaskText(const QString& text) {
    m_panel->setTaskText(text);
}

QString MainWindow::messageText() const {
    return m_panel->message();
}

QString MainWindow::firstRunImage(const QString& samplesDir) {
    return ui::firstRunImage(samplesDir);
}

QString MainWindow::aboutText() const {
    return AboutDialog::text(m_modelCtl->loaded());
}

QString MainWindow::shortcutsText() const {
    return m_actions->shortcutsText();
}

void MainWindow::setMaxNewTokens(int n) {
    m_panel->setMaxNewTokens(n);
}

int MainWindow::maxNewTokens() const {
    return m_panel->maxNewTokens();
}

void MainWindow::setBeams(int n) {
    m_panel->setBeams(n);
}

History* MainWindow::history() const {
    return m_historyDock->history();
}

HistoryPanel* MainWindow::historyPanel() const {
    return m_historyDock->panel();
}

} // namespace florence::ui
