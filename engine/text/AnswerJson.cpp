// Every JSON form of an answer: the Hugging Face form, the app's form and COCO (declared in
// <florence/answer.h>), and the one document that holds them (<florence/answer_json.h>).
#include <florence/answer_json.h>

#include <QFileInfo>
#include <QJsonArray>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace florence {

namespace {

// The original's dequantization runs in float32: (int64 bin + 0.5) becomes float32 and is
// multiplied by size/1000 converted to float32.
double float32Pixel(int bin, int size) {
    const float center = static_cast<float>(bin) + 0.5f;
    const float perBin = static_cast<float>(size / 1000.0);
    return static_cast<double>(static_cast<float>(double(center) * double(perBin)));
}

QJsonArray hfCoordinates(const std::vector<int>& bins, int width, int height) {
    QJsonArray values;
    for (size_t i = 0; i < bins.size(); ++i)
        values.append(float32Pixel(bins[i], i % 2 == 0 ? width : height));
    return values;
}

QJsonArray toJsonArray(const std::vector<double>& values) {
    QJsonArray array;
    for (double v : values)
        array.append(v);
    return array;
}

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

const char* kindName(AnswerItem::Kind kind) {
    switch (kind) {
    case AnswerItem::Kind::Box:
        return "box";
    case AnswerItem::Kind::Quad:
        return "quad";
    case AnswerItem::Kind::Polygon:
        return "polygon";
    }
    return "box";
}

double polygonArea(const std::vector<double>& xy) {
    double twiceArea = 0;
    const size_t n = xy.size() / 2;
    for (size_t i = 0; i < n; ++i) {
        const size_t j = (i + 1) % n;
        twiceArea += xy[2 * i] * xy[2 * j + 1] - xy[2 * j] * xy[2 * i + 1];
    }
    return std::abs(twiceArea) / 2;
}

// COCO's pixels: coordinates come from 1000 location bins, so a pixel value is only known to
// about size/1000; two decimals keep every bin apart on images up to 100,000 px and drop the
// float noise (101.37600000000002) that the computation leaves.
double centiPixel(double v) {
    return std::round(v * 100.0) / 100.0;
}

QJsonArray centiPixels(const std::vector<double>& values) {
    QJsonArray array;
    for (double v : values)
        array.append(centiPixel(v));
    return array;
}

QJsonArray idsJson(const std::vector<int64_t>& ids) {
    QJsonArray array;
    for (int64_t id : ids)
        array.append(static_cast<qint64>(id));
    return array;
}

QJsonObject timingsJson(const Timings& t, std::optional<double> loadMs) {
    QJsonObject o{{"preprocess_ms", t.preprocessMs},
                  {"vision_ms", t.visionMs},
                  {"text_encoder_ms", t.textEncoderMs},
                  {"first_token_ms", t.firstTokenMs},
                  {"decode_ms", t.decodeMs},
                  {"total_ms", t.totalMs},
                  {"features_reused", t.featuresReused},
                  {"prompt_reused", t.promptReused},
                  {"step_ms", toJsonArray(t.stepMs)}};
    if (loadMs)
        o["load_ms"] = *loadMs;
    return o;
}

} // namespace

QJsonObject toHuggingFaceJson(const ParsedAnswer& answer) {
    const QString task = qstr(answer.task);
    const int w = answer.imageWidth, h = answer.imageHeight;
    if (answer.type == AnswerType::PureText)
        return QJsonObject{{task, qstr(answer.text)}};

    QJsonArray bboxes, bboxLabels, quads, quadLabels, polygons, polygonLabels;
    for (const AnswerItem& item : answer.items) {
        switch (item.kind) {
        case AnswerItem::Kind::Box:
            bboxes.append(hfCoordinates(item.bins.front(), w, h));
            bboxLabels.append(qstr(item.label));
            break;
        case AnswerItem::Kind::Quad:
            quads.append(hfCoordinates(item.bins.front(), w, h));
            quadLabels.append(qstr(item.label));
            break;
        case AnswerItem::Kind::Polygon: {
            QJsonArray objectPolygons;
            for (const std::vector<int>& bins : item.bins)
                objectPolygons.append(hfCoordinates(bins, w, h));
            polygons.append(objectPolygons);
            polygonLabels.append(qstr(item.label));
            break;
        }
        }
    }

    QJsonObject value;
    switch (answer.type) {
    case AnswerType::PureText:
        break;
    case AnswerType::DescriptionWithBboxes:
    case AnswerType::Bboxes:
    case AnswerType::PhraseGrounding:
        value = {{"bboxes", bboxes}, {"labels", bboxLabels}};
        break;
    case AnswerType::Ocr:
        value = {{"quad_boxes", quads}, {"labels", quadLabels}};
        break;
    case AnswerType::Polygons:
        value = {{"polygons", polygons}, {"labels", polygonLabels}};
        break;
    case AnswerType::DescriptionWithBboxesOrPolygons:
        value = {{"bboxes", bboxes},
                 {"bboxes_labels", bboxLabels},
                 {"polygons", polygons},
                 {"polygons_labels", polygonLabels}};
        break;
    }
    return QJsonObject{{task, value}};
}

QJsonObject toNativeJson(const ParsedAnswer& answer) {
    QJsonArray items;
    for (const AnswerItem& item : answer.items) {
        QJsonObject o{{"kind", kindName(item.kind)},    {"label", qstr(item.label)},
                      {"char_begin", item.charBegin},   {"char_end", item.charEnd},
                      {"token_begin", item.tokenBegin}, {"token_end", item.tokenEnd}};
        switch (item.kind) {
        case AnswerItem::Kind::Box:
            o["box"] = QJsonArray{item.box.x1, item.box.y1, item.box.x2, item.box.y2};
            break;
        case AnswerItem::Kind::Quad:
            o["quad"] = toJsonArray(item.quad);
            break;
        case AnswerItem::Kind::Polygon: {
            QJsonArray polys;
            for (const std::vector<double>& p : item.polygons)
                polys.append(toJsonArray(p));
            o["polygons"] = polys;
            break;
        }
        }
        QJsonArray bins;
        for (const std::vector<int>& group : item.bins) {
            QJsonArray g;
            for (int b : group)
                g.append(b);
            bins.append(g);
        }
        o["bins"] = bins;
        if (item.score >= 0)
            o["score"] = item.score;
        items.append(o);
    }
    QJsonObject o{
        {"task", qstr(answer.task)},          {"answer_type", qstr(answerTypeName(answer.type))},
        {"text", qstr(answer.text)},          {"image_width", answer.imageWidth},
        {"image_height", answer.imageHeight}, {"items", items}};
    if (answer.score >= 0)
        o["score"] = answer.score;
    return o;
}

QJsonObject toCocoJson(const ParsedAnswer& answer, const std::string& imageFileName, int imageWidth,
                       int imageHeight) {
    QJsonArray annotations, categories;
    std::map<std::string, int> categoryIds;
    const auto categoryOf = [&](const std::string& label) {
        const std::string name = label.empty() ? "region" : label;
        auto it = categoryIds.find(name);
        if (it == categoryIds.end()) {
            it = categoryIds.emplace(name, int(categoryIds.size()) + 1).first;
            categories.append(QJsonObject{{"id", it->second}, {"name", qstr(name)}});
        }
        return it->second;
    };

    for (const AnswerItem& item : answer.items) {
        // Every geometry as polygons in COCO's flat x,y form; its bounding box and area follow.
        std::vector<std::vector<double>> outlines;
        double area = 0;
        if (item.kind == AnswerItem::Kind::Box) {
            const Box& b = item.box;
            const double x1 = std::min(b.x1, b.x2), x2 = std::max(b.x1, b.x2);
            const double y1 = std::min(b.y1, b.y2), y2 = std::max(b.y1, b.y2);
            outlines.push_back({x1, y1, x2, y1, x2, y2, x1, y2});
            area = (x2 - x1) * (y2 - y1);
        } else if (item.kind == AnswerItem::Kind::Quad) {
            outlines.push_back(item.quad);
            area = polygonArea(item.quad);
        } else {
            // COCO needs at least three points per polygon.
            for (const std::vector<double>& p : item.polygons) {
                if (p.size() >= 6) {
                    outlines.push_back(p);
                    area += polygonArea(p);
                }
            }
        }
        if (outlines.empty())
            continue;
        double minX = std::numeric_limits<double>::max(), minY = minX;
        double maxX = std::numeric_limits<double>::lowest(), maxY = maxX;
        for (const std::vector<double>& p : outlines) {
            for (size_t i = 0; i + 1 < p.size(); i += 2) {
                minX = std::min(minX, p[i]);
                maxX = std::max(maxX, p[i]);
                minY = std::min(minY, p[i + 1]);
                maxY = std::max(maxY, p[i + 1]);
            }
        }
        QJsonObject annotation{{"id", annotations.size() + 1},
                               {"image_id", 1},
                               {"category_id", categoryOf(item.label)},
                               {"bbox", centiPixels({minX, minY, maxX - minX, maxY - minY})},
                               {"area", centiPixel(area)},
                               {"iscrowd", 0}};
        if (item.kind != AnswerItem::Kind::Box) {
            QJsonArray segmentation;
            for (const std::vector<double>& p : outlines)
                segmentation.append(centiPixels(p));
            annotation["segmentation"] = segmentation;
        }
        if (item.kind == AnswerItem::Kind::Quad)
            annotation["text"] = qstr(item.label);
        if (item.score >= 0)
            annotation["score"] = item.score;
        annotations.append(annotation);
    }

    const QJsonObject image{{"id", 1},
                            {"file_name", qstr(imageFileName)},
                            {"width", imageWidth},
                            {"height", imageHeight}};
    return QJsonObject{
        {"images", QJsonArray{image}}, {"annotations", annotations}, {"categories", categories}};
}

QJsonObject nativeForm(const ParsedAnswer& answer, const ParsedAnswer& readable) {
    QJsonObject native = toNativeJson(readable);
    // The task's answer type, as at the top level, even where the asked region became an item.
    native["answer_type"] = qstr(answerTypeName(answer.type));
    return native;
}

QJsonObject answerJson(const ParsedAnswer& answer, const Result& result,
                       const AnswerContext& context) {
    // What a person reads (native form, COCO labels); the Hugging Face form keeps the parser's.
    const ParsedAnswer readable = readableAnswer(answer, askedRegion(answer, context.prompt));
    QJsonObject o{{"format", "florence-studio-answer"},
                  {"format_version", kAnswerJsonVersion},
                  {"task", qstr(answer.task)},
                  {"answer_type", qstr(answerTypeName(answer.type))},
                  {"raw_text", qstr(result.text)},
                  {"huggingface", toHuggingFaceJson(answer)},
                  {"native", nativeForm(answer, readable)},
                  {"prompt_ids", idsJson(result.promptIds)},
                  {"generated_ids", idsJson(result.generatedIds)},
                  {"token_logprobs", toJsonArray(std::vector<double>(result.tokenLogprobs.begin(),
                                                                     result.tokenLogprobs.end()))},
                  {"sequence_score", result.score},
                  {"cancelled", result.cancelled},
                  {"reached_token_limit", result.reachedTokenLimit},
                  {"timings", timingsJson(result.timings, context.loadMs)}};
    QJsonObject image{{"width", answer.imageWidth}, {"height", answer.imageHeight}};
    if (!context.imageFile.empty())
        image["file"] = qstr(context.imageFile);
    if (context.orientationApplied)
        image["orientation_applied"] = *context.orientationApplied;
    o["image"] = image;
    if (!context.prompt.empty())
        o["prompt"] = qstr(context.prompt);
    if (!context.model.empty())
        o["model"] = qstr(context.model);
    // With geometry: boxes, quads or polygons, or a region task's answer on the region asked.
    if (readable.type != AnswerType::PureText) {
        const QString name = QFileInfo(qstr(context.imageFile)).fileName();
        o["coco"] = toCocoJson(readable, name.toStdString(), answer.imageWidth, answer.imageHeight);
    }
    if (context.options) {
        QJsonObject g{{"beams", context.options->numBeams},
                      {"cache", context.options->useCache},
                      {"max_new_tokens", context.options->maxNewTokens},
                      {"ignore_eos", context.options->ignoreEos}};
        if (!context.precision.empty())
            g["precision"] = qstr(context.precision);
        if (!context.encoderPrecision.empty() && context.encoderPrecision != context.precision)
            g["encoder_precision"] = qstr(context.encoderPrecision);
        o["generation"] = g;
    }
    if (!context.runtime.empty())
        o["runtime"] = qstr(context.runtime);
    return o;
}

} // namespace florence
