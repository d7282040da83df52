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
#include <florence/generation_settings.h>
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

class ClampedLabel;

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
    // Up to three lines under the model list (the whole in the tooltip): what the model is for
    // (empty hides it).
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

    // Generation: the panel shows the loaded package's defaults with what the user changed
    // (GenerationSettings), and records only the changes.
    int beams() const;
    void setBeams(int n);
    int maxNewTokens() const;
    void setMaxNewTokens(int n);
    bool useCache() const;
    void setUseCache(bool on);
    // "Ignore the end token": every run generates exactly Max new tokens (speed measurements).
    bool ignoreEos() const;
    void setIgnoreEos(bool on);
    // The loaded package's defaults (Model::defaultOptions) and its token limit
    // (max_positions); the widgets then show them with the user's changes.
    void setModelDefaults(const GenerationOptions& defaults, int maxNewTokensLimit);
    // What a run uses: the package's defaults with the user's changes.
    GenerationOptions options() const;
    // The user's changes only (a folder run applies them to its model's defaults), the token
    // limit at most the loaded package's.
    GenerationSettings settings() const;
    void setSettings(const GenerationSettings& settings);
    // Forgets the user's changes to beams, Max new tokens, the cache and Ignore the end token:
    // the loaded package's own settings apply again (the precision stays: changing it reloads).
    void useModelDefaults();
    // The precision chosen: nullopt for Automatic (the default).
    std::optional<Precision> precision() const;
    // Emits precisionChanged unless `silently` (then also taken as the user's choice, if any:
    // the precision the model in use runs in after another could not load); nullopt selects
    // Automatic.
    void setPrecision(std::optional<Precision> p, bool silently = false);
    // What Automatic measured for the loaded package: its item names the precision it picked,
    // and each mode says what it costs on this CPU ("int8 (2.1x slower here)"), so that a mode
    // slower than float32 is never taken for a speed-up. An empty list (a precision chosen by
    // hand, before any measurement) leaves the items as they were.
    void setPrecisionCosts(Precision picked, const std::vector<PrecisionOption>& options);
    // The items as before any measurement, while another package loads: its costs are not the
    // previous one's.
    void clearPrecisionCosts();
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
    void recordChanges();
    void showSettings(); // options() into the widgets, recording nothing

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
    QPushButton* m_defaultsButton = nullptr;
    GenerationOptions m_defaults;        // the loaded package's
    GenerationSettings m_settings;       // what the user changed
    std::optional<bool> m_userIgnoreEos; // the user's choice for packages that do not ask
    bool m_showing = false;              // showSettings() is filling the widgets
    QComboBox* m_precisionCombo = nullptr;
    static constexpr int kAutomaticPrecision = -1; // the Automatic item's data
    QPushButton* m_runButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QPushButton* m_compareButton = nullptr;
    ClampedLabel* m_messageLabel = nullptr;
    bool m_messageIsError = false;
    std::optional<QRectF> m_region;
    std::optional<QStringList> m_trainedTasks;
    ClampedLabel* m_purposeLabel = nullptr;
};

} // namespace florence::ui
