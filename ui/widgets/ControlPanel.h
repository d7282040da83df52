// The window's right-hand panel: the model list, the task with its text or region input and
// the prompt it will send, the generation settings, Run / Cancel / Compare and the last
// message. It only shows and collects values; the window decides what they do.
//
//   auto* panel = new ControlPanel(catalog.model(), runAction, cancelAction, compareAction, w);
//   connect(panel, &ControlPanel::taskChanged, w, [&] { panel->setPrompt(preview()); });
//   panel->showMessage(tr("Cannot open the image: …"), true);
#pragma once

#include "Settings.h"

#include <florence/auto_precision.h>
#include <florence/engine.h>
#include <florence/tasks.h>

#include <QRectF>
#include <QWidget>

#include <optional>
#include <vector>

class QAbstractItemModel;
class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace florence::ui {

class ControlPanel : public QWidget {
    Q_OBJECT

public:
    ControlPanel(QAbstractItemModel* models, QAction* run, QAction* cancel, QAction* compare,
                 QWidget* parent = nullptr);

    // Model.
    QComboBox* modelCombo() const { return m_modelCombo; }
    void setModelText(const QString& text, const QString& toolTip = QString());
    // Marks the tasks the loaded model was trained for ("" list: no marks).
    // The tasks the loaded model was trained for: unset when its package does not say, empty
    // for random weights; the task hint and the task list's tooltips say so.
    void setTrainedTasks(const std::optional<QStringList>& tokens);
    // One line under the model list: what the model is for (empty hides it).
    void setModelPurpose(const QString& text);
    // The loaded package's own tasks (Manifest::tasks, a fine-tune's) after the standard 15,
    // then "Custom prompt…" (the text field sent as typed); the previous package's are removed.
    void setPackageTasks(const std::vector<TaskInfo>& tasks);

    // Task.
    QString task() const;
    bool setTask(const QString& token); // false for an unknown token
    QString taskText() const;
    void setTaskText(const QString& text);
    // What the region label says (region tasks only): the region, or how to choose one.
    void setRegion(const std::optional<QRectF>& region);
    // The prompt the model receives (location tokens wrap).
    void setPrompt(const QString& prompt);
    QString prompt() const;
    QLineEdit* textEdit() const { return m_inputEdit; }

    // Generation.
    int beams() const;
    void setBeams(int n);
    int maxNewTokens() const;
    void setMaxNewTokens(int n);
    void setMaxNewTokensLimit(int n);
    bool useCache() const;
    void setUseCache(bool on);
    // "Ignore the end token": every run generates exactly Max new tokens (speed measurements).
    bool ignoreEos() const;
    void setIgnoreEos(bool on);
    // A package that asks for it (the speed demos, whose answers are noise) switches the option
    // on; any other package gets back what the user last chose with such a package loaded.
    void setModelIgnoresEos(bool on);
    // The precision chosen: nullopt for Automatic (the default).
    std::optional<Precision> precision() const;
    // Its name, as kept in the settings: "automatic", "float32", "bfloat16" or "int8".
    QString precisionText() const;
    // Emits precisionChanged unless `silently`; nullopt selects Automatic.
    void setPrecision(std::optional<Precision> p, bool silently = false);
    // By the name precisionText() gives (the words on the items are longer once measured).
    bool setPrecisionText(const QString& name);
    // What Automatic measured for the loaded package: its item names the precision it picked,
    // and each mode says what it costs on this CPU ("int8 (2.1x slower here)"), so that a mode
    // slower than float32 is never taken for a speed-up. An empty list (a precision chosen by
    // hand, before any measurement) leaves the items as they were.
    void setPrecisionCosts(Precision picked, const std::vector<PrecisionOption>& options);
    // The task and generation settings kept between sessions.
    void restorePreferences(const Preferences& p);
    void savePreferences(Preferences& p) const;

    void setRunState(bool canRun, bool running);

    // The message line under the buttons (errors in a red that reads on light and dark).
    void showMessage(const QString& text, bool isError);
    QString message() const;
    bool messageIsError() const { return m_messageIsError; }

    // The focus chain inside the panel, first and last (for the window's Tab order).
    QWidget* firstInFocusChain() const;
    QWidget* lastInFocusChain() const;

signals:
    void modelActivated(int row);
    void taskChanged();
    void taskTextChanged();
    void precisionChanged();
    void runRequested();

protected:
    void changeEvent(QEvent* event) override;

private:
    void updateTaskInput();
    void createIgnoreEosCheck(QWidget* parent);

    QComboBox* m_modelCombo = nullptr;
    QLabel* m_modelLabel = nullptr;
    QComboBox* m_taskCombo = nullptr;
    QLabel* m_taskHint = nullptr;
    QLabel* m_inputLabel = nullptr;
    QLineEdit* m_inputEdit = nullptr;
    QLabel* m_regionLabel = nullptr;
    QLabel* m_promptLabel = nullptr;
    QSpinBox* m_beamsSpin = nullptr;
    QSpinBox* m_maxTokensSpin = nullptr;
    QCheckBox* m_cacheCheck = nullptr;
    QCheckBox* m_ignoreEosCheck = nullptr;
    bool m_modelIgnoresEos = false; // the loaded package asked for it
    bool m_userIgnoreEos = false;   // the user's choice for the other packages
    QComboBox* m_precisionCombo = nullptr;
    // The Automatic item's data, and the role holding each item's name (its text changes).
    static constexpr int kAutomaticPrecision = -1;
    static constexpr int kPrecisionNameRole = Qt::UserRole + 1;
    QPushButton* m_runButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QPushButton* m_compareButton = nullptr;
    QLabel* m_messageLabel = nullptr;
    bool m_messageIsError = false;
    std::optional<QRectF> m_region;
    std::optional<QStringList> m_trainedTasks;
    QLabel* m_purposeLabel = nullptr;
};

} // namespace florence::ui
