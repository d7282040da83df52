#include "controllers/TaskPrompt.h"

#include <QObject>

#include <exception>

namespace florence::ui {

std::optional<Box> taskRegion(const QString& task, const std::optional<QRectF>& region) {
    if (!region || taskInfo(task.toStdString()).input != TaskInput::Region)
        return std::nullopt;
    return Box{region->left(), region->top(), region->right(), region->bottom()};
}

std::optional<std::string> promptFor(const QString& task, const QString& text,
                                     const std::optional<QRectF>& region, const RgbImage* image,
                                     QString* error) {
    TaskRequest request;
    request.task = task.toStdString();
    const TaskInfo& info = taskInfo(request.task);
    if (info.input == TaskInput::Text)
        request.text = text.trimmed().toStdString();
    if (info.input == TaskInput::Region) {
        if (!region) {
            *error = QObject::tr("Drag a rectangle on the image to choose the region for %1 first.")
                         .arg(QString::fromStdString(info.name));
            return std::nullopt;
        }
        request.region = taskRegion(task, region);
    }
    try {
        return buildPrompt(request, image ? image->width : 1000, image ? image->height : 1000);
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

} // namespace florence::ui
