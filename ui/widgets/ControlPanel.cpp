#include "widgets/ControlPanel.h"
#include "widgets/ClampedLabel.h"
#include "widgets/ElidedComboBox.h"

#include <florence/tasks.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>

namespace florence::ui {

namespace {

// A plain-text tooltip as paragraphs that wrap: Qt shows plain text on one line, and a
// reason naming a package's path ran off a 1280-pixel screen.
QString wrappedTip(const QString& plain) {
    if (plain.isEmpty())
        return plain;
    QString html;
    for (const QString& paragraph : plain.split(QStringLiteral("\n\n")))
        html += QStringLiteral("<p>%1</p>")
                    .arg(paragraph.toHtmlEscaped().replace(QLatin1Char('\n'), "<br>"));
    return html;
}

QString capitalized(const std::string& s) {
    QString q = QString::fromStdString(s);
    if (!q.isEmpty())
        q[0] = q[0].toUpper();
    return q;
}

QString inputNeed(const TaskInfo& t) {
    switch (t.input) {
    case TaskInput::Text:
        return QObject::tr("needs a %1 typed in the text field")
            .arg(QString::fromStdString(t.inputLabel));
    case TaskInput::Region:
        return QObject::tr("needs a region dragged on the image");
    case TaskInput::None:
        break;
    }
    return QObject::tr("needs only the image");
}

QLabel* wrappingLabel(QWidget* parent, const char* name) {
    auto* label = new QLabel(parent);
    label->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    label->setObjectName(QString::fromLatin1(name));
    label->setWordWrap(true);
    return label;
}

// A wheel turning over a spin box or combo box of the scrolling panel scrolls the panel unless
// the user clicked or tabbed into that box first: passing over Beams must not change it.
class WheelGuard : public QObject {
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        auto* widget = qobject_cast<QWidget*>(watched);
        if (event->type() == QEvent::Wheel && widget && !widget->hasFocus()) {
            // Filtered but not accepted: QApplication offers it to the parents, the scroll area.
            event->ignore();
            return true;
        }
        return QObject::eventFilter(watched, event);
    }
};

void guardWheel(QObject* guard, const QList<QWidget*>& widgets) {
    for (QWidget* w : widgets) {
        w->setFocusPolicy(Qt::StrongFocus); // focus by click or Tab, never by the wheel
        w->installEventFilter(guard);
    }
}

} // namespace

ControlPanel::ControlPanel(QAbstractItemModel* models, QAction* run, QAction* cancel,
                           QAction* compare, QWidget* parent)
    : QWidget(parent) {
    setObjectName(QStringLiteral("controlPanel"));

    auto* modelBox = new QGroupBox(tr("Model"), this);
    m_modelCombo = new ElidedComboBox(modelBox);
    m_modelCombo->setObjectName(QStringLiteral("modelCombo"));
    m_modelCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_modelCombo->setMinimumContentsLength(20);
    m_modelCombo->setModel(models);
    m_modelCombo->setToolTip(tr("The model package in use; pick another to load it"));
    m_modelLabel = wrappingLabel(modelBox, "modelLabel");
    m_modelLabel->setText(tr("No model loaded"));
    // What the model is for and what it cannot do, in plain sight under its name: three lines
    // at most (the whole in its tooltip), so that the task's settings show below it on a
    // 1280x720 screen.
    m_purposeLabel = new ClampedLabel(3, modelBox);
    m_purposeLabel->setObjectName(QStringLiteral("modelPurposeLabel"));
    QFont purposeFont = m_purposeLabel->font();
    purposeFont.setItalic(true);
    m_purposeLabel->setFont(purposeFont);
    m_purposeLabel->hide();
    auto* modelLayout = new QVBoxLayout(modelBox);
    modelLayout->addWidget(m_modelCombo);
    modelLayout->addWidget(m_purposeLabel);
    modelLayout->addWidget(m_modelLabel);
    connect(m_modelCombo, qOverload<int>(&QComboBox::activated), this,
            &ControlPanel::modelActivated);

    auto* taskBox = new QGroupBox(tr("Task"), this);
    m_taskCombo = new QComboBox(taskBox);
    m_taskCombo->setObjectName(QStringLiteral("taskCombo"));
    // Sized for a short name, not the longest: the settings never grow wider than their panel
    // on a small screen (the open list shows every name whole).
    m_taskCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_taskCombo->setMinimumContentsLength(16);
    for (const TaskInfo& t : allTasks())
        m_taskCombo->addItem(QString::fromStdString(t.name), QString::fromStdString(t.token));
    m_taskHint = wrappingLabel(taskBox, "taskHintLabel");
    m_taskHint->setForegroundRole(QPalette::PlaceholderText);
    m_inputLabel = new QLabel(tr("Text input:"), taskBox);
    m_inputLabel->setObjectName(QStringLiteral("inputLabel"));
    m_inputEdit = new QLineEdit(taskBox);
    m_inputEdit->setObjectName(QStringLiteral("inputEdit"));
    m_inputEdit->setClearButtonEnabled(true);
    m_inputLabel->setBuddy(m_inputEdit);
    connect(m_inputEdit, &QLineEdit::returnPressed, this, &ControlPanel::runRequested);
    connect(m_inputEdit, &QLineEdit::textChanged, this, &ControlPanel::taskTextChanged);
    m_regionLabel = wrappingLabel(taskBox, "regionLabel");
    m_promptLabel = wrappingLabel(taskBox, "promptLabel");
    m_promptLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_promptLabel->setToolTip(tr("The text the model receives for this task"));
    m_promptLabel->setForegroundRole(QPalette::PlaceholderText);
    auto* taskLayout = new QFormLayout(taskBox);
    taskLayout->setRowWrapPolicy(QFormLayout::WrapLongRows);
    taskLayout->addRow(tr("Task:"), m_taskCombo);
    taskLayout->addRow(m_taskHint);
    taskLayout->addRow(m_inputLabel, m_inputEdit);
    taskLayout->addRow(m_regionLabel);
    taskLayout->addRow(tr("Prompt:"), m_promptLabel);
    connect(m_taskCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        updateTaskInput();
        emit taskChanged();
    });

    auto* genBox = new QGroupBox(tr("Generation"), this);
    m_beamsSpin = new QSpinBox(genBox);
    m_beamsSpin->setObjectName(QStringLiteral("beamsSpin"));
    m_beamsSpin->setRange(1, 16);
    m_beamsSpin->setValue(m_defaults.numBeams);
    m_beamsSpin->setToolTip(tr("Beam search width; 1 = greedy search (fastest)"));
    m_maxTokensSpin = new QSpinBox(genBox);
    m_maxTokensSpin->setObjectName(QStringLiteral("maxTokensSpin"));
    m_maxTokensSpin->setRange(1, kDefaultMaxNewTokens);
    m_maxTokensSpin->setValue(m_defaults.maxNewTokens);
    m_maxTokensSpin->setToolTip(tr("Generation stops after this many tokens at the latest"));
    m_cacheCheck = new QCheckBox(tr("Use the key/value cache"), genBox);
    m_cacheCheck->setObjectName(QStringLiteral("cacheCheck"));
    m_cacheCheck->setChecked(m_defaults.useCache);
    m_cacheCheck->setToolTip(tr("Off: the whole prefix runs through the decoder at every step"));
    createIgnoreEosCheck(genBox);
    m_precisionCombo = new ElidedComboBox(genBox);
    m_precisionCombo->setObjectName(QStringLiteral("precisionCombo"));
    // Its items gain measured costs after the first load ("bfloat16 (1.7x slower here)"): sized
    // to contents, it widened the settings past a 1280x720 window's panel.
    m_precisionCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_precisionCombo->setMinimumContentsLength(12);
    m_precisionCombo->addItem(tr("Automatic"), kAutomaticPrecision);
    for (const Precision p : knownPrecisions())
        m_precisionCombo->addItem(QString::fromLatin1(precisionName(p)), static_cast<int>(p));
    m_precisionCombo->setToolTip(
        tr("Automatic (the default) picks the fastest of the three whose answers hold on this "
           "CPU: the first load of a model measures each (a few seconds at base size, once; "
           "kept in the cache folder), then each item says what it costs here. bfloat16 runs "
           "the linear layers with oneDNN's AVX512-BF16 kernels: faster on CPUs "
           "that have them, and the answers can differ slightly from float32. int8 runs the "
           "decoder's linear layers and the encoders' large ones with int8 weights (quantized "
           "when the model loads; Florence-2-large's encoders stay bfloat16, where int8 loses "
           "too much accuracy), the rest in float32: the fastest, answers can differ a "
           "little more. On CPUs with AVX-512 but without its VNNI instructions the rest of "
           "the encoders runs in bfloat16. On CPUs with AVX2 but without AVX-512 the decoder's "
           "products run on AVX2 kernels (faster than float32 there too); Florence-2-large's "
           "encoders stay float32 there (LibTorch's bfloat16 products would change the "
           "answers). Changing it reloads the model."));
    auto* genLayout = new QFormLayout(genBox);
    genLayout->addRow(tr("Beams:"), m_beamsSpin);
    genLayout->addRow(tr("Max new tokens:"), m_maxTokensSpin);
    genLayout->addRow(tr("Precision:"), m_precisionCombo);
    genLayout->addRow(m_cacheCheck);
    genLayout->addRow(m_ignoreEosCheck);
    m_defaultsButton = new QPushButton(tr("Model's defaults"), genBox);
    m_defaultsButton->setObjectName(QStringLiteral("generationDefaultsButton"));
    m_defaultsButton->setToolTip(
        tr("Forget your changes to beams, Max new tokens and the cache: the loaded model's own "
           "settings apply again"));
    connect(m_defaultsButton, &QPushButton::clicked, this, &ControlPanel::useModelDefaults);
    genLayout->addRow(m_defaultsButton);
    m_precisionCombo->setCurrentIndex(0); // Automatic, until the preferences are restored
    connect(m_precisionCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &ControlPanel::precisionChanged);
    recordChanges();

    m_runButton = new QPushButton(run->icon(), tr("Run"), this);
    m_runButton->setObjectName(QStringLiteral("runButton"));
    m_runButton->setToolTip(run->toolTip());
    m_runButton->setDefault(true);
    connect(m_runButton, &QPushButton::clicked, this, &ControlPanel::runRequested);
    m_cancelButton = new QPushButton(cancel->icon(), tr("Cancel"), this);
    m_cancelButton->setObjectName(QStringLiteral("cancelButton"));
    m_cancelButton->setToolTip(cancel->toolTip());
    connect(m_cancelButton, &QPushButton::clicked, cancel, &QAction::trigger);
    m_compareButton = new QPushButton(compare->icon(), tr("Compare"), this);
    m_compareButton->setObjectName(QStringLiteral("compareButton"));
    m_compareButton->setToolTip(compare->toolTip());
    connect(m_compareButton, &QPushButton::clicked, compare, &QAction::trigger);
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(m_runButton, 2);
    buttons->addWidget(m_cancelButton, 1);
    buttons->addWidget(m_compareButton, 1);

    // At most five lines, the last ending in "…" when there is more (whole in the tooltip): on
    // a short screen (2x on 1080p) a long report pushed the settings over the Run button. A
    // path wraps anywhere rather than widening the panel and squeezing the image.
    m_messageLabel = new ClampedLabel(5, this);
    m_messageLabel->setObjectName(QStringLiteral("messageLabel"));
    m_messageLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_messageLabel->setMinimumHeight(m_messageLabel->fontMetrics().height() * 2);
    m_messageLabel->setAlignment(Qt::AlignLeft | Qt::AlignTop);

    // The settings scroll when the window is short; Run, Cancel, Compare and the message stay
    // in view below them.
    auto* settings = new QWidget(this);
    auto* settingsLayout = new QVBoxLayout(settings);
    settingsLayout->setContentsMargins(0, 0, 0, 0);
    settingsLayout->addWidget(modelBox);
    settingsLayout->addWidget(taskBox);
    settingsLayout->addWidget(genBox);
    settingsLayout->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("controlScroll"));
    scroll->setWidget(settings);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(settings->minimumSizeHint().width() +
                            scroll->verticalScrollBar()->sizeHint().width());
    scroll->setMinimumHeight(120);

    auto* layout = new QVBoxLayout(this);
    // A margin on the right too, so the buttons do not touch the window's edge.
    layout->setContentsMargins(6, 0, 6, 4);
    layout->addWidget(scroll, 1);
    layout->addLayout(buttons);
    layout->addWidget(m_messageLabel);

    guardWheel(new WheelGuard(this),
               {m_modelCombo, m_taskCombo, m_beamsSpin, m_maxTokensSpin, m_precisionCombo});

    setTabOrder(m_modelCombo, m_taskCombo);
    setTabOrder(m_taskCombo, m_inputEdit);
    setTabOrder(m_inputEdit, m_beamsSpin);
    setTabOrder(m_beamsSpin, m_maxTokensSpin);
    setTabOrder(m_maxTokensSpin, m_precisionCombo);
    setTabOrder(m_precisionCombo, m_cacheCheck);
    setTabOrder(m_cacheCheck, m_ignoreEosCheck);
    setTabOrder(m_ignoreEosCheck, m_runButton);
    setTabOrder(m_runButton, m_cancelButton);
    setTabOrder(m_cancelButton, m_compareButton);
    updateTaskInput();
}

void ControlPanel::createIgnoreEosCheck(QWidget* parent) {
    m_ignoreEosCheck = new QCheckBox(tr("Ignore the end token"), parent);
    m_ignoreEosCheck->setObjectName(QStringLiteral("ignoreEosCheck"));
    m_ignoreEosCheck->setToolTip(
        tr("Generate exactly Max new tokens. For speed measurements: every run and comparison "
           "lasts exactly Max new tokens, "
           "whatever the model answers. On by itself for the speed-demo models (random weights, "
           "whose answers are noise); other models keep your choice."));
}

void ControlPanel::recordChanges() {
    // What the user (or the window's command line and tests, through the setters) changes is
    // recorded; what showSettings() puts in the widgets is not.
    connect(m_beamsSpin, qOverload<int>(&QSpinBox::valueChanged), this, [this](int n) {
        if (!m_showing)
            m_settings.beams = n;
    });
    connect(m_maxTokensSpin, qOverload<int>(&QSpinBox::valueChanged), this, [this](int n) {
        if (!m_showing)
            m_settings.maxNewTokens = n;
    });
    connect(m_cacheCheck, &QCheckBox::toggled, this, [this](bool on) {
        if (!m_showing)
            m_settings.useCache = on;
    });
    connect(m_ignoreEosCheck, &QCheckBox::toggled, this, [this](bool on) {
        if (m_showing)
            return;
        m_settings.ignoreEos = on;
        // The choice made with a speed demo loaded lasts while it is: the other packages keep
        // the user's choice for them.
        if (!m_defaults.ignoreEos)
            m_userIgnoreEos = on;
    });
    connect(m_precisionCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        if (!m_showing)
            m_settings.precision = precision();
    });
}

void ControlPanel::showSettings() {
    const GenerationOptions o = options();
    m_showing = true;
    m_beamsSpin->setValue(o.numBeams);
    m_maxTokensSpin->setValue(o.maxNewTokens);
    m_cacheCheck->setChecked(o.useCache);
    m_ignoreEosCheck->setChecked(o.ignoreEos);
    m_showing = false;
}

QWidget* ControlPanel::firstInFocusChain() const {
    return m_modelCombo;
}

QWidget* ControlPanel::lastInFocusChain() const {
    return m_compareButton;
}

void ControlPanel::setModelText(const QString& text, const QString& toolTip) {
    m_modelLabel->setText(text);
    if (!toolTip.isNull())
        m_modelLabel->setToolTip(wrappedTip(toolTip));
}

void ControlPanel::setTrainedTasks(const std::optional<QStringList>& tokens) {
    m_trainedTasks = tokens;
    updateTaskInput();
}

void ControlPanel::setModelPurpose(const QString& text) {
    m_purposeLabel->setFullText(text);
    m_purposeLabel->setToolTip(wrappedTip(text)); // "" stays ""
    m_purposeLabel->setVisible(!text.isEmpty());
}

void ControlPanel::setPackageTasks(const std::vector<TaskInfo>& tasks) {
    const QString current = task();
    {
        const QSignalBlocker blocker(m_taskCombo);
        while (m_taskCombo->count() > int(allTasks().size()))
            m_taskCombo->removeItem(m_taskCombo->count() - 1);
        for (const TaskInfo& t : tasks)
            m_taskCombo->addItem(QString::fromStdString(t.name), QString::fromStdString(t.token));
        m_taskCombo->addItem(tr("Custom prompt…"), QString::fromLatin1(kCustomPromptTask));
        const int index = m_taskCombo->findData(current);
        m_taskCombo->setCurrentIndex(std::max(index, 0));
    }
    updateTaskInput();
    if (task() != current)
        emit taskChanged();
}

QString ControlPanel::task() const {
    return m_taskCombo->currentData().toString();
}

bool ControlPanel::setTask(const QString& token) {
    const int index = m_taskCombo->findData(token);
    if (index < 0)
        return false;
    m_taskCombo->setCurrentIndex(index);
    return true;
}

QString ControlPanel::taskText() const {
    return m_inputEdit->text();
}

void ControlPanel::setTaskText(const QString& text) {
    m_inputEdit->setText(text);
}

void ControlPanel::setRegion(const std::optional<QRectF>& region) {
    m_region = region;
    updateTaskInput();
}

void ControlPanel::setPrompt(const QString& prompt) {
    // Zero-width spaces let the label wrap between location tokens.
    m_promptLabel->setText(
        QString(prompt).replace(QStringLiteral("><"), QStringLiteral(">\u200B<")));
}

QString ControlPanel::prompt() const {
    return m_promptLabel->text().remove(QChar(0x200B));
}

void ControlPanel::updateTaskInput() {
    // A named string: GCC 14 takes a reference returned for a temporary argument as dangling.
    const std::string token = task().toStdString();
    const TaskInfo& info = taskInfo(token);
    const bool text = info.input == TaskInput::Text;
    const bool region = info.input == TaskInput::Region;
    m_inputEdit->setEnabled(text);
    m_inputLabel->setEnabled(text);
    m_inputLabel->setText(text ? capitalized(info.inputLabel) + QLatin1Char(':')
                               : tr("Text input:"));
    m_inputEdit->setPlaceholderText(
        token == kCustomPromptTask ? tr("the prompt, sent as typed")
        : text ? tr("the %1 to look for").arg(QString::fromStdString(info.inputLabel))
               : tr("not used by this task"));
    QString hint = capitalized(inputNeed(info).toStdString());
    if (m_trainedTasks && m_trainedTasks->isEmpty())
        hint += tr("; the loaded model has random weights: its answers are noise.");
    else if (m_trainedTasks)
        hint += m_trainedTasks->contains(task())
                    ? tr("; the loaded model was trained for it.")
                    : tr("; the loaded model was not trained for it: expect nonsense.");
    else
        hint += QLatin1Char('.');
    m_taskHint->setText(hint);
    // Every task's item says the same in its tooltip, so the list can be read before choosing.
    for (int i = 0; i < m_taskCombo->count(); ++i) {
        const QString token = m_taskCombo->itemData(i).toString();
        // In words, as the hint: the token is the command line's business.
        QString tip = capitalized(inputNeed(taskInfo(token.toStdString())).toStdString());
        if (m_trainedTasks && !m_trainedTasks->isEmpty())
            tip += m_trainedTasks->contains(token) ? tr(" (the loaded model was trained for it)")
                                                   : tr(" (not trained for by the loaded model)");
        m_taskCombo->setItemData(i, tip, Qt::ToolTipRole);
    }
    m_regionLabel->setVisible(region);
    if (region) {
        if (m_region)
            m_regionLabel->setText(
                tr("Region: (%1, %2) – (%3, %4) px. Drag on the image to change it, Esc or "
                   "View › Clear Region to clear it.")
                    .arg(qRound(m_region->left()))
                    .arg(qRound(m_region->top()))
                    .arg(qRound(m_region->right()))
                    .arg(qRound(m_region->bottom())));
        else
            m_regionLabel->setText(tr("Drag a rectangle on the image to choose the region."));
    }
}

int ControlPanel::beams() const {
    return m_beamsSpin->value();
}

void ControlPanel::setBeams(int n) {
    m_beamsSpin->setValue(n);
}

int ControlPanel::maxNewTokens() const {
    return m_maxTokensSpin->value();
}

void ControlPanel::setMaxNewTokens(int n) {
    m_maxTokensSpin->setValue(n);
}

bool ControlPanel::useCache() const {
    return m_cacheCheck->isChecked();
}

void ControlPanel::setUseCache(bool on) {
    m_cacheCheck->setChecked(on);
}

bool ControlPanel::ignoreEos() const {
    return m_ignoreEosCheck->isChecked();
}

void ControlPanel::setIgnoreEos(bool on) {
    m_ignoreEosCheck->setChecked(on);
}

void ControlPanel::setModelDefaults(const GenerationOptions& defaults, int maxNewTokensLimit) {
    m_defaults = defaults;
    m_showing = true; // a lower maximum lowers the value: not the user's doing
    m_maxTokensSpin->setMaximum(std::max(1, maxNewTokensLimit));
    m_showing = false;
    // A package that asks to ignore the end token (the speed demos, whose answers are noise)
    // has it; any other gets back what the user last chose with such a package loaded.
    m_settings.ignoreEos = defaults.ignoreEos ? std::nullopt : m_userIgnoreEos;
    showSettings();
}

GenerationOptions ControlPanel::options() const {
    GenerationOptions o = m_settings.applyTo(m_defaults);
    o.maxNewTokens = std::min(o.maxNewTokens, m_maxTokensSpin->maximum()); // this package's
    return o;
}

void ControlPanel::useModelDefaults() {
    GenerationSettings defaults;
    defaults.precision = m_settings.precision;
    m_settings = defaults;
    m_userIgnoreEos.reset();
    showSettings();
}

GenerationSettings ControlPanel::settings() const {
    GenerationSettings s = m_settings;
    if (s.maxNewTokens)
        s.maxNewTokens = std::min(*s.maxNewTokens, m_maxTokensSpin->maximum());
    return s;
}

void ControlPanel::setSettings(const GenerationSettings& settings) {
    m_settings = settings;
    m_userIgnoreEos = settings.ignoreEos;
    setPrecision(settings.precision, true);
    showSettings();
}

std::optional<Precision> ControlPanel::precision() const {
    const int data = m_precisionCombo->currentData().toInt();
    if (data == kAutomaticPrecision)
        return std::nullopt;
    return static_cast<Precision>(data);
}

void ControlPanel::setPrecision(std::optional<Precision> p, bool silently) {
    const QSignalBlocker block(silently ? m_precisionCombo : nullptr);
    const int index = m_precisionCombo->findData(p ? static_cast<int>(*p) : kAutomaticPrecision);
    if (index >= 0)
        m_precisionCombo->setCurrentIndex(index);
    if (silently && m_settings.precision) // the choice that could not load is taken back
        m_settings.precision = p;
}

void ControlPanel::setPrecisionCosts(Precision picked,
                                     const std::vector<PrecisionOption>& options) {
    if (options.empty())
        return;
    m_precisionCombo->setItemText(
        0, tr("Automatic (%1)").arg(QString::fromLatin1(precisionName(picked))));
    for (const PrecisionOption& o : options) {
        const int index = m_precisionCombo->findData(static_cast<int>(o.precision));
        if (index < 0)
            continue;
        const QString name = QString::fromLatin1(precisionName(o.precision));
        QString text = name;
        const bool cannotRun = o.precision != Precision::Float32 && !o.note.empty() && o.cost <= 0;
        // Not offered where it cannot run (its tooltip says why); a later model may run it.
        if (auto* items = qobject_cast<QStandardItemModel*>(m_precisionCombo->model()))
            if (QStandardItem* item = items->item(index))
                item->setEnabled(!cannotRun);
        if (o.precision == Precision::Float32)
            ; // the reference the others are measured against
        else if (cannotRun)
            text = tr("%1 (cannot run here)").arg(name);
        else if (!o.accurate)
            text = tr("%1 (answers differ here)").arg(name);
        else if (o.cost > 1.0 / kAutomaticMaxCost)
            text = tr("%1 (%2x slower here)").arg(name).arg(o.cost, 0, 'f', 1);
        else if (o.cost < kAutomaticMaxCost)
            text = tr("%1 (%2x the time)").arg(name).arg(o.cost, 0, 'f', 2);
        else
            text = tr("%1 (as fast as float32 here)").arg(name);
        m_precisionCombo->setItemText(index, text);
        m_precisionCombo->setItemData(index, wrappedTip(QString::fromStdString(o.note)),
                                      Qt::ToolTipRole);
    }
}

void ControlPanel::clearPrecisionCosts() {
    m_precisionCombo->setItemText(0, tr("Automatic"));
    auto* items = qobject_cast<QStandardItemModel*>(m_precisionCombo->model());
    for (const Precision p : knownPrecisions()) {
        const int index = m_precisionCombo->findData(static_cast<int>(p));
        if (index < 0)
            continue;
        m_precisionCombo->setItemText(index, QString::fromLatin1(precisionName(p)));
        m_precisionCombo->setItemData(index, QVariant(), Qt::ToolTipRole);
        if (items && items->item(index))
            items->item(index)->setEnabled(true);
    }
}

void ControlPanel::restorePreferences(const Preferences& p) {
    setTask(p.task);
    setTaskText(p.taskText);
    setSettings(p.generation);
}

void ControlPanel::savePreferences(Preferences& p) const {
    p.task = task();
    p.taskText = taskText();
    p.generation = m_settings;
    p.generation.ignoreEos.reset(); // for speed measurements: never kept
}

void ControlPanel::setRunState(bool canRun, bool running) {
    m_runButton->setEnabled(canRun);
    m_compareButton->setEnabled(canRun);
    m_cancelButton->setEnabled(running);
}

void ControlPanel::showMessage(const QString& text, bool isError) {
    m_messageLabel->setFullText(text);
    m_messageIsError = isError;
    // A red that reads on both light and dark window backgrounds.
    const QColor error = palette().color(QPalette::Window).lightness() < 128
                             ? QColor(0xff, 0x8a, 0x80)
                             : QColor(0xb0, 0x00, 0x20);
    QPalette p = m_messageLabel->palette();
    p.setColor(QPalette::WindowText, isError ? error : palette().color(QPalette::WindowText));
    m_messageLabel->setPalette(p);
}

QString ControlPanel::message() const {
    return m_messageLabel->fullText();
}

void ControlPanel::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && m_messageLabel)
        showMessage(m_messageLabel->fullText(), m_messageIsError);
    QWidget::changeEvent(event);
}

} // namespace florence::ui
