// What Run sends for the task as the window sets it now: the prompt built from the task, the
// panel's text and the region dragged on the image, in the image's pixels.
//
//   QString error;
//   std::optional<std::string> p =
//       florence::ui::promptFor("<REGION_TO_CATEGORY>", "", region, image.get(), &error);
//   if (!p) showMessage(error, true);   // "Drag a rectangle on the image … first."
//   promptLine->setText(florence::ui::readablePrompt(*p, image->width, image->height));
#pragma once

#include <florence/image.h>
#include <florence/tasks.h>

#include <QRectF>
#include <QString>

#include <optional>
#include <string>

namespace florence::ui {

// The region a run of `task` asks about: `region` for region tasks, none for the others.
std::optional<Box> taskRegion(const QString& task, const std::optional<QRectF>& region);

// The prompt for `task` with `text` and `region` on `image` (a 1000 × 1000 image when none is
// open, so the Prompt line can show what the task needs). None, with `error` set to a message
// for the window, when the task lacks its input.
std::optional<std::string> promptFor(const QString& task, const QString& text,
                                     const std::optional<QRectF>& region, const RgbImage* image,
                                     QString* error);

// `prompt` as a person reads it: each run of four location tokens becomes the box it stands
// for in the image's pixels ("What is the region [box 100, 80 – 300, 230]?").
QString readablePrompt(const std::string& prompt, int imageWidth, int imageHeight);

// `message` with every task token replaced by the task's name in quotes ("“Caption to phrase
// grounding” needs a caption…"); other text as it is.
QString withTaskNames(const QString& message);

} // namespace florence::ui
