// The window's image on its way in, without widgets: files, pasted and dropped images opened on
// the image thread (ImageOpener: the newest request wins), and the encoders run on the image and
// the task's prompt ahead of Run (EncodeAhead), again after a model loads and once a new prompt
// has been still for a moment. MainWindow owns one, shows what it opens and says what it reports.
//
//   auto current = [&] { return WindowImage::EncodeInput{shown, prompt()}; };
//   auto* image = new WindowImage(worker, models, current, window);
//   connect(image, &WindowImage::opened, window, [&](const DecodedImage& d) { show(d); });
//   image->openFile("pier.png");
//   image->encode(); // once it is shown: the vision encoder, and the text encoder on the prompt
#pragma once

#include "controllers/WorkerTypes.h"
#include "images/ImageDecodeWorker.h"

#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <string>

class QImage;
class QMimeData;
class QTimer;

namespace florence::ui {

class EncodeAhead;
class EngineWorker;
class ImageOpener;
class ModelController;

class WindowImage : public QObject {
    Q_OBJECT

public:
    // What the encoders run ahead of Run: the image shown and the prompt Run would send now
    // ("" while the task lacks its input).
    struct EncodeInput {
        std::shared_ptr<const RgbImage> image;
        std::string prompt;
    };
    using CurrentInput = std::function<EncodeInput()>;

    WindowImage(EngineWorker* worker, ModelController* models, CurrentInput current,
                QObject* parent = nullptr);
    ~WindowImage() override;

    // These start opening an image and return at once; false when there is nothing to open,
    // with `why` for the user when it says more than an empty path does.
    bool openFile(const QString& path);
    bool openData(const QImage& image, const QString& name, QString* why);
    bool openMime(const QMimeData* mime, QString* why);
    // The image the last session showed (images/StartupReopen.h).
    void openAtStartup(const QString& path);
    void setExifRotate(bool on);
    // An image is being decoded; it replaces the one shown when it opens.
    bool isOpening() const;
    // The encoders started on the image shown (and the task's prompt) have not ended yet.
    bool isEncoding() const;
    // Calls `f` once the image being opened is shown or has failed (at once when none is).
    void afterOpens(std::function<void()> f);

    // Runs the encoders on the current input now (an image was shown): queued behind a model
    // load, ahead of any run.
    void encode();
    // The task, its text or its region changed: the new prompt is encoded once the input has
    // been still for a moment (not on every key), unless it is the one encoded already.
    void promptChanged(const std::string& prompt);
    // What a run of `prompt` waits for before its first token, in words ("Reading the image…").
    QString waitingPhase(bool modelReady, RunKind kind, const std::string& prompt) const;
    // The status bar's words for `encoded`.
    static QString readyMessage(double visionMs, double textEncoderMs);

    // Tests reach the image thread through this.
    ImageOpener* opener() const { return m_opener; }

signals:
    void opening(const QString& name);
    void opened(const florence::ui::DecodedImage& image);
    // The whole message for the user; the image on screen stays.
    void failed(const QString& message);
    // The vision encoder has run on the image shown, ahead of Run, and the text encoder on the
    // prompt (textEncoderMs < 0: no prompt encoded).
    void encoded(double visionMs, double textEncoderMs);

private:
    ImageOpener* m_opener = nullptr;
    EncodeAhead* m_encoder = nullptr;
    QTimer* m_promptTimer = nullptr;
    CurrentInput m_current;
};

} // namespace florence::ui
